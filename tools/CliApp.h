#pragma once

#include <string_view>

#include "common/Status.h"

// The command headers name CLI::App through this declaration; only the files that define
// commands include <CLI/CLI.hpp>. CLI11 is header-only and builds its validators and option code
// in every file that includes it: 5-8 s of compiling a file at -O2, which a file that merely
// includes a command's header (ControlService.cc, the fuzz targets) need not pay.
namespace CLI {
class App;
}  // namespace CLI

namespace tierfs::tools {

// Prints "tierfs COMMAND: what went wrong" on stderr and returns `code`, the command's exit
// status. Messages carry paths, which may hold any byte but '/' and NUL: printed escaped, never
// raw (common/FileUtil.h's printable).
int failCommand(std::string_view command, const Status& s, int code = 1);

}  // namespace tierfs::tools
