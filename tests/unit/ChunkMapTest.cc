#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fs/ChunkMap.h"
#include "fs/Format.h"

namespace tierfs::fs {
namespace {

std::string describe(const std::vector<Extent>& map) {
  std::ostringstream out;
  for (const Extent& x : map) {
    out << "[" << x.offset << "+" << x.length << " v" << x.version << " p" << x.firstPiece << " o"
        << x.origin << "] ";
  }
  return out.str();
}

// Where one byte of a file is: a piece and an offset in it, or a hole.
struct ByteRef {
  bool hole = true;
  PieceId id;
  std::uint64_t pieceOffset = 0;
  friend bool operator==(const ByteRef&, const ByteRef&) = default;
};

std::ostream& operator<<(std::ostream& os, const ByteRef& b) {
  if (b.hole) return os << "hole";
  return os << "v" << b.id.version << " p" << b.id.piece << " @" << b.pieceOffset;
}

// Where the run `x` (as uploaded from x.origin, cut into pieces at slot boundaries) puts byte
// `at`: written from first principles, not with ChunkMap's formulas.
ByteRef layout(const Extent& x, std::uint64_t at, std::uint64_t chunk) {
  const std::uint64_t slot = at / chunk;
  const std::uint64_t pieceStart = slot == x.origin / chunk ? x.origin : slot * chunk;
  return {false,
          {x.version, static_cast<std::uint32_t>(x.firstPiece + slot - x.origin / chunk)},
          at - pieceStart};
}

// The reference model: the file byte by byte.
class Model {
 public:
  explicit Model(std::uint64_t chunk) : chunk_(chunk) {}

  void write(const Extent& run) {
    if (bytes_.size() < run.end()) bytes_.resize(run.end());
    for (std::uint64_t b = run.offset; b < run.end(); ++b) bytes_[b] = layout(run, b, chunk_);
  }
  void truncate(std::uint64_t size) { bytes_.resize(size); }
  ByteRef at(std::uint64_t b) const { return b < bytes_.size() ? bytes_[b] : ByteRef{}; }
  std::uint64_t size() const { return bytes_.size(); }
  std::vector<PieceId> pieces() const {
    std::set<PieceId> s;
    for (const ByteRef& b : bytes_) {
      if (!b.hole) s.insert(b.id);
    }
    return {s.begin(), s.end()};
  }

 private:
  std::uint64_t chunk_;
  std::vector<ByteRef> bytes_;
};

// Sorted, not overlapping, no empty extents, origins not after offsets, nothing beyond `size`.
void expectWellFormed(const std::vector<Extent>& map, std::uint64_t size) {
  std::uint64_t prevEnd = 0;
  for (std::size_t i = 0; i < map.size(); ++i) {
    const Extent& x = map[i];
    EXPECT_GT(x.length, 0u) << "extent " << i << ": " << describe(map);
    EXPECT_LE(x.origin, x.offset) << "extent " << i << ": " << describe(map);
    EXPECT_GE(x.offset, prevEnd) << "extent " << i << " overlaps or is unsorted: " << describe(map);
    prevEnd = x.end();
  }
  EXPECT_LE(prevEnd, size) << describe(map);
}

// Two neighbours whose bytes the first one's layout describes as well are one extent: the map is
// as merged as it can be.
void expectMerged(const std::vector<Extent>& map, std::uint64_t chunk) {
  for (std::size_t i = 1; i < map.size(); ++i) {
    const Extent& a = map[i - 1];
    const Extent& b = map[i];
    if (a.end() != b.offset || a.version != b.version) continue;
    bool same = true;
    for (std::uint64_t y = b.offset; y < b.end() && same; ++y) {
      same = layout(a, y, chunk) == layout(b, y, chunk);
    }
    EXPECT_FALSE(same) << "extents " << i - 1 << " and " << i
                       << " continue each other but were not merged: " << describe(map);
  }
}

// resolve() over [offset, offset + length) against the model, byte by byte.
void expectResolves(const ChunkMap& cm, const std::vector<Extent>& map, const Model& model,
                    std::uint64_t offset, std::uint64_t length) {
  const std::uint64_t chunk = cm.chunkSize();
  std::vector<ByteRef> got(length);
  std::uint64_t prevEnd = offset;
  for (const PieceRange& r : cm.resolve(map, offset, length)) {
    ASSERT_GT(r.length, 0u) << describe(map);
    ASSERT_GE(r.fileOffset, prevEnd) << "ranges out of order: " << describe(map);
    ASSERT_LE(r.fileOffset + r.length, offset + length) << describe(map);
    EXPECT_EQ(r.fileOffset / chunk, (r.fileOffset + r.length - 1) / chunk)
        << "a range crosses a slot boundary: " << describe(map);
    EXPECT_LE(r.pieceOffset + r.length, chunk) << "beyond the end of a piece: " << describe(map);
    for (std::uint64_t i = 0; i < r.length; ++i) {
      got[r.fileOffset - offset + i] = {false, r.id, r.pieceOffset + i};
    }
    prevEnd = r.fileOffset + r.length;
  }
  for (std::uint64_t i = 0; i < length; ++i) {
    ASSERT_EQ(got[i], model.at(offset + i)) << "byte " << offset + i << " of resolve(" << offset
                                            << ", " << length << ") on map " << describe(map);
  }
}

// Makes runs the way fs/FileWriter does (one chunk slot each, pieces numbered in upload order
// within one content version), plus runs over several slots.
class RunMaker {
 public:
  RunMaker(std::uint64_t chunk, std::uint64_t seed) : chunk_(chunk), rng_(seed) {}

