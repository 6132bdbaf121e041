#include "fs/fuse/FuseServer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <thread>
#include <vector>

#include "fs/fuse/FuseOps.h"

namespace tierfs::fs {
namespace fuse {

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

void replyError(fuse_req_t req, const Status& s, const char* op) {
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

// Kernel read-ahead above 128 KiB is set only through the FUSE bdi in sysfs. Runs on its own
// thread once the loop serves, since stat() of the mount point is itself a FUSE request.
void raiseReadAhead(std::string mountpoint, std::uint32_t kb) {
  struct stat st {};
  if (::stat(mountpoint.c_str(), &st) != 0) return;
  std::string path =
      fmt::format("/sys/class/bdi/{}:{}/read_ahead_kb", major(st.st_dev), minor(st.st_dev));
  std::ofstream out(path);
  out << kb;
  if (!out) spdlog::info("could not set {} (read-ahead stays the kernel's)", path);
}

}  // namespace
}  // namespace fuse

FuseServer::FuseServer(Filesystem& fs, MountOptions options)
    : fs_(fs), options_(std::move(options)) {}

Status FuseServer::mount() {
  static const fuse_lowlevel_ops ops = fuse::makeOps();
  context_ = std::make_unique<fuse::Context>(fuse::Context{fs_, options_});
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

Status FuseServer::serve() {
  if (fuse_set_signal_handlers(session_) != 0) return Status::internal("fuse: signal handlers");
  std::thread readAhead;
  if (options_.readAheadKb > 0) {
    readAhead = std::thread(fuse::raiseReadAhead, options_.mountpoint, options_.readAheadKb);
  }
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, options_.maxThreads);
  int rc = fuse_session_loop_mt(session_, cfg);
  fuse_loop_cfg_destroy(cfg);
  if (readAhead.joinable()) readAhead.join();
  fuse_remove_signal_handlers(session_);
  Status flushed = fs_.flushAll();  // after a signal, destroy() may not have run
  fuse_session_unmount(session_);
  mounted_ = false;
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
