#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/Deadline.h"
#include "fs/ReadAhead.h"
#include "fs/Volume.h"

namespace tierfs::fs {

class FileWriter;

// What the daemon knows of one inode the kernel holds a reference to.
struct Node {
  explicit Node(Ino i) : ino(i) {}
  const Ino ino;

  // Serialises the commits of this file (flush, fsync and release from several handles): each
  // replays the writer's journal up to a mark and then trims it. Held across the store update;
  // taken before (never after) `mu`.
  std::mutex commitMu;
  std::mutex mu;   // guards the fields below; never held across a store call or a FUSE reply
  Ino parent = 0;  // where the dentry lives: (parent, name); parent 0 for the root
  std::string name;
  Dentry dentry;                       // as last read or committed
  Clock::time_point fetchedAt;         // when `dentry` was last known to match the store
  std::uint64_t lookups = 0;           // the kernel's references (lookup count)
  int openFiles = 0;                   // open file handles
  bool unlinked = false;               // removed while the kernel still held it
  std::uint64_t pageCacheVersion = 0;  // content version the kernel's page cache holds
  std::uint64_t localCommits = 0;      // commits made on this node (open files adopt them)
  std::shared_ptr<FileWriter> writer;  // unflushed changes; null when clean
  ReadAheadStream readAhead;           // of reads without an open file (read-only mounts)

  Location location() const { return Location::of(parent, name); }
};

// Inodes the kernel knows, by number, following its lookup/forget counts (as libfuse's
// passthrough_hp does). Thread-safe.
class InodeTable {
 public:
  std::shared_ptr<Node> find(Ino ino) const;
  // The node for `dentry` found at (parent, name), created when new; counts one kernel lookup
  // when `countLookup`. Refreshes the node's location and dentry.
  std::shared_ptr<Node> remember(Ino parent, const std::string& name, const Dentry& dentry,
                                 bool countLookup, Clock::time_point fetchedAt = Clock::now());
  // The node known at (parent, name), not unlinked, with one more kernel lookup counted; null
  // when there is none. For when the store cannot be asked (a stale hold).
  std::shared_ptr<Node> lookupKnown(Ino parent, const std::string& name);
  // The dentry this node last read or wrote at (parent, name), if it holds a node there that is
  // not unlinked. Another node may have changed the name since: use it as the expected value of
  // a guarded update, never as the truth.
  std::optional<Dentry> knownDentry(Ino parent, const std::string& name) const;
  // The node `ino` now lives at (parent, name) with `dentry` (a rename made here).
  void moved(Ino ino, Ino parent, const std::string& name, const Dentry& dentry);
  // Drops `n` kernel references; forgets the node when none are left and nothing is open.
  void forget(Ino ino, std::uint64_t n);
  // Forgets the node if the kernel holds no references and no file is open.
  void releaseIfUnused(Ino ino);
  std::size_t size() const;
  // Nodes with unflushed changes.
  std::vector<std::shared_ptr<Node>> withWriters() const;

 private:
  using Name = std::pair<Ino, std::string>;  // (parent, name)
  std::shared_ptr<Node> atLocked(const Name& where) const;
  void placeLocked(Node& node, Ino parent, const std::string& name);
  void eraseLocked(std::unordered_map<Ino, std::shared_ptr<Node>>::iterator it);

  mutable std::mutex mu_;  // guards nodes_ and names_; taken before (never after) a Node::mu
  std::unordered_map<Ino, std::shared_ptr<Node>> nodes_;
  // Where each node is, by name: the last node remembered or moved there. (A node whose name was
  // taken by another keeps its own parent and name, but no longer this entry.)
  std::map<Name, Ino> names_;
};

}  // namespace tierfs::fs
