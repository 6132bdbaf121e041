#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/BufferPool.h"
#include "common/Slabs.h"

namespace tierfs {
namespace {

constexpr std::size_t kBuffer = 1 << 20;

TEST(BufferPoolTest, ABufferDroppedIsTheNextOneTaken) {
  BufferPool pool(kBuffer, 4);
  Bytes first = pool.copy(std::string(kBuffer, 'a'));
  const char* memory = first.data();
  EXPECT_EQ(first.size(), kBuffer);
  EXPECT_EQ(first.view(), std::string(kBuffer, 'a'));
  first = Bytes();
  EXPECT_EQ(pool.idleBuffers(), 1u);
  Bytes second = pool.copy(std::string(kBuffer - 100, 'b'));
  EXPECT_EQ(second.data(), memory) << "the dropped buffer was not reused";
  EXPECT_EQ(second.view(), std::string(kBuffer - 100, 'b'));
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_EQ(pool.idleBuffers(), 0u);
}

TEST(BufferPoolTest, SlicesKeepTheBufferOutOfThePool) {
  BufferPool pool(kBuffer, 4);
  Bytes whole = pool.copy(std::string(kBuffer, 'x'));
  Bytes part = whole.slice(10, 20);
  whole = Bytes();
  EXPECT_EQ(pool.idleBuffers(), 0u) << "a buffer went back while a slice still used it";
  EXPECT_EQ(part.view(), std::string(20, 'x'));
  part = Bytes();
  EXPECT_EQ(pool.idleBuffers(), 1u);
}

TEST(BufferPoolTest, SmallAndOversizedRequestsAreNotPooled) {
  BufferPool pool(kBuffer, 4);
  EXPECT_FALSE(pool.pools(kBuffer / 2)) << "a small file's chunk would pin a whole buffer";
  EXPECT_FALSE(pool.pools(kBuffer + 1));
  EXPECT_TRUE(pool.pools(kBuffer / 2 + 1));
  // Reused once dropped: pooled buffers and slab slots; not oversized (malloc'd) ones.
  EXPECT_TRUE(pool.recycles(kBuffer / 2 + 1));
  EXPECT_TRUE(pool.recycles(SlabAllocator::kMaxSlot));
  EXPECT_FALSE(pool.recycles(kBuffer + 1));
  Bytes small = pool.copy("hello");
  Bytes big = pool.copy(std::string(kBuffer + 1, 'y'));
  EXPECT_EQ(small.view(), "hello");
  EXPECT_EQ(big.size(), kBuffer + 1);
  small = Bytes();
  big = Bytes();
  EXPECT_EQ(pool.idleBuffers(), 0u);
  EXPECT_EQ(pool.allocated(), 0u);
}

// What a buffer occupies, which the memory chunk cache charges: the pooled buffer, the slab
// slot, or the pages of an oversized one.
TEST(BufferPoolTest, FootprintIsTheMemoryABufferOccupies) {
  BufferPool pool(kBuffer, 4);
  EXPECT_EQ(pool.footprint(kBuffer / 2 + 1), kBuffer);
  EXPECT_EQ(pool.footprint(kBuffer), kBuffer);
  EXPECT_EQ(pool.footprint(0), 4096u);
  EXPECT_EQ(pool.footprint(4097), 8192u);
  EXPECT_EQ(pool.footprint(110'000), SlabAllocator::slotFor(110'000));
  EXPECT_GT(pool.footprint(110'000), 110'000u);
  EXPECT_EQ(pool.footprint(kBuffer + 1), kBuffer + 4096);
}

TEST(BufferPoolTest, IdleBuffersAreBounded) {
  BufferPool pool(kBuffer, 2);
  std::vector<Bytes> held;
  for (int i = 0; i < 5; ++i) held.push_back(pool.copy(std::string(kBuffer, 'z')));
  held.clear();
  EXPECT_EQ(pool.idleBuffers(), 2u) << "idle memory must stay within maxIdle buffers";
  EXPECT_EQ(pool.allocated(), 5u);
}

TEST(BufferPoolTest, BuffersArePageAlignedForDirectIo) {
  BufferPool pool(kBuffer, 1);
  BufferPool::Buffer pooled = pool.take(kBuffer);
  BufferPool::Buffer plain = BufferPool::unpooled().take(12345);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pooled.data()) % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(plain.data()) % 4096, 0u);
  EXPECT_EQ(plain.size(), 12345u);
}

// The VMA flags of the mapping that holds `p` (VmFlags in /proc/self/smaps), or "" if none.
std::string vmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &begin, &end) == 2 &&
        line.find(' ') > line.find('-')) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// Chunk-sized buffers (the targets of O_DIRECT device reads) start on a 2 MiB boundary and are
