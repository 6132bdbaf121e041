#include <gtest/gtest.h>
#include <xxhash.h>
#include <zstd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cache/ChunkCodec.h"
#include "common/Slabs.h"

namespace tierfs::cache {
namespace {

// Header field offsets as docs/FORMAT.md gives them, restated here so that the tests check the
// documented layout rather than the encoder's own constants.
constexpr std::size_t kCodecAt = 5;
constexpr std::size_t kReservedAt = 6;
constexpr std::size_t kRawLengthAt = 8;
constexpr std::size_t kStoredLengthAt = 12;
constexpr std::size_t kChecksumAt = 16;
constexpr std::size_t kPayloadCheckAt = 24;
constexpr std::size_t kHeaderCheckAt = 28;

std::string randomBytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(out.data() + i, &word, std::min<std::size_t>(8, n - i));
  }
  return out;
}

// Prose-like bytes: words of a few hundred made-up syllable combinations, so that zstd sees both
// repeated matches and Huffman-coded literals, as in real text.
std::string textBytes(std::size_t n, std::uint64_t seed) {
  static constexpr std::array<std::string_view, 12> kSyllables = {
      "ka", "ro", "mi", "ten", "sul", "va", "dre", "o", "lin", "que", "ba", "th"};
  std::mt19937_64 rng(seed);
  std::string out;
  out.reserve(n + 32);
  while (out.size() < n) {
    const std::size_t syllables = 1 + rng() % 3;
    for (std::size_t i = 0; i < syllables; ++i) out += kSyllables[rng() % kSyllables.size()];
    out += (rng() % 11 == 0) ? ".\n" : " ";
  }
  out.resize(n);
  return out;
}

std::uint32_t le32(const std::string& frame, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v |= std::uint32_t{static_cast<unsigned char>(frame[at + i])} << (8 * i);
  return v;
}

std::uint64_t le64(const std::string& frame, std::size_t at) {
  return le32(frame, at) | std::uint64_t{le32(frame, at + 4)} << 32;
}

void putLe32(std::string& frame, std::size_t at, std::uint32_t v) {
  for (std::size_t i = 0; i < 4; ++i) frame[at + i] = static_cast<char>(v >> (8 * i));
}

void putLe64(std::string& frame, std::size_t at, std::uint64_t v) {
  putLe32(frame, at, static_cast<std::uint32_t>(v));
  putLe32(frame, at + 4, static_cast<std::uint32_t>(v >> 32));
}

std::uint32_t low32Hash(std::string_view bytes) {
  return static_cast<std::uint32_t>(XXH3_64bits(bytes.data(), bytes.size()));
}

// Recomputes the header check after a test edits a field, so that the field's own check is what
// the decoder has to catch.
void reseal(std::string& frame) {
  putLe32(frame, kHeaderCheckAt, low32Hash(std::string_view(frame).substr(0, kHeaderCheckAt)));
}

std::string encodeOrDie(std::string_view raw, const CodecOptions& opts = {}) {
  auto frame = encodeChunk(raw, opts);
  EXPECT_TRUE(frame) << frame.error().toString();
  return frame ? *frame : std::string();
}

CodecOptions noneOptions() {
  CodecOptions opts;
  opts.codec = Codec::kNone;
  return opts;
}

// Expects Corruption whose message contains `what`.
void expectCorruption(std::string_view frame, std::string_view what) {
  auto decoded = decodeChunk(frame);
  ASSERT_FALSE(decoded) << "decoded a frame that should be rejected for: " << what;
  EXPECT_EQ(decoded.error().code(), StatusCode::kCorruption) << decoded.error().toString();
  EXPECT_NE(decoded.error().message().find(what), std::string::npos)
      << "message '" << decoded.error().message() << "' does not mention '" << what << "'";
}

enum class Data { kRandom, kText };

using RoundTripParam = std::tuple<std::size_t, Data, Codec>;

