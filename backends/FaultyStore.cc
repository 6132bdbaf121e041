#include "backends/FaultyStore.h"

namespace tierfs::backends {

FaultyStore::FaultyStore(ObjectStore& inner, std::uint64_t seed)
    : ObjectStore(inner.defaultTimeout()), inner_(inner), rng_(seed) {}

FaultyStore::~FaultyStore() = default;

std::string FaultyStore::describe() const { return "faulty " + inner_.describe(); }

void FaultyStore::addRule(FaultRule rule) {
  std::lock_guard lock(mu_);
  rules_.push_back(std::move(rule));
}

void FaultyStore::clearRules() {
  std::lock_guard lock(mu_);
  rules_.clear();
}

std::uint64_t FaultyStore::injected() const {
  std::lock_guard lock(mu_);
  return injected_;
}

std::size_t FaultyStore::hungCalls() const {
  std::lock_guard lock(mu_);
  return hung_.size();
}

void FaultyStore::releaseHung() {
  std::vector<std::function<void()>> calls;
  {
    std::lock_guard lock(mu_);
    calls.swap(hung_);
  }
  for (auto& call : calls) call();
}

std::optional<FaultRule> FaultyStore::pick(FaultOp op, const std::string& oid) {
  std::lock_guard lock(mu_);
  for (auto& rule : rules_) {
    if (rule.count == 0) continue;
    if (rule.op && *rule.op != op) continue;
    if (!oid.starts_with(rule.oidPrefix)) continue;
    if (rule.probability < 1.0 &&
        std::uniform_real_distribution<>(0, 1)(rng_) >= rule.probability) {
      continue;
    }
    if (rule.count > 0) --rule.count;
    ++injected_;
    return rule;
  }
  return std::nullopt;
}

template <typename T>
void FaultyStore::route(FaultOp op, const std::string& oid, Callback<T> done,
                        std::function<void(Callback<T>)> forward) {
  auto rule = pick(op, oid);
  if (!rule) return forward(std::move(done));
  switch (rule->action) {
    case FaultAction::kFail:
      return done(failure(rule->error));
    case FaultAction::kDelay:
      delays_.schedule(Clock::now() + rule->delay, [forward, done] { forward(done); });
      return;
    case FaultAction::kHang: {
      std::lock_guard lock(mu_);
      hung_.push_back([forward, done] { forward(done); });
      return;
    }
    case FaultAction::kFailAfterApply:
      return forward([done, error = rule->error](Result<T>) { done(failure(error)); });
    case FaultAction::kCorruptRead:
      if constexpr (std::is_same_v<T, Bytes>) {
        std::uint64_t pickByte;
        {
          std::lock_guard lock(mu_);
          pickByte = rng_();
        }
        return forward([done, pickByte](Result<T> r) {
          if (r && !r->empty()) {
            std::string damaged = r->toString();
            damaged[pickByte % damaged.size()] ^= 0x5a;
            r = Bytes(std::move(damaged));
          }
          done(std::move(r));
        });
      }
      return forward(std::move(done));
  }
}

void FaultyStore::readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                           Callback<Bytes> done, Deadline deadline) {
  route<Bytes>(FaultOp::kRead, oid, std::move(done), [=, this](Callback<Bytes> cb) {
    inner_.read(oid, offset, length, std::move(cb), deadline);
  });
}

void FaultyStore::statImpl(const std::string& oid, Callback<ObjectStat> done, Deadline deadline) {
  route<ObjectStat>(FaultOp::kStat, oid, std::move(done), [=, this](Callback<ObjectStat> cb) {
    inner_.stat(oid, std::move(cb), deadline);
  });
}

void FaultyStore::getXattrImpl(const std::string& oid, const std::string& name,
                               Callback<std::string> done, Deadline deadline) {
  route<std::string>(FaultOp::kGetXattr, oid, std::move(done), [=, this](Callback<std::string> cb) {
    inner_.getXattr(oid, name, std::move(cb), deadline);
  });
}

void FaultyStore::omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                              Callback<std::map<std::string, std::string>> done,
                              Deadline deadline) {
  using Values = std::map<std::string, std::string>;
  route<Values>(FaultOp::kOmapGet, oid, std::move(done), [=, this](Callback<Values> cb) {
    inner_.omapGet(oid, keys, std::move(cb), deadline);
  });
}

void FaultyStore::omapListImpl(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                               Deadline deadline) {
  route<OmapPage>(FaultOp::kOmapList, oid, std::move(done), [=, this](Callback<OmapPage> cb) {
    inner_.omapList(oid, args, std::move(cb), deadline);
  });
}

void FaultyStore::listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                                  Callback<ObjectPage> done, Deadline deadline) {
  route<ObjectPage>(FaultOp::kListObjects, "", std::move(done), [=, this](Callback<ObjectPage> cb) {
    inner_.listObjects(cursor, maxEntries, std::move(cb), deadline);
  });
}

void FaultyStore::usageImpl(Callback<StoreUsage> done, Deadline deadline) {
  route<StoreUsage>(FaultOp::kUsage, "", std::move(done),
                    [=, this](Callback<StoreUsage> cb) { inner_.usage(std::move(cb), deadline); });
}

void FaultyStore::mutateImpl(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                             Deadline deadline) {
  route<std::uint64_t>(
      FaultOp::kMutate, oid, std::move(done),
      [=, this](Callback<std::uint64_t> cb) { inner_.mutate(oid, op, std::move(cb), deadline); });
}

}  // namespace tierfs::backends
