#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "cache/ChunkCache.h"
#include "fs/TreeCache.h"

namespace tierfs::fs {

struct SweepOptions {
  bool enabled = true;
  unsigned after = 16;    // distinct files of a tree opened, mostly out of order, before a sweep
  unsigned parallel = 8;  // chunks a sweep has in flight
  // Device space a sweep leaves free: it stops before the cache would have to evict, so it never
  // pushes out what the current epoch still needs.
  std::uint64_t headroomBytes = 64 << 20;
  unsigned maxSweeps = 2;  // running at once
};

// Dataset sweeps: when readers open many files of one directory tree in a random order (a
// DataLoader's shuffled epoch), the rest of the tree is fetched onto the cache devices in the
// background, at sweep priority (after readers and read-ahead), while the devices have room.
// A tree is the directory of the files read or, when they come from several of its
// subdirectories (ImageFolder's class directories), the directory above.
//
// Thread-safe. accessed() is called from FUSE threads and only notes the access; each sweep runs
// on a thread of its own.
class DatasetSweep {
 public:
  struct Stats {
    std::uint64_t sweeps = 0;  // trees swept (started)
    std::uint64_t files = 0;   // files whose chunks a sweep fetched or found cached
    std::uint64_t fetchedBytes = 0;
    std::uint64_t stoppedFull = 0;  // sweeps that stopped for lack of room
  };

  DatasetSweep(TreeCache& trees, cache::ChunkCache& cache, SweepOptions options);
  ~DatasetSweep();  // stops the sweeps and waits for them

  void accessed(Ino file, Ino parent, Ino grandparent);
  Stats stats() const;
  void waitIdle();  // for tests: until no sweep runs

 private:
  struct Tracker {
    std::unordered_set<Ino> files;    // distinct files opened under it
    std::unordered_set<Ino> subdirs;  // of those files' directories, below it
    Ino last = 0;
    std::uint64_t outOfOrder = 0;  // opens of a lower inode than the one before
    bool swept = false;
  };
  bool noteLocked(Ino dir, Ino file, Ino subdir);
  void startLocked(Ino dir);
  void run(Ino dir);

  TreeCache& trees_;
  cache::ChunkCache& cache_;
  const SweepOptions options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::unordered_map<Ino, Tracker> trackers_;
  unsigned running_ = 0;
  bool stopping_ = false;
  std::list<std::thread> threads_;
  Stats stats_;
};

}  // namespace tierfs::fs