// advised to use transparent huge pages: far fewer pages to pin per read.
TEST(BufferPoolTest, BuffersOfAHugePageOrMoreAreHugePageAlignedAndAdvised) {
  constexpr std::size_t kHuge = 2 << 20;
  BufferPool pool((4 << 20) + (64 << 10), 4);
  std::vector<BufferPool::Buffer> taken;
  for (int i = 0; i < 4; ++i) taken.push_back(pool.take((4 << 20) + 100));
  for (const auto& b : taken) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kHuge, 0u);
    if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
      EXPECT_NE(vmFlagsOf(b.data()).find(" hg"), std::string::npos) << vmFlagsOf(b.data());
    }
  }
  // A small buffer stays on small pages.
  std::shared_ptr<char> small = allocatePages(64 << 10);
  EXPECT_EQ(vmFlagsOf(small.get()).find(" hg"), std::string::npos);
}

// Whether any page of [p, p + bytes) is mapped: mincore() fails with ENOMEM where one is not.
bool mapped(const char* p, std::size_t bytes) {
  std::vector<unsigned char> resident((bytes + kPageSize - 1) / kPageSize);
  return mincore(const_cast<char*>(p), bytes, resident.data()) == 0;
}

// Buffers of a huge page or more are mappings of their own, outside malloc's heap (which keeps
// what the daemon faulted in at start for librados: tools/Allocator.h), and one that leaves the
// pool goes back to the kernel; an idle one stays mapped.
TEST(BufferPoolTest, BuffersOfAHugePageOrMoreAreTheirOwnMappings) {
  constexpr std::size_t kChunkBuffer = (4 << 20) + (64 << 10);
  BufferPool pool(kChunkBuffer, 1);
  Bytes kept = pool.copy(std::string(kChunkBuffer, 'k'));
  Bytes dropped = pool.copy(std::string(kChunkBuffer, 'd'));
  const char* keptAt = kept.data();
  const char* droppedAt = dropped.data();
  ASSERT_TRUE(mapped(droppedAt, kChunkBuffer));
  kept = Bytes();     // idle: the pool keeps it
  dropped = Bytes();  // over maxIdle: unmapped
  EXPECT_TRUE(mapped(keptAt, kChunkBuffer));
  EXPECT_FALSE(mapped(droppedAt, kChunkBuffer));
  EXPECT_FALSE(mapped(droppedAt + kChunkBuffer - kPageSize, kPageSize)) << "the last page too";

  std::shared_ptr<char> region = allocatePages(8 << 20);
  const char* regionAt = region.get();
  region.reset();
  EXPECT_FALSE(mapped(regionAt, 8 << 20));
}

TEST(BufferPoolTest, BytesMayOutliveThePool) {
  Bytes kept;
  {
    BufferPool pool(kBuffer, 4);
    kept = pool.copy(std::string(kBuffer, 'k'));
  }
  EXPECT_EQ(kept.view(), std::string(kBuffer, 'k'));
  kept = Bytes();  // returns the buffer to a free list no pool uses any more (ASan: no leak)
}

TEST(BufferPoolTest, ThreadsTakeAndDropConcurrently) {
  BufferPool pool(kBuffer, 8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 50; ++i) {
        Bytes b = pool.copy(std::string(kBuffer, static_cast<char>('a' + t)));
        ASSERT_EQ(b.data()[kBuffer - 1], 'a' + t);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(pool.allocated(), 4u) << "each thread holds one buffer at a time";
  EXPECT_EQ(pool.idleBuffers(), pool.allocated());
}

bool hugePagesAvailable() {
  return static_cast<bool>(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"));
}

// A small file's chunk (a device read, a decompression) gets a slab slot, on huge pages.
TEST(BufferPoolTest, SmallBuffersComeFromHugePageSlabs) {
  BufferPool pool(kBuffer, 4);
  BufferPool::Buffer small = pool.take(100000);
  BufferPool::Buffer plain = BufferPool::unpooled().take(12345);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % 4096, 0u);
  if (hugePagesAvailable()) {
    EXPECT_NE(vmFlagsOf(small.data()).find(" hg"), std::string::npos) << vmFlagsOf(small.data());
    EXPECT_NE(vmFlagsOf(plain.data()).find(" hg"), std::string::npos) << vmFlagsOf(plain.data());
  }
}

// Fills `p` with a pattern of `seed`, or checks that it still holds it.
void fill(char* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i + 1 < n; i += 512) p[i] = static_cast<char>(seed + i / 512);
  p[n - 1] = static_cast<char>(seed);
}
bool holds(const char* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i + 1 < n; i += 512) {
    if (p[i] != static_cast<char>(seed + i / 512)) return false;
  }
  return p[n - 1] == static_cast<char>(seed);
}

