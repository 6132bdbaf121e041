#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fs/ChunkMap.h"
#include "fs/DataReader.h"

namespace tierfs::fs {

struct ReadAheadOptions {
  std::uint64_t chunkSize = 4 << 20;  // the unit of the window (the volume's chunk size)
  // The window grows from one chunk to this while a stream stays sequential; 0 turns read-ahead
  // off. 32 MiB keeps 8 chunk reads of 4 MiB in flight: what a BlueStore OSD needs to stream
  // near its `rados bench` rate (2-3 in flight give about 60% of it).
  std::uint64_t maxWindow = 32 << 20;
  // Bytes of read-ahead in flight at once, over all streams: 1,000 open files share it.
  std::uint64_t budget = 64 << 20;
};

// Read-ahead lands in the memory cache, where the reads that follow find it. Windows that add up
// to more than it holds evict chunks fetched ahead before they are read, and the reader fetches
// them again: on this VM a 128 MiB window over a 128 MiB memory cache fetched 3.2 GiB to stream
// 2 GiB, at 0.6 of the speed. So one stream's window is at most a quarter of memory, and the
// budget in flight at most half. Returns `options` so bounded.
ReadAheadOptions fitReadAheadToMemory(ReadAheadOptions options, std::uint64_t memoryBytes);

// A byte range [begin, end) of a file.
struct ByteRange {
  std::uint64_t begin = 0, end = 0;
  bool empty() const { return end <= begin; }
};

// The read-ahead state of one stream (an open file, or an inode read without one): detects
// sequential reads and says how far ahead to fetch. Reads that arrive slightly out of order (the
// kernel sends several at once and threads answer them in any order) and small forward skips keep
// the stream; a seek elsewhere resets the window. Thread-safe.
class ReadAheadStream {
 public:
  // Records a read of [offset, offset + length) of a file of `size` bytes; returns the range to
  // fetch ahead now (chunk-aligned, within the file; empty when there is nothing to do).
  ByteRange onRead(std::uint64_t offset, std::uint64_t length, std::uint64_t size,
                   const ReadAheadOptions& options);
  // The part of the last range returned that was not fetched (over budget): asked for again.
  void notFetched(const ByteRange& range);

 private:
  std::mutex mu_;
  bool started_ = false;
  std::uint64_t next_ = 0;          // where the stream is expected to go on
  std::uint64_t window_ = 0;        // bytes ahead of the reader to keep fetched; 0: not a stream
  std::uint64_t fetchedUntil_ = 0;  // read-ahead asked for up to here
};

// Runs read-ahead for every stream: fetches the ranges streams ask for through the DataReader
// (into the chunk cache, where the reads that follow find them) within one global budget of bytes
// in flight, and counts what it did. Thread-safe.
class ReadAhead {
 public:
  // The window's unit is the reader's chunk size, whatever options.chunkSize says.
  ReadAhead(const DataReader& reader, ReadAheadOptions options)
      : reader_(reader),
        options_(withChunkSize(options, reader.chunkMap().chunkSize())),
        state_(std::make_shared<State>()) {}
  ~ReadAhead();  // waits for the fetches in flight (the store's deadline bounds them)

  // After a read of [offset, offset + length) of `ino` (whose content is `extents`, `size`).
  void onRead(ReadAheadStream& stream, Ino ino, const std::vector<Extent>& extents,
              std::uint64_t size, std::uint64_t offset, std::uint64_t length);

  struct Counters {
    std::uint64_t chunksFetched = 0;    // chunk reads started ahead of a reader
    std::uint64_t bytesOverBudget = 0;  // read-ahead skipped because the budget was spent
  };
  Counters counters() const;
  const ReadAheadOptions& options() const { return options_; }

 private:
  // Shared with the fetches' callbacks.
  struct State {
    std::mutex mu;
    std::condition_variable idle;
    std::uint64_t inFlight = 0;  // bytes
    Counters counters;
  };
  bool reserve(std::uint64_t bytes);
  static ReadAheadOptions withChunkSize(ReadAheadOptions options, std::uint64_t chunkSize) {
    options.chunkSize = chunkSize;
    return options;
  }

  const DataReader& reader_;
  const ReadAheadOptions options_;
  std::shared_ptr<State> state_;
};

}  // namespace tierfs::fs
