#include "tools/Logging.h"

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>

#include <cctype>
#include <filesystem>

#include "common/Result.h"

namespace tierfs::tools {
namespace {

Result<std::shared_ptr<spdlog::sinks::sink>> makeTargetSink(const std::string& target) {
  if (target == "stderr") return std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (target == "journal") return std::make_shared<spdlog::sinks::systemd_sink_mt>("tierfs");
  // spdlog would create missing directories: a mistyped path must be an error instead.
  const std::filesystem::path dir = std::filesystem::absolute(target).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return failure(Status::invalidArgument(
        fmt::format("log file {}: directory {} does not exist", target, dir.string())));
  }
  try {
    return std::make_shared<spdlog::sinks::basic_file_sink_mt>(target);
  } catch (const spdlog::spdlog_ex& e) {
    return failure(Status::invalidArgument(fmt::format("log file {}: {}", target, e.what())));
  }
}

}  // namespace

std::optional<spdlog::level::level_enum> logLevelNamed(std::string_view name) {
  static const std::map<std::string_view, spdlog::level::level_enum> kLevels = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
      {"off", spdlog::level::off}};
  auto it = kLevels.find(name);
  if (it == kLevels.end()) return std::nullopt;
  return it->second;
}

std::string logTargetProblem(const std::string& target) {
  if (target == "stderr" || target == "journal") return "";
  if (target.empty() || target.front() != '/') {
    return fmt::format("must be \"stderr\", \"journal\" or an absolute file path, not \"{}\"",
                       target);
  }
  const std::filesystem::path dir = std::filesystem::path(target).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return fmt::format("'{}': directory {} does not exist", target, dir.string());
  }
  return "";
}

Status setUpLogging(const std::string& level, const std::string& target, Duration repeatWindow) {
  auto lvl = logLevelNamed(level);
  if (!lvl) {
    return Status::invalidArgument(
        fmt::format("log level must be one of {}, not \"{}\"", kLogLevelNames, level));
  }
  TIERFS_ASSIGN_OR_RETURN(std::shared_ptr<spdlog::sinks::sink> sink, makeTargetSink(target));
  if (repeatWindow > Duration::zero()) {
    sink = std::make_shared<RepeatLimitSink>(std::move(sink), repeatWindow);
  }
  auto logger = std::make_shared<spdlog::logger>("tierfs", std::move(sink));
  logger->set_pattern(kLogPattern);
  logger->set_level(*lvl);
  // A log read after a crash is whole (a file or the journal); stderr is unbuffered anyway.
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
  return Status::ok();
}

std::string repeatKind(std::string_view text) {
  std::string kind;
  kind.reserve(text.size());
  for (char c : text) {
    const bool digit = std::isdigit(static_cast<unsigned char>(c));
    if (!digit) {
      kind += c;
    } else if (kind.empty() || kind.back() != '#') {
      kind += '#';
    }
  }
  return kind;
}

bool RepeatFilter::admit(const Held& message, TimePoint now) {
  auto it = windows_.find(message.kind);
  if (it == windows_.end()) {
    if (windows_.size() >= maxKinds_) return true;  // too many kinds to track: unfiltered
    windows_.emplace(message.kind,
                     Window{now, Held{message.kind, "", message.level, message.logger, 0}});
    nextEnd_ = std::min(nextEnd_, now + window_);
    return true;
  }
  Held& held = it->second.held;
  held.last = message.last;
  ++held.count;
  return false;
}

std::vector<RepeatFilter::Held> RepeatFilter::due(TimePoint now) {
  std::vector<Held> out;
  if (now < nextEnd_) return out;
  nextEnd_ = TimePoint::max();
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (now >= it->second.start + window_) {
      if (it->second.held.count > 0) out.push_back(std::move(it->second.held));
      it = windows_.erase(it);
    } else {
      nextEnd_ = std::min(nextEnd_, it->second.start + window_);
      ++it;
    }
  }
  return out;
}

std::vector<RepeatFilter::Held> RepeatFilter::drain() {
  std::vector<Held> out;
  for (auto& [kind, w] : windows_) {
    if (w.held.count > 0) out.push_back(std::move(w.held));
  }
  windows_.clear();
  nextEnd_ = TimePoint::max();
  return out;
}

RepeatLimitSink::~RepeatLimitSink() {
  writeSummaries(filter_.drain(), spdlog::log_clock::now());
  inner_->flush();
}

void RepeatLimitSink::sink_it_(const spdlog::details::log_msg& msg) {
  writeSummaries(filter_.due(msg.time), msg.time);
  if (msg.level < spdlog::level::warn) {
    inner_->log(msg);
    return;
  }
  const std::string_view text(msg.payload.data(), msg.payload.size());
  const std::string_view logger(msg.logger_name.data(), msg.logger_name.size());
  RepeatFilter::Held message{
      fmt::format("{}|{}|{}", static_cast<int>(msg.level), logger, repeatKind(text)),
      std::string(text), msg.level, std::string(logger), 1};
  if (filter_.admit(message, msg.time)) inner_->log(msg);
}

void RepeatLimitSink::flush_() {
  const auto now = spdlog::log_clock::now();
  writeSummaries(filter_.due(now), now);
  inner_->flush();
}

void RepeatLimitSink::writeSummaries(const std::vector<RepeatFilter::Held>& held,
                                     RepeatFilter::TimePoint now) {
  for (const RepeatFilter::Held& h : held) {
    const std::string text =
        fmt::format("last message repeated {} more time(s), the last: {}", h.count, h.last);
    inner_->log(spdlog::details::log_msg(now, spdlog::source_loc{}, h.logger, h.level, text));
  }
}

}  // namespace tierfs::tools
