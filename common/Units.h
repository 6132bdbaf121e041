#pragma once

#include <cstdint>
#include <string_view>

#include "common/Deadline.h"
#include "common/Result.h"

namespace tierfs {

// "30s", "500ms", "2m", "1h" or a bare number of seconds ("30", "0.5").
Result<Duration> parseDuration(std::string_view text);

// "4M", "128KiB", "1.5G", "512" (bytes): binary units, K = 1024.
Result<std::uint64_t> parseSize(std::string_view text);

}  // namespace tierfs
