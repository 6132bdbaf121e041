// Seeded random-mutation fuzzing of every decoder of the volume format and of the chunk object
// names. Each input is either rejected with Corruption or decodes to a record that encodes back
// to exactly the input: a record has one encoding, so equal records are equal bytes, and a
// decoder never accepts what no encoder writes.
//
// Most inputs are mutated record bodies sealed again with a valid checksum, as a buggy or hostile
// writer would produce them; the checksum alone would reject almost everything otherwise.
// Deterministic: fixed seeds, so a failure reproduces.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cache/ChunkKey.h"
#include "common/Encoding.h"
#include "fs/Format.h"
#include "tests/support/FormatSamples.h"

namespace tierfs::fs {
namespace {

using tierfs::testing::bodyOf;
using tierfs::testing::seal;

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 400)) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  if (bytes.size() > 400) out += "...";
  return out;
}

// Bytes that make varints end, continue, overflow or sit at a boundary.
constexpr std::string_view kVarintBytes{"\x00\x01\x02\x7f\x80\x81\xfe\xff", 8};

// Random edits of a byte string: bit flips, byte changes, truncation, insertion, duplication and
// removal of ranges, and now and then garbage of random length instead of the input.
class Mutator {
 public:
  // `alphabet`: the bytes that replacements and insertions favour (all bytes when empty).
  explicit Mutator(std::uint64_t seed, std::string_view alphabet = kVarintBytes)
      : rng_(seed), alphabet_(alphabet) {}

  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  std::string mutate(std::string s) {
    const int edits = 1 + static_cast<int>(below(4));
    for (int i = 0; i < edits; ++i) edit(s);
    return s;
  }

 private:
  char byte() {
    if (!alphabet_.empty() && below(2) == 0) return alphabet_[below(alphabet_.size())];
    return static_cast<char>(rng_());
  }
  std::string bytes(std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(byte());
    return out;
  }

  void edit(std::string& s) {
    const std::size_t pos = below(s.size());
    switch (below(20)) {
      case 0:
      case 1:
      case 2:
      case 3:  // flip a bit
        if (!s.empty()) s[pos] = static_cast<char>(s[pos] ^ (1 << below(8)));
        break;
      case 4:
      case 5:
      case 6:
      case 7:  // change a byte
        if (!s.empty()) s[pos] = byte();
        break;
      case 8:
      case 9:
      case 10:  // insert one byte
        s.insert(below(s.size() + 1), 1, byte());
        break;
      case 11:  // insert a few bytes
        s.insert(below(s.size() + 1), bytes(1 + below(8)));
        break;
      case 12:
      case 13: {  // duplicate a range
        const std::size_t from = below(s.size() + 1);
        const std::string range = s.substr(from, 1 + below(16));
        s.insert(below(s.size() + 1), range);
        break;
      }
      case 14:
      case 15:  // remove a range
        s.erase(pos, 1 + below(8));
        break;
      case 16: {  // copy a range over another
        const std::string range = s.substr(below(s.size() + 1), 1 + below(8));
        const std::size_t at = below(s.size() + 1);
        s.replace(at, std::min(range.size(), s.size() - at), range);
        break;
      }
      case 17:
      case 18:  // truncate
        s.resize(below(s.size() + 1));
        break;
      case 19:  // garbage of random length instead
        if (below(4) == 0) s = bytes(below(64));
        break;
    }
  }

  std::mt19937_64 rng_;
  std::string alphabet_;
};

struct Outcome {
  int accepted = 0;         // decoded (and so re-encoded to the same bytes)
  int acceptedChanged = 0;  // ... though different from every valid sample
  int rejected = 0;
  int failures = 0;  // reported, not counted above
};

