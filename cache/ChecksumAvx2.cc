// XXH3 built for AVX2: this file alone is compiled with -mavx2 (cache/CMakeLists.txt), and
// cache/Checksum.cc calls it only on a CPU that has AVX2. It includes nothing but xxhash.h, whose
// functions XXH_INLINE_ALL makes static, so no AVX2 code can stand in for a function of another
// file at link time.
#define XXH_INLINE_ALL
#include <xxhash.h>

extern "C" XXH64_hash_t tierfs_xxh3_avx2(const void* data, size_t size) {
  return XXH3_64bits(data, size);
}
