#pragma once

#include <string>

#include "common/Status.h"

namespace tierfs::tools {

// Makes `path` ready to be mounted on: a directory with no live mount on it. A FUSE mount there
// whose daemon is gone (after kill -9 its mount point answers "Transport endpoint is not
// connected") is lazily unmounted, and that is logged, so that a restarted daemon re-establishes
// its mount. Live mounts (FUSE or not) and non-FUSE mounts are never unmounted.
// Errors: InvalidArgument naming the path if it is not a directory or a live mount is on it;
// IoError if a dead mount could not be unmounted.
Status prepareMountPoint(const std::string& path);

}  // namespace tierfs::tools