// Decodes `in` with `decodeAndEncode` (the re-encoding of what was decoded, or the error) and
// checks the outcome. At most 10 failures are reported per test.
void check(std::string_view in, bool isSample,
           const std::function<Result<std::string>(std::string_view)>& decodeAndEncode,
           Outcome& out) {
  Result<std::string> again = decodeAndEncode(in);
  if (!again) {
    if (again.error().code() == StatusCode::kCorruption) {
      ++out.rejected;
      if (!isSample) return;
      if (++out.failures <= 10) {
        ADD_FAILURE() << "a valid sample was rejected: " << again.error().toString() << "\n  input "
                      << hex(in);
      }
      return;
    }
    if (++out.failures <= 10) {
      ADD_FAILURE() << "rejected with " << again.error().toString() << " instead of Corruption"
                    << "\n  input " << hex(in);
    }
    return;
  }
  if (*again != in) {
    if (++out.failures <= 10) {
      ADD_FAILURE() << "decoded, but the record encodes to other bytes (a second encoding)"
                    << "\n  input     " << hex(in) << "\n  re-encoded " << hex(*again);
    }
    return;
  }
  ++out.accepted;
  if (!isSample) ++out.acceptedChanged;
}

// Fuzzes a sealed record format: `iterations` resealed body mutations and a fifth as many raw
// mutations of whole records.
Outcome fuzzRecord(const std::vector<std::string>& samples,
                   const std::function<Result<std::string>(std::string_view)>& decodeAndEncode,
                   int iterations, std::uint64_t seed) {
  Mutator m(seed);
  Outcome resealed;
  for (int i = 0; i < iterations; ++i) {
    const std::string& sample = samples[m.below(samples.size())];
    const std::string body = m.mutate(std::string(bodyOf(sample)));
    const std::string in = seal(body);
    bool isSample = false;
    for (const std::string& s : samples) isSample = isSample || s == in;
    check(in, isSample, decodeAndEncode, resealed);
  }
  // Whole records, checksum included: the checksum must catch every change.
  Outcome raw;
  for (int i = 0; i < iterations / 5; ++i) {
    const std::string& sample = samples[m.below(samples.size())];
    const std::string in = m.mutate(sample);
    bool isSample = false;
    for (const std::string& s : samples) isSample = isSample || s == in;
    check(in, isSample, decodeAndEncode, raw);
  }
  EXPECT_EQ(raw.acceptedChanged, 0) << "changed records passed the checksum";
  EXPECT_GT(raw.rejected, iterations / 6);
  resealed.failures += raw.failures;
  return resealed;
}

void expectCoverage(const Outcome& o, int iterations) {
  // Enough inputs got through every check to make "re-encodes to the same bytes" mean something,
  // and enough were rejected.
  EXPECT_GT(o.acceptedChanged, iterations / 100) << "accepted " << o.accepted;
  EXPECT_GT(o.rejected, iterations / 2);
  EXPECT_EQ(o.failures, 0);
}

constexpr int kIterations = 30'000;

std::vector<std::string> volumeSamples() {
  VolumeRecord edge = testing::sampleVolume();
  edge.chunkSize = static_cast<std::uint32_t>(cache::kMaxChunkSize);
  edge.codec = cache::Codec::kNone;
  edge.zstdLevel = -7;
  edge.createdSec = std::numeric_limits<std::int64_t>::min();
  return {encodeVolume(VolumeRecord{}), encodeVolume(testing::sampleVolume()), encodeVolume(edge)};
}

std::vector<std::string> inodeSamples() {
  Inode minimal;
  minimal.ino = 2;
  Inode big = testing::sampleFile();
  big.ino = std::numeric_limits<std::uint64_t>::max();
  big.size = std::numeric_limits<std::uint64_t>::max();
  big.atime = {std::numeric_limits<std::int64_t>::min(), 999'999'999};
  big.xattrs["user.\x80"] = std::string(200, '\x80');
  return {encodeInode(testing::sampleFile()), encodeInode(testing::sampleDir()),
          encodeInode(testing::sampleSymlink()), encodeInode(minimal), encodeInode(big)};
}

TEST(FormatFuzzTest, DecodeVolume) {
  const Outcome o = fuzzRecord(
      volumeSamples(),
      [](std::string_view in) -> Result<std::string> {
        TIERFS_ASSIGN_OR_RETURN(VolumeRecord v, decodeVolume(in));
        return encodeVolume(v);
      },
      kIterations, 1);
  expectCoverage(o, kIterations);
}

