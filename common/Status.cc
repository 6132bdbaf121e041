#include "common/Status.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tierfs {

std::string_view statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kPreconditionFailed:
      return "PreconditionFailed";
    case StatusCode::kTimedOut:
      return "TimedOut";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kCorruption:
      return "Corruption";
    case StatusCode::kNoSpace:
      return "NoSpace";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kNotSupported:
      return "NotSupported";
    case StatusCode::kIoError:
      return "IoError";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

Status Status::fromErrno(int err, std::string_view what) {
  err = std::abs(err);
  return codeForErrno(err, fmt::format("{}: {}", what, std::strerror(err)));
}

Status Status::posix(int err, std::string msg) {
  Status s = codeForErrno(err, std::move(msg));
  if (!s.isOk()) s.errno_ = err;
  return s;
}

Status Status::codeForErrno(int err, std::string msg) {
  switch (err) {
    case 0:
      return Status();
    case ENOENT:
    case ENODATA:
      return notFound(std::move(msg));
    case EEXIST:
      return alreadyExists(std::move(msg));
    case ECANCELED:
      return preconditionFailed(std::move(msg));
    case ETIMEDOUT:
      return timedOut(std::move(msg));
    case ENOTCONN:
    case ECONNREFUSED:
    case ESHUTDOWN:
    case EAGAIN:
      return unavailable(std::move(msg));
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return noSpace(std::move(msg));
    case EINVAL:
    case ENAMETOOLONG:
    case ERANGE:
    case ENOTEMPTY:
    case EISDIR:
    case ENOTDIR:
    case EXDEV:
    case ELOOP:
      return invalidArgument(std::move(msg));
    case EACCES:
    case EPERM:
      return permissionDenied(std::move(msg));
    case EOPNOTSUPP:
      return notSupported(std::move(msg));
    case EBADMSG:
      return corruption(std::move(msg));
    default:
      return ioError(std::move(msg));
  }
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  if (message_.empty()) return std::string(statusCodeName(code_));
  return fmt::format("{}: {}", statusCodeName(code_), message_);
}

Status Status::withContext(std::string_view context) const {
  if (isOk()) return *this;
  Status s(code_, fmt::format("{}: {}", context, message_));
  s.errno_ = errno_;
  return s;
}

int Status::toErrno() const {
  if (errno_ != 0) return errno_;
  switch (code_) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kNotFound:
      return ENOENT;
    case StatusCode::kAlreadyExists:
      return EEXIST;
    case StatusCode::kPreconditionFailed:
      return ESTALE;  // someone else changed it first
    case StatusCode::kTimedOut:
    case StatusCode::kUnavailable:
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kInternal:
      return EIO;
    case StatusCode::kNoSpace:
      return ENOSPC;
    case StatusCode::kInvalidArgument:
      return EINVAL;
    case StatusCode::kPermissionDenied:
      return EACCES;
    case StatusCode::kNotSupported:
      return EOPNOTSUPP;
    case StatusCode::kCancelled:
      return EINTR;
  }
  return EIO;
}

}  // namespace tierfs