class ChunkCodecRoundTrip : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(ChunkCodecRoundTrip, DecodesToInputWithRightHeader) {
  const auto [size, data, codec] = GetParam();
  const std::string raw = data == Data::kRandom ? randomBytes(size, size) : textBytes(size, size);
  CodecOptions opts;
  opts.codec = codec;
  const std::string frame = encodeOrDie(raw, opts);

  auto header = parseFrameHeader(frame);
  ASSERT_TRUE(header) << header.error().toString();
  EXPECT_EQ(header->rawLength, size);
  EXPECT_EQ(header->storedLength + kFrameHeaderSize, frame.size());
  EXPECT_EQ(header->checksum, XXH3_64bits(raw.data(), raw.size()));
  const bool shouldCompress = codec == Codec::kZstd && data == Data::kText && size >= 1000;
  EXPECT_EQ(header->codec, shouldCompress ? Codec::kZstd : Codec::kNone);
  if (header->codec == Codec::kNone) {
    EXPECT_EQ(header->storedLength, header->rawLength);
  }
  if (shouldCompress) {
    EXPECT_LE(header->storedLength, size * 0.9);
  }

  auto decoded = decodeChunk(frame);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_TRUE(*decoded == raw);  // not EXPECT_EQ: a 4 MiB diff is no help
}

std::string roundTripName(const ::testing::TestParamInfo<RoundTripParam>& info) {
  const auto [size, data, codec] = info.param;
  return std::to_string(size) + (data == Data::kRandom ? "_random" : "_text") +
         (codec == Codec::kNone ? "_none" : "_zstd");
}

INSTANTIATE_TEST_SUITE_P(Sizes, ChunkCodecRoundTrip,
                         ::testing::Combine(::testing::Values(0, 1, 2, 27, 1000, 4095, 4096, 4097,
                                                              65535, 65536, 65537, 128 * 1024,
                                                              1000003, 4 * 1024 * 1024),
                                            ::testing::Values(Data::kRandom, Data::kText),
                                            ::testing::Values(Codec::kNone, Codec::kZstd)),
                         roundTripName);

TEST(ChunkCodec, EmptyChunkIsAHeaderOnlyFrame) {
  const std::string frame = encodeOrDie("");
  EXPECT_EQ(frame.size(), kFrameHeaderSize);
  auto decoded = decodeChunk(frame);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_TRUE(decoded->empty());
}

// Checks each field of a frame of `raw` where docs/FORMAT.md puts it.
void expectDocumentedLayout(std::string_view raw, const std::string& frame, Codec codec) {
  ASSERT_GE(frame.size(), kFrameHeaderSize);
  const std::string_view payload = std::string_view(frame).substr(kFrameHeaderSize);
  EXPECT_EQ(frame.substr(0, 4), "TFCK");
  EXPECT_EQ(frame[4], 1);
  EXPECT_EQ(frame[kCodecAt], static_cast<char>(codec));
  EXPECT_EQ(frame[kReservedAt], 0);
  EXPECT_EQ(frame[kReservedAt + 1], 0);
  EXPECT_EQ(le32(frame, kRawLengthAt), raw.size());
  EXPECT_EQ(le32(frame, kStoredLengthAt), payload.size());
  EXPECT_EQ(le64(frame, kChecksumAt), XXH3_64bits(raw.data(), raw.size()));
  EXPECT_EQ(le32(frame, kPayloadCheckAt), low32Hash(payload));
  EXPECT_EQ(le32(frame, kHeaderCheckAt),
            low32Hash(std::string_view(frame).substr(0, kHeaderCheckAt)));
}

TEST(ChunkCodec, FrameLayoutMatchesTheDocumentedFormat) {
  const std::string text = textBytes(5000, 7);
  const std::string zstdFrame = encodeOrDie(text);
  expectDocumentedLayout(text, zstdFrame, Codec::kZstd);
  const std::string random = randomBytes(5000, 7);
  const std::string rawFrame = encodeOrDie(random);
  expectDocumentedLayout(random, rawFrame, Codec::kNone);
  EXPECT_EQ(rawFrame.substr(kFrameHeaderSize), random);

  // The payload is a standard zstd frame, readable by any zstd.
  std::string plain(text.size(), '\0');
  const std::size_t n =
      ZSTD_decompress(plain.data(), plain.size(), zstdFrame.data() + kFrameHeaderSize,
                      zstdFrame.size() - kFrameHeaderSize);
  ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  EXPECT_EQ(n, text.size());
  EXPECT_TRUE(plain == text);
}