TEST(FormatFuzzTest, DecodeInode) {
  const Outcome o = fuzzRecord(
      inodeSamples(),
      [](std::string_view in) -> Result<std::string> {
        TIERFS_ASSIGN_OR_RETURN(Inode n, decodeInode(in));
        return encodeInode(n);
      },
      kIterations, 2);
  expectCoverage(o, kIterations);
}

Result<std::string> decodeAndEncodeIntent(std::string_view in) {
  TIERFS_ASSIGN_OR_RETURN(RenameIntent r, decodeIntent(in));
  return encodeIntent(r);
}

std::vector<std::string> intentSamples() {
  RenameIntent plain = testing::sampleIntent();
  plain.replaced.clear();
  plain.moved = encodeInode(testing::sampleSymlink());
  return {encodeIntent(testing::sampleIntent()), encodeIntent(plain)};
}

TEST(FormatFuzzTest, DecodeIntent) {
  const Outcome o = fuzzRecord(intentSamples(), decodeAndEncodeIntent, kIterations, 3);
  expectCoverage(o, kIterations);
}

// The inodes inside an intent, mutated and sealed again, in an intent that is otherwise valid:
// the intent must be accepted exactly when its inodes are.
TEST(FormatFuzzTest, DecodeIntentWithMutatedInodes) {
  Mutator m(4);
  const std::vector<std::string> inodes = inodeSamples();
  Outcome o;
  int both = 0;
  for (int i = 0; i < kIterations / 2; ++i) {
    RenameIntent r = testing::sampleIntent();
    auto mutated = [&] {
      const std::string& sample = inodes[m.below(inodes.size())];
      return m.below(4) == 0 ? sample : seal(m.mutate(std::string(bodyOf(sample))));
    };
    r.moved = mutated();
    r.replaced = m.below(3) == 0 ? std::string() : mutated();
    const bool inodesValid = decodeInode(r.moved).has_value() &&
                             (r.replaced.empty() || decodeInode(r.replaced).has_value());
    const std::string in = encodeIntent(r);
    const bool decodes = decodeIntent(in).has_value();
    EXPECT_EQ(decodes, inodesValid)
        << "moved " << hex(r.moved) << "\n  replaced " << hex(r.replaced);
    if (decodes != inodesValid && ++o.failures > 10) break;
    check(in, false, decodeAndEncodeIntent, o);
    if (decodes && !r.replaced.empty()) ++both;
  }
  EXPECT_GT(o.accepted, kIterations / 20);
  EXPECT_GT(both, kIterations / 50);
  EXPECT_GT(o.rejected, kIterations / 20);
  EXPECT_EQ(o.failures, 0);
}

