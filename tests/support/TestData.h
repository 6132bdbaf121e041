#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace tierfs::testing {

// Deterministic pseudo-random bytes: incompressible test data.
inline std::string randomBytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t v = rng();
    for (int b = 0; b < 8; ++b) out[i + b] = static_cast<char>(v >> (8 * b));
  }
  for (; i < n; ++i) out[i] = static_cast<char>(rng());
  return out;
}

}  // namespace tierfs::testing
