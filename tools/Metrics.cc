#include "tools/Metrics.h"

#include <fmt/format.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <limits>
#include <stdexcept>

#include "cache/SizingAdvisor.h"
#include "common/Slabs.h"
#include "common/Version.h"
#include "tools/Allocator.h"

namespace tierfs::tools {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

// Families in the order they are added; one family per name.
class FamilyList {
 public:
  void add(const char* name, const char* help, MetricType type, double value, Labels labels = {}) {
    ClientMetric m;
    m.label = std::move(labels);
    (type == MetricType::Counter ? m.counter.value : m.gauge.value) = value;
    family(name, help, type).metric.push_back(std::move(m));
  }
  void counter(const char* name, const char* help, double value, Labels labels = {}) {
    add(name, help, MetricType::Counter, value, std::move(labels));
  }
  void gauge(const char* name, const char* help, double value, Labels labels = {}) {
    add(name, help, MetricType::Gauge, value, std::move(labels));
  }
  void histogram(const char* name, const char* help, const LatencyHistogram& h, Labels labels) {
    const LatencyHistogram::Snapshot s = h.snapshot();
    ClientMetric m;
    m.label = std::move(labels);
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
      cumulative += s.counts[b];
      const double bound = b < LatencyHistogram::kBoundsNs.size()
                               ? LatencyHistogram::kBoundsNs[b] / 1e9
                               : std::numeric_limits<double>::infinity();
      m.histogram.bucket.push_back({cumulative, bound});
    }
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = s.sumNs / 1e9;
    family(name, help, MetricType::Histogram).metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() { return std::move(families_); }

  // A family, even while it has no series (counters of failures that have not happened): its
  // name stays known to dashboards and alerts.
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    if (families_.empty() || families_.back().name != name) {
      families_.push_back(MetricFamily{name, help, type, {}});
    }
    return families_.back();
  }

 private:
  std::vector<MetricFamily> families_;
};

// Latency histograms and failures by status code of one set of operations.
template <typename Op>
void addOps(FamilyList& out, const char* latencyName, const char* latencyHelp,
            const char* errorName, const char* errorHelp, const OpMetrics<Op>& ops,
            std::string_view (*opName)(Op)) {
  for (std::size_t i = 0; i < OpMetrics<Op>::kOps; ++i) {
    const Op op = static_cast<Op>(i);
    out.histogram(latencyName, latencyHelp, ops.latency(op), {{"op", std::string(opName(op))}});
  }
  out.family(errorName, errorHelp, MetricType::Counter);
  for (std::size_t i = 0; i < OpMetrics<Op>::kOps; ++i) {
    const Op op = static_cast<Op>(i);
    for (std::size_t c = 1; c < OpMetrics<Op>::kCodes; ++c) {
      const auto code = static_cast<StatusCode>(c);
      // Only codes seen: 13 codes x 25 operations of zeros would bury the ones that matter.
      if (std::uint64_t n = ops.errors(op, code)) {
        out.counter(errorName, errorHelp, static_cast<double>(n),
                    {{"op", std::string(opName(op))}, {"code", std::string(statusCodeName(code))}});
      }
    }
  }
}

