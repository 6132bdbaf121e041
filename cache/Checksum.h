#pragma once

#include <cstddef>
#include <cstdint>

namespace tierfs::cache {

// XXH3-64 (seed 0) of `size` bytes: the checksum of chunk frames and device entries. The same
// value as libxxhash's XXH3_64bits, computed with AVX2 where the CPU has it. Why: Debian's
// libxxhash is built for baseline x86-64 (SSE2), 15 GB/s here, and every chunk read from the back
// end or a cache device is hashed whole; the AVX2 build of the same code runs at ~50 GB/s (0.29
// against 0.08 ms for a 4 MiB chunk, docs/BENCHMARKS.md).
std::uint64_t xxh3(const void* data, std::size_t size);

// Which implementation xxh3() uses on this CPU: "avx2", or "sse2" for the library's own.
const char* xxh3Implementation();

}  // namespace tierfs::cache
