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

 private:
  void status(const control::StatusRequest& r, control::Connection& c);
  void warm(const control::WarmRequest& r, control::Connection& c);
  void evict(const control::EvictRequest& r, control::Connection& c);
  void hint(const control::HintRequest& r, control::Connection& c);
  control::DaemonStatus daemonStatus() const;

  FsStack& stack_;
  const std::string mountpoint_;
  fs::TreeCache trees_;
  std::atomic<std::uint64_t> warmJobs_{0};
};

// Starts the control socket of a mounted stack (cfg.controlSocket, the caller's uid as owner).
Result<std::unique_ptr<control::Server>> startControl(const DaemonConfig& cfg,
                                                      ControlService& service);

}  // namespace tierfs::tools
