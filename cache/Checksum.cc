#include "cache/Checksum.h"

#include <xxhash.h>

#if defined(__x86_64__)
extern "C" XXH64_hash_t tierfs_xxh3_avx2(const void* data, size_t size);  // ChecksumAvx2.cc
#endif

namespace tierfs::cache {
namespace {

using HashFn = XXH64_hash_t (*)(const void*, size_t);

XXH64_hash_t libraryXxh3(const void* data, size_t size) { return XXH3_64bits(data, size); }

// Chosen on first use (a function's static, so that a static constructor elsewhere may hash too).
HashFn chosenXxh3() {
  static const HashFn chosen = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return tierfs_xxh3_avx2;
#endif
    return libraryXxh3;
  }();
  return chosen;
}

}  // namespace

std::uint64_t xxh3(const void* data, std::size_t size) { return chosenXxh3()(data, size); }

const char* xxh3Implementation() { return chosenXxh3() == libraryXxh3 ? "sse2" : "avx2"; }

}  // namespace tierfs::cache
