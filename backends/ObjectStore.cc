#include "backends/ObjectStore.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <memory>

namespace tierfs::backends {

// What a call is, for its error messages. Formatted only when there is an error to report,
// not on every call of the hot path.
struct CallName {
  StoreOp op;
  const char* verb;
  std::string object;
  std::string detail;  // e.g. the xattr name; may be empty

  std::string text() const {
    if (detail.empty()) return fmt::format("{} '{}'", verb, object);
    return fmt::format("{} '{}' of '{}'", verb, detail, object);
  }
};

std::string_view storeOpName(StoreOp op) {
  static constexpr std::array<std::string_view, static_cast<std::size_t>(StoreOp::kCount)> kNames =
      {"read", "stat", "get_xattr", "omap_get", "omap_list", "list_objects", "usage", "mutate"};
  return kNames[static_cast<std::size_t>(op)];
}

namespace {

template <typename T>
struct PendingCall {
  std::atomic<bool> answered{false};
  std::atomic<TimerQueue::TimerId> timer{0};
  Callback<T> done;
  CallName name;
  StoreMetrics* metrics = nullptr;
  Clock::time_point start;

  void record(StatusCode code) {
    if (metrics) metrics->record(name.op, Clock::now() - start, code);
  }
};

}  // namespace

template <typename T>
Callback<T> ObjectStore::withDeadline(Callback<T> done, Deadline& deadline, CallName name) {
  deadline = deadline.orAfter(defaultTimeout_);
  auto call = std::make_shared<PendingCall<T>>();
  call->done = std::move(done);
  call->name = std::move(name);
  call->metrics = metrics_.load(std::memory_order_relaxed);
  if (call->metrics) call->start = Clock::now();
  auto budgetMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
  call->timer = timers_.schedule(deadline.when(), [call, budgetMs] {
    if (call->answered.exchange(true)) return;
    call->record(StatusCode::kTimedOut);
    call->done(failure(Status::timedOut(
        fmt::format("{}: no answer within the deadline of {} ms", call->name.text(), budgetMs))));
  });
  return [this, call](Result<T> r) {
    if (call->answered.exchange(true)) return;  // the deadline fired first
    timers_.cancel(call->timer);
    call->record(r ? StatusCode::kOk : r.error().code());
    if (!r) r = failure(r.error().withContext(call->name.text()));
    call->done(std::move(r));
  };
}

void ObjectStore::read(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                       Callback<Bytes> done, Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kRead, "read", oid, {}});
  readImpl(oid, offset, length, std::move(cb), deadline);
}

void ObjectStore::stat(const std::string& oid, Callback<ObjectStat> done, Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kStat, "stat", oid, {}});
  statImpl(oid, std::move(cb), deadline);
}

void ObjectStore::getXattr(const std::string& oid, const std::string& name,
                           Callback<std::string> done, Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kGetXattr, "get xattr", oid, name});
  getXattrImpl(oid, name, std::move(cb), deadline);
}

void ObjectStore::omapGet(const std::string& oid, std::vector<std::string> keys,
                          Callback<std::map<std::string, std::string>> done, Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kOmapGet, "omap get on", oid, {}});
  omapGetImpl(oid, std::move(keys), std::move(cb), deadline);
}

void ObjectStore::omapList(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                           Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kOmapList, "omap list on", oid, {}});
  omapListImpl(oid, std::move(args), std::move(cb), deadline);
}

void ObjectStore::listObjects(const std::string& cursor, std::uint32_t maxEntries,
                              Callback<ObjectPage> done, Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline,
                         {StoreOp::kListObjects, "list objects of", describe(), {}});
  listObjectsImpl(cursor, maxEntries, std::move(cb), deadline);
}

void ObjectStore::usage(Callback<StoreUsage> done, Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kUsage, "usage of", describe(), {}});
  usageImpl(std::move(cb), deadline);
}

void ObjectStore::mutate(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                         Deadline deadline) {
  auto cb = withDeadline(std::move(done), deadline, {StoreOp::kMutate, "write", oid, {}});
  mutateImpl(oid, std::move(op), std::move(cb), deadline);
}

void ObjectStore::writeFull(const std::string& oid, Bytes data, Callback<std::uint64_t> done,
                            Deadline deadline) {
  mutate(oid, std::move(WriteOp().writeFull(std::move(data))), std::move(done), deadline);
}

void ObjectStore::createExclusive(const std::string& oid, Bytes data, Callback<std::uint64_t> done,
                                  Deadline deadline) {
  mutate(oid, std::move(WriteOp().createExclusive().writeFull(std::move(data))), std::move(done),
         deadline);
}

void ObjectStore::remove(const std::string& oid, Callback<std::uint64_t> done, Deadline deadline) {
  mutate(oid, std::move(WriteOp().remove()), std::move(done), deadline);
}

}  // namespace tierfs::backends
