// The copy engine of tierfs import/export: a parallel scan of the source, then the directories
// level by level (parents before children), then every file and symlink on a pool of workers,
// then the directories' attributes from the deepest up.
#include "tools/TreeCopy.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "tools/CopyProgress.h"

namespace tierfs::tools::copy {
namespace {

constexpr std::size_t kNoDir = SIZE_MAX;

struct DirItem {
  Entry src;
  std::string srcPath, dstPath;
  std::size_t parent = kNoDir;
  int depth = 0;
  MadeDir made;
  bool ok = false;      // made or found at the destination
  bool placed = false;  // a stand-in for the destination directory of a lone file
};

struct LeafItem {
  Entry src;
  std::string srcPath, dstPath, dstName;
  std::size_t dir = 0;  // index in `dirs`
};

// Runs `work` on `jobs` threads and calls tick() every 250 ms until all of them have returned.
void runThreads(unsigned jobs, const std::function<void()>& work,
                const std::function<void()>& tick) {
  std::mutex mu;
  std::condition_variable allDone;
  unsigned running = jobs;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < jobs; ++t) {
    threads.emplace_back([&] {
      work();
      std::lock_guard lock(mu);
      if (--running == 0) allDone.notify_all();
    });
  }
  std::unique_lock lock(mu);
  while (!allDone.wait_for(lock, std::chrono::milliseconds(250), [&] { return running == 0; })) {
    lock.unlock();
    tick();
    lock.lock();
  }
  lock.unlock();
  for (auto& t : threads) t.join();
}

// Runs fn(i) for every i in [0, count) on up to `jobs` threads.
void parallelFor(unsigned jobs, std::size_t count, const std::function<void(std::size_t)>& fn,
                 const std::function<void()>& tick) {
  std::atomic<std::size_t> next{0};
  runThreads(
      static_cast<unsigned>(std::min<std::size_t>(jobs, count)),
      [&] {
        for (std::size_t i = next++; i < count; i = next++) fn(i);
      },
      tick);
}

class TreeCopier {
 public:
  TreeCopier(Source& source, Destination& destination, const CopyOptions& options)
      : src_(source),
        dst_(destination),
        options_(options),
        progress_(options.verb, options.progress) {}

  Result<CopyTotals> run(const std::string& srcPath, const std::string& dstPath);

 private:
  Status placeRoot(const std::string& srcPath, const std::string& dstPath);
  void scan();
  std::vector<std::size_t> scanDir(std::size_t index);  // the subdirectories found
  void makeDirs();
  void copyLeaves();
  Status copyLeaf(const LeafItem& leaf);
  Status copyFile(const LeafItem& leaf, std::uint64_t dirRef, std::uint64_t srcDirRef);
  void finishDirs();
  std::map<int, std::vector<std::size_t>> dirsByDepth() const;
  void fail(const Status& s);
  void tick() { progress_.draw(); }

