#pragma once

#include <gtest/gtest.h>

#include "common/Result.h"

namespace tierfs::testing {

inline Status toStatus(const Status& s) { return s; }
template <typename T>
Status toStatus(const Result<T>& r) {
  return statusOf(r);
}

}  // namespace tierfs::testing

// Assert that a Status or Result is OK, printing the error otherwise.
#define ASSERT_OK(expr)                                 \
  ASSERT_TRUE(::tierfs::testing::toStatus(expr).isOk()) \
      << ::tierfs::testing::toStatus(expr).toString()
#define EXPECT_OK(expr)                                 \
  EXPECT_TRUE(::tierfs::testing::toStatus(expr).isOk()) \
      << ::tierfs::testing::toStatus(expr).toString()
// Assert that a Status or Result failed with `expected` (a StatusCode).
#define EXPECT_CODE(expr, expected)                             \
  EXPECT_EQ(::tierfs::testing::toStatus(expr).code(), expected) \
      << ::tierfs::testing::toStatus(expr).toString()
