#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/Result.h"

namespace tierfs {

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

Status createDirectories(const std::filesystem::path& dir);
Result<UniqueFd> openForRead(const std::filesystem::path& path);
// Reads exactly `length` bytes at `offset`; a file that is shorter is Corruption.
Result<std::string> preadExactly(int fd, std::uint64_t offset, std::uint64_t length);
// Creates `path` (which must not exist) holding `data`; with `durable`, syncs the file and its
// directory before returning.
Status writeNewFile(const std::filesystem::path& path, std::string_view data, bool durable);
// Replaces `path` atomically (temporary file, fsync, rename, fsync of the directory).
Status writeFileDurably(const std::filesystem::path& path, std::string_view data);
// Reads a whole file of at most `maxBytes` (larger: InvalidArgument).
Result<std::string> readSmallFile(const std::filesystem::path& path,
                                  std::size_t maxBytes = 1 << 20);

// `s` safe to print on a terminal or in a log line: control characters, DEL, backslashes and
// bytes that are not valid UTF-8 become C escapes (\n, \t, \\, \xNN), as `ls -b` shows names.
// Valid UTF-8 (e.g. "été") is kept as it is.
std::string printable(std::string_view s);

}  // namespace tierfs
