#include <gtest/gtest.h>

#include <cstdint>

#include "common/Units.h"

namespace tierfs {
namespace {

using std::chrono::milliseconds;

TEST(UnitsTest, DurationsInEveryUnit) {
  EXPECT_EQ(*parseDuration("30s"), std::chrono::seconds(30));
  EXPECT_EQ(*parseDuration("30"), std::chrono::seconds(30));
  EXPECT_EQ(*parseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*parseDuration("0.5"), milliseconds(500));
  EXPECT_EQ(*parseDuration("2m"), std::chrono::minutes(2));
  EXPECT_EQ(*parseDuration("1h"), std::chrono::hours(1));
}

TEST(UnitsTest, BadDurationsNameWhatWasWrong) {
  for (const char* bad : {"", "abc", "-1s", "nan", "inf", "5 s"}) {
    auto r = parseDuration(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.error().toString();
  }
  EXPECT_NE(parseDuration("5y").error().message().find("unknown duration unit 'y'"),
            std::string::npos);
  // Found by the config fuzzer: converting 1e98 s to nanoseconds was undefined behaviour.
  for (const char* tooLong : {"1e98", "1e10s", "200000000m", "3000000h"}) {
    auto r = parseDuration(tooLong);
    ASSERT_FALSE(r) << tooLong;
    EXPECT_NE(r.error().message().find("too long a duration"), std::string::npos)
        << r.error().toString();
  }
  EXPECT_TRUE(parseDuration("100000h"));  // 11 years: fine
}

TEST(UnitsTest, SizesUseBinaryUnits) {
  EXPECT_EQ(*parseSize("512"), 512u);
  EXPECT_EQ(*parseSize("4K"), 4096u);
  EXPECT_EQ(*parseSize("4M"), 4u << 20);
  EXPECT_EQ(*parseSize("4MiB"), 4u << 20);
  EXPECT_EQ(*parseSize("4MB"), 4u << 20);
  EXPECT_EQ(*parseSize("1.5G"), 3ull << 29);
  EXPECT_EQ(*parseSize("2T"), 2ull << 40);
  EXPECT_EQ(*parseSize("10B"), 10u);
}

TEST(UnitsTest, FractionalSizesAndLongUnits) {
  EXPECT_EQ(*parseSize("1.5T"), 3ull << 39);
  EXPECT_EQ(*parseSize("512MiB"), 512ull << 20);
  EXPECT_EQ(*parseSize("0.5K"), 512u);
  EXPECT_EQ(*parseSize("2.25GiB"), 9ull << 28);
}

TEST(UnitsTest, SizesForConfigFilesAreExactAndRoundTrip) {
  EXPECT_EQ(sizeForConfig(0), "0");
  EXPECT_EQ(sizeForConfig(4096), "4K");
  EXPECT_EQ(sizeForConfig(1536ull << 10), "1536K");
  EXPECT_EQ(sizeForConfig(16ull << 20), "16M");
  EXPECT_EQ(sizeForConfig(3ull << 39), "1536G");
  EXPECT_EQ(sizeForConfig(1000), "1000");
  for (std::uint64_t v : {0ull, 1ull, 4095ull, 1ull << 40, (3ull << 39) + 4096, 123456789ull}) {
    EXPECT_EQ(*parseSize(sizeForConfig(v)), v) << v;
  }
}

TEST(UnitsTest, DurationsForConfigFilesAreExactAndRoundTrip) {
  using namespace std::chrono;
  EXPECT_EQ(durationForConfig(Duration::zero()), "0s");
  EXPECT_EQ(durationForConfig(hours(1)), "1h");
  EXPECT_EQ(durationForConfig(seconds(90)), "90s");
  EXPECT_EQ(durationForConfig(minutes(2)), "2m");
  EXPECT_EQ(durationForConfig(milliseconds(250)), "250ms");
  for (Duration d : {Duration(seconds(30)), Duration(milliseconds(1500)), Duration(hours(25))}) {
    EXPECT_EQ(*parseDuration(durationForConfig(d)), d) << durationForConfig(d);
  }
}

TEST(UnitsTest, BadSizesAreRejected) {
  for (const char* bad : {"", "M", "-4M", "4X", "4KX", "nan", "20E", "99999999P"}) {
    auto r = parseSize(bad);
    EXPECT_FALSE(r) << bad;
  }
}

TEST(UnitsTest, SizesFormatForPeople) {
  EXPECT_EQ(formatSize(0), "0 B");
  EXPECT_EQ(formatSize(1023), "1023 B");
  EXPECT_EQ(formatSize(1024), "1.0 KiB");
  EXPECT_EQ(formatSize(1536), "1.5 KiB");
  EXPECT_EQ(formatSize((1u << 20) - 1), "1.0 MiB");  // not "1024.0 KiB"
  EXPECT_EQ(formatSize(16ull << 30), "16.0 GiB");
  EXPECT_EQ(formatSize(3ull << 39), "1.5 TiB");
  EXPECT_EQ(formatSize(UINT64_MAX), "16.0 EiB");
}

}  // namespace
}  // namespace tierfs
