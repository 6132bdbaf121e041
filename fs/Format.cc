#include "fs/Format.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cerrno>
#include <chrono>

#include "common/Encoding.h"

namespace tierfs::fs {
namespace {

constexpr std::string_view kVolumeMagic = "TFVOLUME";
constexpr std::uint8_t kRecordVersion = 1;
// Bounds the work and memory a hostile record can cause; a real file has far fewer runs.
constexpr std::uint64_t kMaxExtents = 1 << 20;
constexpr std::uint64_t kMaxXattrs = 4096;

std::uint32_t checksumOf(std::string_view bytes) {
  return static_cast<std::uint32_t>(XXH3_64bits(bytes.data(), bytes.size()));
}

// Every record ends with the low 32 bits of the XXH3-64 of everything before it.
std::string sealed(Encoder& e) {
  std::uint32_t check = checksumOf(e.bytes());
  e.putFixed32(check);
  return e.take();
}

// The body of a sealed record after its checksum and version were verified.
Result<std::string_view> unseal(std::string_view in, std::string_view what) {
  if (in.size() < 5) return failure(Status::corruption(fmt::format("{}: truncated", what)));
  std::string_view body = in.substr(0, in.size() - 4);
  Decoder trailer(in.substr(in.size() - 4), what);
  TIERFS_ASSIGN_OR_RETURN(std::uint32_t check, trailer.fixed32("checksum"));
  if (check != checksumOf(body)) {
    return failure(Status::corruption(fmt::format("{}: checksum mismatch", what)));
  }
  return body;
}

Status checkVersion(Decoder& d, std::string_view what) {
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t version, d.u8("version"));
  if (version != kRecordVersion) {
    return Status::corruption(fmt::format("{}: unsupported record version {}", what, version));
  }
  return Status::ok();
}

void putTime(Encoder& e, const Timestamp& t) {
  e.putSigned(t.sec);
  e.putVarint(t.nsec);
}

Result<Timestamp> getTime(Decoder& d, std::string_view field) {
  Timestamp t;
  TIERFS_ASSIGN_OR_RETURN(t.sec, d.signedVarint(field));
  TIERFS_ASSIGN_OR_RETURN(t.nsec, d.varint32(field));
  if (t.nsec >= 1'000'000'000) return failure(d.error(field, "nanoseconds over 999999999"));
  return t;
}

void putExtents(Encoder& e, const std::vector<Extent>& extents) {
  e.putVarint(extents.size());
  for (const Extent& x : extents) {
    e.putVarint(x.offset);
    e.putVarint(x.length);
    e.putVarint(x.version);
    e.putVarint(x.firstPiece);
    e.putVarint(x.offset - x.origin);
  }
}

Result<Extent> getExtent(Decoder& d, std::uint64_t prevEnd) {
  Extent x;
  TIERFS_ASSIGN_OR_RETURN(x.offset, d.varint("extent offset"));
  TIERFS_ASSIGN_OR_RETURN(x.length, d.varint("extent length"));
  TIERFS_ASSIGN_OR_RETURN(x.version, d.varint("extent version"));
  TIERFS_ASSIGN_OR_RETURN(x.firstPiece, d.varint32("extent piece"));
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t back, d.varint("extent origin"));
  if (x.length == 0 || x.offset < prevEnd || x.end() < x.offset || back > x.offset) {
    return failure(d.error("extents", "empty, overlapping, unsorted or overflowing extent"));
  }
  x.origin = x.offset - back;
  return x;
}

Result<std::vector<Extent>> getExtents(Decoder& d, std::uint64_t size) {
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint("extent count"));
  if (n > kMaxExtents || n > d.remaining()) return failure(d.error("extents", "too many"));
  std::vector<Extent> extents;
  extents.reserve(n);
  std::uint64_t prevEnd = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    TIERFS_ASSIGN_OR_RETURN(Extent x, getExtent(d, prevEnd));
    prevEnd = x.end();
    extents.push_back(x);
  }
  if (prevEnd > size) return failure(d.error("extents", "data beyond the file size"));
  return extents;
}

void putXattrs(Encoder& e, const std::map<std::string, std::string>& xattrs) {
  e.putVarint(xattrs.size());
  for (const auto& [name, value] : xattrs) {
    e.putString(name);
    e.putString(value);
  }
}

