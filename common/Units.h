#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/Deadline.h"
#include "common/Result.h"

namespace tierfs {

// "30s", "500ms", "2m", "1h" or a bare number of seconds ("30", "0.5").
Result<Duration> parseDuration(std::string_view text);

// "4M", "128KiB", "1.5G", "512" (bytes): binary units, K = 1024.
Result<std::uint64_t> parseSize(std::string_view text);

// For config files: exact, in the largest unit that divides the value ("16M", "1536K", "0").
std::string sizeForConfig(std::uint64_t bytes);
// For config files: exact, in the largest unit that divides the value ("1h", "90s", "250ms").
std::string durationForConfig(Duration d);

// For people: "512 B", "1.5 KiB", "16.0 GiB" (binary units, one decimal).
std::string formatSize(std::uint64_t bytes);

}  // namespace tierfs
