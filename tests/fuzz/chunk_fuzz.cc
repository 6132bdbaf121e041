// Fuzz target: the chunk frame (cache::parseFrameHeader, cache::decodeChunk,
// cache::decodeChunkShared), what every chunk object in RADOS and every cached entry on a cache
// device holds: a 32-byte header, then the raw bytes or one zstd frame of them (docs/FORMAT.md).
//
// Input: a mode byte, then a frame. Mode bit 0 clear: the frame as given (the header check and
// the checksums must catch every edit). Bit 0 set: the frame is repaired as a hostile writer
// would write it, so that mutations reach the length checks and zstd: the stored length, payload
// check and (codec none) checksum are recomputed from the payload, and the header check last.
// Bit 1 also sets the magic, version and reserved field. Bit 2 (codec zstd, raw length up to
// 1 MiB) also decompresses the payload here and stores the checksum of what it gives, so that
// whole zstd frames decode. Without bit 3, a raw length over 64 KiB is folded under it.
//
// Checks:
//   - a rejected frame is rejected with Corruption, by all three functions alike;
//   - an accepted frame: the header's lengths are within kMaxChunkSize, the frame is exactly
//     header + storedLength bytes, codec none stores rawLength bytes; the decoded bytes are
//     rawLength long and hash to the header's checksum; decodeChunk and decodeChunkShared agree;
//   - the decoded bytes encode again (raw and zstd) to frames that decode to the same bytes, and
//     a codec-none frame re-encodes byte for byte.
#include <xxhash.h>
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cache/ChunkCodec.h"
#include "tests/fuzz/FuzzCheck.h"

using namespace tierfs;

namespace {

constexpr std::size_t kRepairDecompressLimit = 1 << 20;  // keeps one run under a few ms
// Raw lengths a repaired frame claims are folded under this without mode bit 3 (see repair()).
constexpr std::uint32_t kFoldedRawLength = 64 << 10;

void store32(std::string& f, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) f[at + i] = static_cast<char>(v >> (8 * i));
}
void store64(std::string& f, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) f[at + i] = static_cast<char>(v >> (8 * i));
}
std::uint32_t load32(const std::string& f, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<std::uint8_t>(f[at + i])} << (8 * i);
  return v;
}

// The header offsets of docs/FORMAT.md: magic 0, version 4, codec 5, reserved 6, raw length 8,
// stored length 12, checksum 16, payload check 24, header check 28.
void repair(std::string& f, unsigned mode) {
  if (f.size() < cache::kFrameHeaderSize) return;
  if (mode & 2) {
    std::memcpy(f.data(), "TFCK", 4);
    f[4] = static_cast<char>(cache::kFrameFormatVersion);
    f[6] = f[7] = 0;
  }
  // A repaired zstd frame may claim any raw length up to 64 MiB, which the decoder allocates
  // before decompressing: allowed, but slow to run over and over. Without bit 3 the claim is
  // folded under 64 KiB, so that most runs are cheap and bit 3 still reaches the big ones.
  if (!(mode & 8) && load32(f, 8) > kFoldedRawLength) {
    store32(f, 8, load32(f, 8) % (kFoldedRawLength + 1));
  }
  const std::string_view payload = std::string_view(f).substr(cache::kFrameHeaderSize);
  const std::uint64_t payloadHash = XXH3_64bits(payload.data(), payload.size());
  store32(f, 12, static_cast<std::uint32_t>(payload.size()));
  store32(f, 24, static_cast<std::uint32_t>(payloadHash));
  if (f[5] == 0) {
    store32(f, 8, static_cast<std::uint32_t>(payload.size()));
    store64(f, 16, payloadHash);
  } else if ((mode & 4) && load32(f, 8) <= kRepairDecompressLimit) {
    std::string raw(load32(f, 8), '\0');
    const std::size_t n = ZSTD_decompress(raw.data(), raw.size(), payload.data(), payload.size());
    if (!ZSTD_isError(n) && n == raw.size()) store64(f, 16, XXH3_64bits(raw.data(), raw.size()));
  }
  store32(f, 28, static_cast<std::uint32_t>(XXH3_64bits(f.data(), 28)));
}

void checkReencoding(const std::string& raw, std::string_view frame, cache::Codec codec) {
  auto plain = cache::encodeChunk(raw, {.codec = cache::Codec::kNone});
  FUZZ_CHECK(plain.has_value(), plain.error().toString());
  if (codec == cache::Codec::kNone) FUZZ_CHECK(*plain == frame, "a raw frame has one encoding");
  auto plainBack = cache::decodeChunk(*plain);
  FUZZ_CHECK(plainBack.has_value() && *plainBack == raw, "raw re-encoding does not decode back");
  auto packed = cache::encodeChunk(raw, {.codec = cache::Codec::kZstd, .probeBytes = 0});
  FUZZ_CHECK(packed.has_value(), packed.error().toString());
  auto packedBack = cache::decodeChunk(*packed);
  FUZZ_CHECK(packedBack.has_value() && *packedBack == raw, "zstd re-encoding does not decode back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned mode = data[0];
  std::string frame(fuzz::asView(data + 1, size - 1));
  if (mode & 1) repair(frame, mode);

  auto header = cache::parseFrameHeader(frame);
  auto decoded = cache::decodeChunk(frame);
  auto shared = cache::decodeChunkShared(Bytes(frame));
  FUZZ_CHECK(decoded.has_value() == shared.has_value(), "decodeChunk and decodeChunkShared differ");
  if (!header) {
    fuzz::checkRejection(header.error());
    FUZZ_CHECK(!decoded.has_value(), "a frame whose header is rejected decoded");
  } else {
    FUZZ_CHECK(header->rawLength <= cache::kMaxChunkSize, "raw length over the limit");
    FUZZ_CHECK(header->storedLength <= cache::kMaxChunkSize, "stored length over the limit");
    FUZZ_CHECK(frame.size() == cache::kFrameHeaderSize + header->storedLength,
               "frame size != header + stored length");
    FUZZ_CHECK(header->codec != cache::Codec::kNone || header->storedLength == header->rawLength,
               "codec none with stored != raw length");
  }
  if (!decoded) {
    fuzz::checkRejection(decoded.error());
    fuzz::checkRejection(shared.error());
    return 0;
  }
  FUZZ_CHECK(header.has_value(), "decoded, but the header is rejected");
  FUZZ_CHECK(decoded->size() == header->rawLength, "decoded length != header's raw length");
  FUZZ_CHECK(XXH3_64bits(decoded->data(), decoded->size()) == header->checksum, "checksum");
  FUZZ_CHECK(shared->view() == *decoded, "decodeChunkShared gives other bytes");
  if (decoded->size() <= kRepairDecompressLimit) checkReencoding(*decoded, frame, header->codec);
  return 0;
}
