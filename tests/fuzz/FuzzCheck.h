#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/Status.h"

// What the fuzz targets share: a check that stops the run (libFuzzer then keeps the input as a
// crash-* artifact), and the convention that a decoder rejects hostile bytes only with
// Corruption (the caller turns that into a cache miss, an fsck finding or a refused request).
namespace tierfs::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* what,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n  %s\n", file, line, what, detail.c_str());
  std::abort();
}

// A check that stays on in every build type (assert() would vanish under NDEBUG).
#define FUZZ_CHECK(cond, detail)                                          \
  do {                                                                    \
    if (!(cond)) ::tierfs::fuzz::fail(__FILE__, __LINE__, #cond, detail); \
  } while (0)

inline std::string_view asView(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A rejected input must be rejected as Corruption, never another code (an InvalidArgument from a
// decoder would read as the caller's mistake, an IoError as a retryable one).
inline void checkRejection(const Status& s) {
  FUZZ_CHECK(s.code() == StatusCode::kCorruption, s.toString());
}

}  // namespace tierfs::fuzz
