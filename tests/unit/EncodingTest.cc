#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/Encoding.h"
#include "tests/support/Assertions.h"

namespace tierfs {
namespace {

std::string varintBytes(std::uint64_t v) {
  Encoder e;
  e.putVarint(v);
  return e.take();
}

std::string signedBytes(std::int64_t v) {
  Encoder e;
  e.putSigned(v);
  return e.take();
}

// Expects Corruption whose message names the record, the field and `problem`.
template <typename T>
void expectBad(const Result<T>& r, std::string_view problem) {
  ASSERT_FALSE(r) << "accepted; wanted '" << problem << "'";
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption) << r.error().toString();
  EXPECT_NE(r.error().message().find("test record: field 'f'"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find(problem), std::string::npos) << r.error().message();
}

// Every value 2^k - 1 and 2^k for k = 0..64: the values at which the encoded length changes.
std::vector<std::uint64_t> boundaries() {
  std::vector<std::uint64_t> out = {0};
  for (int k = 0; k < 64; ++k) {
    out.push_back((std::uint64_t{1} << k) - 1);
    out.push_back(std::uint64_t{1} << k);
  }
  out.push_back(std::numeric_limits<std::uint64_t>::max());
  return out;
}

TEST(EncodingTest, VarintRoundTripsAtEveryLengthBoundary) {
  for (std::uint64_t v : boundaries()) {
    const std::string bytes = varintBytes(v);
    int bits = 0;
    for (std::uint64_t x = v; x != 0; x >>= 1) ++bits;
    const std::size_t expectedLength = bits == 0 ? 1 : (bits + 6) / 7;
    EXPECT_EQ(bytes.size(), expectedLength) << v;
    Decoder d(bytes, "test record");
    auto back = d.varint("f");
    ASSERT_OK(back);
    EXPECT_EQ(*back, v);
    EXPECT_EQ(d.remaining(), 0u);
    EXPECT_OK(d.expectEnd());
  }
}

TEST(EncodingTest, VarintLayoutIsLittleEndianLeb128) {
  EXPECT_EQ(varintBytes(0), std::string(1, '\0'));
  EXPECT_EQ(varintBytes(127), "\x7f");
  EXPECT_EQ(varintBytes(128), "\x80\x01");
  EXPECT_EQ(varintBytes(300), "\xac\x02");
  EXPECT_EQ(varintBytes(std::numeric_limits<std::uint64_t>::max()),
            std::string(9, '\xff') + "\x01");
}

TEST(EncodingTest, ZigzagRoundTripsAndKeepsSmallMagnitudesShort) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  // Zigzag order: 0, -1, 1, -2, 2, ...
  EXPECT_EQ(signedBytes(0), std::string(1, '\0'));
  EXPECT_EQ(signedBytes(-1), "\x01");
  EXPECT_EQ(signedBytes(1), "\x02");
  EXPECT_EQ(signedBytes(-64), "\x7f");
  EXPECT_EQ(signedBytes(64), "\x80\x01");
  EXPECT_EQ(signedBytes(kMax), "\xfe" + std::string(8, '\xff') + "\x01");
  EXPECT_EQ(signedBytes(kMin), std::string(9, '\xff') + "\x01");
  std::vector<std::int64_t> values = {kMin, kMin + 1, kMax, kMax - 1, -1, 0, 1};
  for (int k = 0; k < 63; ++k) {
    const std::int64_t p = std::int64_t{1} << k;
    for (std::int64_t v : {p, p - 1, -p, -p + 1, -p - 1}) values.push_back(v);
  }
  for (std::int64_t v : values) {
    const std::string bytes = signedBytes(v);
    Decoder d(bytes, "test record");
    auto back = d.signedVarint("f");
    ASSERT_OK(back);
    EXPECT_EQ(*back, v);
    EXPECT_EQ(d.remaining(), 0u);
  }
}

TEST(EncodingTest, EveryTruncatedVarintIsRejected) {
  for (std::uint64_t v : boundaries()) {
    const std::string bytes = varintBytes(v);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      Decoder d(std::string_view(bytes).substr(0, n), "test record");
      expectBad(d.varint("f"), "truncated");
    }
  }
  Decoder empty("", "test record");
  expectBad(empty.signedVarint("f"), "truncated");
}

