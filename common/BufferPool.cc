#include "common/BufferPool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "common/Slabs.h"

namespace tierfs {
namespace {

constexpr std::size_t kHugePage = 2 << 20;

std::size_t wholePages(std::size_t bytes) {
  return (bytes + kPageSize - 1) / kPageSize * kPageSize;
}

// A buffer of a huge page or more is mapped on its own, starting on a huge-page boundary, and asks
// for transparent huge pages for its whole huge pages: an O_DIRECT read pins the pages it reads
// into, and 4 MiB in two huge pages pin (and, in a VM, map on the host) far faster than in 1,024
// small ones (docs/BENCHMARKS.md). Where THP is off the advice is ignored. Mapped, not malloc'd:
// malloc's heap keeps the memory the daemon faulted in at start for librados's receive buffers
// (tools/Allocator.h) for them, and a chunk buffer would take it.
char* rawPages(std::size_t bytes) {
  const std::size_t length = wholePages(bytes);
  if (length < kHugePage) {
    void* p = nullptr;
    if (posix_memalign(&p, kPageSize, length) != 0) throw std::bad_alloc();
    return static_cast<char*>(p);
  }
  void* map =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  char* start = static_cast<char*>(map);
  char* aligned =
      start + (kHugePage - reinterpret_cast<std::uintptr_t>(start) % kHugePage) % kHugePage;
  if (aligned > start) munmap(start, aligned - start);
  char* end = start + length + kHugePage;
  if (end > aligned + length) munmap(aligned + length, end - (aligned + length));
  (void)madvise(aligned, length / kHugePage * kHugePage, MADV_HUGEPAGE);
  return aligned;
}

void freePages(char* p, std::size_t bytes) {
  const std::size_t length = wholePages(bytes);
  if (length < kHugePage) {
    std::free(p);
  } else {
    munmap(p, length);
  }
}

}  // namespace

std::shared_ptr<char> allocatePages(std::size_t bytes) {
  const std::size_t length = std::max<std::size_t>(bytes, 1);
  return std::shared_ptr<char>(rawPages(length), [length](char* p) { freePages(p, length); });
}

struct BufferPool::State {
  std::size_t bufferBytes = 0, maxIdle = 0;
  mutable std::mutex mu;
  std::vector<char*> idle;  // guarded by mu
  std::size_t allocated = 0;

  ~State() {
    for (char* p : idle) freePages(p, bufferBytes);
  }

  void giveBack(char* p) {
    {
      std::lock_guard lock(mu);
      if (idle.size() < maxIdle) {
        idle.push_back(p);
        return;
      }
    }
    freePages(p, bufferBytes);
  }
};

BufferPool::BufferPool(std::size_t bufferBytes, std::size_t maxIdle)
    : state_(std::make_shared<State>()) {
  state_->bufferBytes = bufferBytes;
  state_->maxIdle = maxIdle;
}

BufferPool& BufferPool::unpooled() {
  static BufferPool none(0, 0);
  return none;
}

BufferPool::Buffer BufferPool::take(std::size_t length) {
  if (!pools(length)) {
    if (length > SlabAllocator::kMaxSlot) return Buffer(allocatePages(length), length);
    return Buffer(SlabAllocator::shared().allocate(std::max<std::size_t>(length, 1)), length);
  }
  char* p = nullptr;
  {
    std::lock_guard lock(state_->mu);
    if (!state_->idle.empty()) {
      p = state_->idle.back();
      state_->idle.pop_back();
    } else {
      ++state_->allocated;
    }
  }
  if (p == nullptr) p = rawPages(state_->bufferBytes);
  return Buffer(std::shared_ptr<char>(p, [state = state_](char* q) { state->giveBack(q); }),
                length);
}

bool BufferPool::pools(std::size_t length) const {
  return length <= state_->bufferBytes && length > state_->bufferBytes / 2;
}

bool BufferPool::recycles(std::size_t length) const {
  return pools(length) || length <= SlabAllocator::kMaxSlot;
}

std::size_t BufferPool::footprint(std::size_t length) const {
  if (pools(length)) return state_->bufferBytes;
  if (length <= SlabAllocator::kMaxSlot)
    return SlabAllocator::slotFor(std::max<std::size_t>(length, 1));
  return wholePages(length);
}

Bytes BufferPool::copy(std::string_view bytes) {
  Buffer b = take(bytes.size());
  if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
  return std::move(b).seal();
}

std::size_t BufferPool::bufferBytes() const { return state_->bufferBytes; }

std::size_t BufferPool::idleBuffers() const {
  std::lock_guard lock(state_->mu);
  return state_->idle.size();
}

std::size_t BufferPool::allocated() const {
  std::lock_guard lock(state_->mu);
  return state_->allocated;
}

}  // namespace tierfs
