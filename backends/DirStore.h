#pragma once

#include <array>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>

#include "backends/ObjectStore.h"
#include "common/ThreadPool.h"

namespace rocksdb {
class DB;
class Snapshot;
}  // namespace rocksdb

namespace tierfs::backends {
namespace dirkeys {
struct ObjectRecord;
}

struct DirStoreOptions {
  std::filesystem::path root;
  bool create = true;    // create an empty store when root holds none
  bool durable = true;   // fsync data and metadata before a write is acknowledged
  unsigned threads = 4;  // workers running the blocking file and RocksDB calls
  Duration timeout = std::chrono::seconds(30);
};

// A local directory as an object store, with the same semantics as RADOS: the embedded default
// back end (a newcomer mounts tierfs without a cluster) and the store for fast unit tests.
//
// Layout under root: `data/XX/<object hash>.<unique id>` holds each object's bytes, written
// whole to a fresh file and never modified; `meta/` is a RocksDB with, per object, its record
// (version, size, mtime, data file id), its xattrs and its omap. A mutation checks its guards and
// commits one RocksDB write batch under the object's lock stripe, so it is atomic; new data files
// are written and synced before that commit, and replaced ones are unlinked after it.
// One process at a time: a second open fails with Unavailable (RocksDB's lock).
class DirStore final : public ObjectStore {
 public:
  static Result<std::unique_ptr<DirStore>> open(const DirStoreOptions& options);
  ~DirStore() override;

  std::string describe() const override;

 protected:
  void readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                Callback<Bytes> done, Deadline deadline) override;
  void statImpl(const std::string& oid, Callback<ObjectStat> done, Deadline deadline) override;
  void getXattrImpl(const std::string& oid, const std::string& name, Callback<std::string> done,
                    Deadline deadline) override;
  void omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                   Callback<std::map<std::string, std::string>> done, Deadline deadline) override;
  void omapListImpl(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                    Deadline deadline) override;
  void listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                       Callback<ObjectPage> done, Deadline deadline) override;
  void usageImpl(Callback<StoreUsage> done, Deadline deadline) override;
  void mutateImpl(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                  Deadline deadline) override;

 private:
  DirStore(const DirStoreOptions& options, std::unique_ptr<rocksdb::DB> db);

  // Runs `work` on a worker unless the deadline passed while it waited in the queue.
  template <typename T, typename Work>
  void submit(Callback<T> done, Deadline deadline, Work work);

  Result<std::string> readSync(const std::string& oid, std::uint64_t offset, std::uint64_t length);
  // The object's record, as of `snapshot` when one is given.
  Result<dirkeys::ObjectRecord> loadRecord(const std::string& oid,
                                           const rocksdb::Snapshot* snapshot = nullptr);
  Result<std::map<std::string, std::string>> omapGetSync(const std::string& oid,
                                                         const std::vector<std::string>& keys);
  Result<OmapPage> omapListSync(const std::string& oid, const OmapListArgs& args);
  Result<ObjectPage> listObjectsSync(const std::string& cursor, std::uint32_t maxEntries);
  Result<StoreUsage> usageSync();
  Result<std::uint64_t> countObjects();
  Result<std::uint64_t> mutateSync(const std::string& oid, const WriteOp& op);
  Result<std::uint64_t> commitLocked(const std::string& oid, const WriteOp& op,
                                     const std::vector<std::uint64_t>& newDataIds,
                                     std::vector<std::uint64_t>& toUnlink);
  Status checkGuards(const std::string& oid, const WriteOp& op, bool exists);
  Status compareStored(const std::string& key, const std::string& expected, bool exists,
                       const std::string& what);

  std::filesystem::path dataPath(const std::string& oid, std::uint64_t dataId) const;
  Result<std::uint64_t> writeDataFile(const std::string& oid, std::string_view data);
  void unlinkDataFile(const std::string& oid, std::uint64_t dataId);
  std::mutex& stripeFor(const std::string& oid);

  static constexpr std::size_t kStripes = 64;  // why: enough to keep 32 writers mostly apart

  DirStoreOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::array<std::mutex, kStripes> stripes_;  // a mutation of an object holds its stripe
  // Both start at the clock's microseconds so that ids and versions never repeat across
  // restarts (a recreated object gets a higher version, as in RADOS).
  std::atomic<std::uint64_t> nextDataId_;
  std::atomic<std::uint64_t> nextVersion_;
  // The object count is exact and cheap after the first usage() call: that call counts the
  // record keys once (one scan of a RocksDB snapshot), and every commit adds its change to
  // objectsDelta_ under the gate below. objectsAtOpen_ = count at the snapshot - delta then.
  std::atomic<std::int64_t> objectsDelta_{0};  // objects created minus removed since open
  // Commits hold it shared (taken before their stripe); the first count holds it exclusively, so
  // that no commit is between its write and its count when the snapshot is pinned.
  std::shared_mutex commitGate_;
  std::mutex countMu_;  // guards objectsAtOpen_; held during the scan
  std::optional<std::int64_t> objectsAtOpen_;
  ThreadPool workers_;  // last: its threads stop before the state above is destroyed
};

}  // namespace tierfs::backends
