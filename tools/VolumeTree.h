#pragma once

// What the two sides of a volume tree share (VolumeTree.cc, VolumeSink.cc). They work through
// fs::Filesystem with the calls a mount makes for the same work, so what is written is what a
// mount would write. Inodes looked up stay known to the Filesystem (counted as kernel lookups)
// only while needed: files until copied, directories until the copy ends.

#include <time.h>

#include <mutex>
#include <string>
#include <vector>

#include "fs/Filesystem.h"
#include "tools/TreeCopy.h"

namespace tierfs::tools::copy {

// A Filesystem error as a user reads it: what was done to which path, and why.
Status fsError(const Status& s, const char* what, const std::string& path);

timespec toTimespec(const fs::Timestamp& t);
fs::Timestamp toTimestamp(const timespec& t);
Attrs attrsOf(const fs::Inode& inode);

// "/datasets/x" from its names ("/" for none).
std::string displayPath(const std::vector<std::string>& parts);

// The inodes a tree looked up and keeps, forgotten when it ends. Thread-safe.
class HeldInodes {
 public:
  explicit HeldInodes(fs::Filesystem& fs) : fs_(fs) {}
  ~HeldInodes();
  void hold(fs::Ino ino);

 private:
  fs::Filesystem& fs_;
  std::mutex mu_;
  std::vector<fs::Ino> held_;
};

// The inode at `parts` from the root, each looked up and held; NotFound names the path.
Result<fs::Inode> walk(fs::Filesystem& fs, HeldInodes& held, const std::vector<std::string>& parts);

}  // namespace tierfs::tools::copy
