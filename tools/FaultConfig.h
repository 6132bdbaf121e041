#pragma once

#include <vector>

#include "backends/FaultyStore.h"
#include "tools/ConfigFile.h"

namespace tierfs::tools {

// The [[fault]] tables of a config file: faults injected into the daemon's back end (a
// FaultyStore around it), for tests and benchmarks (a modelled network latency, a chunk that
// cannot be read). Never meant for production; the daemon logs a warning when any is set.
//   [[fault]]
//   op = "read"              # any, read, stat, getxattr, omap_get, omap_list, mutate
//   object_prefix = "c.1f."  # objects whose name starts with this ("" = all)
//   action = "fail"          # fail (EIO), delay, hang, corrupt
//   delay = "2ms"            # for delay
//   probability = 1.0
//   count = -1               # calls hit before the rule retires (-1 = no limit)
Result<std::vector<backends::FaultRule>> readFaults(const ConfigSection& root);

}  // namespace tierfs::tools
