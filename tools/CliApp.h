#pragma once

// The command headers name CLI::App through this declaration; only the files that define
// commands include <CLI/CLI.hpp>. CLI11 is header-only and builds its validators and option code
// in every file that includes it: 5-8 s of compiling a file at -O2, which a file that merely
// includes a command's header (ControlService.cc, the fuzz targets) need not pay.
namespace CLI {
class App;
}  // namespace CLI
