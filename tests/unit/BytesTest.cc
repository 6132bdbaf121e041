#include <gtest/gtest.h>

#include "common/Bytes.h"

namespace tierfs {
namespace {

TEST(BytesTest, TakesOverAStringAndComparesByContent) {
  std::string s(1000, 'z');
  const char* before = s.data();
  Bytes b(std::move(s));
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.data(), before) << "the string's buffer was copied instead of taken over";
  EXPECT_TRUE(b == std::string(1000, 'z'));
  EXPECT_FALSE(b == std::string(999, 'z'));
  EXPECT_EQ(b.toString(), std::string(1000, 'z'));
}

TEST(BytesTest, SharedViewKeepsItsOwnerAlive) {
  auto owner = std::make_shared<std::string>("0123456789");
  std::weak_ptr<std::string> watch = owner;
  Bytes middle = Bytes::shared(owner, std::string_view(*owner).substr(2, 5));
  owner.reset();
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(middle.view(), "23456");
  Bytes copy = middle;
  middle = Bytes();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(copy.view(), "23456");
  copy = Bytes();
  EXPECT_TRUE(watch.expired());
}

TEST(BytesTest, DefaultIsEmpty) {
  Bytes b;
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(b == "");
}

}  // namespace
}  // namespace tierfs
