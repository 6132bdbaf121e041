// Fuzz target: the inode record (fs::decodeInode), the value of every dentry in a directory
// object's omap, with the file's chunk map (its extents) and xattrs (docs/FORMAT.md). Input: a
// mode byte, then a record or a body (record_fuzz.h). Checks:
//   - a rejected record is rejected with Corruption;
//   - an accepted inode has the shape the rest of fs/ relies on: a non-zero ino, mode bits within
//     07777, extents non-empty, sorted, not overlapping, not overflowing, each origin <= offset,
//     none beyond the file size, and only on files; a directory of size 0; a symlink whose target
//     is non-empty, at most kMaxSymlinkLength and of length `size`; nanoseconds < 1e9; xattr names
//     non-empty and within kMaxNameLength, values within kMaxXattrValue;
//   - it re-encodes to exactly the input, and that decodes to the same inode.
#include <cstddef>
#include <cstdint>

#include "fs/Format.h"
#include "tests/fuzz/record_fuzz.h"

using namespace tierfs;

namespace {

void checkShape(const fs::Inode& n) {
  FUZZ_CHECK(n.ino != 0, "ino 0");
  FUZZ_CHECK(n.mode <= 07777, std::to_string(n.mode));
  FUZZ_CHECK(n.isFile() || n.isDir() || n.isSymlink(), "type");
  for (const fs::Timestamp& t : {n.atime, n.mtime, n.ctime}) {
    FUZZ_CHECK(t.nsec < 1'000'000'000, std::to_string(t.nsec));
  }
  std::uint64_t prevEnd = 0;
  for (const fs::Extent& x : n.extents) {
    FUZZ_CHECK(n.isFile(), "extents on a non-file");
    FUZZ_CHECK(x.length > 0, "empty extent");
    FUZZ_CHECK(x.offset >= prevEnd, "unsorted or overlapping extents");
    FUZZ_CHECK(x.end() >= x.offset, "extent end overflows");
    FUZZ_CHECK(x.origin <= x.offset, "origin after offset");
    prevEnd = x.end();
  }
  FUZZ_CHECK(prevEnd <= n.size, "data beyond the file size");
  if (n.isDir()) FUZZ_CHECK(n.size == 0, "directory with a size");
  if (n.isSymlink()) {
    FUZZ_CHECK(!n.symlinkTarget.empty() && n.symlinkTarget.size() == n.size, "symlink size");
  } else {
    FUZZ_CHECK(n.symlinkTarget.empty(), "target on a non-symlink");
  }
  FUZZ_CHECK(n.symlinkTarget.size() <= fs::kMaxSymlinkLength, "long target");
  for (const auto& [name, value] : n.xattrs) {
    FUZZ_CHECK(!name.empty() && name.size() <= fs::kMaxNameLength, name);
    FUZZ_CHECK(value.size() <= fs::kMaxXattrValue, name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in = fuzz::recordFromInput(fuzz::asView(data, size));
  auto n = fs::decodeInode(in);
  if (!n) {
    fuzz::checkRejection(n.error());
    return 0;
  }
  checkShape(*n);
  fuzz::checkRoundTrip(in, *n, fs::encodeInode, fs::decodeInode);
  return 0;
}
