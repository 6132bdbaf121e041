// FUSE handlers for file contents: open, create, read, write, flush, release, fsync, ioctl.
#include <atomic>
#include <cerrno>
#include <memory>

#include "fs/fuse/FuseOps.h"

namespace tierfs::fs::fuse {
namespace {

OpenFile* fileOf(fuse_file_info* fi) { return reinterpret_cast<OpenFile*>(fi->fh); }

void setHandle(Context& ctx, fuse_file_info* fi, std::unique_ptr<OpenFile> file, bool keepCache) {
  fi->keep_cache = keepCache;
  fi->noflush = !file->writable;  // a reader's close() has nothing to commit
  ctx.handles.add(file.get());
  fi->fh = reinterpret_cast<uint64_t>(file.release());
}

// Takes a handle back from the kernel (its RELEASE, or a reply that did not reach the opener).
Status releaseHandle(Context& ctx, fuse_file_info* fi) {
  ctx.handles.remove(fileOf(fi));
  return ctx.fs.release(std::unique_ptr<OpenFile>(fileOf(fi)));
}

void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, FuseOp::kOpen, [&] {
    Context& ctx = context(req);
    // ENOSYS makes the kernel stop sending OPEN and RELEASE for this mount (no_open): a read-only
    // dataset is then read without two extra round trips per file.
    if (ctx.options.readOnly) return (void)fuse_reply_err(req, ENOSYS);
    bool keepCache = false;
    auto r = ctx.fs.open(ino, fi->flags, &keepCache);
    if (!r) return replyError(req, r.error(), "open");
    setHandle(ctx, fi, std::move(*r), keepCache);
    if (fuse_reply_open(req, fi) != 0) (void)releaseHandle(ctx, fi);  // the opener was interrupted
  });
}

void create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  guarded(req, FuseOp::kCreate, [&] {
    Context& ctx = context(req);
    const fuse_ctx* caller = fuse_req_ctx(req);
    auto r = ctx.fs.create(parent, name, mode, fi->flags, {caller->uid, caller->gid});
    if (!r) return replyError(req, r.error(), "create");
    fuse_entry_param e = toEntry(ctx, r->first);
    setHandle(ctx, fi, std::move(r->second), false);
    if (fuse_reply_create(req, &e, fi) != 0) (void)releaseHandle(ctx, fi);
  });
}

// The reply goes out from the thread that has the bytes: this one when they are cached, else
// the one a chunk fetch completes on, while this thread goes back to the kernel for more
// requests (no wait and wake-up of a FUSE thread a fetch).
void read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Context& ctx = context(req);
  const Clock::time_point start = ctx.metrics ? Clock::now() : Clock::time_point{};
  auto replied = std::make_shared<std::atomic<bool>>(false);
  ctx.lateReplies.begin();
  auto reply = [req, &ctx, start, replied](Result<Bytes> r) {
    if (replied->exchange(true)) return;
    const StatusCode code = r ? StatusCode::kOk : r.error().code();
    // From a buffer, not a splice: decompressed chunks are in memory anyway, and this kernel
    // refuses pipes over 1 MiB.
    r ? (void)fuse_reply_buf(req, r->data(), r->size()) : replyError(req, r.error(), "read");
    if (ctx.metrics) ctx.metrics->record(FuseOp::kRead, Clock::now() - start, code);
    ctx.lateReplies.end();
  };
  try {
    OpenFile* file = fileOf(fi);
    file ? ctx.fs.read(*file, off, size, reply) : ctx.fs.readInode(ino, off, size, reply);
  } catch (const std::exception& e) {  // before or after the answer: at most one reply goes
    reply(failure(Status::internal(std::string("unexpected exception: ") + e.what())));
  } catch (...) {
    reply(failure(Status::internal("unexpected exception")));
  }
}

// On a read-only mount the kernel opens files without us (no_open): requests then carry no
// handle, and there is nothing to write, flush or release.
void write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off,
           fuse_file_info* fi) {
  guarded(req, FuseOp::kWrite, [&] {
    if (!fileOf(fi)) return (void)fuse_reply_err(req, EROFS);
    auto r = context(req).fs.write(*fileOf(fi), off, std::string_view(buf, size));
    r ? (void)fuse_reply_write(req, *r) : replyError(req, r.error(), "write");
  });
}

void flush(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  guarded(req, FuseOp::kFlush, [&] {
    // A read-only mount opens files without us (no_open above), so no handle can say noflush:
    // ENOSYS makes the kernel stop sending a FLUSH on every close(), a round trip per file read.
    if (context(req).options.readOnly) return (void)fuse_reply_err(req, ENOSYS);
    if (!fileOf(fi)) return (void)fuse_reply_err(req, 0);
    Status s = context(req).fs.flush(*fileOf(fi));
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "flush");
  });
}

void release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  guarded(req, FuseOp::kRelease, [&] {
    if (!fileOf(fi)) return (void)fuse_reply_err(req, 0);
    Status s = releaseHandle(context(req), fi);
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "release");
  });
}

void fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info* fi) {
  guarded(req, FuseOp::kFsync, [&] {
    if (!fileOf(fi)) return (void)fuse_reply_err(req, 0);
    Status s = context(req).fs.fsync(*fileOf(fi));
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "fsync");
  });
}

// Python's open() asks isatty() through an ioctl on every file: say "not a terminal" at once.
void ioctl(fuse_req_t req, fuse_ino_t, unsigned int, void*, fuse_file_info*, unsigned, const void*,
           size_t, size_t) {
  fuse_reply_err(req, ENOTTY);
}

}  // namespace

void addFileOps(fuse_lowlevel_ops& ops) {
  ops.open = open;
  ops.create = create;
  ops.read = read;
  ops.write = write;
  ops.flush = flush;
  ops.release = release;
  ops.fsync = fsync;
  ops.ioctl = ioctl;
}

}  // namespace tierfs::fs::fuse
