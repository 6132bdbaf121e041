#include "fs/DatasetSweep.h"

#include <spdlog/spdlog.h>

namespace tierfs::fs {
namespace {

// Directories tracked at once; past it the trackers of trees not swept are forgotten.
constexpr std::size_t kMaxTrackers = 4096;

}  // namespace

DatasetSweep::DatasetSweep(TreeCache& trees, cache::ChunkCache& cache, SweepOptions options)
    : trees_(trees), cache_(cache), options_(options) {}

DatasetSweep::~DatasetSweep() {
  std::list<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  changed_.notify_all();  // a sweep waiting for a free slot stops now
  for (std::thread& t : threads) t.join();
}

void DatasetSweep::accessed(Ino file, Ino parent, Ino grandparent) {
  if (!options_.enabled) return;
  std::lock_guard lock(mu_);
  if (stopping_) return;
  if (trackers_.size() > kMaxTrackers) {
    std::erase_if(trackers_, [](const auto& entry) { return !entry.second.swept; });
  }
  // The directory above first: files taken from several of its subdirectories make it the tree.
  if (grandparent != 0 && noteLocked(grandparent, file, parent)) return startLocked(grandparent);
  if (noteLocked(parent, file, 0)) startLocked(parent);
}

// Notes an open under `dir`; true when the tree is now to be swept (once).
bool DatasetSweep::noteLocked(Ino dir, Ino file, Ino subdir) {
  if (dir == kRootIno) return false;  // the whole volume is no dataset
  Tracker& t = trackers_[dir];
  if (t.swept || !t.files.insert(file).second) return false;
  if (subdir != 0) t.subdirs.insert(subdir);
  if (file < t.last) ++t.outOfOrder;  // files are numbered as created: in name order, mostly
  t.last = file;
  const bool many = t.files.size() >= options_.after;
  const bool shuffled = t.outOfOrder * 4 >= t.files.size();
  const bool spread = subdir == 0 || t.subdirs.size() >= 2;
  if (!many || !shuffled || !spread) return false;
  t.swept = true;
  t.files.clear();
  t.subdirs.clear();
  return true;
}

void DatasetSweep::startLocked(Ino dir) {
  if (running_ >= options_.maxSweeps) {
    trackers_[dir].swept = false;  // noticed again at a later open
    return;
  }
  ++running_;
  ++stats_.sweeps;
  threads_.emplace_back([this, dir] { run(dir); });
}

void DatasetSweep::run(Ino dir) {
  auto files = trees_.filesUnder(dir);
  if (!files) spdlog::warn("sweep of directory {}: {}", dir, files.error().toString());
  std::uint64_t swept = 0;
  bool full = false;
  unsigned inFlight = 0;
  std::uint64_t pendingBytes = 0;  // asked for, not in the cache yet: not in roomBytes() either
  std::unique_lock lock(mu_);
  if (files) {
    spdlog::info("sweep: directory {} is read in a random order: fetching its {} files", dir,
                 files->size());
  }
  for (std::size_t i = 0; files && i < files->size() && !stopping_ && !full; ++i) {
    for (const TreeCache::Chunk& chunk : (*files)[i].chunks) {
      const std::uint64_t pending = pendingBytes;
      lock.unlock();
      const bool held = cache_.holds(chunk.key);
      full = !held && cache_.roomBytes() < options_.headroomBytes + pending + chunk.bytes;
      lock.lock();
      if (held) continue;
      if (full || stopping_) break;
      changed_.wait(lock, [&] { return inFlight < options_.parallel || stopping_; });
      if (stopping_) break;
      ++inFlight;
      pendingBytes += chunk.bytes;
      lock.unlock();
      cache_.warm(
          chunk.key,
          [this, &inFlight, &pendingBytes, bytes = chunk.bytes](Result<std::uint64_t> r) {
            std::lock_guard done(mu_);
            if (r) stats_.fetchedBytes += *r;
            --inFlight;
            pendingBytes -= bytes;
            changed_.notify_all();
          },
          cache::Priority::kSweep);
      lock.lock();
    }
    if (!full) ++swept;
  }
  changed_.wait(lock, [&] { return inFlight == 0; });  // their callbacks use this frame
  stats_.files += swept;
  if (full) ++stats_.stoppedFull;
  spdlog::info("sweep of directory {} ended: {} files{}", dir, swept,
               full ? " (stopped: the cache devices are full)" : "");
  --running_;
  changed_.notify_all();
}

DatasetSweep::Stats DatasetSweep::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void DatasetSweep::waitIdle() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [this] { return running_ == 0; });
}

}  // namespace tierfs::fs
