// FUSE handlers for directories: opendir, readdir, readdirplus, releasedir, fsyncdir.
#include <cerrno>

#include "fs/fuse/FuseOps.h"

namespace tierfs::fs::fuse {
namespace {

DirCursor* cursorOf(fuse_file_info* fi) { return reinterpret_cast<DirCursor*>(fi->fh); }

mode_t typeBits(FileType t) {
  switch (t) {
    case FileType::kDirectory:
      return S_IFDIR;
    case FileType::kSymlink:
      return S_IFLNK;
    case FileType::kRegular:
      break;
  }
  return S_IFREG;
}

void opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  guarded(req, FuseOp::kOpenDir, [&] {
    auto r = context(req).fs.opendir(ino);
    if (!r) return replyError(req, r.error(), "opendir");
    fi->fh = reinterpret_cast<uint64_t>(r->release());
    if (fuse_reply_open(req, fi) != 0) delete cursorOf(fi);
  });
}

// Fills one reply buffer of `size` bytes from the cursor; readdirplus also hands out attributes
// (from the dentries already read: no extra round trip) and so counts a lookup per entry.
void list(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi, bool plus) {
  Context& ctx = context(req);
  DirCursor& cursor = *cursorOf(fi);
  std::string buf(size, '\0');
  size_t used = 0;
  Status s = ctx.fs.readdir(cursor, off, [&](const DirEntry& e) {
    char* at = buf.data() + used;
    const size_t room = size - used;
    const std::string name(e.name);
    size_t n;
    if (plus && e.dentry) {
      fuse_entry_param param = toEntry(ctx, ctx.fs.entryAttributes(*e.dentry));
      // A directory's listed mtime may be old (its times live in its own object): let the
      // kernel ask getattr for it rather than cache this one.
      if (e.dentry->inode.isDir()) param.attr_timeout = 0;
      n = fuse_add_direntry_plus(req, at, room, name.c_str(), &param, e.nextOffset);
    } else if (plus) {  // "." and "..": attributes unknown here, and no lookup is counted
      fuse_entry_param param{};
      param.attr.st_ino = e.ino;
      param.attr.st_mode = S_IFDIR;
      n = fuse_add_direntry_plus(req, at, room, name.c_str(), &param, e.nextOffset);
    } else {
      struct stat st {};
      st.st_ino = e.ino;
      st.st_mode = e.dentry ? typeBits(e.dentry->inode.type) : S_IFDIR;
      n = fuse_add_direntry(req, at, room, name.c_str(), &st, e.nextOffset);
    }
    if (n > room) return false;  // full: the kernel asks again from e's offset
    used += n;
    if (plus && e.dentry) ctx.fs.rememberEntry(cursor.dir, name, *e.dentry);
    return true;
  });
  if (!s.isOk() && used == 0) return replyError(req, s, plus ? "readdirplus" : "readdir");
  fuse_reply_buf(req, buf.data(), used);
}

void readdir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  guarded(req, FuseOp::kReadDir, [&] { list(req, size, off, fi, false); });
}

void readdirplus(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  guarded(req, FuseOp::kReadDirPlus, [&] { list(req, size, off, fi, true); });
}

void releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete cursorOf(fi);
  fuse_reply_err(req, 0);
}

// Directory changes are durable when they return (each is one synchronous store update).
void fsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(req, 0); }

}  // namespace

void addDirOps(fuse_lowlevel_ops& ops) {
  ops.opendir = opendir;
  ops.readdir = readdir;
  ops.readdirplus = readdirplus;
  ops.releasedir = releasedir;
  ops.fsyncdir = fsyncdir;
}

}  // namespace tierfs::fs::fuse
