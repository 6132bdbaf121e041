#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/Deadline.h"
#include "common/Status.h"

namespace tierfs {

// A latency histogram cheap enough for every request: fixed bucket bounds and relaxed atomic
// counters, no lock (prometheus-cpp's own Histogram takes a mutex per observation). The bounds
// span a page-cache hit (tens of microseconds) to a back end in trouble (seconds).
class LatencyHistogram {
 public:
  static constexpr std::array<std::int64_t, 18> kBoundsNs = {
      25'000,      50'000,      100'000,      250'000,      500'000,      1'000'000,
      2'500'000,   5'000'000,   10'000'000,   25'000'000,   50'000'000,   100'000'000,
      250'000'000, 500'000'000, 1000'000'000, 2500'000'000, 5000'000'000, 10000'000'000};
  static constexpr std::size_t kBuckets = kBoundsNs.size() + 1;  // the last is +Inf

  void observe(Duration d) {
    const std::int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    std::size_t b = 0;
    while (b < kBoundsNs.size() && ns > kBoundsNs[b]) ++b;
    counts_[b].fetch_add(1, std::memory_order_relaxed);
    sumNs_.fetch_add(static_cast<std::uint64_t>(ns < 0 ? 0 : ns), std::memory_order_relaxed);
  }

  struct Snapshot {
    std::array<std::uint64_t, kBuckets> counts{};  // per bucket, not cumulative
    std::uint64_t sumNs = 0;
    std::uint64_t count() const {
      std::uint64_t n = 0;
      for (std::uint64_t c : counts) n += c;
      return n;
    }
  };
  Snapshot snapshot() const {
    Snapshot s;
    for (std::size_t b = 0; b < kBuckets; ++b)
      s.counts[b] = counts_[b].load(std::memory_order_relaxed);
    s.sumNs = sumNs_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> counts_{};
  std::atomic<std::uint64_t> sumNs_{0};
};

// Latency and failures of a fixed set of operations (FUSE requests, back-end calls), indexed by
// an enum whose last member is kCount. Failures are counted by status code.
template <typename Op>
class OpMetrics {
 public:
  static constexpr std::size_t kOps = static_cast<std::size_t>(Op::kCount);
  static constexpr std::size_t kCodes = static_cast<std::size_t>(StatusCode::kInternal) + 1;

  void record(Op op, Duration elapsed, StatusCode code) {
    const auto i = static_cast<std::size_t>(op);
    latency_[i].observe(elapsed);
    if (code != StatusCode::kOk) {
      errors_[i][static_cast<std::size_t>(code)].fetch_add(1, std::memory_order_relaxed);
    }
  }
  const LatencyHistogram& latency(Op op) const { return latency_[static_cast<std::size_t>(op)]; }
  std::uint64_t errors(Op op, StatusCode code) const {
    return errors_[static_cast<std::size_t>(op)][static_cast<std::size_t>(code)].load(
        std::memory_order_relaxed);
  }

 private:
  std::array<LatencyHistogram, kOps> latency_;
  std::array<std::array<std::atomic<std::uint64_t>, kCodes>, kOps> errors_{};
};

}  // namespace tierfs
