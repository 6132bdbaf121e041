#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/BufferPool.h"

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
  Bytes small = pool.copy("hello");
  Bytes big = pool.copy(std::string(kBuffer + 1, 'y'));
  EXPECT_EQ(small.view(), "hello");
  EXPECT_EQ(big.size(), kBuffer + 1);
  small = Bytes();
  big = Bytes();
  EXPECT_EQ(pool.idleBuffers(), 0u);
  EXPECT_EQ(pool.allocated(), 0u);
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
      for (int i = 0; i < 200; ++i) {
        Bytes b = pool.copy(std::string(kBuffer, static_cast<char>('a' + t)));
        ASSERT_EQ(b.data()[kBuffer - 1], 'a' + t);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(pool.allocated(), 4u) << "each thread holds one buffer at a time";
  EXPECT_EQ(pool.idleBuffers(), pool.allocated());
}

}  // namespace
}  // namespace tierfs
