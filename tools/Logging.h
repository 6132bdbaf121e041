#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/Deadline.h"
#include "common/Status.h"

// The daemon's log: a level, a target (standard error, the systemd journal or a file), a line
// format made to be grepped, and repeated warnings and errors held back to one line per window.
namespace tierfs::tools {

inline constexpr const char* kLogLevelNames = "trace, debug, info, warn, error, critical or off";
// Lines on standard error and in files: "2026-12-03T17:56:14.123+00:00 warning tierfs[4242]: ..."
// (time with zone, level, component, thread id, message). The journal keeps its own fields.
inline constexpr const char* kLogPattern = "%Y-%m-%dT%H:%M:%S.%e%z %l %n[%t]: %v";

std::optional<spdlog::level::level_enum> logLevelNamed(std::string_view name);

// What is wrong with a [logging] target, "" when nothing: "stderr", "journal", or an absolute
// path in a directory that exists.
std::string logTargetProblem(const std::string& target);

// Makes the default logger write to `target` ("stderr", "journal" or a file, appended to) at
// `level`, holding back repeats of a warning or error within `repeatWindow` (0: none held).
// Starts no thread, so a daemon may fork after it. InvalidArgument names a bad level or a file
// that cannot be opened.
Status setUpLogging(const std::string& level, const std::string& target, Duration repeatWindow);

// Messages alike but for their numbers ("read c.12: timed out after 30s") are one kind.
std::string repeatKind(std::string_view text);

// Decides which repeats of a message kind to write: the first in a window, then, once the window
// has passed, one summary of how many were held back. Not thread-safe: its sink locks it.
class RepeatFilter {
 public:
  using TimePoint = spdlog::log_clock::time_point;
  struct Held {
    std::string kind, last;  // `last`: the text of the last repeat held back
    spdlog::level::level_enum level = spdlog::level::warn;
    std::string logger;
    std::uint64_t count = 0;
  };

  // `maxKinds` bounds memory: kinds beyond it are written unfiltered.
  explicit RepeatFilter(Duration window, std::size_t maxKinds = 1024)
      : window_(window), maxKinds_(maxKinds) {}

  // True when the message is to be written; false when it repeats its kind within the window
  // (then it is counted). Call due(now) first, so that an ended window's summary comes first.
  bool admit(const Held& message, TimePoint now);
  // The kinds whose window has ended with repeats held back; every ended window is forgotten.
  std::vector<Held> due(TimePoint now);
  // Every kind with repeats held back, windows ended or not (at exit).
  std::vector<Held> drain();

 private:
  struct Window {
    TimePoint start;
    Held held;
  };
  Duration window_;
  std::size_t maxKinds_;
  std::map<std::string, Window> windows_;
  TimePoint nextEnd_ = TimePoint::max();  // the earliest end of a window in windows_
};

// A sink in front of another that passes trace, debug and info through and filters warnings and
// errors through a RepeatFilter (by level, logger and repeatKind), writing "last message
// repeated N more times" summaries before the next line after a window or at flush and exit.
class RepeatLimitSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  RepeatLimitSink(std::shared_ptr<spdlog::sinks::sink> inner, Duration window)
      : inner_(std::move(inner)), filter_(window) {}
  ~RepeatLimitSink() override;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;
  void set_pattern_(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter_(std::unique_ptr<spdlog::formatter> f) override {
    inner_->set_formatter(std::move(f));
  }

 private:
  void writeSummaries(const std::vector<RepeatFilter::Held>& held, RepeatFilter::TimePoint now);

  std::shared_ptr<spdlog::sinks::sink> inner_;
  RepeatFilter filter_;
};

}  // namespace tierfs::tools
