#pragma once

#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs config check [FILE]`: validates a config file without opening the back end or
// creating anything; exit 0 valid, 1 invalid (the error on stderr), 2 usage error or no
// readable file. `tierfs config show [FILE] [mount flags]`: the effective settings as TOML
// (defaults included, flags applied), which `config check` accepts.
void addConfigCommand(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