  Source& src_;
  Destination& dst_;
  const CopyOptions& options_;
  Progress progress_;
  std::mutex mu_;             // guards the two below while the scan runs
  std::deque<DirItem> dirs_;  // [0] is the root (or the stand-in directory of a lone file)
  std::vector<LeafItem> leaves_;
  std::atomic<std::uint64_t> dirsOk_{0}, symlinks_{0}, files_{0}, skipped_{0}, failed_{0};
  std::atomic<std::uint64_t> bytes_{0};  // of the files copied (progress counts failed ones too)
};

void TreeCopier::fail(const Status& s) {
  ++failed_;
  progress_.message(fmt::format("tierfs {}: {}", options_.verb, s.message()));
}

Status TreeCopier::placeRoot(const std::string& srcPath, const std::string& dstPath) {
  TIERFS_ASSIGN_OR_RETURN(Entry root, src_.root());
  DirItem item{root, srcPath, dstPath};
  if (root.attrs.kind == Kind::kDir) {
    TIERFS_ASSIGN_OR_RETURN(item.made, dst_.rootDir(root.attrs));
    item.ok = true;
    dirs_.push_back(std::move(item));
    return Status::ok();
  }
  if (root.attrs.kind == Kind::kOther) {
    return Status::invalidArgument(
        fmt::format("'{}' is not a regular file, directory or symlink", srcPath));
  }
  TIERFS_ASSIGN_OR_RETURN(Spot spot, dst_.rootSpot(root.name));
  item.made.ref = spot.dirRef;
  item.ok = item.placed = true;
  dirs_.push_back(std::move(item));
  leaves_.push_back(LeafItem{root, srcPath, spot.path, spot.name, 0});
  progress_.addTotals(1, root.attrs.kind == Kind::kFile ? root.attrs.size : 0);
  return Status::ok();
}

// Lists the directories on `jobs` threads, each listing one directory at a time and queueing the
// subdirectories it finds.
void TreeCopier::scan() {
  std::deque<std::size_t> queue;
  if (!dirs_[0].placed) queue.push_back(0);
  std::condition_variable changed;
  unsigned busy = 0;
  auto worker = [&] {
    std::unique_lock lock(mu_);
    for (;;) {
      changed.wait(lock, [&] { return !queue.empty() || busy == 0; });
      if (queue.empty()) return;  // and nobody busy: nothing more can come
      std::size_t index = queue.front();
      queue.pop_front();
      ++busy;
      lock.unlock();
      std::vector<std::size_t> found = scanDir(index);
      lock.lock();
      queue.insert(queue.end(), found.begin(), found.end());
      --busy;
      changed.notify_all();
    }
  };
  runThreads(options_.jobs, worker, [this] { tick(); });
}

std::vector<std::size_t> TreeCopier::scanDir(std::size_t index) {
  Entry dir;
  std::string srcPath, dstPath;
  int depth = 0;
  {
    std::lock_guard lock(mu_);
    dir = dirs_[index].src;
    srcPath = dirs_[index].srcPath;
    dstPath = dirs_[index].dstPath;
    depth = dirs_[index].depth;
  }
  std::vector<std::size_t> found;
  auto listing = src_.list(dir, srcPath);
  if (!listing) {
    fail(listing.error());
    return found;
  }
  for (const Status& s : listing->problems) fail(s);
  std::uint64_t files = 0, bytes = 0;
  std::lock_guard lock(mu_);
  for (Entry& e : listing->entries) {
    std::string from = joinPath(srcPath, e.name), to = joinPath(dstPath, e.name);
    switch (e.attrs.kind) {
      case Kind::kDir:
        found.push_back(dirs_.size());
        dirs_.push_back(DirItem{std::move(e), std::move(from), std::move(to), index, depth + 1});
        break;
      case Kind::kFile:
      case Kind::kSymlink:
        ++files;
        bytes += e.attrs.kind == Kind::kFile ? e.attrs.size : 0;
        leaves_.push_back(LeafItem{e, std::move(from), std::move(to), e.name, index});
        break;
      case Kind::kOther:
        ++skipped_;
        progress_.message(
            fmt::format("tierfs {}: skipping '{}': not a regular file, directory or symlink",
                        options_.verb, from));
        break;
    }
  }
  progress_.addTotals(files, bytes);
  return found;
}

std::map<int, std::vector<std::size_t>> TreeCopier::dirsByDepth() const {
  std::map<int, std::vector<std::size_t>> levels;
  for (std::size_t i = 1; i < dirs_.size(); ++i) levels[dirs_[i].depth].push_back(i);
  return levels;
}

void TreeCopier::makeDirs() {
  if (dirs_[0].ok && !dirs_[0].placed) ++dirsOk_;
  for (const auto& [depth, level] : dirsByDepth()) {
    parallelFor(
        options_.jobs, level.size(),
        [&](std::size_t i) {
          DirItem& d = dirs_[level[i]];
          const DirItem& parent = dirs_[d.parent];
          if (!parent.ok) return;  // its failure was reported; everything below is skipped
          auto made = dst_.makeDir(parent.made.ref, d.src.name, d.dstPath, d.src.attrs);
          if (!made) return fail(made.error());
          d.made = *made;
          d.ok = true;
          ++dirsOk_;
        },
        [this] { tick(); });
  }
}

void TreeCopier::copyLeaves() {
  parallelFor(
      options_.jobs, leaves_.size(),
      [&](std::size_t i) {
        const LeafItem& leaf = leaves_[i];
        if (!dirs_[leaf.dir].ok) {
          ++failed_;  // in a directory that could not be made (reported)
        } else if (Status s = copyLeaf(leaf); !s.isOk()) {
          fail(s);
        }
        progress_.fileDone();
      },
      [this] { tick(); });
}

Status TreeCopier::copyLeaf(const LeafItem& leaf) {
  const DirItem& dir = dirs_[leaf.dir];
  if (leaf.src.attrs.kind == Kind::kSymlink) {
    TIERFS_RETURN_IF_ERROR(
        dst_.makeSymlink(dir.made.ref, leaf.dstName, leaf.dstPath, leaf.src.attrs));
    ++symlinks_;
    return Status::ok();
  }
  // A lone file's source directory is unknown to the source: it finds the file by itself.
  return copyFile(leaf, dir.made.ref, dir.placed ? 0 : dir.src.ref);
}

Status TreeCopier::copyFile(const LeafItem& leaf, std::uint64_t dirRef, std::uint64_t srcDirRef) {
  TIERFS_ASSIGN_OR_RETURN(auto reader, src_.open(srcDirRef, leaf.src, leaf.srcPath));
  TIERFS_ASSIGN_OR_RETURN(auto sink,
                          dst_.createFile(dirRef, leaf.dstName, leaf.dstPath, leaf.src.attrs));
  std::string piece;
  std::uint64_t offset = 0;
  for (;;) {
    TIERFS_RETURN_IF_ERROR(reader->read(offset, options_.pieceSize, piece));
    if (piece.empty()) break;
    TIERFS_RETURN_IF_ERROR(sink->write(offset, piece));
    offset += piece.size();
    progress_.addBytes(piece.size());
  }
  TIERFS_RETURN_IF_ERROR(sink->finish(leaf.src.attrs));
  ++files_;
  bytes_ += offset;
  return Status::ok();
}

// Deepest first, so that setting a directory's times is the last change in it.
void TreeCopier::finishDirs() {
  auto levels = dirsByDepth();
  levels[0].push_back(0);
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const std::vector<std::size_t>& level = it->second;
    parallelFor(
        options_.jobs, level.size(),
        [&](std::size_t i) {
          const DirItem& d = dirs_[level[i]];
          if (!d.ok || d.placed || !(d.made.created || options_.overwrite)) return;
          if (Status s = dst_.finishDir(d.made.ref, d.dstPath, d.src.attrs); !s.isOk()) fail(s);
        },
        [this] { tick(); });
  }
}

Result<CopyTotals> TreeCopier::run(const std::string& srcPath, const std::string& dstPath) {
  const auto start = Clock::now();
  TIERFS_RETURN_IF_ERROR(placeRoot(srcPath, dstPath));
  scan();
  progress_.startCopy();
  makeDirs();
  copyLeaves();
  finishDirs();
  progress_.clear();
  CopyTotals t;
  t.files = files_;
  t.dirs = dirsOk_;
  t.symlinks = symlinks_;
  t.bytes = bytes_;
  t.storedBytes = dst_.storedBytes();
  t.skipped = skipped_;
  t.failed = failed_;
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

}  // namespace

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

Result<CopyTotals> copyTree(Source& source, Destination& destination, const std::string& srcPath,
                            const std::string& dstPath, const CopyOptions& options) {
  TreeCopier copier(source, destination, options);
  return copier.run(srcPath, dstPath);
}

}  // namespace tierfs::tools::copy
