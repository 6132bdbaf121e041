#pragma once

// A fs::Filesystem over a real DirStore in a temporary directory, without the kernel: the
// fixture of the Filesystem tests. The store stack is DirStore <- FaultyStore (no rules unless a
// test adds them) <- CountingStore, and every node talks to the outermost one. A node is what a
// daemon holds: its own Volume object, chunk cache and Filesystem.

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/DirStore.h"
#include "backends/FaultyStore.h"
#include "backends/SyncStore.h"
#include "cache/ChunkCache.h"
#include "cache/ChunkKey.h"
#include "fs/Filesystem.h"
#include "tests/support/Assertions.h"
#include "tests/support/CountingStore.h"
#include "tests/support/TempDir.h"
#include "tests/support/TestData.h"

namespace tierfs::cache {
inline void PrintTo(const ChunkKey& key, std::ostream* os) { *os << key.objectName(); }
}  // namespace tierfs::cache

namespace tierfs::testing {

using fs::Ino;
using fs::kRootIno;

// The errno a failed call gives the kernel; 0 on success.
inline int errnoOf(const Status& s) { return s.toErrno(); }
template <typename T>
int errnoOf(const Result<T>& r) {
  return r ? 0 : r.error().toErrno();
}

struct FsNode {
  std::unique_ptr<fs::Volume> volume;
  std::unique_ptr<cache::ChunkCache> cache;
  std::unique_ptr<fs::Filesystem> fs;  // last: destroyed (and flushed) first
};

class FilesystemTest : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kChunk = 64 << 10;

  void SetUp() override {
    auto dir = backends::DirStore::open({.root = dir_.path(), .durable = false});
    ASSERT_OK(dir);
    dirStore_ = std::move(*dir);
    faulty_ = std::make_unique<backends::FaultyStore>(*dirStore_, 1);
    store_ = std::make_unique<CountingStore>(*faulty_);
    auto created = fs::Volume::create(*store_, fs::VolumeOptions{.chunkSize = kChunk}, false);
    ASSERT_OK(created);
    a_ = startNode({});
    ASSERT_NE(a_, nullptr);
  }

  // A node (a daemon) over the shared store.
  std::unique_ptr<FsNode> startNode(fs::FsOptions options,
                                    cache::ListingCache* listings = nullptr) {
    auto node = std::make_unique<FsNode>();
    auto volume = fs::Volume::open(*store_);
    if (!volume) {
      ADD_FAILURE() << volume.error().toString();
      return nullptr;
    }
    node->volume = std::move(*volume);
    node->cache = cache::makeMemoryChunkCache(*store_, {});
    node->fs = std::make_unique<fs::Filesystem>(*node->volume, *node->cache, options, listings);
    return node;
  }

  fs::Filesystem& fsA() { return *a_->fs; }

  // Creates (or truncates) `name` with `data`, written in 128 KiB calls as the kernel does, and
  // closes it (which commits). Yields the inode number.
  static Result<Ino> writeFile(fs::Filesystem& f, Ino parent, const std::string& name,
                               std::string_view data) {
    TIERFS_ASSIGN_OR_RETURN(auto created,
                            f.create(parent, name, 0644, O_CREAT | O_WRONLY | O_TRUNC, {}));
    TIERFS_RETURN_IF_ERROR(writeAll(f, *created.second, 0, data));
    TIERFS_RETURN_IF_ERROR(f.release(std::move(created.second)));
    return created.first.ino;
  }

  static Status writeAll(fs::Filesystem& f, fs::OpenFile& file, std::uint64_t offset,
                         std::string_view data) {
    constexpr std::size_t kWrite = 128 << 10;
    for (std::size_t done = 0; done < data.size(); done += kWrite) {
      auto n = f.write(file, offset + done, data.substr(done, kWrite));
      TIERFS_RETURN_IF_ERROR(statusOf(n));
    }
    return Status::ok();
  }

  // The whole file through a fresh read-only open.
  static Result<std::string> readFile(fs::Filesystem& f, Ino ino) {
    bool keep = false;
    TIERFS_ASSIGN_OR_RETURN(auto file, f.open(ino, O_RDONLY, &keep));
    auto data = f.read(*file, 0, std::uint64_t{1} << 40);
    TIERFS_RETURN_IF_ERROR(f.release(std::move(file)));
    if (!data) return failure(data.error());
    return data->toString();
  }

  // The root directory's file `name` as read by a node that starts now (another GPU node).
  Result<std::string> readOnNewNode(const std::string& name) {
    auto node = startNode({});
    TIERFS_ASSIGN_OR_RETURN(fs::Inode found, node->fs->lookup(kRootIno, name));
    return readFile(*node->fs, found.ino);
  }

  // The chunk objects in the store, optionally of one file only.
  std::set<cache::ChunkKey> chunkObjects(Ino ino = 0) {
    std::set<cache::ChunkKey> out;
    backends::SyncStore sync(*dirStore_);
    std::string cursor;
    for (;;) {
      auto page = sync.listObjects(cursor, 1000);
      if (!page) {
        ADD_FAILURE() << page.error().toString();
        return out;
      }
      for (const auto& name : page->names) {
        auto key = cache::ChunkKey::fromObjectName(name);
        if (key && (ino == 0 || key->ino == ino)) out.insert(*key);
      }
      if (!page->more) return out;
      cursor = page->nextCursor;
    }
  }

  // The chunk objects a committed inode refers to.
  std::set<cache::ChunkKey> referencedChunks(const fs::Inode& inode) const {
    std::set<cache::ChunkKey> out;
    for (const auto& p : fs::ChunkMap(kChunk).pieces(inode.extents)) {
      out.insert({inode.ino, p.version, p.piece});
    }
    return out;
  }

  // Chunk removal runs on the store's threads after the Filesystem asked for it: waits (a few
  // seconds at most) until the file's chunk objects are `expected`, and returns what is there.
  std::set<cache::ChunkKey> chunksSettleTo(Ino ino, const std::set<cache::ChunkKey>& expected) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    std::set<cache::ChunkKey> now = chunkObjects(ino);
    while (now != expected && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      now = chunkObjects(ino);
    }
    return now;
  }

  TempDir dir_{TempDir::memoryBase()};
  // Destroyed inner first: chunk removals a node started may still be in flight when it goes,
  // and DirStore answers them as it closes, through the decorators, which must still be there.
  std::unique_ptr<CountingStore> store_;
  std::unique_ptr<backends::FaultyStore> faulty_;
  std::unique_ptr<backends::DirStore> dirStore_;
  std::unique_ptr<FsNode> a_;  // node A, with default options
};

}  // namespace tierfs::testing
