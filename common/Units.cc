#include "common/Units.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <iterator>
#include <optional>

namespace tierfs {
namespace {

struct NumberAndUnit {
  double value;
  std::string_view unit;
};

// A finite, non-negative number and the suffix after it; nullopt when `text` starts otherwise
// (from_chars would also accept "nan" and "inf").
std::optional<NumberAndUnit> splitNumber(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return std::nullopt;
  return NumberAndUnit{value, std::string_view(end, text.data() + text.size() - end)};
}

}  // namespace

Result<Duration> parseDuration(std::string_view text) {
  auto number = splitNumber(text);
  if (!number) {
    return failure(Status::invalidArgument(
        fmt::format("'{}' is not a duration (examples: 30s, 500ms, 2m)", text)));
  }
  auto [value, unit] = *number;
  double seconds;
  if (unit.empty() || unit == "s") {
    seconds = value;
  } else if (unit == "ms") {
    seconds = value / 1000;
  } else if (unit == "m" || unit == "min") {
    seconds = value * 60;
  } else if (unit == "h") {
    seconds = value * 3600;
  } else {
    return failure(Status::invalidArgument(
        fmt::format("'{}': unknown duration unit '{}' (use ms, s, m or h)", text, unit)));
  }
  // Beyond what a Duration holds (~292 years of nanoseconds) the conversion is undefined.
  if (seconds >= std::chrono::duration<double>(Duration::max()).count()) {
    return failure(Status::invalidArgument(fmt::format("'{}' is too long a duration", text)));
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

Result<std::uint64_t> parseSize(std::string_view text) {
  auto number = splitNumber(text);
  if (!number) {
    return failure(Status::invalidArgument(
        fmt::format("'{}' is not a size (examples: 4M, 128KiB, 1.5G)", text)));
  }
  double value = number->value;
  std::string unit(number->unit);
  if (unit.ends_with("iB")) unit.erase(unit.size() - 2);
  if (unit.ends_with("B") && unit.size() > 1) unit.pop_back();
  static constexpr std::string_view kUnits = "KMGTP";
  double multiplier = 1;
  if (unit.size() == 1 && kUnits.find(unit[0]) != std::string_view::npos) {
    for (char u : kUnits) {
      multiplier *= 1024;
      if (u == unit[0]) break;
    }
  } else if (!unit.empty() && unit != "B") {
    return failure(Status::invalidArgument(
        fmt::format("'{}': unknown size unit '{}' (use K, M, G, T or P)", text, unit)));
  }
  double bytes = value * multiplier;
  if (bytes >= 18e18) {  // why: beyond what a uint64_t of bytes holds (1.8e19), with margin
    return failure(Status::invalidArgument(fmt::format("'{}' is too large", text)));
  }
  return static_cast<std::uint64_t>(bytes);
}

std::string sizeForConfig(std::uint64_t bytes) {
  static constexpr char kUnits[] = "PTGMK";
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t unit = std::uint64_t{1} << (10 * (5 - i));
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, kUnits[i]);
  }
  return fmt::format("{}", bytes);
}

std::string durationForConfig(Duration d) {
  using namespace std::chrono;
  const auto ns = duration_cast<nanoseconds>(d).count();
  if (ns == 0) return "0s";
  if (ns % duration_cast<nanoseconds>(hours(1)).count() == 0)
    return fmt::format("{}h", ns / 3600'000'000'000);
  if (ns % duration_cast<nanoseconds>(minutes(1)).count() == 0)
    return fmt::format("{}m", ns / 60'000'000'000);
  if (ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
  if (ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
  return fmt::format("{}s", static_cast<double>(ns) / 1e9);  // finer than parseDuration's ms
}

std::string formatSize(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  // 1023.95 and up would print as "1024.0": show it in the next unit instead.
  while (value >= 1023.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace tierfs
