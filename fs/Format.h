#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cache/ChunkCodec.h"
#include "common/Result.h"

// The records of volume format v1 as they are stored in the object store (docs/FORMAT.md): the
// volume record, the inode that each dentry embeds, and the rename intent. Every record starts
// with its format version and ends with a checksum; decoders check both, bound every length, and
// return Corruption naming the record and the field. Pure functions, thread-safe.

namespace tierfs::fs {

using Ino = std::uint64_t;
inline constexpr Ino kRootIno = 1;  // FUSE's root node id, so no translation is needed

// Object names. Chunk objects are named by cache::ChunkKey.
inline constexpr std::string_view kVolumeObject = "tierfs.volume";
inline constexpr std::string_view kJournalObject = "tierfs.journal";
std::string dirObject(Ino dir);  // "d.<ino in hex>"
// Xattrs of a directory object. kRemovingXattr is "1" while the directory is being removed (rmdir,
// or a rename over it): adding an entry requires it absent or "". kDirMtimeXattr is when the
// directory's entries last changed ("sec.nsec"), set by the update that changes them, so keeping a
// directory's mtime costs no extra store round trip.
inline constexpr std::string_view kRemovingXattr = "tierfs.removing";
inline constexpr std::string_view kDirMtimeXattr = "tierfs.mtime";
// Keys of the volume object's omap.
inline constexpr std::string_view kRootKey = "root";       // the root directory's inode
inline constexpr std::string_view kNextIdKey = "next_id";  // the id allocator (decimal)

inline constexpr std::size_t kMaxNameLength = 255;        // NAME_MAX
inline constexpr std::size_t kMaxSymlinkLength = 4095;    // PATH_MAX - 1
inline constexpr std::size_t kMaxXattrValue = 65536;      // XATTR_SIZE_MAX
inline constexpr std::size_t kMaxXattrBytes = 256 << 10;  // all xattrs of one inode
inline constexpr std::uint32_t kMinChunkSize = 64 << 10;

struct VolumeRecord {
  std::array<std::uint8_t, 16> uuid{};
  std::uint32_t chunkSize = 4 << 20;  // 4 MiB: large enough for RADOS, small enough to cache
  cache::Codec codec = cache::Codec::kZstd;
  std::int32_t zstdLevel = 1;
  std::int64_t createdSec = 0;

  std::string uuidString() const;
  friend bool operator==(const VolumeRecord&, const VolumeRecord&) = default;
};

enum class FileType : std::uint8_t { kRegular = 1, kDirectory = 2, kSymlink = 3 };

struct Timestamp {
  std::int64_t sec = 0;
  std::uint32_t nsec = 0;  // < 1e9
  friend auto operator<=>(const Timestamp&, const Timestamp&) = default;
  static Timestamp now();
};

// A run of a file's bytes stored in chunk objects of one content version (docs/FORMAT.md, "chunk
// map"). The run was uploaded as the range [origin, ...), cut at chunk-slot boundaries into pieces
// numbered from firstPiece; it now supplies the file range [offset, offset + length), a part of
// that upload (overwrites and truncation cut runs without moving the bytes).
struct Extent {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t version = 0;
  std::uint32_t firstPiece = 0;
  std::uint64_t origin = 0;  // <= offset
  std::uint64_t end() const { return offset + length; }
  friend bool operator==(const Extent&, const Extent&) = default;
};

// A file, directory or symlink. It lives in its parent directory's dentry (hard links are not
// supported), so listing a directory with attributes is one omap read.
struct Inode {
  Ino ino = 0;
  FileType type = FileType::kRegular;
  std::uint32_t mode = 0;  // permission bits and suid/sgid/sticky (07777); the type is `type`
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;  // logical size; a symlink's target length; 0 for directories
  Timestamp atime, mtime, ctime;
  std::uint64_t version = 0;  // content version: a new id on every commit of new content
  std::string symlinkTarget;
  std::vector<Extent> extents;                // sorted, not overlapping; holes read as zeros
  std::map<std::string, std::string> xattrs;  // full names ("user.x")

  bool isDir() const { return type == FileType::kDirectory; }
  bool isFile() const { return type == FileType::kRegular; }
  bool isSymlink() const { return type == FileType::kSymlink; }
  friend bool operator==(const Inode&, const Inode&) = default;
};

// A cross-directory rename in progress (an omap value of the journal object), so that a crash
// between its two directory updates is finished or undone at the next mount or by fsck.
struct RenameIntent {
  Ino srcDir = 0;
  std::string srcName;
  Ino dstDir = 0;
  std::string dstName;
  std::string moved;     // the encoded inode being moved
  std::string replaced;  // the encoded inode it replaces at the destination, "" when none
  std::int64_t createdSec = 0;
  // processIdentity() of the daemon that began the rename, so that its successor on the same node
  // can tell it died and finish the rename at once; "" in intents written before this field.
  std::string owner;
  friend bool operator==(const RenameIntent&, const RenameIntent&) = default;
};

std::string encodeVolume(const VolumeRecord& v);
Result<VolumeRecord> decodeVolume(std::string_view in);

std::string encodeInode(const Inode& inode);
Result<Inode> decodeInode(std::string_view in);

std::string encodeIntent(const RenameIntent& intent);
Result<RenameIntent> decodeIntent(std::string_view in);

// NAME_MAX, no '/', no NUL, not "." or "..": the names a dentry may have.
Status checkName(std::string_view name);

}  // namespace tierfs::fs