TEST(ChunkCodec, RandomDataIsStoredRawEvenWhenZstdIsRequested) {
  const std::string raw = randomBytes(256 * 1024, 1);
  const std::string frame = encodeOrDie(raw);
  auto header = parseFrameHeader(frame);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->codec, Codec::kNone);
  EXPECT_EQ(header->storedLength, raw.size());
}

TEST(ChunkCodec, EarlyAbortStoresRawWhenThePrefixDoesNotCompress) {
  // Incompressible probe, then a megabyte of zeros that would compress to almost nothing.
  const std::string raw = randomBytes(64 * 1024, 2) + std::string(1 << 20, '\0');
  auto probed = parseFrameHeader(encodeOrDie(raw));
  ASSERT_TRUE(probed);
  EXPECT_EQ(probed->codec, Codec::kNone);

  CodecOptions noProbe;
  noProbe.probeBytes = 0;
  auto whole = parseFrameHeader(encodeOrDie(raw, noProbe));
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->codec, Codec::kZstd);
}

TEST(ChunkCodec, StoresRawWhenOnlyThePrefixCompresses) {
  const std::string raw = textBytes(64 * 1024, 3) + randomBytes(1 << 20, 3);
  const std::string frame = encodeOrDie(raw);
  auto header = parseFrameHeader(frame);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->codec, Codec::kNone);
  auto decoded = decodeChunk(frame);
  ASSERT_TRUE(decoded);
  EXPECT_TRUE(*decoded == raw);
}

TEST(ChunkCodec, MinSavingDecidesWhetherCompressionPays) {
  // 16 symbols per byte: about 4 bits of entropy, so zstd saves roughly half.
  std::string raw = randomBytes(256 * 1024, 4);
  for (char& c : raw) c = static_cast<char>('a' + (static_cast<unsigned char>(c) & 15));
  CodecOptions opts;
  opts.minSaving = 0.3;
  auto lenient = parseFrameHeader(encodeOrDie(raw, opts));
  ASSERT_TRUE(lenient);
  EXPECT_EQ(lenient->codec, Codec::kZstd);
  opts.minSaving = 0.7;
  auto strict = parseFrameHeader(encodeOrDie(raw, opts));
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->codec, Codec::kNone);
}

TEST(ChunkCodec, RejectsInvalidArguments) {
  auto expectInvalid = [](std::string_view raw, const CodecOptions& opts) {
    auto frame = encodeChunk(raw, opts);
    ASSERT_FALSE(frame);
    EXPECT_EQ(frame.error().code(), StatusCode::kInvalidArgument) << frame.error().toString();
  };
  expectInvalid(std::string(kMaxChunkSize + 1, 'a'), {});
  expectInvalid(std::string(kMaxChunkSize + 1, 'a'), noneOptions());
  CodecOptions opts;
  opts.codec = static_cast<Codec>(2);
  expectInvalid("x", opts);
  opts = {};
  opts.zstdLevel = ZSTD_maxCLevel() + 1;
  expectInvalid("x", opts);
  for (double saving : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    opts = {};
    opts.minSaving = saving;
    expectInvalid("x", opts);
  }
}

TEST(ChunkCodec, MaxSizeChunkRoundTrips) {
  const std::string raw(kMaxChunkSize, 'z');
  const std::string frame = encodeOrDie(raw);
  EXPECT_LT(frame.size(), raw.size() / 100);
  auto decoded = decodeChunk(frame);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_TRUE(*decoded == raw);
}

