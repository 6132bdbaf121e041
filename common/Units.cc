#include "common/Units.h"

#include <fmt/format.h>

#include <charconv>

namespace tierfs {

Result<Duration> parseDuration(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) {
    return failure(Status::invalidArgument(
        fmt::format("'{}' is not a duration (examples: 30s, 500ms, 2m)", text)));
  }
  std::string_view unit(end, text.data() + text.size() - end);
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
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

Result<std::uint64_t> parseSize(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || value < 0) {
    return failure(Status::invalidArgument(
        fmt::format("'{}' is not a size (examples: 4M, 128KiB, 1.5G)", text)));
  }
  std::string unit(end, text.data() + text.size() - end);
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
  if (bytes >= 18e18)
    return failure(Status::invalidArgument(fmt::format("'{}' is too large", text)));
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace tierfs
