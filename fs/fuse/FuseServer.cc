#include "fs/fuse/FuseServer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "fs/fuse/FuseOps.h"
#include "fs/fuse/MountTable.h"

namespace tierfs::fs {

std::string_view fuseOpName(FuseOp op) {
  static constexpr std::array<std::string_view, static_cast<std::size_t>(FuseOp::kCount)> kNames = {
      "lookup",      "getattr", "setattr", "statfs",     "getxattr", "listxattr", "setxattr",
      "removexattr", "mkdir",   "mknod",   "symlink",    "unlink",   "rmdir",     "rename",
      "readlink",    "open",    "create",  "read",       "write",    "flush",     "release",
      "fsync",       "opendir", "readdir", "readdirplus"};
  return kNames[static_cast<std::size_t>(op)];
}

namespace fuse {

thread_local StatusCode lastReplyCode = StatusCode::kOk;

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

void replyError(fuse_req_t req, const Status& s, const char* op) {
  lastReplyCode = s.code();
  const int err = s.toErrno();
  // Expected answers (ENOENT on a lookup, EEXIST, ...) are not worth a log line; failures are.
  if (err == EIO || s.code() == StatusCode::kInternal) {
    spdlog::warn("{}: {}", op, s.toString());
  }
  fuse_reply_err(req, err);
}

struct stat toStat(const Inode& inode) {
  struct stat st {};
  st.st_ino = inode.ino;
  st.st_mode = inode.mode;
  switch (inode.type) {
    case FileType::kDirectory:
      st.st_mode |= S_IFDIR;
      break;
    case FileType::kSymlink:
      st.st_mode |= S_IFLNK;
      break;
    case FileType::kRegular:
      st.st_mode |= S_IFREG;
      break;
  }
  // 1 for directories too: it tells find(1) and friends that the count of subdirectories is
  // unknown (as on btrfs), so they never skip one.
  st.st_nlink = 1;
  st.st_uid = inode.uid;
  st.st_gid = inode.gid;
  st.st_size = static_cast<off_t>(inode.size);
  st.st_blocks = static_cast<blkcnt_t>((inode.size + 511) / 512);
  st.st_blksize = 1 << 20;  // tools size their buffers by this: whole FUSE requests
  st.st_atim = {inode.atime.sec, inode.atime.nsec};
  st.st_mtim = {inode.mtime.sec, inode.mtime.nsec};
  st.st_ctim = {inode.ctime.sec, inode.ctime.nsec};
  return st;
}

fuse_entry_param toEntry(const Context& ctx, const Inode& inode) {
  fuse_entry_param e{};
  e.ino = inode.ino;
  e.attr = toStat(inode);
  e.attr_timeout = seconds(ctx.options.attrTimeout);
  e.entry_timeout = seconds(ctx.options.entryTimeout);
  return e;
}

namespace {

void init(void* userdata, fuse_conn_info* conn) {
  auto& ctx = *static_cast<Context*>(userdata);
  // libfuse 3.14 fails the mount unless this equals the max_read mount option.
  conn->max_read = ctx.options.maxRead;
  conn->max_write = std::min<unsigned>(conn->max_write, 1 << 20);
  conn->max_readahead = std::min<unsigned>(conn->max_readahead, ctx.options.maxRead);
  conn->max_background = ctx.options.maxBackground;
  conn->congestion_threshold = static_cast<unsigned>(ctx.options.maxBackground * 3 / 4);
  // Replies come from buffers: decompressed chunks live in memory, and splicing 1 MiB replies
  // needs pipes this kernel does not allow.
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;  // writes must reach the daemon to be committed
  conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);  // the kernel keeps them local
}

void destroy(void* userdata) {
  auto& ctx = *static_cast<Context*>(userdata);
  Status s = ctx.fs.flushAll();
  if (!s.isOk()) spdlog::error("unmount: unflushed data could not be committed: {}", s.toString());
}

fuse_lowlevel_ops makeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = init;
  ops.destroy = destroy;
  addEntryOps(ops);
  addAttrOps(ops);
  addFileOps(ops);
  addDirOps(ops);
  return ops;
}

// Kernel read-ahead above 128 KiB is set only through the FUSE bdi in sysfs.
void raiseReadAhead(dev_t dev, std::uint32_t kb) {
  std::string path = fmt::format("/sys/class/bdi/{}:{}/read_ahead_kb", major(dev), minor(dev));
  std::ofstream out(path);
  out << kb;
  if (!out) spdlog::info("could not set {} (read-ahead stays the kernel's)", path);
}

// Whether the mount point now shows this daemon's mount: stat() of it is itself a FUSE request, so
// its success means the kernel's INIT is done and the loop answers; the device it reports must be
// the one mountinfo lists for a fuse.tierfs mount there (not a mount that replaced ours).
bool mountAnswers(const std::string& mountpoint, dev_t* dev) {
  struct stat st {};
  if (::stat(mountpoint.c_str(), &st) != 0) return false;
  char* real = ::realpath(mountpoint.c_str(), nullptr);
  if (real == nullptr) return false;
  auto mounts = readMountInfo();
  auto mount = mounts ? findMountAt(*mounts, real) : std::nullopt;
  std::free(real);
  *dev = st.st_dev;
  return mount && mount->fsType == "fuse.tierfs" && makedev(mount->major, mount->minor) == *dev;
}

// Runs on its own thread once the loop serves (so that the stat is answered, not deadlocked).
void afterMountAnswers(std::string mountpoint, std::uint32_t readAheadKb,
                       std::function<void()> answering) {
  dev_t dev = 0;
  if (!mountAnswers(mountpoint, &dev)) {
    spdlog::warn("the mount at {} did not answer a stat as a tierfs mount", mountpoint);
    return;
  }
  if (readAheadKb > 0) raiseReadAhead(dev, readAheadKb);
  if (answering) answering();
}

// What ended the request loop, from fuse_session_loop_mt's result.
std::string loopEndReason(int rc) {
  if (rc == SIGTERM || rc == SIGINT || rc == SIGHUP) return fmt::format("SIG{}", sigabbrev_np(rc));
  return rc == 0 ? "unmounted" : fmt::format("error {}", rc);
}

}  // namespace
}  // namespace fuse

