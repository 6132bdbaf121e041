#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/AccessTrace.h"
#include "cache/ShardsCurve.h"

namespace tierfs::cache {

struct SizingAdvisorOptions {
  ShardsOptions shards;          // for each curve
  std::size_t maxDatasets = 32;  // dataset curves at most; later datasets count in the volume's
  std::string tracePath;         // when set, every access is appended there (AccessTrace.h)
};

// What the metrics show of one curve.
struct CurveSummary {
  std::string dataset;  // "" for the whole volume
  double hitRatioAtConfigured = 0;
  std::optional<std::uint64_t> bytesFor95;  // the smallest cache with a 0.95 hit ratio
  std::uint64_t workingSetBytes = 0;
};

// The sizing advisor behind `tierfs advise` (docs/ADVISOR.md): miss-ratio curves of the chunk
// accesses of demand reads, one for the volume and one per top-level dataset directory (the
// first maxDatasets seen), each a fixed-size SHARDS sample (ShardsCurve).
//
// The volume's curve sees every access and is SHARDS_adj; a dataset's curve sees the accesses
// sampled at the initial rate only (working out a dataset for every read would cost the reader
// more than sampling does), so it is plain SHARDS.
//
// Thread-safe. A reader calls count() with each access: one counter bump, a hash and a compare
// for most; only when it says yes is the dataset worth working out for recordDataset().
class SizingAdvisor {
 public:
  // IoError when the trace file cannot be opened.
  static Result<std::unique_ptr<SizingAdvisor>> open(SizingAdvisorOptions options);
  explicit SizingAdvisor(SizingAdvisorOptions options);  // without a trace

  // One access to the key with hash `keyHash`, of `bytes` bytes, for the volume's curve. True
  // when a dataset curve may sample it too, or it is traced: then call recordDataset(). No curve
  // samples above the initial threshold, so one compare decides.
  bool count(std::uint64_t keyHash, std::uint64_t bytes) {
    volume_.record(keyHash, bytes);
    return trace_ || ShardsCurve::spatialValue(keyHash) < initialThreshold_;
  }
  // The rest of an access count() said yes to; `dataset` is "" for a file in the root.
  void recordDataset(std::uint64_t keyHash, std::uint64_t bytes, std::string_view dataset);
  // Both (offline replays, tests).
  void record(std::uint64_t keyHash, std::uint64_t bytes, std::string_view dataset) {
    if (count(keyHash, bytes)) recordDataset(keyHash, bytes, dataset);
  }

  const ShardsCurve& volume() const { return volume_; }
  // The dataset curves by name (the pointers live as long as the advisor).
  std::vector<std::pair<std::string, const ShardsCurve*>> datasets() const;
  const ShardsCurve* dataset(const std::string& name) const;
  std::size_t maxDatasets() const { return options_.maxDatasets; }

  // For the metrics: each curve's hit ratio at `configuredBytes` (the memory cache and the
  // devices together) and the smallest size reaching 0.95. The volume's comes first.
  std::vector<CurveSummary> summaries(std::uint64_t configuredBytes) const;

 private:
  ShardsCurve* curveFor(std::string_view dataset);

  const SizingAdvisorOptions options_;
  const std::uint32_t initialThreshold_;
  std::unique_ptr<TraceWriter> trace_;
  ShardsCurve volume_;
  mutable std::mutex mu_;  // guards datasets_ (the map, not the curves)
  std::map<std::string, std::unique_ptr<ShardsCurve>, std::less<>> datasets_;
};

}  // namespace tierfs::cache
