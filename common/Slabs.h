#pragma once

#include <cstddef>
#include <memory>

namespace tierfs {

inline constexpr std::size_t kPageSize = 4096;

// Page-aligned buffers of up to kMaxSlot bytes (a small file's chunk) carved out of slabs of
// transparent huge pages. Why: a small chunk read from a cache device or decompressed used to get
// memory of its own from malloc, and a memory cache that keeps 128 MiB of them made glibc map
// that much fresh memory, a page fault for every 4 KiB: on a fresh daemon a device-warm epoch of
// small files took ~50,000 faults, a quarter of the daemon's CPU on this VM (docs/BENCHMARKS.md).
// In a slab, one fault maps a 2 MiB huge page, and a freed slot is the next one of its size taken.
//
// Sizes are rounded up to a size class (4 KiB steps up to 32 KiB, then steps of an eighth of the
// size's power of two: a slot wastes at most 4 KiB or 12.5%, what page-aligned malloc'd memory
// cost too); each class has its own slabs (2 MiB, or 4 MiB for slots over 256 KiB: 8 slots or
// more). A slab whose slots are all free is given back unless it is the only one of its class with
// free slots, so the memory held is what is in use plus at most one idle slab a class.
// Thread-safe; buffers may outlive the allocator.
class SlabAllocator {
 public:
  static constexpr std::size_t kMaxSlot = 512 << 10;

  SlabAllocator();
  // The process's allocator, which BufferPool's small buffers come from.
  static SlabAllocator& shared();

  // A buffer of `bytes` (1 to kMaxSlot), freed back to its slab with the last owner.
  std::shared_ptr<char> allocate(std::size_t bytes);

  // The slot a request of `bytes` gets (its size class).
  static std::size_t slotFor(std::size_t bytes);
  std::size_t slabs() const;      // slabs held now
  std::size_t slabBytes() const;  // the memory they span

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the deleters of buffers in use
};

}  // namespace tierfs
