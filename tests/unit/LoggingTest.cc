// The daemon's log: level names, targets, and the hold-back of repeated warnings and errors.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "tools/Logging.h"

namespace tierfs::tools {
namespace {

using namespace std::chrono_literals;
using TimePoint = RepeatFilter::TimePoint;

RepeatFilter::Held message(const std::string& kind, const std::string& text = "") {
  return RepeatFilter::Held{kind, text, spdlog::level::err, "tierfs", 1};
}

TEST(LoggingTest, LevelNames) {
  EXPECT_EQ(logLevelNamed("debug"), spdlog::level::debug);
  EXPECT_EQ(logLevelNamed("error"), spdlog::level::err);
  EXPECT_EQ(logLevelNamed("off"), spdlog::level::off);
  EXPECT_FALSE(logLevelNamed("loud"));
  EXPECT_FALSE(logLevelNamed("err"));  // spdlog's short name is not one of ours
}

TEST(LoggingTest, TargetsAreStderrJournalOrAbsolutePathsInExistingDirectories) {
  EXPECT_EQ(logTargetProblem("stderr"), "");
  EXPECT_EQ(logTargetProblem("journal"), "");
  EXPECT_EQ(logTargetProblem("/tmp/tierfs.log"), "");
  EXPECT_NE(logTargetProblem("tierfs.log").find("absolute"), std::string::npos);
  EXPECT_NE(logTargetProblem("/no/such/dir/tierfs.log").find("does not exist"), std::string::npos);
}

TEST(LoggingTest, RepeatKindIgnoresNumbers) {
  EXPECT_EQ(repeatKind("read c.12.3: timed out after 30s"), "read c.#.#: timed out after #s");
  EXPECT_EQ(repeatKind("read c.99.1: timed out after 5s"),
            repeatKind("read c.1.2: timed out after 30s"));
  EXPECT_NE(repeatKind("read failed"), repeatKind("write failed"));
}

TEST(LoggingTest, RepeatsWithinTheWindowAreHeldAndSummarisedOnce) {
  RepeatFilter filter(10s);
  const TimePoint t0{};
  EXPECT_TRUE(filter.admit(message("a"), t0));
  EXPECT_FALSE(filter.admit(message("a", "a 2"), t0 + 1s));
  EXPECT_FALSE(filter.admit(message("a", "a 3"), t0 + 9s));
  EXPECT_TRUE(filter.admit(message("b"), t0 + 9s));  // another kind has its own window
  EXPECT_TRUE(filter.due(t0 + 9s).empty());          // the window has not ended
  auto due = filter.due(t0 + 10s);
  ASSERT_EQ(due.size(), 1u);  // "b" had no repeats: no summary
  EXPECT_EQ(due[0].kind, "a");
  EXPECT_EQ(due[0].count, 2u);
  EXPECT_EQ(due[0].last, "a 3");
  // A new window: the next one is written again.
  EXPECT_TRUE(filter.admit(message("a"), t0 + 11s));
  EXPECT_TRUE(filter.due(t0 + 30s).empty());  // nothing held back in that window
}

TEST(LoggingTest, DrainReturnsWhatIsHeldBackAtExit) {
  RepeatFilter filter(1h);
  const TimePoint t0{};
  EXPECT_TRUE(filter.admit(message("a"), t0));
  EXPECT_FALSE(filter.admit(message("a"), t0 + 1s));
  auto held = filter.drain();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].count, 1u);
  EXPECT_TRUE(filter.drain().empty());
}

TEST(LoggingTest, KindsBeyondTheLimitAreNotFiltered) {
  RepeatFilter filter(10s, 2);
  const TimePoint t0{};
  EXPECT_TRUE(filter.admit(message("a"), t0));
  EXPECT_TRUE(filter.admit(message("b"), t0));
  EXPECT_TRUE(filter.admit(message("c"), t0));
  EXPECT_TRUE(filter.admit(message("c"), t0));  // untracked: every one is written
  EXPECT_FALSE(filter.admit(message("a"), t0));
}

// The sink over a stream, with messages stamped at chosen times (the sink uses msg.time).
struct SinkFixture {
  std::ostringstream out;
  std::shared_ptr<RepeatLimitSink> sink;
  explicit SinkFixture(Duration window) {
    auto inner = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
    sink = std::make_shared<RepeatLimitSink>(inner, window);
    sink->set_pattern("%l %v");
  }
  void log(spdlog::level::level_enum level, const std::string& text, TimePoint at) {
    sink->log(spdlog::details::log_msg(at, spdlog::source_loc{}, "tierfs", level, text));
  }
};

TEST(LoggingTest, SinkHoldsBackRepeatedErrorsButNotInfo) {
  SinkFixture f(10s);
  const TimePoint t0 = spdlog::log_clock::now();
  for (int i = 0; i < 5; ++i) f.log(spdlog::level::err, fmt::format("read c.{} failed", i), t0);
  for (int i = 0; i < 3; ++i) f.log(spdlog::level::info, "mounted", t0);
  EXPECT_EQ(f.out.str(), "error read c.0 failed\ninfo mounted\ninfo mounted\ninfo mounted\n");
  f.out.str("");
  f.log(spdlog::level::err, "read c.7 failed", t0 + 11s);  // a new window: summary first
  EXPECT_EQ(f.out.str(),
            "error last message repeated 4 more time(s), the last: read c.4 failed\n"
            "error read c.7 failed\n");
}

TEST(LoggingTest, SinkWritesHeldBackRepeatsWhenDestroyed) {
  std::ostringstream out;
  {
    SinkFixture f(1h);
    const TimePoint t0 = spdlog::log_clock::now();
    f.log(spdlog::level::warn, "slow OSD", t0);
    f.log(spdlog::level::warn, "slow OSD", t0 + 1s);
    f.sink.reset();
    out << f.out.str();
  }
  EXPECT_EQ(out.str(),
            "warning slow OSD\nwarning last message repeated 1 more time(s), the last: "
            "slow OSD\n");
}

TEST(LoggingTest, SetUpLoggingRejectsBadLevelsAndUnopenableFiles) {
  auto logger = spdlog::default_logger();
  EXPECT_FALSE(setUpLogging("loud", "stderr", 10s).isOk());
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tierfs-logging-test-" + std::to_string(::getpid()));
  const std::string file = (dir / "missing" / "x.log").string();
  Status s = setUpLogging("info", file, 10s);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(file + ": directory"), std::string::npos) << s.toString();
  EXPECT_FALSE(std::filesystem::exists(dir)) << "a missing directory was created";
  std::filesystem::remove_all(dir);
  spdlog::set_default_logger(logger);
}

}  // namespace
}  // namespace tierfs::tools
