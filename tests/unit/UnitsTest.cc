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
