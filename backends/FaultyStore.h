#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "backends/ObjectStore.h"
#include "common/TimerQueue.h"

namespace tierfs::backends {

// The calls a fault rule may match: those of ObjectStore.
using FaultOp = StoreOp;

enum class FaultAction {
  kFail,            // answer `error` without reaching the inner store
  kDelay,           // reach the inner store after `delay`
  kHang,            // never answer (until releaseHung()); the caller's deadline still fires
  kFailAfterApply,  // let the inner store apply the call, then answer `error` (a lost reply)
  kCorruptRead,     // read succeeds but one byte of the data is flipped
};

struct FaultRule {
  std::optional<FaultOp> op;  // none: every call
  // Only objects whose name starts with this ("" = all). Calls that name no object
  // (listObjects, usage) are hit only by rules with an empty prefix.
  std::string oidPrefix;
  double probability = 1.0;  // chance that a matching call is hit (drawn from the seeded RNG)
  int count = -1;            // how many calls it hits before it retires (-1 = no limit)
  FaultAction action = FaultAction::kFail;
  Status error = Status::ioError("injected fault");
  Duration delay{};
};

// Decorates any store with latency, errors, hangs and partial failures on chosen operations:
// the store that tests use to prove that every caller copes with a misbehaving back end.
// Rules are matched in the order added; the first that hits decides. Seeded, so a failing test
// replays. Thread-safe. Hung calls are dropped (never answered) when the store is destroyed.
class FaultyStore final : public ObjectStore {
 public:
  FaultyStore(ObjectStore& inner, std::uint64_t seed);
  ~FaultyStore() override;

  std::string describe() const override;

  void addRule(FaultRule rule);
  void clearRules();
  // Calls hit by a fault so far.
  std::uint64_t injected() const;
  // Calls held by kHang right now.
  std::size_t hungCalls() const;
  // Lets every held call through to the inner store.
  void releaseHung();

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
  // Decides the fate of one call: `forward(cb)` passes it to the inner store with `cb`.
  template <typename T>
  void route(FaultOp op, const std::string& oid, Callback<T> done,
             std::function<void(Callback<T>)> forward);
  // The rule that hits this call, if any; consumes one use of it.
  std::optional<FaultRule> pick(FaultOp op, const std::string& oid);

  ObjectStore& inner_;
  mutable std::mutex mu_;  // guards the members below; never held while calling out
  std::vector<FaultRule> rules_;
  std::mt19937_64 rng_;
  std::uint64_t injected_ = 0;
  std::vector<std::function<void()>> hung_;
  TimerQueue delays_;  // last: its thread stops before the state above goes
};

}  // namespace tierfs::backends
