#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/WriteOp.h"
#include "common/Bytes.h"
#include "common/Deadline.h"
#include "common/LatencyHistogram.h"
#include "common/Result.h"
#include "common/TimerQueue.h"

namespace tierfs::backends {

template <typename T>
using Callback = std::function<void(Result<T>)>;

// Length for read(): everything from the offset to the end of the object.
inline constexpr std::uint64_t kToEnd = 0;

struct ObjectStat {
  std::uint64_t size = 0;
  std::uint64_t version = 0;  // changes on every mutation of the object
  std::int64_t mtimeSec = 0;
};

struct OmapListArgs {
  std::string prefix;      // only keys starting with this
  std::string startAfter;  // only keys strictly greater than this ("" = from the first)
  std::uint32_t maxEntries = 1000;
};

struct OmapPage {
  std::vector<std::pair<std::string, std::string>> entries;  // sorted by key
  bool more = false;          // more keys may follow: ask again with startAfter = last key
  std::uint64_t version = 0;  // the object's version (ObjectStat) that the page was read at
};

struct ObjectPage {
  std::vector<std::string> names;  // in the store's own order (hash order on RADOS)
  std::string nextCursor;          // pass back to continue; meaningful only when more
  bool more = false;
};

// Space and object count of a store, for statfs. Bytes are the capacity of what holds the
// objects (the file system of a dir store, the whole cluster for RADOS), as `df` shows it:
// usedBytes + availBytes may fall short of totalBytes (reserved blocks, overheads).
struct StoreUsage {
  std::uint64_t totalBytes = 0;
  std::uint64_t usedBytes = 0;
  std::uint64_t availBytes = 0;  // what an unprivileged writer can still use
  std::uint64_t objects = 0;     // objects in the store (on RADOS: the whole pool, see RadosStore)
};

struct CallName;  // what a call is, for its error messages (ObjectStore.cc)

// The calls of a store, for its metrics.
enum class StoreOp {
  kRead,
  kStat,
  kGetXattr,
  kOmapGet,
  kOmapList,
  kListObjects,
  kUsage,
  kMutate,
  kCount
};
std::string_view storeOpName(StoreOp op);  // "read", "omap_list", ...
using StoreMetrics = OpMetrics<StoreOp>;

// A flat namespace of named objects with data, xattrs and an ordered key-value map (omap): the
// operations the volume format needs, with RADOS semantics on every implementation.
//
// Asynchronous: each call returns at once and runs `done` exactly once, on a thread of the
// store's choosing (a librados finisher, a worker, or the deadline timer). Callbacks must be short
// and must not block or call back into a blocking wait on the same store.
//
// Deadlines: every operation ends by its deadline (or the store's default timeout when the
// deadline is unset) with TimedOut if the store has not answered. A write that timed out has an
// unknown outcome: it may still be applied.
//
// Status codes: NotFound (absent object, xattr), AlreadyExists, PreconditionFailed (a guard did
// not hold; nothing was applied), TimedOut, Unavailable, InvalidArgument, NoSpace, IoError,
// Corruption. Error messages name the operation and the object.
//
// Thread-safe. The store must outlive every callback it owes.
class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // A one-line description for logs and errors ("rados pool 'data' as client.tierfs").
  virtual std::string describe() const = 0;

  // Reads up to `length` bytes at `offset` (kToEnd: to the end). Past the end: fewer bytes or none.
  void read(const std::string& oid, std::uint64_t offset, std::uint64_t length,
            Callback<Bytes> done, Deadline deadline = {});
  void stat(const std::string& oid, Callback<ObjectStat> done, Deadline deadline = {});
  void getXattr(const std::string& oid, const std::string& name, Callback<std::string> done,
                Deadline deadline = {});
  // Values of those keys that exist; missing keys are absent from the map.
  void omapGet(const std::string& oid, std::vector<std::string> keys,
               Callback<std::map<std::string, std::string>> done, Deadline deadline = {});
  void omapList(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                Deadline deadline = {});
  // A page of object names; start with an empty cursor. For fsck and admin tools.
  void listObjects(const std::string& cursor, std::uint32_t maxEntries, Callback<ObjectPage> done,
                   Deadline deadline = {});
  // Capacity, space used and object count, for statfs. May lag behind recent writes where the
  // store's own statistics do (RADOS); Unavailable when the store cannot tell.
  void usage(Callback<StoreUsage> done, Deadline deadline = {});

  // Applies `op` atomically (see WriteOp); yields the object's new version.
  void mutate(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
              Deadline deadline = {});

  // Conveniences over mutate().
  void writeFull(const std::string& oid, Bytes data, Callback<std::uint64_t> done,
                 Deadline deadline = {});
  void createExclusive(const std::string& oid, Bytes data, Callback<std::uint64_t> done,
                       Deadline deadline = {});
  void remove(const std::string& oid, Callback<std::uint64_t> done, Deadline deadline = {});

  Duration defaultTimeout() const { return defaultTimeout_; }
  // From now on every call's latency (to its answer or its deadline) and outcome are recorded in
  // `metrics` (null: not recorded), which must outlive the store.
  void setMetrics(StoreMetrics* metrics) { metrics_.store(metrics, std::memory_order_relaxed); }

 protected:
  explicit ObjectStore(Duration defaultTimeout) : defaultTimeout_(defaultTimeout) {}

  // Implementations answer through `done` exactly once. The base class has already applied the
  // deadline (a late answer is dropped) and adds the operation and object to error messages.
  virtual void readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                        Callback<Bytes> done, Deadline deadline) = 0;
  virtual void statImpl(const std::string& oid, Callback<ObjectStat> done, Deadline deadline) = 0;
  virtual void getXattrImpl(const std::string& oid, const std::string& name,
                            Callback<std::string> done, Deadline deadline) = 0;
  virtual void omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                           Callback<std::map<std::string, std::string>> done,
                           Deadline deadline) = 0;
  virtual void omapListImpl(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                            Deadline deadline) = 0;
  virtual void listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                               Callback<ObjectPage> done, Deadline deadline) = 0;
  virtual void usageImpl(Callback<StoreUsage> done, Deadline deadline) = 0;
  virtual void mutateImpl(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                          Deadline deadline) = 0;

 private:
  // Wraps `done` so that it runs once: with the answer, or with TimedOut at the deadline.
  template <typename T>
  Callback<T> withDeadline(Callback<T> done, Deadline& deadline, CallName name);

  Duration defaultTimeout_;
  TimerQueue timers_;
  std::atomic<StoreMetrics*> metrics_{nullptr};
};

}  // namespace tierfs::backends