TEST(EncodingTest, VarintOverSixtyFourBitsIsRejected) {
  // Ten bytes whose last carries more than the 64th bit.
  for (char last : {'\x02', '\x03', '\x7f'}) {
    const std::string bytes = std::string(9, '\xff') + last;
    Decoder d(bytes, "test record");
    expectBad(d.varint("f"), "longer than 64 bits");
  }
  // An eleventh byte.
  const std::string elevenBytes = std::string(10, '\xff') + "\x01";
  Decoder eleven(elevenBytes, "test record");
  expectBad(eleven.varint("f"), "longer than 64 bits");
  const std::string endlessBytes(40, '\x80');
  Decoder endless(endlessBytes, "test record");
  expectBad(endless.varint("f"), "longer than 64 bits");
}

// Each value has one encoding: a varint padded with continuation bytes and a final 0 is not the
// Encoder's and must not decode to the same value.
TEST(EncodingTest, VarintWithARedundantZeroByteIsRejected) {
  const std::vector<std::string> overlong = {
      std::string("\x80\x00", 2),
      std::string("\x80\x80\x00", 3),
      std::string("\xff\x00", 2),
      std::string("\xac\x82\x00", 3),                   // 300 in three bytes
      std::string(9, '\x80') + std::string(1, '\x00'),  // 0 in ten bytes
      std::string(9, '\xff') + std::string(1, '\x00'),  // 2^63 - 1 in ten bytes
  };
  for (const std::string& bytes : overlong) {
    Decoder d(bytes, "test record");
    expectBad(d.varint("f"), "redundant zero byte");
    Decoder s(bytes, "test record");
    expectBad(s.signedVarint("f"), "redundant zero byte");
    Decoder v32(bytes, "test record");
    expectBad(v32.varint32("f"), "redundant zero byte");
    const std::string asLength = bytes + "xyz";
    Decoder str(asLength, "test record");
    expectBad(str.string("f", 100), "redundant zero byte");
  }
  // A single 0 byte is the encoding of 0, and 0x80 0x01 that of 128.
  const std::string zero(1, '\0');
  Decoder d(zero, "test record");
  ASSERT_OK(d.varint("f"));
  Decoder d128("\x80\x01", "test record");
  auto v = d128.varint("f");
  ASSERT_OK(v);
  EXPECT_EQ(*v, 128u);
}

TEST(EncodingTest, Varint32RejectsValuesOverThirtyTwoBits) {
  const std::uint64_t max32 = std::numeric_limits<std::uint32_t>::max();
  const std::string max32Bytes = varintBytes(max32);
  Decoder ok(max32Bytes, "test record");
  auto v = ok.varint32("f");
  ASSERT_OK(v);
  EXPECT_EQ(*v, max32);
  const std::string overBytes = varintBytes(max32 + 1);
  Decoder over(overBytes, "test record");
  expectBad(over.varint32("f"), "over 32 bits");
}