// Flips every byte of the frame to every other value (xor 1..255); each must be rejected.
void expectEverySingleByteCorruptionDetected(const std::string& frame) {
  std::string damaged = frame;
  int misses = 0;
  for (std::size_t pos = 0; pos < frame.size() && misses < 10; ++pos) {
    for (int flip = 1; flip < 256; ++flip) {
      damaged[pos] = static_cast<char>(frame[pos] ^ flip);
      auto decoded = decodeChunk(damaged);
      auto shared = decodeChunkShared(Bytes(damaged));
      if (!decoded && decoded.error().code() == StatusCode::kCorruption && !shared &&
          shared.error().code() == StatusCode::kCorruption) {
        continue;
      }
      ADD_FAILURE() << "byte " << pos << " xor " << flip << " not detected: "
                    << (decoded ? std::string("decoded") : decoded.error().toString()) << " / "
                    << (shared ? std::string("decoded") : shared.error().toString());
      ++misses;
    }
    damaged[pos] = frame[pos];
  }
}

TEST(ChunkCodec, SharedDecodeOfARawFrameIsASliceOfTheFrame) {
  const std::string raw = randomBytes(5000, 7);
  const Bytes frame(encodeOrDie(raw));
  auto decoded = decodeChunkShared(frame);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_EQ(decoded->view(), raw);
  EXPECT_EQ(decoded->data(), frame.data() + kFrameHeaderSize);  // no copy
}

TEST(ChunkCodec, SharedDecodeOfACompressedFrameIsItsRawBytes) {
  const std::string raw = textBytes(50000, 8);
  const Bytes frame(encodeOrDie(raw));
  ASSERT_EQ(parseFrameHeader(frame)->codec, Codec::kZstd);
  auto decoded = decodeChunkShared(frame);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_EQ(decoded->view(), raw);
}

TEST(ChunkCodec, OwnedDecodeCopiesARawFrameOfUpToAChunk) {
  BufferPool pool(8192, 2);
  const std::string raw = randomBytes(5000, 9);
  const Bytes frame(encodeOrDie(raw));
  auto decoded = decodeChunkOwned(frame, pool);
  ASSERT_TRUE(decoded) << decoded.error().toString();
  EXPECT_EQ(decoded->view(), raw);
  EXPECT_NE(decoded->data(), frame.data() + kFrameHeaderSize) << "the frame's buffer is kept";
  EXPECT_EQ(pool.allocated(), 1u);
  *decoded = Bytes();
  EXPECT_EQ(pool.idleBuffers(), 1u);
  // A small chunk (a small file's) is copied too, into a slab slot, not a pooled buffer (which
  // would pin 8 KiB for it).
  const std::string smallRaw = randomBytes(100, 10);
  const Bytes small(encodeOrDie(smallRaw));
  auto smallDecoded = decodeChunkOwned(small, pool);
  ASSERT_TRUE(smallDecoded);
  EXPECT_EQ(smallDecoded->view(), smallRaw);
  EXPECT_NE(smallDecoded->data(), small.data() + kFrameHeaderSize) << "the frame's buffer is kept";
  EXPECT_EQ(pool.allocated(), 1u);
  // A raw chunk larger than a buffer and than a slab slot stays a slice: its copy would be
  // malloc'd memory, no better than the frame's.
  const Bytes large(encodeOrDie(randomBytes(SlabAllocator::kMaxSlot + 1, 11)));
  auto largeDecoded = decodeChunkOwned(large, pool);
  ASSERT_TRUE(largeDecoded);
  EXPECT_EQ(largeDecoded->data(), large.data() + kFrameHeaderSize);
}

TEST(ChunkCodec, ACompressedFrameDecodesIntoThePool) {
  BufferPool pool(64 << 10, 2);
  const std::string raw = textBytes(50000, 11);
  const Bytes frame(encodeOrDie(raw));
  ASSERT_EQ(parseFrameHeader(frame)->codec, Codec::kZstd);
  for (int i = 0; i < 3; ++i) {
    auto decoded = decodeChunkOwned(frame, pool);
    ASSERT_TRUE(decoded) << decoded.error().toString();
    EXPECT_EQ(decoded->view(), raw);
  }
  EXPECT_EQ(pool.allocated(), 1u) << "each decode should have reused the one buffer";
}