void addCache(FamilyList& out, const MetricsSources& src) {
  const cache::ChunkCacheStats c = src.stack.chunks->stats();
  const char* hits = "Chunk reads answered by a cache tier";
  out.counter("tierfs_cache_hits_total", hits, c.memoryHits, {{"tier", "memory"}});
  out.counter("tierfs_cache_hits_total", hits, c.deviceHits, {{"tier", "device"}});
  out.counter("tierfs_cache_misses_total", "Chunk reads fetched from the back end", c.backendReads);
  const char* bytes =
      "Bytes of chunk reads, by where they came from (device and back end: stored "
      "frames; memory: decoded)";
  out.counter("tierfs_cache_read_bytes_total", bytes, c.bytesFromMemory, {{"tier", "memory"}});
  out.counter("tierfs_cache_read_bytes_total", bytes, c.bytesFromDevice, {{"tier", "device"}});
  out.counter("tierfs_cache_read_bytes_total", bytes, c.bytesFromBackend, {{"tier", "backend"}});
  out.gauge("tierfs_cache_memory_capacity_bytes", "Capacity of the memory chunk cache",
            src.memoryCapacityBytes);
  out.gauge("tierfs_cache_memory_slab_bytes",
            "Memory in slabs for small chunks (the memory cache's, and reads in flight)",
            SlabAllocator::shared().slabBytes());
  out.gauge("tierfs_cache_entries", "Chunks kept on the cache devices", c.deviceEntries);
  out.counter("tierfs_cache_evicted_regions_total", "Device regions evicted to make room",
              c.deviceEvictedRegions);
  out.counter("tierfs_cache_corruptions_total",
              "Device cache entries that failed their checksum or could not be read (dropped)",
              c.deviceCorruptions);
  out.counter("tierfs_cache_not_admitted_total", "Chunks the admission policy kept off the devices",
              c.deviceNotAdmitted);
  out.counter("tierfs_prefetch_chunks_total",
              "Chunks fetched ahead of readers (read-ahead, hints, dataset sweeps)",
              c.prefetchedChunks);
  out.counter("tierfs_prefetch_used_chunks_total", "Prefetched chunks that a reader then asked for",
              c.prefetchUsed);
}

void addDevices(FamilyList& out, const MetricsSources& src) {
  if (!src.stack.devices) return;
  const auto usage = src.stack.devices->deviceUsage();
  for (const auto& d : usage) {
    out.gauge("tierfs_cache_device_used_bytes", "Bytes of live entries on a cache device",
              d.usedBytes, {{"device", d.name}});
  }
  for (const auto& d : usage) {
    out.gauge("tierfs_cache_device_capacity_bytes", "Capacity of a cache device's regions",
              d.capacityBytes, {{"device", d.name}});
  }
  for (const auto& d : usage) {
    out.gauge("tierfs_cache_device_up",
              "1 while a cache device serves, 0 once taken out of service after errors",
              d.failed ? 0 : 1, {{"device", d.name}});
  }
  const cache::ListingCacheStats l = src.stack.devices->listings().stats();
  out.counter("tierfs_listing_cache_hits_total", "Directory listings served from the cache",
              l.hits);
  out.counter("tierfs_listing_cache_misses_total", "Directory listings read from the back end",
              l.misses);
}

void addDaemon(FamilyList& out, const MetricsSources& src) {
  out.gauge("tierfs_build_info", "Always 1; the labels name the build", 1, {{"version", kVersion}});
  out.gauge("tierfs_dirty_bytes", "Bytes written on this node and not yet uploaded",
            src.stack.filesystem->unflushedBytes());
  const HeapFigures heap = heapFigures();
  out.gauge("tierfs_memory_heap_in_use_bytes", "Memory malloc has handed out and not taken back",
            heap.inUseBytes);
  out.gauge("tierfs_memory_heap_held_bytes",
            "Memory malloc holds from the kernel, in use or free for reuse", heap.heldBytes);
  if (!src.warm) return;
  const ControlService::WarmCounters w = src.warm();
  out.gauge("tierfs_warm_jobs", "Warm-ups running now", w.running);
  out.gauge("tierfs_warm_pending_files", "Files the running warm-ups have yet to handle",
            w.filesPending);
  out.counter("tierfs_warm_files_total", "Files handled by warm-ups", w.filesHandled);
  out.counter("tierfs_warm_fetched_bytes_total", "Bytes warm-ups read from the back end",
              w.fetchedBytes);
}

