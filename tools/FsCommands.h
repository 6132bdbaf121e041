#pragma once

#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs mkfs` and `tierfs mount`. The chosen command's exit status goes to `exitCode`.
void addFsCommands(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