Result<std::map<std::string, std::string>> getXattrs(Decoder& d) {
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint("xattr count"));
  if (n > kMaxXattrs || n > d.remaining()) return failure(d.error("xattrs", "too many"));
  std::map<std::string, std::string> xattrs;
  for (std::uint64_t i = 0; i < n; ++i) {
    TIERFS_ASSIGN_OR_RETURN(std::string_view name, d.string("xattr name", kMaxNameLength));
    TIERFS_ASSIGN_OR_RETURN(std::string_view value, d.string("xattr value", kMaxXattrValue));
    if (name.empty()) return failure(d.error("xattrs", "empty name"));
    // In the map's order, as putXattrs writes them: another order would be a second encoding.
    if (!xattrs.empty() && name <= xattrs.rbegin()->first) {
      return failure(d.error("xattrs", "names repeated or not in ascending order"));
    }
    xattrs.emplace_hint(xattrs.end(), name, value);
  }
  return xattrs;
}

Result<FileType> getType(Decoder& d) {
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t t, d.u8("type"));
  if (t < 1 || t > 3) return failure(d.error("type", fmt::format("unknown file type {}", t)));
  return static_cast<FileType>(t);
}

Status checkInodeShape(const Inode& n, Decoder& d) {
  if (n.ino == 0) return d.error("ino", "zero");
  if (n.mode > 07777) return d.error("mode", "bits beyond 07777");
  if (!n.isFile() && !n.extents.empty()) return d.error("extents", "only files have data");
  if (n.isDir() && n.size != 0) return d.error("size", "a directory has size 0");
  if (n.isSymlink() && (n.symlinkTarget.empty() || n.size != n.symlinkTarget.size())) {
    return d.error("symlink", "target empty or not matching the size");
  }
  if (!n.isSymlink() && !n.symlinkTarget.empty()) return d.error("symlink", "not a symlink");
  return Status::ok();
}

}  // namespace

std::string dirObject(Ino dir) { return fmt::format("d.{:x}", dir); }

std::string VolumeRecord::uuidString() const {
  std::string s;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", uuid[i]);
  }
  return s;
}

Timestamp Timestamp::now() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  return {ns / 1'000'000'000, static_cast<std::uint32_t>(ns % 1'000'000'000)};
}

std::string encodeVolume(const VolumeRecord& v) {
  Encoder e;
  e.putRaw(kVolumeMagic);
  e.putU8(kRecordVersion);
  e.putRaw(std::string_view(reinterpret_cast<const char*>(v.uuid.data()), v.uuid.size()));
  e.putVarint(v.chunkSize);
  e.putU8(static_cast<std::uint8_t>(v.codec));
  e.putSigned(v.zstdLevel);
  e.putSigned(v.createdSec);
  return sealed(e);
}

Result<VolumeRecord> decodeVolume(std::string_view in) {
  constexpr std::string_view what = "volume record";
  TIERFS_ASSIGN_OR_RETURN(std::string_view body, unseal(in, what));
  Decoder d(body, what);
  TIERFS_ASSIGN_OR_RETURN(std::string_view magic, d.raw("magic", kVolumeMagic.size()));
  if (magic != kVolumeMagic) return failure(d.error("magic", "not a tierfs volume"));
  TIERFS_RETURN_IF_ERROR(checkVersion(d, what));
  VolumeRecord v;
  TIERFS_ASSIGN_OR_RETURN(std::string_view uuid, d.raw("uuid", v.uuid.size()));
  std::copy(uuid.begin(), uuid.end(), v.uuid.begin());
  TIERFS_ASSIGN_OR_RETURN(v.chunkSize, d.varint32("chunk size"));
  if (v.chunkSize < kMinChunkSize || v.chunkSize > cache::kMaxChunkSize) {
    return failure(d.error("chunk size", "out of range"));
  }
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t codec, d.u8("codec"));
  if (codec > 1) return failure(d.error("codec", "unknown codec"));
  v.codec = static_cast<cache::Codec>(codec);
  TIERFS_ASSIGN_OR_RETURN(std::int64_t level, d.signedVarint("zstd level"));
  if (level < -7 || level > 22) return failure(d.error("zstd level", "out of range"));
  v.zstdLevel = static_cast<std::int32_t>(level);
  TIERFS_ASSIGN_OR_RETURN(v.createdSec, d.signedVarint("created"));
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  return v;
}

std::string encodeInode(const Inode& n) {
  Encoder e;
  e.putU8(kRecordVersion);
  e.putU8(static_cast<std::uint8_t>(n.type));
  e.putVarint(n.ino);
  e.putVarint(n.mode);
  e.putVarint(n.uid);
  e.putVarint(n.gid);
  e.putVarint(n.size);
  putTime(e, n.atime);
  putTime(e, n.mtime);
  putTime(e, n.ctime);
  e.putVarint(n.version);
  e.putString(n.symlinkTarget);
  putExtents(e, n.extents);
  putXattrs(e, n.xattrs);
  return sealed(e);
}

