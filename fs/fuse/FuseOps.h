#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "fs/Filesystem.h"
#include "fs/fuse/FuseServer.h"

// The FUSE adapter: each handler takes the request apart, calls Filesystem, and replies. All
// POSIX decisions are in Filesystem; errno comes from Status::toErrno(). Handlers are split by
// family (entries, attributes, files, directories) as in libfuse's passthrough_hp.

namespace tierfs::fs::fuse {

// The handles of open files given to the kernel and not yet released. When the mount ends with
// files still open (SIGTERM, a lazy unmount), the kernel sends no RELEASE for them: the server
// releases them itself.
class OpenHandles {
 public:
  void add(OpenFile* file) {
    std::lock_guard lock(mu_);
    files_.insert(file);
  }
  void remove(OpenFile* file) {
    std::lock_guard lock(mu_);
    files_.erase(file);
  }
  std::vector<std::unique_ptr<OpenFile>> takeAll() {
    std::lock_guard lock(mu_);
    std::vector<std::unique_ptr<OpenFile>> out;
    for (OpenFile* f : files_) out.emplace_back(f);
    files_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::unordered_set<OpenFile*> files_;
};

// Requests answered from other threads (a read whose chunk is being fetched): the server waits
// for the last of them before the session goes.
class LateReplies {
 public:
  void begin() {
    std::lock_guard lock(mu_);
    ++pending_;
  }
  void end() {
    std::lock_guard lock(mu_);
    if (--pending_ == 0) idle_.notify_all();
  }
  void waitForAll() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  std::size_t pending_ = 0;
};

struct Context {
  Context(Filesystem& f, const MountOptions& o, FuseMetrics* m) : fs(f), options(o), metrics(m) {}
  Filesystem& fs;
  const MountOptions& options;
  FuseMetrics* metrics = nullptr;
  OpenHandles handles;
  LateReplies lateReplies;
};

inline Context& context(fuse_req_t req) { return *static_cast<Context*>(fuse_req_userdata(req)); }

// Replies with the errno of `s` (logging what an unexpected failure was). The status code is
// also left for guarded() to count: handlers reply on the thread that runs them.
void replyError(fuse_req_t req, const Status& s, const char* op);
extern thread_local StatusCode lastReplyCode;
struct stat toStat(const Inode& inode);
fuse_entry_param toEntry(const Context& ctx, const Inode& inode);
double seconds(Duration d);

// Runs `body`; an exception escaping it becomes EIO (logged), never a dead mount. Records the
// request's latency and outcome when the mount keeps metrics.
template <typename Body>
void guarded(fuse_req_t req, FuseOp op, Body&& body) {
  FuseMetrics* metrics = context(req).metrics;  // before the reply frees `req`
  const Clock::time_point start = metrics ? Clock::now() : Clock::time_point{};
  lastReplyCode = StatusCode::kOk;
  try {
    body();
  } catch (const std::exception& e) {
    replyError(req, Status::internal(std::string("unexpected exception: ") + e.what()),
               fuseOpName(op).data());
  } catch (...) {
    replyError(req, Status::internal("unexpected exception"), fuseOpName(op).data());
  }
  if (metrics) metrics->record(op, Clock::now() - start, lastReplyCode);
}

void addEntryOps(fuse_lowlevel_ops& ops);
void addAttrOps(fuse_lowlevel_ops& ops);
void addFileOps(fuse_lowlevel_ops& ops);
void addDirOps(fuse_lowlevel_ops& ops);

}  // namespace tierfs::fs::fuse