// The write path encodes into pooled buffers: the same frames as encodeChunk's strings, for raw
// and compressed payloads, from one buffer reused encode after encode.
TEST(ChunkCodec, PooledEncodeGivesTheSameFramesFromOneReusedBuffer) {
  BufferPool pool(64 << 10, 2);
  for (const std::string& raw : {randomBytes(60000, 12), textBytes(60000, 13)}) {
    const std::string expected = encodeOrDie(raw);
    for (int i = 0; i < 3; ++i) {
      auto frame = encodeChunk(raw, pool);
      ASSERT_TRUE(frame) << frame.error().toString();
      EXPECT_TRUE(frame->view() == expected);
      auto decoded = decodeChunk(*frame);
      ASSERT_TRUE(decoded) << decoded.error().toString();
      EXPECT_TRUE(*decoded == raw);
    }
  }
  EXPECT_EQ(parseFrameHeader(encodeOrDie(textBytes(60000, 13)))->codec, Codec::kZstd);
  EXPECT_EQ(pool.allocated(), 1u) << "each encode should have reused the one buffer";
  auto refused = encodeChunk(std::string(kMaxChunkSize + 1, 'a'), pool);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument) << refused.error().toString();
}

TEST(ChunkCodec, EverySingleByteCorruptionOfACompressedFrameIsDetected) {
  const std::string frame = encodeOrDie(textBytes(3000, 5));
  auto header = parseFrameHeader(frame);
  ASSERT_TRUE(header);
  ASSERT_EQ(header->codec, Codec::kZstd);
  expectEverySingleByteCorruptionDetected(frame);
}

TEST(ChunkCodec, EverySingleByteCorruptionOfARawFrameIsDetected) {
  const std::string frame = encodeOrDie(randomBytes(2000, 6));
  auto header = parseFrameHeader(frame);
  ASSERT_TRUE(header);
  ASSERT_EQ(header->codec, Codec::kNone);
  expectEverySingleByteCorruptionDetected(frame);
}

// The payload check stops almost all damage before zstd runs. Here both checks are recomputed
// after each single-byte change, as a hostile writer would, so every damaged payload reaches zstd
// and the raw checksum: the decoder must reject it or return exactly the original bytes (zstd's
// encoding is not canonical, so some changes decode to the same bytes), and never crash.
TEST(ChunkCodec, DamagedPayloadThatPassesTheChecksNeverYieldsWrongBytes) {
  const std::string raw = textBytes(2000, 13);
  const std::string frame = encodeOrDie(raw);
  std::string damaged = frame;
  int misses = 0;
  for (std::size_t pos = kFrameHeaderSize; pos < frame.size() && misses < 10; ++pos) {
    for (int flip = 1; flip < 256; ++flip) {
      damaged[pos] = static_cast<char>(frame[pos] ^ flip);
      putLe32(damaged, kPayloadCheckAt,
              low32Hash(std::string_view(damaged).substr(kFrameHeaderSize)));
      reseal(damaged);
      auto decoded = decodeChunk(damaged);
      if (decoded ? *decoded == raw : decoded.error().code() == StatusCode::kCorruption) continue;
      ADD_FAILURE() << "byte " << pos << " xor " << flip << ": "
                    << (decoded ? std::string("wrong bytes") : decoded.error().toString());
      ++misses;
    }
    damaged = frame;
  }
}

TEST(ChunkCodec, EveryTruncationIsDetected) {
  for (const std::string& frame :
       {encodeOrDie(textBytes(3000, 8)), encodeOrDie(randomBytes(1000, 8))}) {
    for (std::size_t length = 0; length < frame.size(); ++length) {
      auto decoded = decodeChunk(std::string_view(frame).substr(0, length));
      ASSERT_FALSE(decoded) << "prefix of " << length << " bytes decoded";
      EXPECT_EQ(decoded.error().code(), StatusCode::kCorruption);
    }
  }
}

