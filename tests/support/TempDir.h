#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace tierfs::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() : TempDir(defaultBase()) {}
  // Under `base` instead.
  explicit TempDir(const std::filesystem::path& base) {
    std::string templ = (base / "tierfs-test-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  static std::filesystem::path defaultBase() {
    const char* base = std::getenv("TMPDIR");
    return base && *base ? base : "/tmp";
  }
  // Memory (/dev/shm) unless TMPDIR says otherwise: for stores that tests open and close many
  // times, where RocksDB's own syncs would cost most of the time on a busy disk.
  static std::filesystem::path memoryBase() {
    const char* base = std::getenv("TMPDIR");
    if (base && *base) return base;
    std::error_code ec;
    return std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : "/tmp";
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tierfs::testing
