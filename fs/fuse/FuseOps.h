#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "fs/Filesystem.h"
#include "fs/fuse/FuseServer.h"

// The FUSE adapter: each handler takes the request apart, calls Filesystem, and replies. All
// POSIX decisions are in Filesystem; errno comes from Status::toErrno(). Handlers are split by
// family (entries, attributes, files, directories) as in libfuse's passthrough_hp.

namespace tierfs::fs::fuse {

struct Context {
  Filesystem& fs;
  const MountOptions& options;
};

inline Context& context(fuse_req_t req) { return *static_cast<Context*>(fuse_req_userdata(req)); }

// Replies with the errno of `s` (logging what an unexpected failure was).
void replyError(fuse_req_t req, const Status& s, const char* op);
struct stat toStat(const Inode& inode);
fuse_entry_param toEntry(const Context& ctx, const Inode& inode);
double seconds(Duration d);

// Runs `body`; an exception escaping it becomes EIO (logged), never a dead mount.
template <typename Body>
void guarded(fuse_req_t req, const char* op, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    replyError(req, Status::internal(std::string("unexpected exception: ") + e.what()), op);
  } catch (...) {
    replyError(req, Status::internal("unexpected exception"), op);
  }
}

void addEntryOps(fuse_lowlevel_ops& ops);
void addAttrOps(fuse_lowlevel_ops& ops);
void addFileOps(fuse_lowlevel_ops& ops);
void addDirOps(fuse_lowlevel_ops& ops);

}  // namespace tierfs::fs::fuse
