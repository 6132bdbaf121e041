// Filesystem: directory listings, streamed one page of dentries at a time, and statfs.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>

#include "backends/SyncStore.h"
#include "fs/Filesystem.h"

namespace tierfs::fs {
namespace {

// Offsets handed to the kernel: 1 and 2 follow "." and "..", entry i (from 0) is followed by
// offset i + 3. An offset names a position, so a listing resumes where the kernel stopped.
constexpr std::uint64_t kFirstEntryOffset = 2;
constexpr std::uint64_t kStatBlock = 4096;
// statfs figures older than this are renewed in the background (ceph-mgr reports every 1-5 s).
constexpr Duration kUsageMaxAge = std::chrono::seconds(1);

FsStat toFsStat(const backends::StoreUsage& usage) {
  // Objects are not a limited resource: report as many free inodes as free 4 KiB blocks.
  return FsStat{kStatBlock,
                usage.totalBytes / kStatBlock,
                usage.availBytes / kStatBlock,
                usage.availBytes / kStatBlock,
                usage.objects,
                usage.availBytes / kStatBlock};
}

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
      TIERFS_ASSIGN_OR_RETURN(DirPage page, listPage(c, after));
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

// The page of the cursor's directory after `after`: from the listing cache when it holds the
// directory at the version its object had when this listing began (one stat instead of a page
// read per readdirPage entries), else from the store.
Result<DirPage> Filesystem::listPage(DirCursor& c, const std::string& after) {
  if (listings_ == nullptr) return volume_.listDir(c.dir, after, options_.readdirPage);
  if (after.empty()) {  // a listing begins (again, after a rewinddir): of which version?
    c.collected.clear();
    TIERFS_ASSIGN_OR_RETURN(c.version, volume_.dirVersion(c.dir));
    c.cached = listings_->holds(c.dir, c.version);
    c.collecting = !c.cached;
  }
  if (c.cached) {
    if (auto kept = listings_->read(c.dir, c.version, after, options_.readdirPage)) {
      auto entries = volume_.decodeEntries(c.dir, std::move(kept->entries));
      if (entries) return DirPage{std::move(*entries), kept->more, c.version};
      spdlog::warn("listing cache: {}: read from the store instead", entries.error().toString());
      listings_->drop(c.dir);
    }
    c.cached = false;  // replaced, evicted or unreadable since: the store has it
  }
  return storePage(c, after);
}

// A page from the store. Its entries are collected while every page comes from the version the
// listing began at; the last page completes the listing, which the cache then keeps.
Result<DirPage> Filesystem::storePage(DirCursor& c, const std::string& after) {
  TIERFS_ASSIGN_OR_RETURN(DirPage page, volume_.listDir(c.dir, after, options_.readdirPage));
  if (!c.collecting) return page;
  if (page.version != c.version ||
      c.collected.size() + page.entries.size() > options_.listingCacheMax) {
    c.collecting = false;  // changed meanwhile, or too large to keep
    c.collected = {};
    return page;
  }
  for (const auto& [name, dentry] : page.entries) c.collected.emplace_back(name, dentry.encoded);
  if (!page.more) {
    listings_->store(c.dir, c.version, c.collected);
    c.collecting = false;
    c.collected = {};
  }
  return page;
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
  const std::shared_ptr<UsageState> state = usage_;
  std::optional<FsStat> known;
  bool refresh = false;
  {
    std::lock_guard lock(state->mu);
    known = state->last;
    if (known && !state->refreshing && Clock::now() - state->fetchedAt >= kUsageMaxAge) {
      refresh = state->refreshing = true;
    }
  }
  if (refresh) {
    volume_.store().usage([state](Result<backends::StoreUsage> got) {
      std::lock_guard lock(state->mu);
      state->refreshing = false;
      if (!got) return;  // keep the last known figures
      state->last = toFsStat(*got);
      state->fetchedAt = Clock::now();
    });
  }
  if (known) return *known;
  auto got = backends::SyncStore(volume_.store()).usage();
  if (!got && got.error().retryable()) {
    // No statistics yet (a new cluster's mgr has not reported): an empty answer, which df shows
    // as a size of 0, is better than failing every statfs caller.
    return FsStat{kStatBlock, 0, 0, 0, 0, 0};
  }
  TIERFS_ASSIGN_OR_RETURN(backends::StoreUsage usage, std::move(got));
  std::lock_guard lock(state->mu);
  state->last = toFsStat(usage);
  state->fetchedAt = Clock::now();
  return *state->last;
}

}  // namespace tierfs::fs