TEST(SlabAllocatorTest, SlotsArePageAlignedAndKeepTheirBytes) {
  SlabAllocator slabs;
  const std::vector<std::size_t> sizes = {1,      4096,   12345,    16 << 10, (16 << 10) + 1,
                                          110000, 300000, 512 << 10};
  std::vector<std::shared_ptr<char>> held;
  for (unsigned round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      held.push_back(slabs.allocate(sizes[i]));
      fill(held.back().get(), sizes[i], round * 31 + i);
    }
  }
  for (std::size_t k = 0; k < held.size(); ++k) {
    const std::size_t i = k % sizes.size();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(held[k].get()) % 4096, 0u);
    EXPECT_TRUE(holds(held[k].get(), sizes[i], (k / sizes.size()) * 31 + i))
        << "slot " << k << " of " << sizes[i] << " bytes was overwritten by another";
  }
}

TEST(SlabAllocatorTest, AFreedSlotIsTheNextOfItsSizeTaken) {
  SlabAllocator slabs;
  std::shared_ptr<char> first = slabs.allocate(100000);
  std::shared_ptr<char> other = slabs.allocate(100000);
  char* memory = first.get();
  first.reset();
  EXPECT_EQ(slabs.allocate(99000).get(), memory) << "sizes in one size class share slots";
  EXPECT_NE(slabs.allocate(200000).get(), memory);
}

TEST(SlabAllocatorTest, SlabsAreHugePagesAndEmptyOnesAreGivenBackButOneAClass) {
  constexpr std::size_t kHuge = 2 << 20;
  SlabAllocator slabs;
  std::vector<std::shared_ptr<char>> held;
  for (int i = 0; i < 54; ++i) held.push_back(slabs.allocate(110000));  // 18 a 2 MiB slab
  EXPECT_EQ(slabs.slabs(), 3u);
  EXPECT_EQ(slabs.slabBytes(), 3 * kHuge);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(held.front().get()) % kHuge, 0u);
  if (hugePagesAvailable()) {
    EXPECT_NE(vmFlagsOf(held.front().get()).find(" hg"), std::string::npos);
  }
  held.clear();
  EXPECT_EQ(slabs.slabs(), 1u) << "empty slabs must go back, all but one";
  std::shared_ptr<char> big = slabs.allocate(400 << 10);  // another class: a 4 MiB slab
  EXPECT_EQ(slabs.slabBytes(), kHuge + 2 * kHuge);
  big.reset();
  EXPECT_EQ(slabs.slabs(), 2u) << "one idle slab a class is kept";
}

TEST(SlabAllocatorTest, ThreadsAllocateAndFreeConcurrently) {
  SlabAllocator slabs;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&slabs, t] {
      std::mt19937 random(t);
      struct Held {
        std::shared_ptr<char> p;
        std::size_t n;
        unsigned seed;
      };
      std::vector<Held> held;
      for (unsigned i = 0; i < 3000; ++i) {
        const std::size_t n = 1 + random() % (300 << 10);
        held.push_back({slabs.allocate(n), n, t * 7919 + i});
        fill(held.back().p.get(), n, held.back().seed);
        if (held.size() > 40) {
          const auto victim = held.begin() + static_cast<std::ptrdiff_t>(random() % held.size());
          ASSERT_TRUE(holds(victim->p.get(), victim->n, victim->seed)) << "a slot was shared";
          held.erase(victim);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::size_t> classes;
  for (std::size_t n = 1; n <= (300 << 10); n += 1024) classes.insert(SlabAllocator::slotFor(n));
  EXPECT_LE(slabs.slabs(), classes.size()) << "at most one idle slab a size class";
}

TEST(SlabAllocatorTest, ASlotWastesAtMostAPageOrAnEighth) {
  for (std::size_t n = 1; n <= SlabAllocator::kMaxSlot; n += 997) {
    const std::size_t slot = SlabAllocator::slotFor(n);
    ASSERT_GE(slot, n);
    ASSERT_EQ(slot % 4096, 0u) << n;
    ASSERT_LE(slot - n, std::max<std::size_t>(4096, n / 8)) << n;
  }
  EXPECT_EQ(SlabAllocator::slotFor(SlabAllocator::kMaxSlot), SlabAllocator::kMaxSlot);
}

}  // namespace
}  // namespace tierfs
