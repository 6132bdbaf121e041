#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/Deadline.h"
#include "common/LatencyHistogram.h"
#include "common/Result.h"
#include "fs/Filesystem.h"

struct fuse_session;

namespace tierfs::fs {
namespace fuse {
struct Context;
}

// The FUSE requests whose latency and failures a mount records.
enum class FuseOp {
  kLookup,
  kGetAttr,
  kSetAttr,
  kStatFs,
  kGetXattr,
  kListXattr,
  kSetXattr,
  kRemoveXattr,
  kMkDir,
  kMkNod,
  kSymlink,
  kUnlink,
  kRmDir,
  kRename,
  kReadLink,
  kOpen,
  kCreate,
  kRead,
  kWrite,
  kFlush,
  kRelease,
  kFsync,
  kOpenDir,
  kReadDir,
  kReadDirPlus,
  kCount
};
std::string_view fuseOpName(FuseOp op);  // "lookup", "read", ...
using FuseMetrics = OpMetrics<FuseOp>;

struct MountOptions {
  std::string mountpoint;
  bool readOnly = false;    // also: OPEN answered with ENOSYS, so the kernel skips open/release
  bool allowOther = false;  // let users other than the mounting one in (default_permissions on)
  Duration entryTimeout = std::chrono::seconds(1);
  Duration attrTimeout = std::chrono::seconds(1);
  Duration negativeTimeout = Duration::zero();  // a miss may be created on another node
  std::uint32_t maxRead = 1 << 20;              // FUSE max_read: 1 MiB reads
  std::uint32_t readAheadKb = 4096;  // the FUSE bdi's read_ahead_kb; 0 leaves the kernel's
  // FUSE requests the kernel keeps in flight in the background (read-ahead among them): more
  // than the kernel's 12 keeps several chunk fetches of one stream going at once.
  std::uint16_t maxBackground = 64;
  unsigned maxThreads = 16;
  bool debug = false;  // libfuse's request trace on stderr
};

// What serve() reports along the way (to a service manager). Either may be empty.
struct ServeHooks {
  // Called once, from a thread of the server, when the mount answers: a stat of the mount point
  // was served by this daemon (so the kernel's INIT is done). Not called if the loop ends first.
  std::function<void()> answering;
  // Called on the serving thread when the request loop has ended, before unflushed data is
  // committed and the mount point unmounted. `why`: "SIGTERM", "unmounted", ...
  std::function<void(const std::string& why)> stopping;
};

// Serves `fs` at a mount point through libfuse's low-level API and its multi-threaded loop.
// Thread-safe operations in `fs` are called from the loop's threads. Ends when the filesystem is
// unmounted (umount, fusermount3 -u) or on SIGINT/SIGTERM/SIGHUP; then flushes everything.
class FuseServer {
 public:
  FuseServer(Filesystem& fs, MountOptions options);

  // Records every request's latency and outcome in `metrics` (call before mount(); it must
  // outlive the server).
  void setMetrics(FuseMetrics* metrics) { metrics_ = metrics; }
  // Mounts; returns once the mount is live (errors: the mount point, /dev/fuse).
  Status mount();
  // Runs the request loop until unmounted or signalled, then commits unflushed data and
  // unmounts. The status is the first error seen while flushing.
  Status serve(const ServeHooks& hooks = {});

  ~FuseServer();

 private:
  Filesystem& fs_;
  MountOptions options_;
  std::unique_ptr<fuse::Context> context_;
  fuse_session* session_ = nullptr;
  bool mounted_ = false;
  FuseMetrics* metrics_ = nullptr;
};

}  // namespace tierfs::fs