// The sizing advisor's view: the hit ratio its curves predict at the configured cache size, and
// the cache a 0.95 hit ratio needs (absent when no size up to the working set reaches it).
void addAdvisor(FamilyList& out, const MetricsSources& src) {
  if (!src.stack.advisor) return;
  const auto summaries = src.stack.advisor->summaries(src.stack.cacheBytes);
  auto name = [](const cache::CurveSummary& c) { return c.dataset.empty() ? "/" : c.dataset; };
  out.family("tierfs_advisor_predicted_hit_ratio",
             "Hit ratio the sizing advisor predicts at the configured cache size (dataset \"/\": "
             "the whole volume)",
             MetricType::Gauge);
  for (const auto& c : summaries) {
    out.gauge("tierfs_advisor_predicted_hit_ratio", "", c.hitRatioAtConfigured,
              {{"dataset", name(c)}});
  }
  out.family("tierfs_advisor_size_for_target_bytes",
             "Smallest cache the sizing advisor predicts reaches a 0.95 hit ratio",
             MetricType::Gauge);
  for (const auto& c : summaries) {
    if (c.bytesFor95) {
      out.gauge("tierfs_advisor_size_for_target_bytes", "", static_cast<double>(*c.bytesFor95),
                {{"dataset", name(c)}});
    }
  }
  out.family("tierfs_advisor_working_set_bytes", "Bytes of distinct chunks the advisor has seen",
             MetricType::Gauge);
  for (const auto& c : summaries) {
    out.gauge("tierfs_advisor_working_set_bytes", "", static_cast<double>(c.workingSetBytes),
              {{"dataset", name(c)}});
  }
}

std::vector<MetricFamily> collect(const MetricsSources& src) {
  FamilyList out;
  addDaemon(out, src);
  addCache(out, src);
  addDevices(out, src);
  addAdvisor(out, src);
  addOps(out, "tierfs_backend_request_duration_seconds",
         "Back-end calls, from issue to answer (or deadline)", "tierfs_backend_errors_total",
         "Back-end calls that failed, by status", src.store, backends::storeOpName);
  addOps(out, "tierfs_fuse_request_duration_seconds", "FUSE requests, from arrival to reply",
         "tierfs_fuse_errors_total", "FUSE requests answered with an error, by status", src.fuse,
         fs::fuseOpName);
  return out.take();
}

class Collector final : public prometheus::Collectable {
 public:
  explicit Collector(MetricsSources sources) : sources_(std::move(sources)) {}
  std::vector<MetricFamily> Collect() const override { return collect(sources_); }

 private:
  MetricsSources sources_;
};

}  // namespace

std::string renderMetrics(const MetricsSources& sources) {
  return prometheus::TextSerializer().Serialize(collect(sources));
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address,
                                                            MetricsSources sources) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(address, 1);
  } catch (const std::exception& e) {
    return failure(Status::invalidArgument(
        fmt::format("[metrics] address '{}' cannot be served: {}", address, e.what())));
  }
  auto collector = std::make_shared<Collector>(std::move(sources));
  server->exposer_->RegisterCollectable(collector);
  server->collectable_ = collector;
  return server;
}

MetricsServer::~MetricsServer() = default;

int MetricsServer::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

Result<std::unique_ptr<MetricsServer>> startMetrics(const DaemonConfig& cfg, FsStack& stack,
                                                    const ControlService& control,
                                                    fs::FuseServer& server,
                                                    MetricsRecorders& recorders) {
  if (!cfg.metrics.enabled) return std::unique_ptr<MetricsServer>();
  stack.store->setMetrics(&recorders.store);
  server.setMetrics(&recorders.fuse);
  MetricsSources sources{stack, recorders.store, recorders.fuse,
                         [&control] { return control.warmCounters(); }, cfg.cache.capacityBytes};
  TIERFS_ASSIGN_OR_RETURN(auto metrics, MetricsServer::start(cfg.metrics.address, sources));
  spdlog::info("metrics: serving Prometheus metrics on {} (port {})", cfg.metrics.address,
               metrics->port());
  return metrics;
}

}  // namespace tierfs::tools
