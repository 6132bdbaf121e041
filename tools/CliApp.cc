#include "tools/CliApp.h"

#include <cstdio>
#include <string>

#include "common/FileUtil.h"

namespace tierfs::tools {

int failCommand(std::string_view command, const Status& s, int code) {
  std::fprintf(stderr, "tierfs %s: %s\n", std::string(command).c_str(),
               printable(s.toString()).c_str());
  return code;
}

}  // namespace tierfs::tools
