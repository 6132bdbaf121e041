#include "fs/Volume.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <random>

#include "backends/SyncStore.h"
#include "cache/ChunkKey.h"

namespace tierfs::fs {
namespace {

using backends::SyncStore;
using backends::WriteOp;

// Ids are taken from the volume in blocks, so that creating a file rarely costs a round trip to
// the allocator; a crashed daemon wastes at most one block of a 64-bit space.
constexpr std::uint64_t kIdBlock = 1024;
constexpr int kMaxAllocatorRetries = 100;

std::string formatTime(const Timestamp& t) { return fmt::format("{}.{:09}", t.sec, t.nsec); }

std::optional<Timestamp> parseTime(std::string_view text) {
  std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || text.size() - dot != 10) return std::nullopt;
  Timestamp t;
  auto [p1, e1] = std::from_chars(text.data(), text.data() + dot, t.sec);
  auto [p2, e2] = std::from_chars(text.data() + dot + 1, text.data() + text.size(), t.nsec);
  if (e1 != std::errc() || e2 != std::errc() || p1 != text.data() + dot ||
      p2 != text.data() + text.size() || t.nsec >= 1'000'000'000) {
    return std::nullopt;
  }
  return t;
}

bool isVolumeObject(std::string_view name) {
  return name.starts_with("tierfs.") || name.starts_with("d.") ||
         cache::ChunkKey::fromObjectName(name).has_value();
}

Status removeAllVolumeObjects(SyncStore& store) {
  std::string cursor;
  std::vector<std::string> doomed;
  for (;;) {
    TIERFS_ASSIGN_OR_RETURN(backends::ObjectPage page, store.listObjects(cursor, 1000));
    for (auto& name : page.names) {
      if (isVolumeObject(name)) doomed.push_back(std::move(name));
    }
    if (!page.more) break;
    cursor = page.nextCursor;
  }
  for (const auto& name : doomed) {
    auto r = store.remove(name);
    if (!r && !r.error().isNotFound()) return r.error();
  }
  return Status::ok();
}

std::array<std::uint8_t, 16> randomUuid() {
  std::random_device rd;
  std::array<std::uint8_t, 16> u;
  for (auto& b : u) b = static_cast<std::uint8_t>(rd());
  u[6] = (u[6] & 0x0f) | 0x40;  // version 4 (random)
  u[8] = (u[8] & 0x3f) | 0x80;  // RFC 4122 variant
  return u;
}

Inode rootInode() {
  Inode root;
  root.ino = kRootIno;
  root.type = FileType::kDirectory;
  root.mode = 0755;
  root.atime = root.mtime = root.ctime = Timestamp::now();
  return root;
}

Result<std::uint64_t> parseId(const std::string& text) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return failure(Status::corruption(fmt::format("id allocator holds '{}'", text)));
  }
  return v;
}

}  // namespace

Location Location::of(Ino parent, std::string_view name) {
  if (parent == 0) return {std::string(kVolumeObject), std::string(kRootKey)};
  return {dirObject(parent), std::string(name)};
}

Result<VolumeRecord> Volume::create(backends::ObjectStore& objects, const VolumeOptions& options,
                                    bool force) {
  SyncStore store(objects);
  if (force) TIERFS_RETURN_IF_ERROR(removeAllVolumeObjects(store));
  VolumeRecord rec;
  rec.uuid = randomUuid();
  rec.chunkSize = options.chunkSize;
  rec.codec = options.codec;
  rec.zstdLevel = options.zstdLevel;
  rec.createdSec = Timestamp::now().sec;
  if (rec.chunkSize < kMinChunkSize || rec.chunkSize > cache::kMaxChunkSize) {
    return failure(Status::invalidArgument(fmt::format(
        "chunk size {} is outside [{}, {}]", rec.chunkSize, kMinChunkSize, cache::kMaxChunkSize)));
  }
  // The root directory first (harmless if a volume exists: its data is empty anyway), so that a
  // volume object never exists without it.
  TIERFS_RETURN_IF_ERROR(statusOf(store.writeFull(dirObject(kRootIno), Bytes(""))));
  WriteOp op;
  op.createExclusive()
      .writeFull(Bytes(encodeVolume(rec)))
      .omapSet(std::string(kRootKey), encodeInode(rootInode()))
      .omapSet(std::string(kNextIdKey), std::to_string(kRootIno + 1));
  auto r = store.mutate(std::string(kVolumeObject), std::move(op));
  if (!r && (r.error().code() == StatusCode::kAlreadyExists ||
             r.error().code() == StatusCode::kPreconditionFailed)) {
    return failure(Status::alreadyExists(fmt::format(
        "{} already holds a tierfs volume (mkfs --force replaces it)", objects.describe())));
  }
  TIERFS_RETURN_IF_ERROR(statusOf(r));
  return rec;
}

