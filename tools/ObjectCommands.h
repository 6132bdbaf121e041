#pragma once

#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs object put|get|stat|rm|ls|df`: raw object access to a back end, for admins and tests.
// The chosen command's exit status is written to `exitCode` (0 ok, 1 failed).
void addObjectCommands(CLI::App& app, int& exitCode);

}  // namespace tierfs::tools
