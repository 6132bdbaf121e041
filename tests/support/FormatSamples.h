#pragma once

#include <xxhash.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fs/Format.h"

// Helpers for tests of the volume format records (fs/Format.h): sealing edited record bodies the
// way a writer would, and sample records with edge values.
namespace tierfs::testing {

// A record without its 4-byte checksum trailer.
inline std::string_view bodyOf(std::string_view record) {
  return record.substr(0, record.size() - 4);
}

// `body` followed by the checksum a writer would append (low 32 bits of XXH3-64, little-endian),
// so that a decoder must catch whatever is wrong in `body` by its own field checks.
inline std::string seal(std::string_view body) {
  const auto check = static_cast<std::uint32_t>(XXH3_64bits(body.data(), body.size()));
  std::string out(body);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(check >> (8 * i)));
  return out;
}

inline fs::VolumeRecord sampleVolume() {
  fs::VolumeRecord v;
  for (std::size_t i = 0; i < v.uuid.size(); ++i) v.uuid[i] = static_cast<std::uint8_t>(i * 17);
  v.createdSec = 1'790'000'000;
  return v;
}

// A small regular file with a few extents and xattrs: short enough that random edits often hit
// a field, varied enough that most fields are multi-byte somewhere.
inline fs::Inode sampleFile() {
  fs::Inode n;
  n.ino = 0x1234;
  n.type = fs::FileType::kRegular;
  n.mode = 0644;
  n.uid = 1000;
  n.gid = 100;
  n.size = 300'000;
  n.atime = {1'700'000'000, 999'999'999};
  n.mtime = {-5, 1};
  n.ctime = {0, 0};
  n.version = 77;
  n.extents = {{0, 100, 5, 0, 0}, {100, 65436, 9, 0, 100}, {131072, 1000, 9, 2, 65536}};
  n.xattrs = {{"user.a", "1"}, {"user.b", std::string("\0\xff", 2)}, {"user.c", ""}};
  return n;
}

inline fs::Inode sampleDir() {
  fs::Inode n;
  n.ino = fs::kRootIno;
  n.type = fs::FileType::kDirectory;
  n.mode = 01777;
  n.atime = n.mtime = n.ctime = {-86400, 500};
  n.xattrs = {{"trusted.x", "y"}};
  return n;
}

inline fs::Inode sampleSymlink() {
  fs::Inode n;
  n.ino = 99;
  n.type = fs::FileType::kSymlink;
  n.mode = 0777;
  n.symlinkTarget = "../a/b";
  n.size = n.symlinkTarget.size();
  return n;
}

inline fs::RenameIntent sampleIntent() {
  fs::RenameIntent r;
  r.srcDir = 1;
  r.srcName = "old";
  r.dstDir = 0x42;
  r.dstName = "new";
  r.moved = fs::encodeInode(sampleFile());
  r.replaced = fs::encodeInode(sampleSymlink());
  r.createdSec = -1;
  r.owner = "host=n1 boot=8c3e pidns=pid:[4026531836] pid=7 start=99";
  return r;
}

}  // namespace tierfs::testing
