#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/ObjectStore.h"
#include "fs/Format.h"

namespace tierfs::fs {

// An inode as stored, with the exact bytes it was read as: commits guard on those bytes.
struct Dentry {
  Inode inode;
  std::string encoded;
};

// Where a dentry lives: a key of a directory object's omap (the root's is in the volume object).
struct Location {
  std::string object;
  std::string key;
  static Location of(Ino parent, std::string_view name);  // parent 0: the root's location
};

// One change to one dentry of a directory, made only if the dentry still reads `expected`
// ("" = absent). `replacement` "" removes it.
struct DentryUpdate {
  std::string key;
  std::string expected;
  std::string replacement;
};

struct DirPage {
  std::vector<std::pair<std::string, Dentry>> entries;  // sorted by name
  bool more = false;
  std::uint64_t version = 0;  // of the directory object the page was read from
};

struct VolumeOptions {
  std::uint32_t chunkSize = 4 << 20;
  cache::Codec codec = cache::Codec::kZstd;
  int zstdLevel = 1;
};

// A tierfs volume in an object store: its record, the id allocator, and the directory objects
// (docs/FORMAT.md). Blocking calls (they wait on the store); the store's timeout bounds each.
// Thread-safe. Status codes: those of the store; PreconditionFailed when an update's expectation
// did not hold (nothing changed); NotFound for a missing directory object.
class Volume {
 public:
  // mkfs: writes the volume record, the root directory and the id allocator. An existing volume
  // is AlreadyExists unless `force`, which first removes every object of the old volume.
  static Result<VolumeRecord> create(backends::ObjectStore& store, const VolumeOptions& options,
                                     bool force);
  // NotFound (saying to run mkfs) when the store holds no volume.
  static Result<std::unique_ptr<Volume>> open(backends::ObjectStore& store);

  const VolumeRecord& record() const { return record_; }
  backends::ObjectStore& store() { return store_; }

  // A number never handed out before in this volume: inode numbers and content versions.
  Result<std::uint64_t> newId();

  // The dentry at `where`; nullopt when absent.
  Result<std::optional<Dentry>> readDentry(const Location& where);
  // Up to `max` dentries of a directory after `startAfter`.
  Result<DirPage> listDir(Ino dir, const std::string& startAfter, std::uint32_t max);
  // The version of the directory's object: it changes with every change to its entries.
  Result<std::uint64_t> dirVersion(Ino dir);
  // Dentries of `dir` as its omap holds them (name -> encoded inode), decoded and checked.
  Result<std::vector<std::pair<std::string, Dentry>>> decodeEntries(
      Ino dir, std::vector<std::pair<std::string, std::string>> entries) const;
  // Applies the updates to one directory atomically. Adding a dentry also requires that the
  // directory is not being removed (see sealEmptyDir); adding or removing one sets the
  // directory's mtime to `changedAt`, and so does any update when `namesChange` (a rename over an
  // existing entry replaces a dentry and changes the directory's names; a file's commit replaces
  // one and does not).
  Status updateDir(const std::string& object, const std::vector<DentryUpdate>& updates,
                   const Timestamp& changedAt = Timestamp::now(), bool namesChange = false);

  // When the directory's entries last changed (kept on the directory object by updateDir);
  // nullopt when never. setDirMtime makes an explicit utimens stick.
  Result<std::optional<Timestamp>> dirMtime(Ino dir);
  Status setDirMtime(Ino dir, const Timestamp& mtime);

  // Rename intents in the journal object (the key orders them by age).
  Status recordIntent(const std::string& key, const std::string& encoded);
  Status clearIntent(const std::string& key);
  Result<std::vector<std::pair<std::string, std::string>>> listIntents();

  Status createDirObject(Ino dir);
  // Marks the directory as being removed (so no entry can be added), checks it is empty
  // (ENOTEMPTY otherwise, and the mark is lifted), and returns; the caller then removes the
  // dentry and calls dropDirObject.
  Status sealEmptyDir(Ino dir);
  Status unsealDir(Ino dir);
  Status dropDirObject(Ino dir);

 private:
  Volume(backends::ObjectStore& store, VolumeRecord record) : store_(store), record_(record) {}
  Result<Inode> decodeDentry(std::string_view value, std::string_view object,
                             std::string_view name) const;

  backends::ObjectStore& store_;
  const VolumeRecord record_;

  std::mutex idMu_;  // guards the id block below; held across the allocator's store round trip
  std::uint64_t nextId_ = 0;
  std::uint64_t idLimit_ = 0;  // ids in [nextId_, idLimit_) are ours
};

}  // namespace tierfs::fs