Result<std::unique_ptr<Volume>> Volume::open(backends::ObjectStore& objects) {
  SyncStore store(objects);
  auto data = store.read(std::string(kVolumeObject));
  if (!data && data.error().isNotFound()) {
    return failure(Status::notFound(
        fmt::format("{} holds no tierfs volume (run `tierfs mkfs` first)", objects.describe())));
  }
  TIERFS_RETURN_IF_ERROR(statusOf(data));
  TIERFS_ASSIGN_OR_RETURN(VolumeRecord rec, decodeVolume(*data));
  return std::unique_ptr<Volume>(new Volume(objects, rec));
}

Result<std::uint64_t> Volume::newId() {
  std::lock_guard lock(idMu_);
  if (nextId_ < idLimit_) return nextId_++;
  SyncStore store(store_);
  const std::string key(kNextIdKey);
  for (int attempt = 0; attempt < kMaxAllocatorRetries; ++attempt) {
    TIERFS_ASSIGN_OR_RETURN(auto values, store.omapGet(std::string(kVolumeObject), {key}));
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t next, parseId(values[key]));
    auto r = store.mutate(
        std::string(kVolumeObject),
        std::move(
            WriteOp().omapEquals(key, values[key]).omapSet(key, std::to_string(next + kIdBlock))));
    if (r) {
      nextId_ = next;
      idLimit_ = next + kIdBlock;
      return nextId_++;
    }
    if (r.error().code() != StatusCode::kPreconditionFailed) return failure(r.error());
  }
  return failure(Status::unavailable("id allocator: too much contention"));
}

// decodeInode, plus what needs the volume's chunk size: every piece number of every extent fits
// in 32 bits (so a hostile extent cannot make the piece arithmetic wrap or run for ages).
Result<Inode> Volume::decodeDentry(std::string_view value, std::string_view object,
                                   std::string_view name) const {
  auto inode = decodeInode(value);
  if (!inode) {
    return failure(inode.error().withContext(fmt::format("dentry '{}' of {}", name, object)));
  }
  const std::uint64_t cs = record_.chunkSize;
  for (const Extent& x : inode->extents) {
    if (x.firstPiece + ((x.end() - 1) / cs - x.origin / cs) > UINT32_MAX) {
      return failure(Status::corruption(
          fmt::format("dentry '{}' of {}: an extent spans more chunk pieces than can be numbered",
                      name, object)));
    }
  }
  return inode;
}

Result<std::optional<Dentry>> Volume::readDentry(const Location& where) {
  SyncStore store(store_);
  TIERFS_ASSIGN_OR_RETURN(auto values, store.omapGet(where.object, {where.key}));
  auto it = values.find(where.key);
  if (it == values.end()) return std::optional<Dentry>();
  TIERFS_ASSIGN_OR_RETURN(Inode inode, decodeDentry(it->second, where.object, where.key));
  return std::optional<Dentry>(Dentry{std::move(inode), std::move(it->second)});
}

Result<DirPage> Volume::listDir(Ino dir, const std::string& startAfter, std::uint32_t max) {
  SyncStore store(store_);
  TIERFS_ASSIGN_OR_RETURN(
      backends::OmapPage page,
      store.omapList(dirObject(dir), {.startAfter = startAfter, .maxEntries = max}));
  DirPage out;
  out.more = page.more;
  out.version = page.version;
  TIERFS_ASSIGN_OR_RETURN(out.entries, decodeEntries(dir, std::move(page.entries)));
  return out;
}

Result<std::uint64_t> Volume::dirVersion(Ino dir) {
  TIERFS_ASSIGN_OR_RETURN(backends::ObjectStat stat, SyncStore(store_).stat(dirObject(dir)));
  return stat.version;
}

Result<std::vector<std::pair<std::string, Dentry>>> Volume::decodeEntries(
    Ino dir, std::vector<std::pair<std::string, std::string>> entries) const {
  const std::string object = dirObject(dir);
  std::vector<std::pair<std::string, Dentry>> out;
  out.reserve(entries.size());
  for (auto& [name, value] : entries) {
    TIERFS_ASSIGN_OR_RETURN(Inode inode, decodeDentry(value, object, name));
    out.emplace_back(std::move(name), Dentry{std::move(inode), std::move(value)});
  }
  return out;
}

