#pragma once

#include <tl/expected.hpp>

#include "common/Status.h"

namespace tierfs {

// A value or the Status that says why there is none. Aliased once so that a move to
// std::expected is a one-line change.
template <typename T>
using Result = tl::expected<T, Status>;

inline tl::unexpected<Status> failure(Status s) { return tl::unexpected<Status>(std::move(s)); }

// What the helper macros return: converts to a Status or to any Result<T>, so one macro serves
// functions of either kind.
struct ErrorReturn {
  Status status;
  operator Status() && { return std::move(status); }  // NOLINT(google-explicit-constructor)
  template <typename T>
  operator Result<T>() && {  // NOLINT(google-explicit-constructor)
    return failure(std::move(status));
  }
};

// Status of a Result<T>: OK when it holds a value.
template <typename T>
Status statusOf(const Result<T>& r) {
  return r ? Status::ok() : r.error();
}

}  // namespace tierfs

// Returns the Status from the enclosing function when `expr` (a Status) is an error.
#define TIERFS_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                   \
    ::tierfs::Status _tierfs_status = (expr);                                            \
    if (!_tierfs_status.isOk()) return ::tierfs::ErrorReturn{std::move(_tierfs_status)}; \
  } while (0)

// Evaluates `expr` (a Result<T>); on error returns it from the enclosing function, else moves the
// value into `lhs`. Usage: TIERFS_ASSIGN_OR_RETURN(auto data, readAll(path));
#define TIERFS_ASSIGN_OR_RETURN(lhs, expr) \
  TIERFS_ASSIGN_OR_RETURN_IMPL(TIERFS_CONCAT(_tierfs_result_, __LINE__), lhs, expr)
#define TIERFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)              \
  auto tmp = (expr);                                              \
  if (!tmp) return ::tierfs::ErrorReturn{std::move(tmp).error()}; \
  lhs = std::move(*tmp)
#define TIERFS_CONCAT(a, b) TIERFS_CONCAT_IMPL(a, b)
#define TIERFS_CONCAT_IMPL(a, b) a##b
