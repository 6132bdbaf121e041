#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "common/Bytes.h"

namespace tierfs {

// `bytes` (rounded up to whole pages) of page-aligned memory, freed with the last owner: what
// O_DIRECT transfers need, and what every pooled buffer is.
std::shared_ptr<char> allocatePages(std::size_t bytes);

// Chunk-sized buffers that come back to a free list when the last Bytes sharing one is dropped.
// Why: a chunk fetched from RADOS arrives in a buffer librados allocated, and a cache that keeps
// those buffers makes glibc map fresh memory for every new chunk (it hands large freed blocks
// back to the kernel): every 4 KiB page of every chunk was then a page fault, a quarter of the
// receiving thread's time on this VM and 6x the CPU per MiB of `rados bench` (docs/BENCHMARKS.md).
// A chunk copied into a pooled buffer (pages already mapped, warm) lets librados's buffer go at
// once, so glibc reuses it for the next message.
//
// Only requests of more than half a buffer are pooled: a pooled buffer keeps all its pages, and a
// 100 KB file must not hold 4 MiB of them. Smaller requests of up to SlabAllocator::kMaxSlot
// come from the process's huge-page slabs (common/Slabs.h), larger ones from the allocator.
// Thread-safe; Bytes may outlive the pool.
class BufferPool {
 public:
  // Buffers of `bufferBytes`; at most `maxIdle` of them wait on the free list (the rest go back
  // to the allocator), so idle memory is bounded.
  BufferPool(std::size_t bufferBytes, std::size_t maxIdle);
  // A pool that pools nothing: each buffer is allocated for its request and freed with it.
  static BufferPool& unpooled();

  // A writable, page-aligned buffer of `length` bytes (pooled when it is worth it); `seal` turns
  // what was written into it into the Bytes that own it.
  class Buffer {
   public:
    char* data() const { return data_.get(); }
    std::size_t size() const { return length_; }
    Bytes seal() && {
      const char* bytes = data_.get();
      return Bytes::shared(std::move(data_), {bytes, length_});
    }

   private:
    friend class BufferPool;
    Buffer(std::shared_ptr<char> data, std::size_t length)
        : data_(std::move(data)), length_(length) {}
    std::shared_ptr<char> data_;
    std::size_t length_;
  };
  Buffer take(std::size_t length);
  // Whether a request of `length` bytes gets a pooled buffer.
  bool pools(std::size_t length) const;
  // Whether its buffer is reused once dropped: pooled, or a slab slot (not malloc'd memory).
  bool recycles(std::size_t length) const;
  // The memory a buffer taken for `length` bytes occupies: a pooled buffer's bufferBytes(), a
  // slab slot's size class, or the pages allocated for it.
  std::size_t footprint(std::size_t length) const;
  Bytes copy(std::string_view bytes);

  std::size_t bufferBytes() const;
  std::size_t idleBuffers() const;  // on the free list now
  std::size_t allocated() const;    // pooled buffers ever allocated (not reused)

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the deleters of buffers in use
};

}  // namespace tierfs
