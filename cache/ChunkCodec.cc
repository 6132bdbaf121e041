#include "cache/ChunkCodec.h"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "cache/Checksum.h"

namespace tierfs::cache {
namespace {

constexpr std::string_view kMagic = "TFCK";
// Field offsets in the header (docs/FORMAT.md); all integers little-endian.
constexpr std::size_t kVersionOffset = 4;
constexpr std::size_t kCodecOffset = 5;
constexpr std::size_t kReservedOffset = 6;
constexpr std::size_t kRawLengthOffset = 8;
constexpr std::size_t kStoredLengthOffset = 12;
constexpr std::size_t kChecksumOffset = 16;
constexpr std::size_t kPayloadCheckOffset = 24;
constexpr std::size_t kHeaderCheckOffset = 28;
static_assert(kHeaderCheckOffset + sizeof(std::uint32_t) == kFrameHeaderSize);
static_assert(kMaxChunkSize <= UINT32_MAX, "lengths are stored as u32");

// Byte by byte, so that the format does not depend on the host's endianness or alignment.
template <typename T>
void storeLe(char* dst, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) dst[i] = static_cast<char>(value >> (8 * i));
}

template <typename T>
T loadLe(const char* src) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value = static_cast<T>(value | static_cast<T>(static_cast<unsigned char>(src[i])) << (8 * i));
  }
  return value;
}

std::uint32_t low32(std::uint64_t hash) { return static_cast<std::uint32_t>(hash); }

// Covers the 28 bytes before it, so a damaged header is rejected before any length in it is
// trusted (for an allocation, a decompression, a slice of the payload).
std::uint32_t headerCheck(const char* header) { return low32(xxh3(header, kHeaderCheckOffset)); }

void writeHeader(const FrameHeader& header, char* dst) {
  std::memcpy(dst, kMagic.data(), kMagic.size());
  dst[kVersionOffset] = static_cast<char>(kFrameFormatVersion);
  dst[kCodecOffset] = static_cast<char>(header.codec);
  storeLe<std::uint16_t>(dst + kReservedOffset, 0);
  storeLe(dst + kRawLengthOffset, header.rawLength);
  storeLe(dst + kStoredLengthOffset, header.storedLength);
  storeLe(dst + kChecksumOffset, header.checksum);
  storeLe(dst + kPayloadCheckOffset, header.payloadCheck);
  storeLe(dst + kHeaderCheckOffset, headerCheck(dst));
}

template <typename... Args>
Status corrupt(fmt::format_string<Args...> format, Args&&... args) {
  return Status::corruption("chunk frame: " + fmt::format(format, std::forward<Args>(args)...));
}

struct ZstdFree {
  void operator()(ZSTD_CCtx* ctx) const { ZSTD_freeCCtx(ctx); }
  void operator()(ZSTD_DCtx* ctx) const { ZSTD_freeDCtx(ctx); }
};

// One context per thread for the thread's lifetime: creating one per chunk costs more than
// compressing a small chunk. Null only when out of memory; the next call tries again.
ZSTD_CCtx* threadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdFree> ctx;
  if (!ctx) ctx.reset(ZSTD_createCCtx());
  return ctx.get();
}

ZSTD_DCtx* threadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdFree> ctx;
  if (!ctx) ctx.reset(ZSTD_createDCtx());
  return ctx.get();
}

Status checkEncodeArguments(std::string_view raw, const CodecOptions& opts) {
  if (raw.size() > kMaxChunkSize) {
    return Status::invalidArgument(fmt::format(
        "chunk codec: chunk of {} bytes exceeds the {}-byte limit", raw.size(), kMaxChunkSize));
  }
  if (opts.codec != Codec::kNone && opts.codec != Codec::kZstd) {
    return Status::invalidArgument(
        fmt::format("chunk codec: unknown codec {}", static_cast<int>(opts.codec)));
  }
  if (opts.zstdLevel < ZSTD_minCLevel() || opts.zstdLevel > ZSTD_maxCLevel()) {
    return Status::invalidArgument(
        fmt::format("chunk codec: zstd level {} out of range", opts.zstdLevel));
  }
  if (!(opts.minSaving >= 0.0 && opts.minSaving <= 1.0)) {  // also rejects NaN
    return Status::invalidArgument(
        fmt::format("chunk codec: minSaving {} not in [0, 1]", opts.minSaving));
  }
  return Status::ok();
}