Result<Inode> decodeInode(std::string_view in) {
  constexpr std::string_view what = "inode record";
  TIERFS_ASSIGN_OR_RETURN(std::string_view body, unseal(in, what));
  Decoder d(body, what);
  TIERFS_RETURN_IF_ERROR(checkVersion(d, what));
  Inode n;
  TIERFS_ASSIGN_OR_RETURN(n.type, getType(d));
  TIERFS_ASSIGN_OR_RETURN(n.ino, d.varint("ino"));
  TIERFS_ASSIGN_OR_RETURN(n.mode, d.varint32("mode"));
  TIERFS_ASSIGN_OR_RETURN(n.uid, d.varint32("uid"));
  TIERFS_ASSIGN_OR_RETURN(n.gid, d.varint32("gid"));
  TIERFS_ASSIGN_OR_RETURN(n.size, d.varint("size"));
  TIERFS_ASSIGN_OR_RETURN(n.atime, getTime(d, "atime"));
  TIERFS_ASSIGN_OR_RETURN(n.mtime, getTime(d, "mtime"));
  TIERFS_ASSIGN_OR_RETURN(n.ctime, getTime(d, "ctime"));
  TIERFS_ASSIGN_OR_RETURN(n.version, d.varint("version"));
  TIERFS_ASSIGN_OR_RETURN(std::string_view target, d.string("symlink", kMaxSymlinkLength));
  n.symlinkTarget = target;
  TIERFS_ASSIGN_OR_RETURN(n.extents, getExtents(d, n.size));
  TIERFS_ASSIGN_OR_RETURN(n.xattrs, getXattrs(d));
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  TIERFS_RETURN_IF_ERROR(checkInodeShape(n, d));
  return n;
}

std::string encodeIntent(const RenameIntent& r) {
  Encoder e;
  e.putU8(kRecordVersion);
  e.putVarint(r.srcDir);
  e.putString(r.srcName);
  e.putVarint(r.dstDir);
  e.putString(r.dstName);
  e.putString(r.moved);
  e.putString(r.replaced);
  e.putSigned(r.createdSec);
  if (!r.owner.empty()) e.putString(r.owner);  // optional and last: older intents end before it
  return sealed(e);
}

Result<RenameIntent> decodeIntent(std::string_view in) {
  constexpr std::string_view what = "rename intent";
  // An embedded inode may carry its xattrs and a long chunk map.
  constexpr std::size_t kMaxEmbedded = 64 << 20;
  TIERFS_ASSIGN_OR_RETURN(std::string_view body, unseal(in, what));
  Decoder d(body, what);
  TIERFS_RETURN_IF_ERROR(checkVersion(d, what));
  RenameIntent r;
  TIERFS_ASSIGN_OR_RETURN(r.srcDir, d.varint("source dir"));
  TIERFS_ASSIGN_OR_RETURN(std::string_view srcName, d.string("source name", kMaxNameLength));
  TIERFS_ASSIGN_OR_RETURN(r.dstDir, d.varint("target dir"));
  TIERFS_ASSIGN_OR_RETURN(std::string_view dstName, d.string("target name", kMaxNameLength));
  TIERFS_ASSIGN_OR_RETURN(std::string_view moved, d.string("moved inode", kMaxEmbedded));
  TIERFS_ASSIGN_OR_RETURN(std::string_view replaced, d.string("replaced inode", kMaxEmbedded));
  TIERFS_ASSIGN_OR_RETURN(r.createdSec, d.signedVarint("created"));
  if (d.remaining() > 0) {
    constexpr std::size_t kMaxOwner = 1024;
    TIERFS_ASSIGN_OR_RETURN(std::string_view owner, d.string("owner", kMaxOwner));
    // Written only when set: an empty one would be a second spelling of an intent without it.
    if (owner.empty()) return failure(d.error("owner", "present but empty"));
    r.owner = owner;
  }
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  r.srcName = srcName;
  r.dstName = dstName;
  r.moved = moved;
  r.replaced = replaced;
  if (!checkName(r.srcName).isOk() || !checkName(r.dstName).isOk()) {
    return failure(d.error("names", "not a valid file name"));
  }
  TIERFS_RETURN_IF_ERROR(statusOf(decodeInode(r.moved)).withContext(what));
  if (!r.replaced.empty()) {
    TIERFS_RETURN_IF_ERROR(statusOf(decodeInode(r.replaced)).withContext(what));
  }
  return r;
}

Status checkName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") {
    return Status::posix(EINVAL, fmt::format("invalid name '{}'", name));
  }
  if (name.size() > kMaxNameLength) {
    return Status::posix(ENAMETOOLONG, fmt::format("name of {} bytes", name.size()));
  }
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return Status::posix(EINVAL, "name with '/' or NUL");
  }
  return Status::ok();
}

}  // namespace tierfs::fs
