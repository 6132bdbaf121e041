// Filesystem: directory listings, streamed one page of dentries at a time, and statfs.
#include <fmt/format.h>

#include <cerrno>

#include "backends/SyncStore.h"
#include "fs/Filesystem.h"

namespace tierfs::fs {
namespace {

// Offsets handed to the kernel: 1 and 2 follow "." and "..", entry i (from 0) is followed by
// offset i + 3. An offset names a position, so a listing resumes where the kernel stopped.
constexpr std::uint64_t kFirstEntryOffset = 2;

}  // namespace

Result<std::unique_ptr<DirCursor>> Filesystem::opendir(Ino ino) {
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  TIERFS_RETURN_IF_ERROR(refreshIfStale(*n));
  auto cursor = std::make_unique<DirCursor>();
  std::lock_guard lock(n->mu);
  if (!n->dentry.inode.isDir()) return failure(Status::posix(ENOTDIR, "opendir"));
  cursor->dir = ino;
  cursor->parent = n->parent == 0 ? kRootIno : n->parent;
  return cursor;
}

Status Filesystem::readdir(DirCursor& c, std::uint64_t offset,
                           const std::function<bool(const DirEntry&)>& accept) {
  for (; offset < kFirstEntryOffset; ++offset) {
    DirEntry dot{offset == 0 ? "." : "..", offset == 0 ? c.dir : c.parent, nullptr, offset + 1};
    if (!accept(dot)) return Status::ok();
  }
  std::uint64_t index = offset - kFirstEntryOffset;
  if (index < c.pageStart) {  // seekdir backwards (rewinddir): list again from the start
    c.page.clear();
    c.pageStart = 0;
    c.more = true;
  }
  for (;;) {
    while (index >= c.pageStart + c.page.size()) {
      if (!c.more) return Status::ok();
      std::string after = c.page.empty() ? "" : c.page.back().first;
      c.pageStart += c.page.size();
      TIERFS_ASSIGN_OR_RETURN(DirPage page, volume_.listDir(c.dir, after, options_.readdirPage));
      c.page = std::move(page.entries);
      c.more = page.more;
    }
    const auto& [name, dentry] = c.page[index - c.pageStart];
    if (!accept(DirEntry{name, dentry.inode.ino, &dentry, index + kFirstEntryOffset + 1})) {
      return Status::ok();
    }
    ++index;
  }
}

Inode Filesystem::entryAttributes(const Dentry& dentry) const {
  Inode inode = dentry.inode;
  if (auto n = nodes_.find(inode.ino)) {
    std::lock_guard lock(n->mu);
    if (n->writer) inode.size = n->writer->size();
  }
  return inode;
}

Result<FsStat> Filesystem::statfs() {
  constexpr std::uint64_t kBlock = 4096;
  auto got = backends::SyncStore(volume_.store()).usage();
  if (!got && got.error().retryable()) {
    // No statistics yet (a new cluster's mgr has not reported): an empty answer, which df shows
    // as a size of 0, is better than failing every statfs caller.
    return FsStat{kBlock, 0, 0, 0, 0, 0};
  }
  TIERFS_ASSIGN_OR_RETURN(backends::StoreUsage usage, std::move(got));
  // Objects are not a limited resource: report as many free inodes as free 4 KiB blocks.
  return FsStat{kBlock,
                usage.totalBytes / kBlock,
                usage.availBytes / kBlock,
                usage.availBytes / kBlock,
                usage.objects,
                usage.availBytes / kBlock};
}

}  // namespace tierfs::fs