bool pays(std::size_t rawSize, std::size_t storedSize, double minSaving) {
  return storedSize < rawSize &&
         static_cast<double>(rawSize - storedSize) >= minSaving * static_cast<double>(rawSize);
}

Result<std::size_t> compressInto(ZSTD_CCtx* ctx, std::string_view src, char* dst,
                                 std::size_t capacity, int level) {
  const std::size_t n = ZSTD_compressCCtx(ctx, dst, capacity, src.data(), src.size(), level);
  if (ZSTD_isError(n)) {
    return failure(Status::internal(
        fmt::format("chunk codec: zstd compression failed: {}", ZSTD_getErrorName(n))));
  }
  return n;
}

// Writes the zstd payload of `raw` at dst (capacity >= ZSTD_compressBound(raw.size())) and returns
// its size, or returns 0 when compression does not pay and the chunk is to be stored raw (a zstd
// frame is never empty, so 0 is free to mean that).
Result<std::size_t> compressPayload(std::string_view raw, char* dst, std::size_t capacity,
                                    const CodecOptions& opts) {
  ZSTD_CCtx* ctx = threadCCtx();
  if (ctx == nullptr) {
    return failure(Status::internal("chunk codec: cannot allocate a zstd compression context"));
  }
  const std::size_t probe =
      opts.probeBytes == 0 ? raw.size() : std::min(opts.probeBytes, raw.size());
  TIERFS_ASSIGN_OR_RETURN(std::size_t size,
                          compressInto(ctx, raw.substr(0, probe), dst, capacity, opts.zstdLevel));
  if (!pays(probe, size, opts.minSaving)) return 0;
  if (probe == raw.size()) return size;  // the probe was the whole chunk
  TIERFS_ASSIGN_OR_RETURN(size, compressInto(ctx, raw, dst, capacity, opts.zstdLevel));
  return pays(raw.size(), size, opts.minSaving) ? size : 0;
}

Status checkFixedFields(const char* header) {
  if (std::memcmp(header, kMagic.data(), kMagic.size()) != 0) return corrupt("bad magic");
  // Before the header check: a frame of a later version may lay its header out differently.
  const auto version = loadLe<std::uint8_t>(header + kVersionOffset);
  if (version != kFrameFormatVersion) return corrupt("unsupported format version {}", version);
  const auto stored = loadLe<std::uint32_t>(header + kHeaderCheckOffset);
  const std::uint32_t computed = headerCheck(header);
  if (stored != computed) {
    return corrupt("header check mismatch (stored {:#010x}, computed {:#010x})", stored, computed);
  }
  const auto reserved = loadLe<std::uint16_t>(header + kReservedOffset);
  if (reserved != 0) return corrupt("reserved field is {:#06x}, expected 0", reserved);
  const auto codec = loadLe<std::uint8_t>(header + kCodecOffset);
  if (codec > static_cast<std::uint8_t>(Codec::kZstd)) return corrupt("unknown codec {}", codec);
  return Status::ok();
}

Status checkLengths(const FrameHeader& header, std::size_t payloadBytes) {
  if (header.rawLength > kMaxChunkSize) {
    return corrupt("raw length {} exceeds the {}-byte limit", header.rawLength, kMaxChunkSize);
  }
  if (header.storedLength > kMaxChunkSize) {
    return corrupt("stored length {} exceeds the {}-byte limit", header.storedLength,
                   kMaxChunkSize);
  }
  if (header.codec == Codec::kNone && header.storedLength != header.rawLength) {
    return corrupt("codec none but stored length {} != raw length {}", header.storedLength,
                   header.rawLength);
  }
  if (header.storedLength != payloadBytes) {
    return corrupt("stored length {} but {} payload bytes", header.storedLength, payloadBytes);
  }
  return Status::ok();
}

