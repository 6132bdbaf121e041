#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tierfs {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kNotFound,
  kAlreadyExists,
  kPreconditionFailed,  // a guard of a compound operation did not hold; nothing was applied
  kTimedOut,
  kUnavailable,
  kCorruption,
  kNoSpace,
  kInvalidArgument,
  kPermissionDenied,
  kNotSupported,
  kIoError,
  kCancelled,
  kInternal,
};

std::string_view statusCodeName(StatusCode code);

// The outcome of an operation. OK carries no message and costs no allocation. An error names what
// failed in its message; `retryable` says the same call may succeed later (a timeout, a cluster
// that is not reachable), `dataLoss` says bytes were found damaged.
class [[nodiscard]] Status {
 public:
  Status() = default;

  static Status ok() { return Status(); }
  static Status notFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status alreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status preconditionFailed(std::string msg) {
    return {StatusCode::kPreconditionFailed, std::move(msg)};
  }
  static Status timedOut(std::string msg) { return {StatusCode::kTimedOut, std::move(msg)}; }
  static Status unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status noSpace(std::string msg) { return {StatusCode::kNoSpace, std::move(msg)}; }
  static Status invalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status permissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status notSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status ioError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
  static Status cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  // Any code with its message: a status carried over the wire (control protocol).
  static Status of(StatusCode code, std::string msg) { return {code, std::move(msg)}; }

  // Maps a (positive or negative) errno value to a status; `what` names the failed operation.
  // A back end's errno says what class of failure it was; the caller of a filesystem sees the
  // class's errno (EIO for a timeout), not the back end's.
  static Status fromErrno(int err, std::string_view what);
  // A POSIX error the filesystem decided on (ENOTEMPTY, EISDIR, ...); toErrno() gives `err` back.
  static Status posix(int err, std::string msg);

  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  bool isNotFound() const { return code_ == StatusCode::kNotFound; }
  bool isTimedOut() const { return code_ == StatusCode::kTimedOut; }
  bool retryable() const {
    return code_ == StatusCode::kTimedOut || code_ == StatusCode::kUnavailable;
  }
  bool dataLoss() const { return code_ == StatusCode::kCorruption; }

  // "NotFound: object 'x' ..."; "OK" for success.
  std::string toString() const;

  // The same status with `context` put in front of the message ("reading chunk 3: ...").
  Status withContext(std::string_view context) const;

  // The errno a POSIX caller should see for this status. Errors map to errno here and nowhere
  // else.
  int toErrno() const;

  friend bool operator==(const Status& a, const Status& b) = default;

 private:
  static Status codeForErrno(int err, std::string msg);
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  int errno_ = 0;  // the exact errno this status came from or stands for; 0: derive from code_
  std::string message_;
};

}  // namespace tierfs
