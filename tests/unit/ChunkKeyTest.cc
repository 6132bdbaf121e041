#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <unordered_set>

#include "cache/ChunkKey.h"

namespace tierfs::cache {
namespace {

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();

TEST(ChunkKeyTest, ObjectNameIsLowerCaseHexWithoutLeadingZeros) {
  EXPECT_EQ((ChunkKey{0, 0, 0}.objectName()), "c.0.0.0");
  EXPECT_EQ((ChunkKey{1, 2, 3}.objectName()), "c.1.2.3");
  EXPECT_EQ((ChunkKey{0xabc, 0x10, 0xff}.objectName()), "c.abc.10.ff");
  EXPECT_EQ((ChunkKey{kMax64, kMax64, kMax32}.objectName()),
            "c.ffffffffffffffff.ffffffffffffffff.ffffffff");
}

TEST(ChunkKeyTest, ObjectNamesRoundTrip) {
  std::mt19937_64 rng(42);
  std::vector<ChunkKey> keys = {{0, 0, 0},      {1, 1, 1},      {kMax64, kMax64, kMax32},
                                {kMax64, 0, 0}, {0, kMax64, 0}, {0, 0, kMax32}};
  for (int i = 0; i < 1000; ++i) {
    // Random magnitudes, so that every field length from 1 to 16 digits occurs.
    const std::uint64_t ino = rng() >> (rng() % 64);
    const std::uint64_t version = rng() >> (rng() % 64);
    const auto piece = static_cast<std::uint32_t>(rng() >> (32 + rng() % 32));
    keys.push_back({ino, version, piece});
  }
  std::set<std::string> names;
  for (const ChunkKey& key : keys) {
    const std::string name = key.objectName();
    names.insert(name);
    auto back = ChunkKey::fromObjectName(name);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, key) << name;
  }
  std::set<ChunkKey> distinct(keys.begin(), keys.end());
  EXPECT_EQ(names.size(), distinct.size()) << "two keys share an object name";
}

TEST(ChunkKeyTest, RejectsEverythingButTheOneSpelling) {
  for (std::string_view name : {
           "",
           "c",
           "c.",
           "c..",
           "c...",
           "c.1",
           "c.1.",
           "c.1.2",
           "c.1.2.",
           "c..2.3",
           "c.1..3",
           "c.01.2.3",  // leading zeros
           "c.1.02.3",
           "c.1.2.03",
           "c.00.2.3",
           "c.1.2.3.4",  // too many fields
           "c.1.2.3.",
           "c.A.2.3",  // capitals
           "c.1.B.3",
           "c.1.2.C",
           "c.aB.2.3",
           "c.10000000000000000.2.3",  // 17 hex digits
           "c.1.10000000000000000.3",
           "c.1.2.100000000",  // a piece of 9 hex digits, over 32 bits
           "c.0ffffffffffffffff.2.3",
           "c.1.2.0ffffffff",
           "d.1",
           "d.1.2.3",
           "C.1.2.3",
           " c.1.2.3",
           "c.1.2.3 ",
           "c.+1.2.3",
           "c.-1.2.3",
           "c.0x1.2.3",
           "c.g.2.3",
           "c.1.2.3\n",
           "tierfs.volume",
       }) {
    EXPECT_FALSE(ChunkKey::fromObjectName(name).has_value()) << "accepted '" << name << "'";
  }
  EXPECT_FALSE(ChunkKey::fromObjectName(std::string("c.1.2.3\0", 8)).has_value());
  EXPECT_FALSE(ChunkKey::fromObjectName(std::string("c.1\0.2.3", 8)).has_value());
  // Sanity: the maximal fields themselves are accepted.
  EXPECT_TRUE(ChunkKey::fromObjectName("c.ffffffffffffffff.ffffffffffffffff.ffffffff").has_value());
}

TEST(ChunkKeyTest, HashSpreadsKeysOfOneFile) {
  std::unordered_set<std::size_t> hashes;
  for (std::uint64_t version = 1; version <= 32; ++version) {
    for (std::uint32_t piece = 0; piece < 32; ++piece) {
      hashes.insert(ChunkKeyHash{}(ChunkKey{7, version, piece}));
    }
  }
  EXPECT_EQ(hashes.size(), 32u * 32u);
}

}  // namespace
}  // namespace tierfs::cache