Status checkPayload(std::uint32_t computed, std::uint32_t stored) {
  if (computed == stored) return Status::ok();
  return corrupt("payload check mismatch (stored {:#010x}, computed {:#010x})", stored, computed);
}

Status checkRaw(std::uint64_t computed, std::uint64_t stored) {
  if (computed == stored) return Status::ok();
  return corrupt("checksum mismatch (stored {:#018x}, computed {:#018x})", stored, computed);
}

Status decompressPayload(std::string_view payload, char* raw, std::size_t rawLength) {
  ZSTD_DCtx* ctx = threadDCtx();
  if (ctx == nullptr) {
    return Status::internal("chunk codec: cannot allocate a zstd decompression context");
  }
  const std::size_t n = ZSTD_decompressDCtx(ctx, raw, rawLength, payload.data(), payload.size());
  if (ZSTD_isError(n)) return corrupt("zstd payload: {}", ZSTD_getErrorName(n));
  if (n != rawLength) {
    return corrupt("zstd payload holds {} bytes, header says {}", n, rawLength);
  }
  return Status::ok();
}

std::size_t maxFrameSize(std::size_t rawLength) {
  return kFrameHeaderSize + ZSTD_compressBound(rawLength);
}

// The encoder both encodeChunk forms share: writes the frame of `raw` (arguments already checked)
// at `frame`, which has room for maxFrameSize(raw.size()) bytes, and returns its length.
Result<std::size_t> encodeChunkInto(std::string_view raw, char* frame, const CodecOptions& opts) {
  const auto rawLength = static_cast<std::uint32_t>(raw.size());
  const std::uint64_t checksum = xxh3(raw.data(), raw.size());
  // Stored raw, the payload is the raw bytes: its check comes free from their checksum.
  FrameHeader header{Codec::kNone, rawLength, rawLength, checksum, low32(checksum)};
  char* payload = frame + kFrameHeaderSize;
  if (opts.codec == Codec::kZstd) {
    // Room for zstd's worst case, which is also room for the raw bytes if compression doesn't pay.
    TIERFS_ASSIGN_OR_RETURN(std::size_t compressed,
                            compressPayload(raw, payload, ZSTD_compressBound(raw.size()), opts));
    if (compressed != 0) {
      header.codec = Codec::kZstd;
      header.storedLength = static_cast<std::uint32_t>(compressed);
      header.payloadCheck = low32(xxh3(payload, compressed));
    }
  }
  if (header.codec == Codec::kNone && !raw.empty()) std::memcpy(payload, raw.data(), raw.size());
  writeHeader(header, frame);
  return kFrameHeaderSize + header.storedLength;
}

}  // namespace

Result<std::string> encodeChunk(std::string_view raw, const CodecOptions& opts) {
  TIERFS_RETURN_IF_ERROR(checkEncodeArguments(raw, opts));  // before sizing a buffer by raw
  std::string frame(maxFrameSize(raw.size()), '\0');
  TIERFS_ASSIGN_OR_RETURN(std::size_t length, encodeChunkInto(raw, frame.data(), opts));
  frame.resize(length);
  // Callers may keep frames in memory: don't pin the worst-case buffer.
  if (frame.capacity() > length + (length >> 3)) frame.shrink_to_fit();
  return frame;
}

Result<Bytes> encodeChunk(std::string_view raw, BufferPool& pool, const CodecOptions& opts) {
  TIERFS_RETURN_IF_ERROR(checkEncodeArguments(raw, opts));
  BufferPool::Buffer buffer = pool.take(maxFrameSize(raw.size()));
  TIERFS_ASSIGN_OR_RETURN(std::size_t length, encodeChunkInto(raw, buffer.data(), opts));
  return std::move(buffer).seal().slice(0, length);
}

