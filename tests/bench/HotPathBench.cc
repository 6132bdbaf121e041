// What metrics and the sizing advisor add to each request (issue 6), as costs per call: a FUSE
// request or back-end call records its latency (two clock reads and a histogram observation);
// each chunk a reader asks for goes past the advisor (one hash compare for most, a sampled
// update for ~1%). Compare with the daemon's CPU per request (metrics_overhead.py prints ~90 us
// per small file, several requests each).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "cache/SizingAdvisor.h"
#include "common/LatencyHistogram.h"

namespace {

using tierfs::Clock;

enum class Op { kRead, kCount };

void BM_RecordRequestLatency(benchmark::State& state) {
  static tierfs::OpMetrics<Op> metrics;  // shared by the benchmark's threads, as in the daemon
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    benchmark::ClobberMemory();
    metrics.record(Op::kRead, Clock::now() - start, tierfs::StatusCode::kOk);
  }
}
BENCHMARK(BM_RecordRequestLatency)->Threads(1)->Threads(2);

void BM_AdvisorAccess(benchmark::State& state) {
  static tierfs::cache::SizingAdvisor advisor(tierfs::cache::SizingAdvisorOptions{});
  std::uint64_t key = 0x9e3779b97f4a7c15ULL * (state.thread_index() + 1);
  for (auto _ : state) {
    key = key * 6364136223846793005ULL + 1442695040888963407ULL;  // a working set of many keys
    const std::uint64_t hash = key % 1'000'000;                   // 1M distinct chunks, reused
    if (advisor.count(hash * 0x9e3779b97f4a7c15ULL, 110'000)) {
      advisor.recordDataset(hash * 0x9e3779b97f4a7c15ULL, 110'000, "train");
    }
  }
}
BENCHMARK(BM_AdvisorAccess)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
