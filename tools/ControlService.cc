#include "tools/ControlService.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>

#include "fs/HintedPrefetch.h"
#include "tools/AdviseCommand.h"

namespace tierfs::tools {

ControlService::ControlService(FsStack& stack, std::string mountpoint)
    : stack_(stack), mountpoint_(std::move(mountpoint)), trees_(*stack.volume, *stack.chunks) {}

void ControlService::handle(const control::Request& request, control::Connection& c) {
  if (const auto* r = std::get_if<control::StatusRequest>(&request)) return status(*r, c);
  if (const auto* r = std::get_if<control::WarmRequest>(&request)) return warm(*r, c);
  if (const auto* r = std::get_if<control::HintRequest>(&request)) return hint(*r, c);
  if (const auto* r = std::get_if<control::AdviseRequest>(&request)) return advise(*r, c);
  evict(std::get<control::EvictRequest>(request), c);
}

control::DaemonStatus ControlService::daemonStatus() const {
  const cache::ChunkCacheStats s = stack_.chunks->stats();
  control::DaemonStatus d;
  d.mountpoint = mountpoint_;
  d.backend = stack_.store->describe();
  d.capacityBytes = s.deviceCapacityBytes;
  d.usedBytes = s.deviceUsedBytes;
  d.entries = s.deviceEntries;
  d.hits = s.memoryHits + s.deviceHits;
  d.misses = s.backendReads;
  d.bytesFromCache = s.bytesFromDevice;
  d.bytesFromBackend = s.bytesFromBackend;
  d.evictedRegions = s.deviceEvictedRegions;
  d.corruptions = s.deviceCorruptions;
  d.warmJobs = warmJobs_;
  d.prefetched = s.prefetchedChunks;
  d.prefetchUsed = s.prefetchUsed;
  return d;
}

void ControlService::status(const control::StatusRequest& r, control::Connection& c) {
  control::StatusReply reply{daemonStatus(), std::nullopt};
  if (!r.path.empty()) {
    auto tree = trees_.measure({r.path});
    if (!tree) return (void)c.reply(control::ErrorReply{tree.error()});
    reply.tree = *tree;
  }
  (void)c.reply(reply);
}

ControlService::WarmCounters ControlService::warmCounters() const {
  return {warmJobs_.load(), warmFilesHandled_.load(), warmFilesPending_.load(),
          warmFetchedBytes_.load()};
}

// Adds what a job did since its previous report (unsigned arithmetic: a decrease wraps back).
void ControlService::countWarmProgress(const control::WarmProgress& before,
                                       const control::WarmProgress& now) {
  const std::uint64_t handled = now.done.files - before.done.files;
  warmFilesHandled_ += handled;
  warmFilesPending_ += (now.total.files - before.total.files) - handled;
  warmFetchedBytes_ += now.fetchedBytes - before.fetchedBytes;
}

void ControlService::warm(const control::WarmRequest& r, control::Connection& c) {
  ++warmJobs_;
  spdlog::info("control: warm-up of {} path(s) started", r.paths.size());
  control::WarmProgress last;
  auto result = trees_.warm(r.paths, r.parallel, std::chrono::milliseconds(250),
                            [&](const control::WarmProgress& p) {
                              countWarmProgress(last, p);
                              last = p;
                              return c.reply(p).isOk();
                            });
  if (result) countWarmProgress(last, *result);
  // What the job left undone (cancelled, failed) is no longer pending.
  const control::WarmProgress& end = result ? *result : last;
  warmFilesPending_ -= end.total.files - end.done.files;
  --warmJobs_;
  if (!result) {
    spdlog::info("control: warm-up ended: {}", result.error().toString());
    return (void)c.reply(control::ErrorReply{result.error()});
  }
  spdlog::info("control: warm-up done: {} of {} files cached, {} MiB fetched, {} failed",
               result->done.cachedFiles, result->total.files, result->fetchedBytes >> 20,
               result->failures.size());
  (void)c.reply(*result);
}

void ControlService::evict(const control::EvictRequest& r, control::Connection& c) {
  auto evicted = trees_.evict(r.paths);
  if (!evicted) return (void)c.reply(control::ErrorReply{evicted.error()});
  spdlog::info("control: evicted {} files ({} MiB)", evicted->cachedFiles,
               evicted->cachedBytes >> 20);
  (void)c.reply(control::EvictReply{*evicted});
}

void ControlService::hint(const control::HintRequest& r, control::Connection& c) {
  std::vector<fs::TreeCache::File> order;
  for (auto& file : trees_.filesAt(r.paths)) {
    if (file) order.push_back(std::move(*file));
  }
  const std::size_t missing = r.paths.size() - order.size();
  // What is fetched ahead must stay cached until the reader gets there: at most half the cache.
  auto job = std::make_shared<fs::HintedPrefetch>(*stack_.chunks, std::move(order), r.distance,
                                                  stack_.cacheBytes / 2);
  auto reply = [&job](bool finished) {
    const fs::HintedPrefetch::Stats s = job->stats();
    return control::HintReply{s.files, s.position, s.prefetched, s.bytes, finished};
  };
  spdlog::info("control: hinted order of {} files ({} not found), {} ahead", r.paths.size(),
               missing, r.distance);
  auto watch = stack_.filesystem->watchAccess([job](fs::Ino ino) { job->accessed(ino); });
  if (!c.reply(reply(false)).isOk()) return;
  // The hint lasts while the client keeps the connection, or until the reader reaches its end.
  for (;;) {
    if (job->finished()) {
      (void)c.reply(reply(true));
      break;
    }
    pollfd p{c.fd(), POLLIN | POLLRDHUP, 0};
    const int n = ::poll(&p, 1, 200);
    if (n < 0 && errno != EINTR) break;
    if (n > 0) break;  // the client closed (or said something it should not): the hint ends
  }
  watch.reset();
  const fs::HintedPrefetch::Stats s = job->stats();
  spdlog::info("control: hint ended: reader at {} of {} files, {} prefetched ({} MiB)", s.position,
               s.files, s.prefetched, s.bytes >> 20);
}

void ControlService::advise(const control::AdviseRequest& r, control::Connection& c) {
  if (!stack_.advisor) {
    return (void)c.reply(control::ErrorReply{
        Status::notSupported("the sizing advisor is off in this daemon ([advisor] enabled)")});
  }
  auto reply = adviseReply(*stack_.advisor, r, stack_.cacheBytes);
  if (!reply) return (void)c.reply(control::ErrorReply{reply.error()});
  (void)c.reply(*reply);
}

Result<std::unique_ptr<control::Server>> startControl(const DaemonConfig& cfg,
                                                      ControlService& service) {
  return control::Server::start(
      control::ServerOptions{.path = cfg.controlSocket,
                             .owner = ::geteuid(),
                             .allowUsers = cfg.controlUsers,
                             .allowGroups = cfg.controlGroups},
      [&service](const control::Request& r, control::Connection& c) { service.handle(r, c); });
}

}  // namespace tierfs::tools
