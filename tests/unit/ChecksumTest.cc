#include <gtest/gtest.h>
#include <xxhash.h>

#include <random>
#include <string>
#include <vector>

#include "cache/Checksum.h"

namespace tierfs::cache {
namespace {

// xxh3() must give libxxhash's value byte for byte, for every length class XXH3 treats apart
// (0, 1-3, 4-8, 9-16, 17-128, 129-240, longer with its stripes and blocks) and at any alignment:
// frames written before the AVX2 build must still check.
TEST(Checksum, MatchesLibxxhashForEveryLengthAndAlignment) {
  std::mt19937_64 rng(7);
  std::vector<unsigned char> bytes((4 << 20) + 64);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 1100; ++n) lengths.push_back(n);
  for (std::size_t n : {4095, 4096, 4097, 65536, 112640, 1 << 20, (4 << 20) - 1, 4 << 20}) {
    lengths.push_back(n);
  }
  for (std::size_t offset : {0, 1, 7, 32}) {
    for (std::size_t n : lengths) {
      const unsigned char* p = bytes.data() + offset;
      ASSERT_EQ(xxh3(p, n), XXH3_64bits(p, n)) << "length " << n << " offset " << offset;
    }
  }
}

TEST(Checksum, UsesAvx2WhereTheCpuHasIt) {
  const std::string used = xxh3Implementation();
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(used, __builtin_cpu_supports("avx2") ? "avx2" : "sse2");
#else
  EXPECT_EQ(used, "sse2");
#endif
}

}  // namespace
}  // namespace tierfs::cache
