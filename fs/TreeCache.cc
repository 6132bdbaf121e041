#include "fs/TreeCache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <map>
#include <mutex>

#include "fs/ChunkMap.h"

namespace tierfs::fs {

Result<Dentry> TreeCache::resolve(const std::string& path) {
  Dentry at;
  at.inode.ino = kRootIno;
  at.inode.type = FileType::kDirectory;
  std::string_view rest = path;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view name = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      return failure(Status::invalidArgument(fmt::format("path '{}': '..' is not allowed", path)));
    }
    if (name.size() > NAME_MAX) {
      return failure(Status::posix(
          ENAMETOOLONG, fmt::format("path '{}': a name of {} bytes, more than the {} allowed", path,
                                    name.size(), NAME_MAX)));
    }
    if (!at.inode.isDir()) {
      return failure(Status::posix(ENOTDIR, fmt::format("path '{}': not a directory", path)));
    }
    TIERFS_ASSIGN_OR_RETURN(auto found, volume_.readDentry(Location::of(at.inode.ino, name)));
    if (!found) {
      return failure(Status::notFound(fmt::format("path '{}': no such file or directory", path)));
    }
    at = std::move(*found);
  }
  return at;
}

Status TreeCache::walk(const std::string& path, const FileFn& fn) {
  TIERFS_ASSIGN_OR_RETURN(Dentry top, resolve(path));
  if (top.inode.isDir()) return walkDir(top.inode.ino, path, fn);
  if (top.inode.type == FileType::kRegular) return fn(path, top.inode);
  return Status::ok();  // a symlink: nothing cached, and not followed
}

Status TreeCache::walkDir(Ino dir, const std::string& path, const FileFn& fn) {
  std::string after;
  for (;;) {
    TIERFS_ASSIGN_OR_RETURN(DirPage page, volume_.listDir(dir, after, 1000));
    for (const auto& [name, dentry] : page.entries) {
      const std::string child = path.empty() || path == "." ? name : path + "/" + name;
      if (dentry.inode.isDir()) {
        TIERFS_RETURN_IF_ERROR(walkDir(dentry.inode.ino, child, fn));
      } else if (dentry.inode.type == FileType::kRegular) {
        TIERFS_RETURN_IF_ERROR(fn(child, dentry.inode));
      }
    }
    if (!page.more || page.entries.empty()) return Status::ok();
    after = page.entries.back().first;
  }
}

std::vector<TreeCache::Chunk> TreeCache::chunksOf(const Inode& inode) const {
  std::map<PieceId, std::uint64_t> bytes;
  for (const PieceRange& r :
       ChunkMap(volume_.record().chunkSize).resolve(inode.extents, 0, inode.size)) {
    bytes[r.id] += r.length;
  }
  std::vector<Chunk> out;
  out.reserve(bytes.size());
  for (const auto& [id, n] : bytes) out.push_back({{inode.ino, id.version, id.piece}, n});
  return out;
}

Result<std::vector<TreeCache::File>> TreeCache::files(const std::vector<std::string>& paths) {
  std::vector<File> out;
  for (const std::string& path : paths) {
    TIERFS_RETURN_IF_ERROR(walk(path, [&](const std::string& p, const Inode& inode) {
      out.push_back({p, inode.ino, chunksOf(inode)});
      return Status::ok();
    }));
  }
  return out;
}

Result<std::vector<TreeCache::File>> TreeCache::filesUnder(Ino dir) {
  std::vector<File> out;
  TIERFS_RETURN_IF_ERROR(walkDir(dir, "", [&](const std::string& p, const Inode& inode) {
    out.push_back({p, inode.ino, chunksOf(inode)});
    return Status::ok();
  }));
  return out;
}

std::vector<std::optional<TreeCache::File>> TreeCache::filesAt(
    const std::vector<std::string>& paths) {
  // The regular files of each directory named, by name (nullopt: the directory is unreadable).
  std::map<std::string, std::optional<std::map<std::string, Inode>>> dirs;
  auto split = [](const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos
               ? std::pair<std::string, std::string>{"", path}
               : std::pair<std::string, std::string>{path.substr(0, slash), path.substr(slash + 1)};
  };
  for (const std::string& path : paths) {
    const std::string dir = split(path).first;
    if (dirs.contains(dir)) continue;
    auto& entries = dirs[dir];
    auto at = resolve(dir);
    if (!at || !at->inode.isDir()) continue;
    std::map<std::string, Inode> files;
    std::string after;
    for (;;) {
      auto page = volume_.listDir(at->inode.ino, after, 1000);
      if (!page) break;
      for (auto& [name, dentry] : page->entries) {
        if (dentry.inode.type == FileType::kRegular) files.emplace(name, dentry.inode);
      }
      if (!page->more || page->entries.empty()) break;
      after = page->entries.back().first;
    }
    entries = std::move(files);
  }
  std::vector<std::optional<File>> out;
  out.reserve(paths.size());
  for (const std::string& path : paths) {
    const auto [dir, name] = split(path);
    const auto& entries = dirs[dir];
    auto it = entries ? entries->find(name) : std::map<std::string, Inode>::const_iterator{};
    if (!entries || it == entries->end()) {
      out.emplace_back();
    } else {
      out.push_back(File{path, it->second.ino, chunksOf(it->second)});
    }
  }
  return out;
}

