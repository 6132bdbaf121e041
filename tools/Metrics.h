#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/ObjectStore.h"
#include "common/Result.h"
#include "fs/fuse/FuseServer.h"
#include "tools/ControlService.h"
#include "tools/MountConfig.h"

namespace prometheus {
class Exposer;
}

namespace tierfs::tools {

// What a daemon's metrics are read from. Counters and gauges come from the stack's own counters
// at scrape time, so keeping them costs the I/O path nothing more; latencies are recorded per
// request in `store` and `fuse` (see MetricsRecorders).
struct MetricsSources {
  const FsStack& stack;
  const backends::StoreMetrics& store;
  const fs::FuseMetrics& fuse;
  std::function<ControlService::WarmCounters()> warm;
  std::uint64_t memoryCapacityBytes = 0;
};

// The per-request recorders of a daemon: live as long as the daemon, attached to its store and
// FUSE server only when metrics are on.
struct MetricsRecorders {
  backends::StoreMetrics store;
  fs::FuseMetrics fuse;
};

// Builds the text of every metric family now (Prometheus text format 0.0.4): what a scrape of the
// endpoint returns. For tests and `tierfs status --metrics`-like uses.
std::string renderMetrics(const MetricsSources& sources);

// The daemon's Prometheus endpoint ([metrics] address): an HTTP server (prometheus-cpp's
// civetweb) answering GET /metrics.
class MetricsServer {
 public:
  // Binds `address` ("127.0.0.1:9464"; port 0: any free port). InvalidArgument naming the
  // address when it cannot be bound.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address,
                                                      MetricsSources sources);
  ~MetricsServer();

  int port() const;  // the bound port

 private:
  MetricsServer() = default;
  std::shared_ptr<void> collectable_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // stops serving before the collector goes
};

// When [metrics] is on: attaches `recorders` to the stack's store and to `server` (before it
// mounts), and starts the endpoint. Null when metrics are off.
Result<std::unique_ptr<MetricsServer>> startMetrics(const DaemonConfig& cfg, FsStack& stack,
                                                    const ControlService& control,
                                                    fs::FuseServer& server,
                                                    MetricsRecorders& recorders);

}  // namespace tierfs::tools
