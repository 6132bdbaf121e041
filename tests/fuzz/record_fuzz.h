#pragma once

#include <xxhash.h>

#include <string>
#include <string_view>

#include "tests/fuzz/FuzzCheck.h"

// The input convention of the sealed volume-format records (volume, inode, intent): the first
// byte chooses how the rest is used.
//   even: the rest is a whole record, checksum trailer included (the checksum must catch edits);
//   odd:  the rest is a record body, sealed here with a valid checksum, so that mutations reach
//         the field checks behind the checksum (a hostile writer computes checksums too).
namespace tierfs::fuzz {

inline std::string recordFromInput(std::string_view in) {
  if (in.empty()) return {};
  const bool seal = (static_cast<unsigned char>(in[0]) & 1) != 0;
  std::string out(in.substr(1));
  if (!seal) return out;
  const auto check = static_cast<std::uint32_t>(XXH3_64bits(out.data(), out.size()));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(check >> (8 * i)));
  return out;
}

// For a record `in` that decoded to `value`: encoding `value` gives `in` back byte for byte (a
// record has one encoding, so the decoder accepts nothing an encoder would not write), and
// decoding that gives `value` again.
template <typename T, typename Encode, typename Decode>
void checkRoundTrip(std::string_view in, const T& value, Encode encode, Decode decode) {
  const std::string again = encode(value);
  FUZZ_CHECK(again == in, "decoded, but re-encodes to other bytes (a second encoding)");
  auto back = decode(again);
  FUZZ_CHECK(back.has_value(), "the re-encoding does not decode: " + back.error().toString());
  FUZZ_CHECK(*back == value, "decode(encode(x)) != x");
}

}  // namespace tierfs::fuzz
