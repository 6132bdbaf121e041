#pragma once

#include <chrono>

namespace tierfs {

using Clock = std::chrono::steady_clock;
using Duration = Clock::duration;

// The moment by which an operation must have completed. A default-constructed Deadline is
// "unset": the callee substitutes its own default timeout, so every operation still ends.
class Deadline {
 public:
  Deadline() = default;
  static Deadline at(Clock::time_point when) { return Deadline(when); }
  static Deadline after(Duration d) { return Deadline(Clock::now() + d); }

  bool isSet() const { return when_ != Clock::time_point{}; }
  Clock::time_point when() const { return when_; }
  bool expired() const { return isSet() && Clock::now() >= when_; }
  Duration remaining() const {
    auto left = when_ - Clock::now();
    return left > Duration::zero() ? left : Duration::zero();
  }
  // This deadline, or `now + fallback` when unset.
  Deadline orAfter(Duration fallback) const { return isSet() ? *this : after(fallback); }

 private:
  explicit Deadline(Clock::time_point when) : when_(when) {}
  Clock::time_point when_{};
};

}  // namespace tierfs
