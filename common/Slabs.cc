#include "common/Slabs.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "common/BufferPool.h"

namespace tierfs {
namespace {

// The slot sizes, ascending: 4 KiB steps to 32 KiB, then an eighth of the power of two below.
std::vector<std::size_t> makeSlotSizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t s = kPageSize; s <= SlabAllocator::kMaxSlot;) {
    sizes.push_back(s);
    const std::size_t pow2 = std::size_t{1} << (63 - __builtin_clzll(s));
    s += std::max(kPageSize, pow2 / 8);
  }
  return sizes;
}
const std::vector<std::size_t>& slotSizes() {
  static const std::vector<std::size_t> sizes = makeSlotSizes();
  return sizes;
}
std::size_t classOf(std::size_t bytes) {
  const auto& sizes = slotSizes();
  return static_cast<std::size_t>(std::lower_bound(sizes.begin(), sizes.end(), bytes) -
                                  sizes.begin());
}

// Slots of one size in one huge-page-backed block (allocatePages aligns and advises it).
struct Slab {
  std::shared_ptr<char> memory;
  std::size_t cls = 0;
  std::size_t bytes = 0;
  std::size_t slot = 0;
  std::size_t slots = 0;
  std::vector<std::uint32_t> free;  // indexes of free slots
};

std::size_t slabBytesFor(std::size_t slot) { return slot <= (256 << 10) ? 2 << 20 : 4 << 20; }

}  // namespace

struct SlabAllocator::State {
  mutable std::mutex mu;
  std::map<const char*, std::unique_ptr<Slab>> byStart;      // guarded by mu
  std::vector<std::vector<Slab*>> open{slotSizes().size()};  // slabs with a free slot, by class

  char* take(std::size_t bytes) {
    const std::size_t cls = classOf(bytes);
    std::lock_guard lock(mu);
    auto& candidates = open[cls];
    if (candidates.empty()) candidates.push_back(newSlab(cls));
    // The fullest slab with room: the emptier ones drain as their buffers are freed, and go back.
    auto fullest = std::min_element(candidates.begin(), candidates.end(), [](auto* a, auto* b) {
      return a->free.size() < b->free.size();
    });
    Slab* s = *fullest;
    const std::uint32_t index = s->free.back();
    s->free.pop_back();
    if (s->free.empty()) candidates.erase(fullest);
    return s->memory.get() + index * s->slot;
  }

  void giveBack(char* p) {
    std::lock_guard lock(mu);
    auto it = std::prev(byStart.upper_bound(p));
    Slab* s = it->second.get();
    assert(p >= s->memory.get() && p < s->memory.get() + s->bytes);
    s->free.push_back(static_cast<std::uint32_t>((p - s->memory.get()) / s->slot));
    auto& candidates = open[s->cls];
    if (s->free.size() == 1) candidates.push_back(s);
    if (s->free.size() < s->slots || candidates.size() == 1) return;
    candidates.erase(std::find(candidates.begin(), candidates.end(), s));
    byStart.erase(it);  // all free, and another slab of its class has room: give it back
  }

  Slab* newSlab(std::size_t cls) {
    auto s = std::make_unique<Slab>();
    s->cls = cls;
    s->slot = slotSizes()[cls];
    s->bytes = slabBytesFor(s->slot);
    s->memory = allocatePages(s->bytes);
    s->slots = s->bytes / s->slot;
    // Highest index first in the list, so that slots are taken from the slab's start.
    for (std::size_t i = s->slots; i-- > 0;) s->free.push_back(static_cast<std::uint32_t>(i));
    Slab* raw = s.get();
    byStart.emplace(s->memory.get(), std::move(s));
    return raw;
  }
};

SlabAllocator::SlabAllocator() : state_(std::make_shared<State>()) {}

SlabAllocator& SlabAllocator::shared() {
  static SlabAllocator process;  // buffers still held at exit keep its state alive
  return process;
}

std::shared_ptr<char> SlabAllocator::allocate(std::size_t bytes) {
  assert(bytes >= 1 && bytes <= kMaxSlot);
  return std::shared_ptr<char>(state_->take(bytes),
                               [state = state_](char* p) { state->giveBack(p); });
}

std::size_t SlabAllocator::slotFor(std::size_t bytes) { return slotSizes()[classOf(bytes)]; }

std::size_t SlabAllocator::slabs() const {
  std::lock_guard lock(state_->mu);
  return state_->byStart.size();
}

std::size_t SlabAllocator::slabBytes() const {
  std::lock_guard lock(state_->mu);
  std::size_t total = 0;
  for (const auto& [start, slab] : state_->byStart) total += slab->bytes;
  return total;
}

}  // namespace tierfs
