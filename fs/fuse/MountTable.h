#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/Result.h"

namespace tierfs::fs {

// One line of /proc/self/mountinfo (proc(5)): the fields tierfs looks at.
struct MountEntry {
  std::string mountPoint;  // octal escapes (\040 for a space) decoded
  std::string fsType;      // "fuse.tierfs", "fuse", "ext4", ...
  std::string source;      // "tierfs", "/dev/nvme0n1p1", ...
  unsigned major = 0;
  unsigned minor = 0;

  // FUSE mounts have the type "fuse", "fuse.SUBTYPE" or "fuseblk".
  bool isFuse() const;
};

// Parses mountinfo text. Lines that do not have the documented shape are skipped: the kernel
// writes this file, and a line we cannot read names no mount point we could compare with.
std::vector<MountEntry> parseMountInfo(std::string_view text);

// The mount that is visible at `mountPoint` (an absolute, symlink-free path): the last one listed
// there, since a later mount on the same path hides the earlier ones.
std::optional<MountEntry> findMountAt(const std::vector<MountEntry>& mounts,
                                      const std::string& mountPoint);

// Reads and parses /proc/self/mountinfo. Errors: IoError if it cannot be read.
Result<std::vector<MountEntry>> readMountInfo();

}  // namespace tierfs::fs
