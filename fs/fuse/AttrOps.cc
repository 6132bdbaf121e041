// FUSE handlers for attributes: getattr, setattr, statfs and extended attributes.
#include <sys/statvfs.h>

#include <cerrno>

#include "fs/fuse/FuseOps.h"

namespace tierfs::fs::fuse {
namespace {

void replyAttr(fuse_req_t req, const Result<Inode>& r, const char* op) {
  if (!r) return replyError(req, r.error(), op);
  struct stat st = toStat(*r);
  fuse_reply_attr(req, &st, seconds(context(req).options.attrTimeout));
}

Timestamp timeOf(const struct timespec& ts) {
  return {ts.tv_sec, static_cast<std::uint32_t>(ts.tv_nsec)};
}

void getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  guarded(req, FuseOp::kGetAttr, [&] { replyAttr(req, context(req).fs.getattr(ino), "getattr"); });
}

void setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int toSet, fuse_file_info*) {
  guarded(req, FuseOp::kSetAttr, [&] {
    SetAttr c;
    c.setMode = toSet & FUSE_SET_ATTR_MODE;
    c.setUid = toSet & FUSE_SET_ATTR_UID;
    c.setGid = toSet & FUSE_SET_ATTR_GID;
    c.setSize = toSet & FUSE_SET_ATTR_SIZE;
    c.setAtime = toSet & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW);
    c.setMtime = toSet & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW);
    c.mode = attr->st_mode;
    c.uid = attr->st_uid;
    c.gid = attr->st_gid;
    c.size = static_cast<std::uint64_t>(attr->st_size);
    const Timestamp now = Timestamp::now();
    c.atime = (toSet & FUSE_SET_ATTR_ATIME_NOW) ? now : timeOf(attr->st_atim);
    c.mtime = (toSet & FUSE_SET_ATTR_MTIME_NOW) ? now : timeOf(attr->st_mtim);
    replyAttr(req, context(req).fs.setattr(ino, c), "setattr");
  });
}

void statfs(fuse_req_t req, fuse_ino_t) {
  guarded(req, FuseOp::kStatFs, [&] {
    auto r = context(req).fs.statfs();
    if (!r) return replyError(req, r.error(), "statfs");
    struct statvfs st {};
    st.f_bsize = st.f_frsize = r->blockSize;
    st.f_blocks = r->blocks;
    st.f_bfree = r->blocksFree;
    st.f_bavail = r->blocksAvail;
    st.f_files = r->files + r->filesFree;
    st.f_ffree = st.f_favail = r->filesFree;
    st.f_namemax = kMaxNameLength;
    fuse_reply_statfs(req, &st);
  });
}

// The kernel asks for security.capability before every write (to drop privileges); answering
// without a store round trip keeps writes fast. tierfs stores user.* attributes only.
bool isUnstoredNamespace(std::string_view name) { return !name.starts_with("user."); }

void getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  guarded(req, FuseOp::kGetXattr, [&] {
    if (isUnstoredNamespace(name)) return (void)fuse_reply_err(req, ENODATA);
    auto r = context(req).fs.getxattr(ino, name);
    if (!r) return replyError(req, r.error(), "getxattr");
    if (size == 0) return (void)fuse_reply_xattr(req, r->size());
    if (size < r->size()) return (void)fuse_reply_err(req, ERANGE);
    fuse_reply_buf(req, r->data(), r->size());
  });
}

void listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  guarded(req, FuseOp::kListXattr, [&] {
    auto r = context(req).fs.listxattr(ino);
    if (!r) return replyError(req, r.error(), "listxattr");
    std::string names;
    for (const auto& n : *r) names.append(n).push_back('\0');
    if (size == 0) return (void)fuse_reply_xattr(req, names.size());
    if (size < names.size()) return (void)fuse_reply_err(req, ERANGE);
    fuse_reply_buf(req, names.data(), names.size());
  });
}

void setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  guarded(req, FuseOp::kSetXattr, [&] {
    Status s = context(req).fs.setxattr(ino, name, std::string_view(value, size), flags);
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "setxattr");
  });
}

void removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  guarded(req, FuseOp::kRemoveXattr, [&] {
    Status s = context(req).fs.removexattr(ino, name);
    s.isOk() ? (void)fuse_reply_err(req, 0) : replyError(req, s, "removexattr");
  });
}

}  // namespace

void addAttrOps(fuse_lowlevel_ops& ops) {
  ops.getattr = getattr;
  ops.setattr = setattr;
  ops.statfs = statfs;
  ops.getxattr = getxattr;
  ops.listxattr = listxattr;
  ops.setxattr = setxattr;
  ops.removexattr = removexattr;
}

}  // namespace tierfs::fs::fuse
