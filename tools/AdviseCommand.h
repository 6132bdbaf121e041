#pragma once

#include "cache/SizingAdvisor.h"
#include "common/control/Protocol.h"
#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs advise`: the sizing advisor's answer (docs/ADVISOR.md), from a running daemon or from
// a recorded trace (--trace). The command's exit status goes to `exitCode`.
void addAdviseCommand(CLI::App& app, int& exitCode);

// The advisor's curves at the sizes asked for (or, with none, at powers of two up to a bit
// beyond each curve's working set, and at `configuredBytes` when it is not 0). NotFound when a
// dataset is asked for that has no curve.
Result<control::AdviseReply> adviseReply(const cache::SizingAdvisor& advisor,
                                         const control::AdviseRequest& request,
                                         std::uint64_t configuredBytes);

}  // namespace tierfs::tools
