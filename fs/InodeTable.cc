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
  placeLocked(*slot, parent, name);
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
  auto node = atLocked({parent, name});
  if (!node) return nullptr;
  std::lock_guard nodeLock(node->mu);
  if (node->unlinked) return nullptr;
  ++node->lookups;
  return node;
}

std::optional<Dentry> InodeTable::knownDentry(Ino parent, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto node = atLocked({parent, name});
  if (!node) return std::nullopt;
  std::lock_guard nodeLock(node->mu);
  if (node->unlinked || node->dentry.encoded.empty()) return std::nullopt;
  return node->dentry;
}

void InodeTable::moved(Ino ino, Ino parent, const std::string& name, const Dentry& dentry) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  std::lock_guard nodeLock(it->second->mu);
  placeLocked(*it->second, parent, name);
  it->second->dentry = dentry;
}

std::shared_ptr<Node> InodeTable::atLocked(const Name& where) const {
  auto at = names_.find(where);
  if (at == names_.end()) return nullptr;
  auto it = nodes_.find(at->second);
  return it == nodes_.end() ? nullptr : it->second;
}

// Needs mu_ and node.mu.
void InodeTable::placeLocked(Node& node, Ino parent, const std::string& name) {
  if (node.parent != parent || node.name != name) {
    auto old = names_.find({node.parent, node.name});
    if (old != names_.end() && old->second == node.ino) names_.erase(old);
    node.parent = parent;
    node.name = name;
  }
  names_[{parent, name}] = node.ino;
}

void InodeTable::forget(Ino ino, std::uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  std::shared_ptr<Node> node = it->second;  // outlives the erase below, and so its mutex
  std::lock_guard nodeLock(node->mu);
  node->lookups = n >= node->lookups ? 0 : node->lookups - n;
  if (node->lookups == 0 && node->openFiles == 0 && !node->writer && node->ino != kRootIno) {
    eraseLocked(it);
  }
}

// Needs mu_ and the node's mu.
void InodeTable::eraseLocked(std::unordered_map<Ino, std::shared_ptr<Node>>::iterator it) {
  const Node& node = *it->second;
  auto at = names_.find({node.parent, node.name});
  if (at != names_.end() && at->second == node.ino) names_.erase(at);
  nodes_.erase(it);
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
