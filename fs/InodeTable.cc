#include "fs/InodeTable.h"

namespace tierfs::fs {

std::shared_ptr<Node> InodeTable::find(Ino ino) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second;
}

std::shared_ptr<Node> InodeTable::remember(Ino parent, const std::string& name,
                                           const Dentry& dentry, bool countLookup,
                                           Clock::time_point fetchedAt) {
  std::lock_guard lock(mu_);
  auto& slot = nodes_[dentry.inode.ino];
  if (!slot) slot = std::make_shared<Node>(dentry.inode.ino);
  std::lock_guard nodeLock(slot->mu);
  slot->parent = parent;
  slot->name = name;
  // A listing made before the node's last read must not replace what that read found. (Unflushed
  // changes, a writer, are replayed over whatever the dentry is at commit.)
  if (slot->dentry.encoded.empty() || fetchedAt >= slot->fetchedAt) {
    slot->dentry = dentry;
    slot->fetchedAt = fetchedAt;
  }
  if (countLookup) ++slot->lookups;
  return slot;
}

std::shared_ptr<Node> InodeTable::lookupKnown(Ino parent, const std::string& name) {
  std::lock_guard lock(mu_);
  for (const auto& [ino, node] : nodes_) {
    std::lock_guard nodeLock(node->mu);
    if (node->parent == parent && node->name == name && !node->unlinked) {
      ++node->lookups;
      return node;
    }
  }
  return nullptr;
}

void InodeTable::forget(Ino ino, std::uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  std::shared_ptr<Node> node = it->second;  // outlives the erase below, and so its mutex
  std::lock_guard nodeLock(node->mu);
  node->lookups = n >= node->lookups ? 0 : node->lookups - n;
  if (node->lookups == 0 && node->openFiles == 0 && !node->writer && node->ino != kRootIno) {
    nodes_.erase(it);
  }
}

void InodeTable::releaseIfUnused(Ino ino) { forget(ino, 0); }

std::size_t InodeTable::size() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

}  // namespace tierfs::fs

namespace tierfs::fs {

std::vector<std::shared_ptr<Node>> InodeTable::withWriters() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<Node>> out;
  for (const auto& [ino, node] : nodes_) {
    std::lock_guard nodeLock(node->mu);
    if (node->writer) out.push_back(node);
  }
  return out;
}

}  // namespace tierfs::fs