  // A new writer: a new content version, pieces from 0.
  void newVersion() {
    version_ += 1 + rng_() % 3;
    nextPiece_ = 0;
  }
  // Bytes [lo, hi) of one slot.
  Extent slotRun(std::uint64_t slot, std::uint64_t lo, std::uint64_t hi) {
    const std::uint64_t start = slot * chunk_ + lo;
    return {start, hi - lo, version_, nextPiece_++, start};
  }
  // Any range; it takes one piece for every slot it touches.
  Extent multiSlotRun(std::uint64_t start, std::uint64_t length) {
    Extent x{start, length, version_, nextPiece_, start};
    nextPiece_ += static_cast<std::uint32_t>((start + length - 1) / chunk_ - start / chunk_ + 1);
    return x;
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::uint64_t chunk_;
  std::mt19937_64 rng_;
  std::uint64_t version_ = 0;
  std::uint32_t nextPiece_ = 0;
};

class ChunkMapModelTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(ChunkMapModelTest, RandomOverlaysAndTruncationsMatchTheByteModel) {
  const std::uint32_t chunk = GetParam();
  const ChunkMap cm(chunk);
  constexpr std::uint64_t kSlots = 12;
  int merges = 0;
  for (std::uint64_t seq = 0; seq < 60; ++seq) {
    RunMaker runs(chunk, 1000 * chunk + seq);
    auto& rng = runs.rng();
    std::vector<Extent> map;
    Model model(chunk);
    runs.newVersion();
    for (int step = 0; step < 40; ++step) {
      SCOPED_TRACE(::testing::Message() << "sequence " << seq << " step " << step);
      const int op = static_cast<int>(rng() % 100);
      if (op < 5) {
        runs.newVersion();
      } else if (op < 55) {  // a FileWriter upload: part of one slot
        const std::uint64_t slot = rng() % kSlots;
        std::uint64_t lo = rng() % chunk;
        std::uint64_t hi = lo + 1 + rng() % (chunk - lo);
        if (rng() % 3 == 0) {  // often the whole slot
          lo = 0;
          hi = chunk;
        }
        const Extent run = runs.slotRun(slot, lo, hi);
        cm.overlay(map, run);
        model.write(run);
      } else if (op < 75) {  // a run over several slots
        const std::uint64_t start = rng() % (kSlots * chunk);
        const std::uint64_t length = 1 + rng() % (3 * chunk);
        const Extent run = runs.multiSlotRun(start, length);
        cm.overlay(map, run);
        model.write(run);
      } else if (op < 85) {  // sequential uploads of consecutive pieces, slot by slot
        runs.newVersion();
        const std::uint64_t first = rng() % kSlots;
        const std::uint64_t count = 1 + rng() % 4;
        // It may start and end mid-slot: the first and last uploads are then partial.
        const std::uint64_t lo = rng() % 2 == 0 ? 0 : rng() % chunk;
        std::uint64_t hi = rng() % 2 == 0 ? chunk : 1 + rng() % chunk;
        if (count == 1 && hi <= lo) hi = chunk;
        const std::uint64_t start = first * chunk + lo;
        const std::uint64_t end = (first + count - 1) * chunk + hi;
        Extent firstRun;
        for (std::uint64_t s = first; s < first + count; ++s) {
          const Extent run =
              runs.slotRun(s, s == first ? lo : 0, s == first + count - 1 ? hi : chunk);
          if (s == first) firstRun = run;
          cm.overlay(map, run);
          model.write(run);
        }
        auto it =
            std::find_if(map.begin(), map.end(), [&](const Extent& x) { return x.end() > start; });
        ASSERT_NE(it, map.end()) << describe(map);
        EXPECT_EQ(*it, (Extent{start, end - start, firstRun.version, firstRun.firstPiece, start}))
            << "sequential uploads of " << count << " slots from " << start
            << " are not one extent: " << describe(map);
        if (count > 1) ++merges;
      } else {  // truncation, shorter or longer
        const std::uint64_t size = rng() % (model.size() + chunk + 1);
        ChunkMap::truncate(map, size);
        model.truncate(size);
      }

      expectWellFormed(map, model.size());
      // A malformed map (an empty extent at 0) would make pieces() run for 2^60 slots.
      if (::testing::Test::HasFailure()) return;
      expectMerged(map, chunk);
      EXPECT_EQ(cm.pieces(map), model.pieces()) << describe(map);
      expectResolves(cm, map, model, 0, model.size() + chunk);
      for (int r = 0; r < 4; ++r) {
        const std::uint64_t offset = rng() % (model.size() + chunk);
        const std::uint64_t length = rng() % (2 * chunk + 1);
        expectResolves(cm, map, model, offset, length);
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(merges, 50) << "too few multi-slot sequences to check merging";
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, ChunkMapModelTest, ::testing::Values(16u, 64u),
                         [](const ::testing::TestParamInfo<std::uint32_t>& info) {
                           return "chunk" + std::to_string(info.param);
                         });

TEST(ChunkMapTest, AFileWrittenFrontToBackIsOneExtent) {
  const ChunkMap cm(16);
  for (std::uint64_t start : {0, 5, 15}) {
    std::vector<Extent> map;
    std::uint32_t piece = 0;
    cm.overlay(map, {start, 16 - start, 7, piece++, start});
    for (std::uint64_t slot = 1; slot < 10; ++slot) {
      cm.overlay(map, {slot * 16, slot == 9 ? 3u : 16u, 7, piece++, slot * 16});
    }
    ASSERT_EQ(map.size(), 1u) << describe(map);
    EXPECT_EQ(map[0], (Extent{start, 9 * 16 + 3 - start, 7, 0, start}));
    // Each slot resolves to its own piece, the first from the file offset it started at.
    const auto ranges = cm.resolve(map, 0, 200);
    ASSERT_EQ(ranges.size(), 10u);
    for (std::uint32_t i = 0; i < 10; ++i) {
      EXPECT_EQ(ranges[i].id, (PieceId{7, i}));
      EXPECT_EQ(ranges[i].pieceOffset, 0u);
      EXPECT_EQ(ranges[i].fileOffset, i == 0 ? start : i * 16);
    }
    EXPECT_EQ(cm.pieces(map).size(), 10u);
  }
}

TEST(ChunkMapTest, MultiSlotRunsOfConsecutivePiecesMerge) {
  const ChunkMap cm(16);
  std::vector<Extent> map;
  cm.overlay(map, {3, 45, 2, 0, 3});    // slots 0..2: pieces 0..2
  cm.overlay(map, {48, 40, 2, 3, 48});  // slots 3..5: pieces 3..5
  ASSERT_EQ(map.size(), 1u) << describe(map);
  EXPECT_EQ(map[0], (Extent{3, 85, 2, 0, 3}));
}

// The last two cases reuse a piece number of the first extent, which a writer never does (with
// pieces unique per version, same-version neighbours that do not continue each other differ in
// piece numbers already); the layout of each extent must be kept all the same.
TEST(ChunkMapTest, NeighboursThatDoNotContinueEachOtherStaySeparate) {
  const ChunkMap cm(16);
  struct Case {
    const char* why;
    Extent second;
  };
  for (const Case& c : {
           Case{"another version", {16, 16, 8, 1, 16}},
           Case{"a gap in the piece numbers", {16, 16, 7, 2, 16}},
           Case{"the same piece again", {16, 16, 7, 0, 16}},
           Case{"uploaded from mid-slot", {20, 12, 7, 1, 20}},
       }) {
    std::vector<Extent> map;
    const Extent first{0, c.second.offset, 7, 0, 0};
    cm.overlay(map, first);
    cm.overlay(map, c.second);
    ASSERT_EQ(map.size(), 2u) << c.why << ": " << describe(map);
    EXPECT_EQ(map[0], first) << c.why;
    EXPECT_EQ(map[1], c.second) << c.why;
  }
}

TEST(ChunkMapTest, AnOverwriteCutsTheRunsItCovers) {
  const ChunkMap cm(16);
  std::vector<Extent> map;
  cm.overlay(map, {0, 64, 1, 0, 0});   // pieces 0..3
  cm.overlay(map, {20, 8, 2, 0, 20});  // inside slot 1
  ASSERT_EQ(map.size(), 3u) << describe(map);
  EXPECT_EQ(map[0], (Extent{0, 20, 1, 0, 0}));
  EXPECT_EQ(map[1], (Extent{20, 8, 2, 0, 20}));
  EXPECT_EQ(map[2], (Extent{28, 36, 1, 0, 0}));  // the right part keeps its layout
  const auto ranges = cm.resolve(map, 16, 32);
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(ranges[0], (PieceRange{{1, 1}, 0, 4, 16}));
  EXPECT_EQ(ranges[1], (PieceRange{{2, 0}, 0, 8, 20}));
  EXPECT_EQ(ranges[2], (PieceRange{{1, 1}, 12, 4, 28}));
  EXPECT_EQ(ranges[3], (PieceRange{{1, 2}, 0, 16, 32}));
  EXPECT_EQ(cm.pieces(map), (std::vector<PieceId>{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 0}}));

  // A run over everything replaces all of it.
  cm.overlay(map, {0, 100, 3, 0, 0});
  ASSERT_EQ(map.size(), 1u) << describe(map);
  EXPECT_EQ(cm.pieces(map).size(), 7u);
}

TEST(ChunkMapTest, TruncateDropsAndShortens) {
  const ChunkMap cm(16);
  std::vector<Extent> map;
  cm.overlay(map, {0, 10, 1, 0, 0});
  cm.overlay(map, {32, 32, 2, 0, 32});
  std::vector<Extent> t = map;
  ChunkMap::truncate(t, 1000);
  EXPECT_EQ(t, map);
  ChunkMap::truncate(t, 40);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1], (Extent{32, 8, 2, 0, 32}));
  EXPECT_EQ(cm.pieces(t), (std::vector<PieceId>{{1, 0}, {2, 0}}));  // piece 1 of v2 is gone
  ChunkMap::truncate(t, 32);
  ASSERT_EQ(t.size(), 1u);
  ChunkMap::truncate(t, 5);
  EXPECT_EQ(t, (std::vector<Extent>{{0, 5, 1, 0, 0}}));
  ChunkMap::truncate(t, 0);
  EXPECT_TRUE(t.empty());
  EXPECT_TRUE(cm.pieces(t).empty());
}

TEST(ChunkMapTest, ResolveLeavesOutHolesAndEmptyRanges) {
  const ChunkMap cm(16);
  std::vector<Extent> map;
  cm.overlay(map, {40, 4, 1, 0, 40});
  EXPECT_TRUE(cm.resolve(map, 0, 40).empty());
  EXPECT_TRUE(cm.resolve(map, 44, 1000).empty());
  EXPECT_TRUE(cm.resolve(map, 41, 0).empty());
  EXPECT_TRUE(cm.resolve({}, 0, 1000).empty());
  EXPECT_EQ(cm.resolve(map, 0, 1000), (std::vector<PieceRange>{{{1, 0}, 0, 4, 40}}));
  EXPECT_EQ(cm.resolve(map, 42, 1), (std::vector<PieceRange>{{{1, 0}, 2, 1, 42}}));
}

TEST(ChunkMapTest, LargeOffsetsAtTheDefaultChunkSize) {
  const ChunkMap cm(4 << 20);
  const std::uint64_t tib = std::uint64_t{1} << 40;
  std::vector<Extent> map;
  cm.overlay(map, {tib + 100, 8 << 20, 9, 5, tib + 100});
  const auto ranges = cm.resolve(map, tib + (4 << 20) - 1, 2);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], (PieceRange{{9, 5}, (4 << 20) - 101, 1, tib + (4 << 20) - 1}));
  EXPECT_EQ(ranges[1], (PieceRange{{9, 6}, 0, 1, tib + (4 << 20)}));
  EXPECT_EQ(cm.pieces(map), (std::vector<PieceId>{{9, 5}, {9, 6}, {9, 7}}));
}

}  // namespace
}  // namespace tierfs::fs