Status Volume::updateDir(const std::string& object, const std::vector<DentryUpdate>& updates,
                         const Timestamp& changedAt, bool namesChange) {
  WriteOp op;
  op.assertExists();
  bool adds = false, entriesChange = namesChange;
  for (const auto& u : updates) {
    op.omapEquals(u.key, u.expected);
    adds = adds || (u.expected.empty() && !u.replacement.empty());
    entriesChange = entriesChange || u.expected.empty() || u.replacement.empty();
  }
  if (object != kVolumeObject) {
    if (adds) op.xattrEquals(std::string(kRemovingXattr), "");
    if (entriesChange) op.setXattr(std::string(kDirMtimeXattr), formatTime(changedAt));
  }
  for (const auto& u : updates) {
    if (u.replacement.empty()) {
      op.omapRemove(u.key);
    } else {
      op.omapSet(u.key, u.replacement);
    }
  }
  return statusOf(SyncStore(store_).mutate(object, std::move(op)));
}

Result<std::optional<Timestamp>> Volume::dirMtime(Ino dir) {
  auto value = SyncStore(store_).getXattr(dirObject(dir), std::string(kDirMtimeXattr));
  if (!value && value.error().isNotFound()) return std::optional<Timestamp>();
  TIERFS_RETURN_IF_ERROR(statusOf(value));
  if (value->empty()) return std::optional<Timestamp>();
  auto t = parseTime(*value);
  if (!t) {
    return failure(Status::corruption(
        fmt::format("{}: xattr {} holds '{}'", dirObject(dir), kDirMtimeXattr, *value)));
  }
  return t;
}

Status Volume::setDirMtime(Ino dir, const Timestamp& mtime) {
  return statusOf(SyncStore(store_).mutate(
      dirObject(dir), std::move(WriteOp().assertExists().setXattr(std::string(kDirMtimeXattr),
                                                                  formatTime(mtime)))));
}

Status Volume::recordIntent(const std::string& key, const std::string& encoded) {
  return statusOf(SyncStore(store_).mutate(std::string(kJournalObject),
                                           std::move(WriteOp().omapSet(key, encoded))));
}

Status Volume::clearIntent(const std::string& key) {
  return statusOf(
      SyncStore(store_).mutate(std::string(kJournalObject), std::move(WriteOp().omapRemove(key))));
}

Result<std::vector<std::pair<std::string, std::string>>> Volume::listIntents() {
  SyncStore store(store_);
  std::vector<std::pair<std::string, std::string>> out;
  backends::OmapListArgs args;
  for (;;) {
    auto page = store.omapList(std::string(kJournalObject), args);
    if (!page && page.error().isNotFound()) return out;  // no rename ever crossed directories
    TIERFS_RETURN_IF_ERROR(statusOf(page));
    for (auto& e : page->entries) out.push_back(std::move(e));
    if (!page->more || out.empty()) return out;
    args.startAfter = out.back().first;
  }
}

Status Volume::createDirObject(Ino dir) {
  return statusOf(SyncStore(store_).mutate(dirObject(dir), std::move(WriteOp().createExclusive())));
}

Status Volume::sealEmptyDir(Ino dir) {
  SyncStore store(store_);
  const std::string object = dirObject(dir);
  TIERFS_RETURN_IF_ERROR(statusOf(store.mutate(
      object, std::move(WriteOp().assertExists().setXattr(std::string(kRemovingXattr), "1")))));
  auto page = store.omapList(object, {.maxEntries = 1});
  if (page && page->entries.empty()) return Status::ok();
  TIERFS_RETURN_IF_ERROR(unsealDir(dir));
  TIERFS_RETURN_IF_ERROR(statusOf(page));
  return Status::posix(ENOTEMPTY, fmt::format("directory {} is not empty", object));
}

Status Volume::unsealDir(Ino dir) {
  return statusOf(SyncStore(store_).mutate(
      dirObject(dir),
      std::move(WriteOp().assertExists().setXattr(std::string(kRemovingXattr), ""))));
}

Status Volume::dropDirObject(Ino dir) {
  auto r = SyncStore(store_).remove(dirObject(dir));
  if (!r && !r.error().isNotFound()) return r.error();
  return Status::ok();
}

}  // namespace tierfs::fs
