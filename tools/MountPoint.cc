#include "tools/MountPoint.h"

#include <fmt/format.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "fs/fuse/MountTable.h"

extern char** environ;

namespace tierfs::tools {
namespace {

// The path as mountinfo lists it: absolute, without symlinks. The last component is not resolved
// through stat when it is a dead mount (stat fails there); its parent is.
std::string canonicalPath(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "/mnt/x/" -> "/mnt/x"
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) != nullptr) return buf;
  if (::realpath(p.parent_path().c_str(), buf) != nullptr) {
    return (std::filesystem::path(buf) / p.filename()).string();
  }
  return p.string();
}

// Root detaches the mount itself; other users ask the setuid fusermount3, which lets a user
// unmount only the mounts that user made.
Status detachMount(const std::string& path) {
  if (geteuid() == 0) {
    if (::umount2(path.c_str(), MNT_DETACH) == 0) return Status::ok();
    return Status::ioError(fmt::format("umount2 {}: {}", path, std::strerror(errno)));
  }
  const char* argv[] = {"fusermount3", "-u", "-z", path.c_str(), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "fusermount3", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) {
    return Status::ioError(fmt::format("could not run fusermount3 -u -z {}", path));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::ok();
  return Status::ioError(fmt::format("fusermount3 -u -z {} failed", path));
}

// A FUSE mount whose daemon is gone: every request on it fails with ENOTCONN.
bool isDeadFuseMount(const fs::MountEntry& mount) {
  struct stat st {};
  return mount.isFuse() && ::stat(mount.mountPoint.c_str(), &st) != 0 && errno == ENOTCONN;
}

Status checkIsDirectory(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::ok();
  return Status::invalidArgument(fmt::format("mount point '{}' is not a directory", path));
}

}  // namespace

Status prepareMountPoint(const std::string& path) {
  const std::string canonical = canonicalPath(path);
  // Dead mounts may be stacked (a daemon killed several times by hand): one is removed a round.
  constexpr int kMaxDeadMounts = 16;
  for (int round = 0; round < kMaxDeadMounts; ++round) {
    TIERFS_ASSIGN_OR_RETURN(auto mounts, fs::readMountInfo());
    auto mount = fs::findMountAt(mounts, canonical);
    if (!mount) return checkIsDirectory(path);
    if (!isDeadFuseMount(*mount)) {
      return Status::invalidArgument(fmt::format(
          "mount point '{}' already has a live {} mount of '{}' on it: unmount it first", path,
          mount->fsType, mount->source));
    }
    TIERFS_RETURN_IF_ERROR(detachMount(canonical));
    spdlog::warn("mount point {}: lazily unmounted the dead {} mount of '{}' (its daemon is gone)",
                 canonical, mount->fsType, mount->source);
  }
  return Status::ioError(
      fmt::format("mount point '{}': more than {} dead mounts", path, kMaxDeadMounts));
}

}  // namespace tierfs::tools
