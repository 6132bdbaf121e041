#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/ChunkCache.h"
#include "common/control/Protocol.h"
#include "fs/Volume.h"

namespace tierfs::fs {

// What the control commands do with trees of the volume in this node's cache (warm, status
// PATH, evict): walk the committed tree in the store (directories a page at a time) and ask the
// chunk cache about each file's chunks. Paths are relative to the volume's root, without "..".
// Bytes are the files' data bytes (holes, which have no chunk, are left out). A file counts as
// cached when every one of its chunks is.
//
// Thread-safe; calls block on the store.
class TreeCache {
 public:
  TreeCache(Volume& volume, cache::ChunkCache& cache) : volume_(volume), cache_(cache) {}

  // How much of the trees this node holds, from the cache's index (no data is read).
  Result<control::TreeCounts> measure(const std::vector<std::string>& paths);
  // Drops the trees' chunks from this node's cache; cached* of the result: what was dropped.
  Result<control::TreeCounts> evict(const std::vector<std::string>& paths);

  // Fetches whatever of the trees is not cached, `parallel` chunks at a time. `report` gets the
  // progress about every `interval` and at the end (finished); it returns false to cancel (the
  // client is gone), after which no new chunk is started. Failed files are named in the result;
  // a tree that cannot be walked is an error.
  Result<control::WarmProgress> warm(
      const std::vector<std::string>& paths, unsigned parallel, Duration interval,
      const std::function<bool(const control::WarmProgress&)>& report);

  struct Chunk {
    cache::ChunkKey key;
    std::uint64_t bytes = 0;  // of the file's data in it
  };
  struct File {
    std::string path;
    Ino ino = 0;
    std::vector<Chunk> chunks;
  };
  // The regular files of the trees, in walk order (a directory's entries by name).
  Result<std::vector<File>> files(const std::vector<std::string>& paths);
  // The same for the tree of a directory known by its inode (paths relative to it).
  Result<std::vector<File>> filesUnder(Ino dir);
  // The files at `paths`, in their order (nullopt for one that is missing or not a regular
  // file). Each directory is listed once: 100,000 paths cost a listing per directory, not a
  // lookup per path.
  std::vector<std::optional<File>> filesAt(const std::vector<std::string>& paths);

 private:
  using FileFn = std::function<Status(const std::string& path, const Inode& inode)>;

  Result<Dentry> resolve(const std::string& path);
  Status walk(const std::string& path, const FileFn& fn);
  Status walkDir(Ino dir, const std::string& path, const FileFn& fn);
  std::vector<Chunk> chunksOf(const Inode& inode) const;

  Volume& volume_;
  cache::ChunkCache& cache_;
};

}  // namespace tierfs::fs
