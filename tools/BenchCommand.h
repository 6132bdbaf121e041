#pragma once

#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs bench store`: object write and random-read throughput of a back end at a chosen
// object size and concurrency, measured the way `rados bench` measures, so the two compare.
void addBenchCommand(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
