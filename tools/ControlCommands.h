#pragma once

#include <functional>
#include <string>

#include "common/control/Protocol.h"
#include "tools/CliApp.h"

namespace tierfs::tools {

// `tierfs warm`, `tierfs status` and `tierfs evict`: requests to the daemon of the mount a path
// is in, over its control socket. The chosen command's exit status goes to `exitCode`.
void addControlCommands(CLI::App& app, int& exitCode);

// Sends `request` to the daemon of the mount `path` is in (the only tierfs mount of this node
// when `path` is empty) and hands each reply to `onReply` until it returns false or the last;
// an ErrorReply ends the call with its status.
Status askDaemonOf(const std::string& path, const control::Request& request,
                   const std::function<bool(const control::Reply&)>& onReply);

}  // namespace tierfs::tools
