// FUSE handlers for names: lookup, forget, mkdir, mknod, symlink, link, unlink, rmdir, rename,
// readlink.
#include <cerrno>

#include "fs/fuse/FuseOps.h"

namespace tierfs::fs::fuse {
namespace {

Caller callerOf(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return {c->uid, c->gid};
}

void replyEntry(fuse_req_t req, const Result<Inode>& r, const char* op) {
  if (!r) return replyError(req, r.error(), op);
  fuse_entry_param e = toEntry(context(req), *r);
  fuse_reply_entry(req, &e);
}

void lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, FuseOp::kLookup, [&] {
    Context& ctx = context(req);
    auto r = ctx.fs.lookup(parent, name);
    if (!r && r.error().toErrno() == ENOENT && ctx.options.negativeTimeout > Duration::zero()) {
      fuse_entry_param e{};  // ino 0: a negative entry the kernel may cache
      e.entry_timeout = seconds(ctx.options.negativeTimeout);
      fuse_reply_entry(req, &e);
      return;
    }
    replyEntry(req, r, "lookup");
  });
}

void forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  context(req).fs.forget(ino, nlookup);
  fuse_reply_none(req);
}

void forgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) context(req).fs.forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  guarded(req, FuseOp::kMkDir, [&] {
    replyEntry(req, context(req).fs.mkdir(parent, name, mode, callerOf(req)), "mkdir");
  });
}

// Regular files only: device nodes, FIFOs and sockets have no place in an object store.
void mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t) {
  guarded(req, FuseOp::kMkNod, [&] {
    if (!S_ISREG(mode)) return replyError(req, Status::posix(EPERM, "only regular files"), "mknod");
    auto r = context(req).fs.create(parent, name, mode, O_EXCL | O_WRONLY, callerOf(req));
    if (!r) return replyError(req, r.error(), "mknod");
    Inode inode = r->first;
    (void)context(req).fs.release(std::move(r->second));
    replyEntry(req, inode, "mknod");
  });
}

void symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  guarded(req, FuseOp::kSymlink, [&] {
    replyEntry(req, context(req).fs.symlink(parent, name, target, callerOf(req)), "symlink");
  });
}

// Hard links would need an inode outside its dentry; the format embeds it (docs/FORMAT.md).
void link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) {
  replyError(req, Status::posix(EPERM, "hard links are not supported by tierfs"), "link");
}

void unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, FuseOp::kUnlink, [&] {
    Status s = context(req).fs.unlink(parent, name);
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "unlink");
  });
}

void rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, FuseOp::kRmDir, [&] {
    Status s = context(req).fs.rmdir(parent, name);
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "rmdir");
  });
}

void rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newParent,
            const char* newName, unsigned int flags) {
  guarded(req, FuseOp::kRename, [&] {
    Status s = context(req).fs.rename(parent, name, newParent, newName, flags);
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "rename");
  });
}

void readlink(fuse_req_t req, fuse_ino_t ino) {
  guarded(req, FuseOp::kReadLink, [&] {
    auto r = context(req).fs.readlink(ino);
    r ? (void)fuse_reply_readlink(req, r->c_str()) : replyError(req, r.error(), "readlink");
  });
}

}  // namespace

void addEntryOps(fuse_lowlevel_ops& ops) {
  ops.lookup = lookup;
  ops.forget = forget;
  ops.forget_multi = forgetMulti;
  ops.mkdir = mkdir;
  ops.mknod = mknod;
  ops.symlink = symlink;
  ops.link = link;
  ops.unlink = unlink;
  ops.rmdir = rmdir;
  ops.rename = rename;
  ops.readlink = readlink;
}

}  // namespace tierfs::fs::fuse
