#pragma once

#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs import SRC_DIR VOLUME_PATH` and `tierfs export VOLUME_PATH DST_DIR`: trees copied
// between a local directory and a volume without a mount, through fs::Filesystem. The chosen
// command's exit status goes to `exitCode`.
void addImportExportCommands(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
