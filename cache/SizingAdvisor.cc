#include "cache/SizingAdvisor.h"

namespace tierfs::cache {

Result<std::unique_ptr<SizingAdvisor>> SizingAdvisor::open(SizingAdvisorOptions options) {
  std::unique_ptr<TraceWriter> trace;
  if (!options.tracePath.empty()) {
    TIERFS_ASSIGN_OR_RETURN(trace, TraceWriter::open(options.tracePath));
  }
  auto advisor = std::make_unique<SizingAdvisor>(std::move(options));
  advisor->trace_ = std::move(trace);
  return advisor;
}

SizingAdvisor::SizingAdvisor(SizingAdvisorOptions options)
    : options_(std::move(options)),
      initialThreshold_(ShardsCurve::thresholdFor(options_.shards.sampleRate)),
      volume_(options_.shards) {}

void SizingAdvisor::recordDataset(std::uint64_t keyHash, std::uint64_t bytes,
                                  std::string_view dataset) {
  if (trace_) trace_->append(keyHash, bytes, dataset);
  if (ShardsCurve::spatialValue(keyHash) >= initialThreshold_) return;
  if (ShardsCurve* curve = curveFor(dataset)) curve->record(keyHash, bytes);
}

ShardsCurve* SizingAdvisor::curveFor(std::string_view dataset) {
  if (dataset.empty()) return nullptr;
  std::lock_guard lock(mu_);
  auto it = datasets_.find(dataset);
  if (it != datasets_.end()) return it->second.get();
  if (datasets_.size() >= options_.maxDatasets) return nullptr;  // counted in the volume's only
  ShardsOptions shards = options_.shards;
  shards.adjust = false;  // it sees only the accesses sampled at the initial rate
  auto curve = std::make_unique<ShardsCurve>(shards);
  ShardsCurve* raw = curve.get();
  datasets_.emplace(std::string(dataset), std::move(curve));
  return raw;
}

std::vector<std::pair<std::string, const ShardsCurve*>> SizingAdvisor::datasets() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, const ShardsCurve*>> out;
  for (const auto& [name, curve] : datasets_) out.emplace_back(name, curve.get());
  return out;
}

const ShardsCurve* SizingAdvisor::dataset(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = datasets_.find(name);
  return it == datasets_.end() ? nullptr : it->second.get();
}

std::vector<CurveSummary> SizingAdvisor::summaries(std::uint64_t configuredBytes) const {
  constexpr double kTarget = 0.95;  // the hit ratio the metric reports a size for
  auto summarise = [&](std::string name, const ShardsCurve& c) {
    return CurveSummary{std::move(name), 1.0 - c.missRatio(configuredBytes),
                        c.smallestSizeFor(kTarget), c.workingSetBytes()};
  };
  std::vector<CurveSummary> out{summarise("", volume_)};
  for (const auto& [name, curve] : datasets()) out.push_back(summarise(name, *curve));
  return out;
}

}  // namespace tierfs::cache