Result<control::TreeCounts> TreeCache::measure(const std::vector<std::string>& paths) {
  TIERFS_ASSIGN_OR_RETURN(std::vector<File> files, this->files(paths));
  control::TreeCounts c;
  for (const File& f : files) {
    bool all = true;
    ++c.files;
    for (const Chunk& chunk : f.chunks) {
      c.bytes += chunk.bytes;
      if (cache_.holds(chunk.key)) {
        c.cachedBytes += chunk.bytes;
      } else {
        all = false;
      }
    }
    if (all) ++c.cachedFiles;
  }
  return c;
}

Result<control::TreeCounts> TreeCache::evict(const std::vector<std::string>& paths) {
  TIERFS_ASSIGN_OR_RETURN(std::vector<File> files, this->files(paths));
  control::TreeCounts c;
  for (const File& f : files) {
    bool any = false;
    ++c.files;
    for (const Chunk& chunk : f.chunks) {
      c.bytes += chunk.bytes;
      if (!cache_.holds(chunk.key)) continue;
      cache_.evict(chunk.key);
      c.cachedBytes += chunk.bytes;
      any = true;
    }
    if (any) ++c.cachedFiles;
  }
  return c;
}

Result<control::WarmProgress> TreeCache::warm(
    const std::vector<std::string>& paths, unsigned parallel, Duration interval,
    const std::function<bool(const control::WarmProgress&)>& report) {
  TIERFS_ASSIGN_OR_RETURN(std::vector<File> files, this->files(paths));
  struct State {
    std::mutex mu;
    std::condition_variable changed;
    unsigned inFlight = 0;
    control::WarmProgress progress;
    std::vector<std::size_t> remaining;  // chunks of each file not answered yet
    std::vector<std::string> errors;     // the first error of each file
  } st;
  st.remaining.resize(files.size());
  st.errors.resize(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    ++st.progress.total.files;
    for (const Chunk& c : files[i].chunks) st.progress.total.bytes += c.bytes;
    st.remaining[i] = files[i].chunks.size();
  }
  parallel = std::max(1u, parallel);

  bool cancelled = false;
  Clock::time_point nextReport = Clock::now() + interval;
  // Waits (under `lock`) until `ready`, reporting on the way; false once cancelled.
  auto waitUntil = [&](std::unique_lock<std::mutex>& lock, auto ready) {
    while (!ready()) {
      st.changed.wait_until(lock, nextReport);
      if (Clock::now() < nextReport) continue;
      control::WarmProgress copy = st.progress;
      lock.unlock();
      if (!report(copy)) cancelled = true;
      lock.lock();
      nextReport = Clock::now() + interval;
      if (cancelled) return false;
    }
    return true;
  };
  auto fileDone = [&](std::size_t i) {  // under st.mu
    ++st.progress.done.files;
    if (st.errors[i].empty()) ++st.progress.done.cachedFiles;
  };

  {
    std::unique_lock lock(st.mu);
    for (std::size_t i = 0; i < files.size() && !cancelled; ++i) {
      if (files[i].chunks.empty()) fileDone(i);
      for (const Chunk& chunk : files[i].chunks) {
        if (!waitUntil(lock, [&] { return st.inFlight < parallel; })) break;
        ++st.inFlight;
        lock.unlock();
        cache_.warm(chunk.key, [&st, &fileDone, i, bytes = chunk.bytes](Result<std::uint64_t> r) {
          std::lock_guard done(st.mu);
          st.progress.done.bytes += bytes;
          if (r) {
            st.progress.fetchedBytes += *r;
            st.progress.done.cachedBytes += bytes;
          } else if (st.errors[i].empty()) {
            st.errors[i] = r.error().toString();
          }
          if (--st.remaining[i] == 0) fileDone(i);
          --st.inFlight;
          st.changed.notify_all();
        });
        lock.lock();
      }
    }
    // What was started finishes even after a cancel: its callbacks use this frame.
    cancelled = !waitUntil(lock, [&] { return st.inFlight == 0; }) || cancelled;
    if (cancelled) st.changed.wait(lock, [&] { return st.inFlight == 0; });
  }
  if (cancelled) return failure(Status::cancelled("warm-up cancelled"));
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!st.errors[i].empty()) st.progress.failures.push_back({files[i].path, st.errors[i]});
  }
  st.progress.finished = true;
  return st.progress;
}

}  // namespace tierfs::fs