// The Decoder primitives on their own: a random sequence of reads over a mutated encoding of a
// random sequence of fields. Every read that succeeds consumed exactly the bytes the Encoder
// writes for the value it returned; a failed read is Corruption and leaves nothing to read.
TEST(FormatFuzzTest, DecoderPrimitives) {
  enum Op { kU8, kVarint, kVarint32, kSigned, kString, kRaw, kFixed32, kOps };
  std::mt19937_64 rng(5);
  Mutator m(6);
  int reads = 0;
  int readsAfterMutation = 0;
  int failures = 0;
  for (int i = 0; i < kIterations && failures < 10; ++i) {
    // A program and an encoding of it, with values of every magnitude.
    std::vector<std::pair<Op, std::uint64_t>> program;
    Encoder e;
    const int fields = 1 + static_cast<int>(rng() % 12);
    for (int f = 0; f < fields; ++f) {
      const auto op = static_cast<Op>(rng() % kOps);
      const std::uint64_t value = rng() >> (rng() % 64);
      std::uint64_t arg = 0;
      switch (op) {
        case kU8:
          e.putU8(static_cast<std::uint8_t>(value));
          break;
        case kVarint:
          e.putVarint(value);
          break;
        case kVarint32:
          e.putVarint(static_cast<std::uint32_t>(value));
          break;
        case kSigned:
          e.putSigned(static_cast<std::int64_t>(value));
          break;
        case kString:
          arg = rng() % 20;
          e.putString(std::string(rng() % (arg + 1), 's'));
          break;
        case kRaw:
          arg = rng() % 6;
          e.putRaw(std::string(arg, 'r'));
          break;
        case kFixed32:
          e.putFixed32(static_cast<std::uint32_t>(value));
          break;
        case kOps:
          break;
      }
      program.emplace_back(op, arg);
    }
    const bool mutate = rng() % 8 != 0;
    const std::string in = mutate ? m.mutate(e.bytes()) : e.bytes();

    Decoder d(in, "fuzz");
    for (const auto& [op, arg] : program) {
      const std::size_t before = d.remaining();
      Encoder again;
      Status status;
      switch (op) {
        case kU8: {
          auto v = d.u8("f");
          status = statusOf(v);
          if (v) again.putU8(*v);
          break;
        }
        case kVarint: {
          auto v = d.varint("f");
          status = statusOf(v);
          if (v) again.putVarint(*v);
          break;
        }
        case kVarint32: {
          auto v = d.varint32("f");
          status = statusOf(v);
          if (v) again.putVarint(*v);
          break;
        }
        case kSigned: {
          auto v = d.signedVarint("f");
          status = statusOf(v);
          if (v) again.putSigned(*v);
          break;
        }
        case kString: {
          auto v = d.string("f", arg);
          status = statusOf(v);
          if (v) again.putString(*v);
          break;
        }
        case kRaw: {
          auto v = d.raw("f", arg);
          status = statusOf(v);
          if (v) again.putRaw(*v);
          break;
        }
        case kFixed32: {
          auto v = d.fixed32("f");
          status = statusOf(v);
          if (v) again.putFixed32(*v);
          break;
        }
        case kOps:
          break;
      }
      const std::string_view consumed =
          std::string_view(in).substr(in.size() - before, before - d.remaining());
      if (!status.isOk()) {
        const std::size_t left = d.remaining();
        const bool readAfterFailure = d.u8("f").has_value();
        if (!mutate || status.code() != StatusCode::kCorruption || left != 0 || readAfterFailure) {
          ADD_FAILURE() << "op " << op << " failed with " << status.toString() << " on "
                        << (mutate ? "a mutated" : "a valid") << " input, leaving " << left
                        << " bytes" << (readAfterFailure ? " that could still be read" : "")
                        << " (input " << hex(in) << ")";
          ++failures;
        }
        break;
      }
      ++reads;
      if (mutate) ++readsAfterMutation;
      if (again.bytes() != consumed) {
        ADD_FAILURE() << "op " << op << " read " << hex(consumed) << ", which encodes back as "
                      << hex(again.bytes()) << " (input " << hex(in) << ")";
        ++failures;
        break;
      }
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(readsAfterMutation, kIterations);
  EXPECT_GT(reads, readsAfterMutation);
}

// Chunk object names: a name is a key exactly when it is the key's one spelling.
TEST(FormatFuzzTest, ChunkKeyFromObjectName) {
  std::mt19937_64 rng(7);
  Mutator m(8, "0123456789abcdefABCDEF.c");
  int accepted = 0;
  int acceptedChanged = 0;
  int failures = 0;
  for (int i = 0; i < kIterations && failures < 10; ++i) {
    const cache::ChunkKey key{rng() >> (rng() % 64), rng() >> (rng() % 64),
                              static_cast<std::uint32_t>(rng() >> (32 + rng() % 32))};
    const std::string original = key.objectName();
    const std::string name = m.mutate(original);
    auto parsed = cache::ChunkKey::fromObjectName(name);
    if (!parsed) continue;
    ++accepted;
    if (name != original) ++acceptedChanged;
    if (parsed->objectName() != name) {
      ADD_FAILURE() << "'" << name << "' parsed as the key of '" << parsed->objectName() << "'";
      ++failures;
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(acceptedChanged, kIterations / 20) << "accepted " << accepted;
  EXPECT_LT(accepted, kIterations);
}

}  // namespace
}  // namespace tierfs::fs
