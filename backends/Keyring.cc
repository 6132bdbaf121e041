#include "backends/Keyring.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

namespace tierfs::backends {

Status checkKeyringMode(const std::string& path, bool allowOpen) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::ok();
    return Status::fromErrno(errno, fmt::format("keyring {}: stat", path));
  }
  const mode_t open = st.st_mode & 066;  // execute bits give nothing away
  if (open == 0 || allowOpen) return Status::ok();
  const char* how = (open & 044) != 0 ? "readable" : "writable";
  const char* who = (open & 006) != 0 ? "other users" : "its group";
  return Status::permissionDenied(fmt::format(
      "keyring {} is {} by {} (mode {:04o}): chmod 600 it, or pass --allow-open-keyring "
      "([backend.rados] allow_open_keyring = true)",
      path, how, who, st.st_mode & 07777));
}

Status checkKeyringList(const std::string& list, bool allowOpen) {
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t end = std::min(list.find_first_of(",; \t", at), list.size());
    const std::string path = list.substr(at, end - at);
    at = end + 1;
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) continue;
    return checkKeyringMode(path, allowOpen);  // the file librados will read
  }
  return Status::ok();
}

}  // namespace tierfs::backends
