#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/control/Socket.h"
#include "fs/TreeCache.h"
#include "tools/MountConfig.h"

namespace tierfs::tools {

// The daemon's end of `tierfs warm`, `status` and `evict`: answers control requests over the
// mounted stack (its volume, chunk cache and cache devices).
class ControlService {
 public:
  ControlService(FsStack& stack, std::string mountpoint);
  void handle(const control::Request& request, control::Connection& connection);

  // Warm-ups of this daemon so far, for its metrics.
  struct WarmCounters {
    std::uint64_t running = 0;       // jobs now
    std::uint64_t filesHandled = 0;  // files checked or fetched
    std::uint64_t filesPending = 0;  // of the running jobs, not yet handled
    std::uint64_t fetchedBytes = 0;  // read from the back end
  };
  WarmCounters warmCounters() const;

 private:
  void status(const control::StatusRequest& r, control::Connection& c);
  void warm(const control::WarmRequest& r, control::Connection& c);
  void evict(const control::EvictRequest& r, control::Connection& c);
  void hint(const control::HintRequest& r, control::Connection& c);
  void advise(const control::AdviseRequest& r, control::Connection& c);
  control::DaemonStatus daemonStatus() const;

  FsStack& stack_;
  const std::string mountpoint_;
  fs::TreeCache trees_;
  void countWarmProgress(const control::WarmProgress& before, const control::WarmProgress& now);

  std::atomic<std::uint64_t> warmJobs_{0};
  std::atomic<std::uint64_t> warmFilesHandled_{0}, warmFilesPending_{0}, warmFetchedBytes_{0};
};

// Starts the control socket of a mounted stack (cfg.controlSocket, the caller's uid as owner).
Result<std::unique_ptr<control::Server>> startControl(const DaemonConfig& cfg,
                                                      ControlService& service);

}  // namespace tierfs::tools
