#include <gtest/gtest.h>

#include <cerrno>

#include "common/Result.h"
#include "common/Status.h"

namespace tierfs {
namespace {

TEST(StatusTest, OkIsOkAndSaysSo) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.toString(), "OK");
  EXPECT_EQ(s.toErrno(), 0);
}

TEST(StatusTest, ErrorsCarryCodeMessageAndContext) {
  Status s = Status::notFound("no such object").withContext("read 'x'");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.toString(), "NotFound: read 'x': no such object");
  EXPECT_EQ(s.toErrno(), ENOENT);
}

TEST(StatusTest, ErrnoRoundTripsThroughTheOneMapping) {
  EXPECT_EQ(Status::fromErrno(-ENOENT, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(Status::fromErrno(ENODATA, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(Status::fromErrno(-EEXIST, "x").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Status::fromErrno(-ECANCELED, "x").code(), StatusCode::kPreconditionFailed);
  EXPECT_EQ(Status::fromErrno(-ETIMEDOUT, "x").code(), StatusCode::kTimedOut);
  EXPECT_EQ(Status::fromErrno(-ENOSPC, "x").toErrno(), ENOSPC);
  EXPECT_EQ(Status::fromErrno(-EIO, "x").toErrno(), EIO);
  EXPECT_TRUE(Status::timedOut("t").retryable());
  EXPECT_TRUE(Status::unavailable("u").retryable());
  EXPECT_FALSE(Status::notFound("n").retryable());
  EXPECT_TRUE(Status::corruption("c").dataLoss());
}

TEST(StatusTest, PosixErrorsKeepTheirErrnoThroughContext) {
  Status s = Status::posix(ENOTEMPTY, "rmdir 'a'").withContext("volume");
  EXPECT_EQ(s.toErrno(), ENOTEMPTY);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Status::posix(EISDIR, "x").toErrno(), EISDIR);
  // A back end's errno stays a class: a librados ETIMEDOUT reaches the reader as EIO.
  EXPECT_EQ(Status::fromErrno(-ETIMEDOUT, "x").toErrno(), EIO);
}

Result<int> half(int v) {
  if (v % 2) return failure(Status::invalidArgument("odd"));
  return v / 2;
}

Result<int> quarter(int v) {
  TIERFS_ASSIGN_OR_RETURN(int h, half(v));
  return half(h);
}

Status checkEven(int v) {
  TIERFS_RETURN_IF_ERROR(statusOf(half(v)));
  return Status::ok();
}

TEST(StatusTest, MacrosPropagateErrorsIntoStatusAndResult) {
  EXPECT_EQ(*quarter(8), 2);
  EXPECT_EQ(quarter(6).error().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(checkEven(4).isOk());
  EXPECT_EQ(checkEven(3).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tierfs
