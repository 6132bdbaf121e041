#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "common/Bytes.h"
#include "fs/DataReader.h"
#include "fs/Volume.h"

namespace tierfs::fs {

struct WriterContext {
  Volume& volume;
  cache::ChunkCache& cache;
  const DataReader& reader;
  std::uint64_t dirtyLimit;  // unflushed bytes per file before writes wait for uploads
  std::atomic<std::uint64_t>* unflushedTotal = nullptr;  // of all writers: for metrics
};

// The unflushed changes of one file on this node. Written bytes collect in per-chunk-slot
// buffers; a slot the writer has moved past is uploaded at once as a new immutable chunk (so a
// large write streams to the store while it is written), the rest on drain(). Uploaded runs and
// truncations form a journal that a commit replays over the latest committed inode, so that the
// commit costs what was changed, and a commit that lost a race is simply replayed again.
//
// Thread-safe. Uploads complete on cache threads. A failed upload keeps its bytes for the next
// drain() to upload again, and drain() (so flush/fsync) fails while an upload of its own fails;
// a write that has to wait for uploads (over the dirty limit) fails instead once one fails.
class FileWriter {
 public:
  FileWriter(WriterContext ctx, const Inode& base);
  ~FileWriter();

  Status write(std::uint64_t offset, std::string_view data);
  Status truncate(std::uint64_t size);
  // The file as this node sees it: committed data, then uploaded runs, then buffered bytes.
  Result<std::string> read(std::uint64_t offset, std::uint64_t length);
  std::uint64_t size() const;
  bool hasChanges() const;

  // Uploads every buffered byte and waits for every upload.
  Status drain();
  // Waits for the uploads under way and starts none: then changes() names every chunk uploaded
  // (to remove them, when the writes are given up).
  void waitForUploads();
  // What the uploads that succeeded took in the store (frames, compressed where it paid).
  std::uint64_t uploadedStoredBytes() const;

  // A commit in two steps: changes() gives what to replay (and a mark), committed() is told that
  // the replay up to that mark is now the committed inode.
  struct Changes {
    std::size_t mark = 0;                                  // journal entries included
    std::vector<std::variant<Extent, std::uint64_t>> ops;  // runs and truncations, in order
  };
  Changes changes() const;
  void committed(const Changes& changes, const Inode& inode);

  // Replays `ops` on `inode` (size, chunk map).
  static void replay(const ChunkMap& map,
                     const std::vector<std::variant<Extent, std::uint64_t>>& ops, Inode& inode);

 private:
  struct SlotBuffer {
    std::string data;  // bytes of the slot from its start; valid where `covered`
    Bytes sent;        // the same bytes once their upload has started (data is then empty)
    std::vector<std::pair<std::uint32_t, std::uint32_t>> covered;  // sorted, disjoint [lo, hi)
    std::uint32_t lo() const { return covered.front().first; }
    std::uint32_t hi() const { return covered.back().second; }
    std::string_view bytes() const { return sent.empty() ? std::string_view(data) : sent.view(); }
    void put(std::uint32_t at, std::string_view bytes);
    void clip(std::uint32_t end);
  };

  void writeSlotLocked(std::uint64_t slot, std::uint32_t at, std::string_view bytes);
  void startUploadsLocked(std::uint64_t belowSlot, std::unique_lock<std::mutex>& lock);
  Status startUploadLocked(std::uint64_t slot, std::unique_lock<std::mutex>& lock);
  void finishUploadLocked(std::uint64_t slot, const std::vector<Extent>& runs, std::uint64_t bytes,
                          Status status);
  void keepFailedLocked(std::uint64_t slot);
  void recomputeViewLocked();
  void setUnflushedLocked(std::uint64_t bytes);
  struct Patch {
    std::uint64_t at;
    std::string bytes;
  };
  std::vector<Patch> patchesLocked(std::uint64_t offset, std::uint64_t length) const;

  const WriterContext ctx_;
  const Ino ino_;
  const std::uint64_t chunkSize_;

  mutable std::mutex mu_;  // guards everything below; not held while waiting for the store
  std::condition_variable uploadDone_;
  Inode base_;                                                // the latest committed inode
  std::vector<std::variant<Extent, std::uint64_t>> journal_;  // not yet committed
  std::vector<Extent> view_;                                  // base_ with the journal replayed
  std::uint64_t viewSize_ = 0;                                // ... and the buffered writes
  std::map<std::uint64_t, SlotBuffer> dirty_;                 // by slot, not yet uploading
  std::map<std::uint64_t, SlotBuffer> uploading_;  // by slot; one upload per slot at a time
  std::uint64_t unflushedBytes_ = 0;
  std::uint64_t chunkVersion_ = 0;  // version of every chunk this writer uploads; 0 until first
  std::uint32_t nextPiece_ = 0;
  int inFlight_ = 0;
  Status uploadError_;             // the last upload failure (its bytes are back in dirty_)
  std::uint64_t failures_ = 0;     // upload failures so far
  std::uint64_t storedBytes_ = 0;  // of the uploads that succeeded
};

}  // namespace tierfs::fs