Result<FrameHeader> parseFrameHeader(std::string_view frame) {
  if (frame.size() < kFrameHeaderSize) {
    return failure(
        corrupt("{} bytes is shorter than the {}-byte header", frame.size(), kFrameHeaderSize));
  }
  const char* bytes = frame.data();
  TIERFS_RETURN_IF_ERROR(checkFixedFields(bytes));
  const FrameHeader header{
      static_cast<Codec>(loadLe<std::uint8_t>(bytes + kCodecOffset)),
      loadLe<std::uint32_t>(bytes + kRawLengthOffset),
      loadLe<std::uint32_t>(bytes + kStoredLengthOffset),
      loadLe<std::uint64_t>(bytes + kChecksumOffset),
      loadLe<std::uint32_t>(bytes + kPayloadCheckOffset),
  };
  TIERFS_RETURN_IF_ERROR(checkLengths(header, frame.size() - kFrameHeaderSize));
  return header;
}

namespace {

// Parses `frame` and verifies its payload check and, for a raw frame, its checksum: what is left
// to do is decompressing (and checking) a zstd payload. `bytesChecked`: a stronger checksum over
// the whole frame has just passed, so the payload is not hashed again.
Result<FrameHeader> verifyFrame(std::string_view frame, bool bytesChecked = false) {
  TIERFS_ASSIGN_OR_RETURN(const FrameHeader header, parseFrameHeader(frame));
  if (bytesChecked) return header;
  const std::string_view payload = frame.substr(kFrameHeaderSize);
  const std::uint64_t payloadHash = xxh3(payload.data(), payload.size());
  // Before decompressing: damage is caught at hashing speed (several times zstd's) and costs no
  // allocation.
  TIERFS_RETURN_IF_ERROR(checkPayload(low32(payloadHash), header.payloadCheck));
  if (header.codec == Codec::kNone) TIERFS_RETURN_IF_ERROR(checkRaw(payloadHash, header.checksum));
  return header;
}

// Decompresses a verified zstd frame into `raw` (header.rawLength bytes) and checks them against
// the header's checksum.
Status decompressFrame(const FrameHeader& header, std::string_view frame, char* raw) {
  TIERFS_RETURN_IF_ERROR(decompressPayload(frame.substr(kFrameHeaderSize), raw, header.rawLength));
  return checkRaw(xxh3(raw, header.rawLength), header.checksum);
}

Result<Bytes> decodeShared(const Bytes& frame, BufferPool* pool, bool bytesChecked) {
  TIERFS_ASSIGN_OR_RETURN(const FrameHeader header, verifyFrame(frame.view(), bytesChecked));
  if (header.codec == Codec::kNone) return frame.slice(kFrameHeaderSize, header.storedLength);
  BufferPool::Buffer raw = (pool ? *pool : BufferPool::unpooled()).take(header.rawLength);
  TIERFS_RETURN_IF_ERROR(decompressFrame(header, frame.view(), raw.data()));
  return std::move(raw).seal();
}

}  // namespace

Result<Bytes> decodeChunkShared(const Bytes& frame, BufferPool* pool) {
  return decodeShared(frame, pool, false);
}

Result<Bytes> decodeCheckedChunk(const Bytes& frame, BufferPool* pool) {
  return decodeShared(frame, pool, true);
}

Result<Bytes> decodeChunkOwned(const Bytes& frame, BufferPool& pool) {
  TIERFS_ASSIGN_OR_RETURN(Bytes raw, decodeChunkShared(frame, &pool));
  const bool inFrame = raw.data() >= frame.data() && raw.data() < frame.data() + frame.size();
  return inFrame && pool.recycles(raw.size()) ? pool.copy(raw) : raw;
}

Result<std::string> decodeChunk(std::string_view frame) {
  TIERFS_ASSIGN_OR_RETURN(const FrameHeader header, verifyFrame(frame));
  if (header.codec == Codec::kNone) return std::string(frame.substr(kFrameHeaderSize));
  std::string raw(header.rawLength, '\0');
  TIERFS_RETURN_IF_ERROR(decompressFrame(header, frame, raw.data()));
  return raw;
}

}  // namespace tierfs::cache