FuseServer::FuseServer(Filesystem& fs, MountOptions options)
    : fs_(fs), options_(std::move(options)) {}

Status FuseServer::mount() {
  static const fuse_lowlevel_ops ops = fuse::makeOps();
  context_ = std::make_unique<fuse::Context>(fs_, options_, metrics_);
  std::vector<std::string> opts = {"fsname=tierfs", "subtype=tierfs", "default_permissions",
                                   fmt::format("max_read={}", options_.maxRead)};
  if (options_.allowOther) opts.push_back("allow_other");
  if (options_.readOnly) opts.push_back("ro");
  std::string joined = fmt::format("{}", fmt::join(opts, ","));
  std::vector<const char*> argv = {"tierfs", "-o", joined.c_str()};
  if (options_.debug) argv.push_back("-d");
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  session_ = fuse_session_new(&args, &ops, sizeof(ops), context_.get());
  fuse_opt_free_args(&args);  // session_new may have copied the arguments to the heap
  if (session_ == nullptr) return Status::invalidArgument("fuse: could not create a session");
  if (fuse_session_mount(session_, options_.mountpoint.c_str()) != 0) {
    return Status::ioError(fmt::format("fuse: could not mount at '{}'", options_.mountpoint));
  }
  mounted_ = true;
  return Status::ok();
}

Status FuseServer::serve(const ServeHooks& hooks) {
  // SIGTERM, SIGINT and SIGHUP end the loop; the kernel hands a signal sent to the process to
  // this (main) thread, whose wait in the loop it interrupts.
  if (fuse_set_signal_handlers(session_) != 0) return Status::internal("fuse: signal handlers");
  std::thread afterMount(fuse::afterMountAnswers, options_.mountpoint, options_.readAheadKb,
                         hooks.answering);
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, options_.maxThreads);
  int rc = fuse_session_loop_mt(session_, cfg);
  fuse_loop_cfg_destroy(cfg);
  fuse_remove_signal_handlers(session_);
  if (hooks.stopping) hooks.stopping(fuse::loopEndReason(rc));
  context_->lateReplies.waitForAll();  // reads answer within the store's deadline
  // Files still open when the loop ended (a signal) get no RELEASE: close them here, as their
  // processes' close() would have.
  for (auto& file : context_->handles.takeAll()) {
    Status s = fs_.release(std::move(file));
    if (!s.isOk()) spdlog::error("closing a file left open at unmount: {}", s.toString());
  }
  Status flushed = fs_.flushAll();  // after a signal, destroy() may not have run
  // Unmounting closes /dev/fuse first, which fails a stat still waiting on the stopped loop: only
  // then can the thread be joined.
  fuse_session_unmount(session_);
  mounted_ = false;
  afterMount.join();
  if (!flushed.isOk()) return flushed;
  if (rc != 0 && rc != SIGINT && rc != SIGTERM && rc != SIGHUP) {
    return Status::ioError(fmt::format("fuse: request loop ended with {}", rc));
  }
  return Status::ok();
}

FuseServer::~FuseServer() {
  if (session_ != nullptr) {
    if (mounted_) fuse_session_unmount(session_);
    fuse_session_destroy(session_);
  }
}

}  // namespace tierfs::fs