TEST(EncodingTest, StringsAreLengthPrefixedAndBounded) {
  Encoder e;
  e.putString("");
  e.putString("hello");
  e.putString(std::string(300, 'x'));
  const std::string bytes = e.take();
  EXPECT_EQ(bytes.size(), 1 + 1 + 5 + 2 + 300);

  Decoder d(bytes, "test record");
  auto empty = d.string("f", 0);
  ASSERT_OK(empty);
  EXPECT_EQ(*empty, "");
  auto hello = d.string("f", 5);
  ASSERT_OK(hello);
  EXPECT_EQ(*hello, "hello");
  auto longest = d.string("f", 300);
  ASSERT_OK(longest);
  EXPECT_EQ(*longest, std::string(300, 'x'));
  EXPECT_OK(d.expectEnd());

  Decoder tooLong(std::string_view(bytes).substr(1), "test record");
  expectBad(tooLong.string("f", 4), "longer than allowed");
  // A length prefix that promises more bytes than there are.
  Decoder cut(std::string_view(bytes).substr(0, bytes.size() - 1), "test record");
  ASSERT_OK(cut.string("f", 0));
  ASSERT_OK(cut.string("f", 5));
  expectBad(cut.string("f", 1000), "truncated");
  // A huge length must not be trusted with an allocation or an overflow.
  const std::string hugeBytes = varintBytes(std::numeric_limits<std::uint64_t>::max()) + "abc";
  Decoder huge(hugeBytes, "test record");
  expectBad(huge.string("f", std::numeric_limits<std::size_t>::max()), "truncated");
}

TEST(EncodingTest, FixedAndRawFields) {
  Encoder e;
  e.putU8(0xfe);
  e.putFixed32(0x04030201);
  e.putRaw("xyz");
  const std::string bytes = e.take();
  EXPECT_EQ(bytes, "\xfe\x01\x02\x03\x04xyz");
  Decoder d(bytes, "test record");
  auto u = d.u8("f");
  ASSERT_OK(u);
  EXPECT_EQ(*u, 0xfe);
  auto fixed = d.fixed32("f");
  ASSERT_OK(fixed);
  EXPECT_EQ(*fixed, 0x04030201u);
  auto raw = d.raw("f", 3);
  ASSERT_OK(raw);
  EXPECT_EQ(*raw, "xyz");
  expectBad(d.u8("f"), "truncated");

  Decoder shortFixed("\x01\x02\x03", "test record");
  expectBad(shortFixed.fixed32("f"), "truncated");
}

TEST(EncodingTest, Fixed64IsEightLittleEndianBytes) {
  Encoder e;
  e.putFixed64(0x0807060504030201ull);
  e.putFixed64(0);
  e.putFixed64(std::numeric_limits<std::uint64_t>::max());
  const std::string bytes = e.take();
  EXPECT_EQ(bytes, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8) + std::string(8, '\0') +
                       std::string(8, '\xff'));
  Decoder d(bytes, "test record");
  for (std::uint64_t want : {std::uint64_t{0x0807060504030201}, std::uint64_t{0},
                             std::numeric_limits<std::uint64_t>::max()}) {
    auto v = d.fixed64("f");
    ASSERT_OK(v);
    EXPECT_EQ(*v, want);
  }
  EXPECT_OK(d.expectEnd());
  for (std::size_t n = 0; n < 8; ++n) {
    Decoder cut(std::string_view(bytes).substr(0, n), "test record");
    expectBad(cut.fixed64("f"), "truncated");
    EXPECT_EQ(cut.remaining(), 0u);
  }
}

TEST(EncodingTest, TrailingBytesAreReported) {
  Decoder d("\x05zz", "test record");
  ASSERT_OK(d.u8("f"));
  Status end = d.expectEnd();
  EXPECT_EQ(end.code(), StatusCode::kCorruption);
  EXPECT_NE(end.message().find("test record: 2 unexpected bytes"), std::string::npos)
      << end.message();
}

TEST(EncodingTest, AFailedReadLeavesTheDecoderUnusable) {
  // "longer than allowed" fails before the string's bytes are consumed; the decoder must not go
  // on to read them as the next field.
  Decoder d(
      "\x03"
      "abc"
      "\x07",
      "test record");
  expectBad(d.string("f", 2), "longer than allowed");
  EXPECT_EQ(d.remaining(), 0u);
  expectBad(d.u8("f"), "truncated");
  expectBad(d.varint("f"), "truncated");
}

}  // namespace
}  // namespace tierfs
