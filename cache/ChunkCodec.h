#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/BufferPool.h"
#include "common/Bytes.h"
#include "common/Result.h"

// The frame of one chunk object, as stored in RADOS and in the NVMe cache: a fixed 32-byte
// little-endian header, then the payload (the raw bytes, or one zstd frame of them). The layout is
// in docs/FORMAT.md.
//
// Thread-safety: every function may be called from any number of threads at once; each thread
// keeps its own zstd contexts. Ownership: inputs are only read during the call; outputs are owned
// by the caller.

namespace tierfs::cache {

// How a payload is stored. The values are written into frames: never renumber them.
enum class Codec : std::uint8_t { kNone = 0, kZstd = 1 };

struct CodecOptions {
  // kNone stores every chunk raw; kZstd compresses a chunk when that pays (see minSaving).
  Codec codec = Codec::kZstd;
  // Level 1 is about fast enough to keep up with the network on one core; higher levels spend a
  // lot more CPU for a few percent.
  int zstdLevel = 1;
  // Early abort: compress this prefix first and store the whole chunk raw if it does not pay, so
  // that incompressible data (JPEG, PNG, float weights) costs one small probe rather than a full
  // compression. 0 disables the probe.
  std::size_t probeBytes = 64 * 1024;
  // Store compressed only if that saves at least this fraction of the raw size: below it, the
  // decompression on every later read costs more than the bytes saved. In [0, 1].
  double minSaving = 0.10;
};

// A frame header that parseFrameHeader has checked.
struct FrameHeader {
  Codec codec = Codec::kNone;
  std::uint32_t rawLength = 0;
  std::uint32_t storedLength = 0;  // payload bytes after the header
  std::uint64_t checksum = 0;      // XXH3-64 (seed 0) of the raw bytes
  // Low 32 bits of the XXH3-64 of the payload. Needed because zstd's encoding is not canonical:
  // some damaged payloads still decode to the right bytes, and would pass the raw checksum.
  std::uint32_t payloadCheck = 0;
};

inline constexpr std::size_t kFrameHeaderSize = 32;
inline constexpr std::uint8_t kFrameFormatVersion = 1;
// Bounds what a hostile or damaged header can make a decoder allocate (16 default chunks).
inline constexpr std::size_t kMaxChunkSize = std::size_t{64} << 20;

// The frame of `raw`: zstd-compressed when opts ask for it and it pays, raw otherwise.
// InvalidArgument when raw is longer than kMaxChunkSize or opts are out of range; Internal when
// zstd fails (no memory for a context).
Result<std::string> encodeChunk(std::string_view raw, const CodecOptions& opts = {});
// The same frame in a buffer of `pool`, which needs neither zeroing nor (once the pool is warm)
// fresh pages: the write path's encoder (a 4 MiB std::string costs a 4 MiB memset and, on a VM
// that hands freed memory back to its host, a page fault every 4 KiB).
Result<Bytes> encodeChunk(std::string_view raw, BufferPool& pool, const CodecOptions& opts = {});

// Checks everything that can be checked without the payload: magic, version, header check,
// reserved field, codec, lengths within kMaxChunkSize, codec none storing exactly the raw length,
// and frame.size() == kFrameHeaderSize + storedLength. Corruption, naming what is wrong.
Result<FrameHeader> parseFrameHeader(std::string_view frame);

// The raw bytes of a frame: parses it, verifies the payload check, decompresses exactly rawLength
// bytes and verifies their XXH3-64. Corruption (naming what is wrong) for any damaged or malformed
// frame; Internal when no zstd context can be allocated. Never reads outside `frame`.
Result<std::string> decodeChunk(std::string_view frame);

// The same, sharing `frame`'s buffer where it can: a raw (codec none) frame's bytes come back as
// a slice of it, with no copy (incompressible data, most of a dataset of images, is stored raw).
// A compressed frame is decompressed into a buffer of `pool` (null: one allocated for it).
Result<Bytes> decodeChunkShared(const Bytes& frame, BufferPool* pool = nullptr);

// The same, for a frame whose every byte a stronger check has just verified (a cache device's
// entry: XXH3-64 over the whole frame): the payload is not hashed again. The header's lengths
// are still checked, and a compressed payload's raw bytes after decompressing.
Result<Bytes> decodeCheckedChunk(const Bytes& frame, BufferPool* pool = nullptr);

// The same, for a frame whose buffer should not be kept (a librados reply): raw bytes that `pool`
// recycles (a chunk-sized buffer, or a small file's slab slot) are copied into it, so that the
// frame's buffer is freed and reused: see BufferPool and SlabAllocator for why.
Result<Bytes> decodeChunkOwned(const Bytes& frame, BufferPool& pool);

}  // namespace tierfs::cache
