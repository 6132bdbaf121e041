#pragma once

#include <future>
#include <memory>
#include <utility>

#include "backends/ObjectStore.h"

namespace tierfs::backends {

// Runs an asynchronous call and waits for its answer, an `Answer` (a Result or a Status). `start`
// receives the callback to pass on. Never call from that call's callback (it would wait on itself).
template <typename Answer, typename Start>
Answer waitForAnswer(Start&& start) {
  auto promise = std::make_shared<std::promise<Answer>>();
  auto future = promise->get_future();
  start([promise](Answer a) { promise->set_value(std::move(a)); });
  return future.get();
}

// The same for a store call answering Result<T>.
template <typename T, typename Start>
Result<T> waitFor(Start&& start) {
  return waitForAnswer<Result<T>>(std::forward<Start>(start));
}

// Blocking view of an ObjectStore, for tools, tests and start-up code. Same semantics and
// errors as the asynchronous calls; does not own the store.
class SyncStore {
 public:
  explicit SyncStore(ObjectStore& store) : store_(store) {}

  ObjectStore& store() { return store_; }

  Result<Bytes> read(const std::string& oid, std::uint64_t offset = 0,
                     std::uint64_t length = kToEnd, Deadline d = {}) {
    return waitFor<Bytes>([&](auto cb) { store_.read(oid, offset, length, cb, d); });
  }
  Result<ObjectStat> stat(const std::string& oid, Deadline d = {}) {
    return waitFor<ObjectStat>([&](auto cb) { store_.stat(oid, cb, d); });
  }
  Result<std::string> getXattr(const std::string& oid, const std::string& name, Deadline d = {}) {
    return waitFor<std::string>([&](auto cb) { store_.getXattr(oid, name, cb, d); });
  }
  Result<std::map<std::string, std::string>> omapGet(const std::string& oid,
                                                     std::vector<std::string> keys,
                                                     Deadline d = {}) {
    return waitFor<std::map<std::string, std::string>>(
        [&](auto cb) { store_.omapGet(oid, std::move(keys), cb, d); });
  }
  Result<OmapPage> omapList(const std::string& oid, OmapListArgs args, Deadline d = {}) {
    return waitFor<OmapPage>([&](auto cb) { store_.omapList(oid, std::move(args), cb, d); });
  }
  Result<ObjectPage> listObjects(const std::string& cursor, std::uint32_t max, Deadline d = {}) {
    return waitFor<ObjectPage>([&](auto cb) { store_.listObjects(cursor, max, cb, d); });
  }
  Result<StoreUsage> usage(Deadline d = {}) {
    return waitFor<StoreUsage>([&](auto cb) { store_.usage(cb, d); });
  }
  Result<std::uint64_t> mutate(const std::string& oid, WriteOp op, Deadline d = {}) {
    return waitFor<std::uint64_t>([&](auto cb) { store_.mutate(oid, std::move(op), cb, d); });
  }
  Result<std::uint64_t> writeFull(const std::string& oid, Bytes data, Deadline d = {}) {
    return mutate(oid, std::move(WriteOp().writeFull(std::move(data))), d);
  }
  Result<std::uint64_t> createExclusive(const std::string& oid, Bytes data, Deadline d = {}) {
    return mutate(oid, std::move(WriteOp().createExclusive().writeFull(std::move(data))), d);
  }
  Result<std::uint64_t> remove(const std::string& oid, Deadline d = {}) {
    return mutate(oid, std::move(WriteOp().remove()), d);
  }

 private:
  ObjectStore& store_;
};

}  // namespace tierfs::backends
