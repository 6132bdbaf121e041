#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/Deadline.h"
#include "common/Result.h"
#include "fs/Filesystem.h"

struct fuse_session;

namespace tierfs::fs {
namespace fuse {
struct Context;
}

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

// Serves `fs` at a mount point through libfuse's low-level API and its multi-threaded loop.
// Thread-safe operations in `fs` are called from the loop's threads. Ends when the filesystem is
// unmounted (umount, fusermount3 -u) or on SIGINT/SIGTERM/SIGHUP; then flushes everything.
class FuseServer {
 public:
  FuseServer(Filesystem& fs, MountOptions options);

  // Mounts; returns once the mount is live (errors: the mount point, /dev/fuse).
  Status mount();
  // Runs the request loop until unmounted, then commits unflushed data and unmounts. The status
  // is the first error seen while flushing.
  Status serve();

  ~FuseServer();

 private:
  Filesystem& fs_;
  MountOptions options_;
  std::unique_ptr<fuse::Context> context_;
  fuse_session* session_ = nullptr;
  bool mounted_ = false;
};

}  // namespace tierfs::fs