TEST(ChunkCodec, TrailingBytesAreDetected) {
  for (const std::string& frame :
       {encodeOrDie(textBytes(3000, 9)), encodeOrDie(randomBytes(1000, 9)), encodeOrDie("")}) {
    expectCorruption(frame + 'x', "payload bytes");
    expectCorruption(frame + std::string(4096, '\0'), "payload bytes");
    expectCorruption(frame + frame, "payload bytes");
  }
}

TEST(ChunkCodec, RejectsInputThatIsNotAFrame) {
  expectCorruption("", "shorter than");
  expectCorruption(std::string(kFrameHeaderSize - 1, 'T'), "shorter than");
  expectCorruption(randomBytes(100, 10), "bad magic");
}

TEST(ChunkCodec, RejectsHugeLengthsEvenWithAValidHeaderCheck) {
  const std::string good = encodeOrDie(textBytes(3000, 11));
  for (std::uint32_t huge :
       {std::numeric_limits<std::uint32_t>::max(), static_cast<std::uint32_t>(kMaxChunkSize + 1)}) {
    std::string frame = good;
    putLe32(frame, kRawLengthAt, huge);
    reseal(frame);
    expectCorruption(frame, "raw length");
    frame = good;
    putLe32(frame, kStoredLengthAt, huge);
    reseal(frame);
    expectCorruption(frame, "stored length");
  }
}

// Each field edited with the header check recomputed: the decoder's own check of that field, not
// the header check, must catch it.
TEST(ChunkCodec, ChecksEachHeaderFieldOnItsOwn) {
  const std::string zstdFrame = encodeOrDie(textBytes(3000, 12));
  const std::string rawFrame = encodeOrDie(randomBytes(1000, 12));
  auto edited = [](std::string frame, auto edit) {
    edit(frame);
    reseal(frame);
    return frame;
  };
  expectCorruption(edited(zstdFrame, [](std::string& f) { f[4] = 2; }), "version 2");
  expectCorruption(edited(zstdFrame, [](std::string& f) { f[kReservedAt + 1] = 1; }), "reserved");
  expectCorruption(edited(zstdFrame, [](std::string& f) { f[kCodecAt] = 2; }), "unknown codec 2");
  expectCorruption(edited(zstdFrame, [](std::string& f) { f[kCodecAt] = 0; }), "codec none");
  expectCorruption(edited(rawFrame, [](std::string& f) { f[kCodecAt] = 1; }), "zstd payload");
  expectCorruption(edited(rawFrame, [](std::string& f) { putLe32(f, kRawLengthAt, 999); }),
                   "codec none");
  expectCorruption(
      edited(zstdFrame,
             [](std::string& f) { putLe32(f, kRawLengthAt, le32(f, kRawLengthAt) + 1); }),
      "holds 3000 bytes");
  expectCorruption(
      edited(zstdFrame,
             [](std::string& f) { putLe32(f, kRawLengthAt, le32(f, kRawLengthAt) - 1); }),
      "zstd payload");
  for (const std::string& frame : {zstdFrame, rawFrame}) {
    expectCorruption(
        edited(frame, [](std::string& f) { putLe64(f, kChecksumAt, le64(f, kChecksumAt) ^ 1); }),
        "checksum mismatch");
  }
  for (const std::string& frame : {zstdFrame, rawFrame}) {
    expectCorruption(edited(frame, [](std::string& f) { f[kPayloadCheckAt] ^= 1; }),
                     "payload check mismatch");
    std::string damaged = frame;
    damaged.back() ^= 1;
    expectCorruption(damaged, "payload check mismatch");
    std::string unsealed = frame;
    unsealed[kChecksumAt] ^= 1;
    expectCorruption(unsealed, "header check mismatch");
  }
}

TEST(ChunkCodec, ConcurrentCallsRoundTrip) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 20; ++i) {
        const std::uint64_t seed = t * 100 + i;
        const std::string raw =
            i % 2 ? textBytes(64 * 1024 + i, seed) : randomBytes(64 * 1024 + i, seed);
        auto frame = encodeChunk(raw, {});
        auto decoded = frame ? decodeChunk(*frame) : frame;
        if (!decoded || *decoded != raw) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace tierfs::cache
