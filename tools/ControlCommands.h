#pragma once

#include <CLI/CLI.hpp>

namespace tierfs::tools {

// `tierfs warm`, `tierfs status` and `tierfs evict`: requests to the daemon of the mount a path
// is in, over its control socket. The chosen command's exit status goes to `exitCode`.
void addControlCommands(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
