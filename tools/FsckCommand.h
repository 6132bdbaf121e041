#pragma once

#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs fsck`: checks a volume and, with --repair, fixes what it safely can (docs/FSCK.md).
// Exit status in `exitCode`: 0 when no problem remains, 1 when one does (or the check failed);
// a bad command line exits 2 from main.
void addFsckCommand(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
