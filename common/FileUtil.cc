#include "common/FileUtil.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

namespace tierfs {
namespace {

Status writeAll(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::fromErrno(errno, "writing " + path.string());
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::ok();
}

Status syncDirectoryOf(const std::filesystem::path& path) {
  auto dir = path.parent_path();
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Status::fromErrno(errno, "opening directory " + dir.string());
  if (::fsync(fd.get()) != 0) return Status::fromErrno(errno, "syncing directory " + dir.string());
  return Status::ok();
}

}  // namespace

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status createDirectories(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::fromErrno(ec.value(), "creating directory " + dir.string());
  return Status::ok();
}

Result<UniqueFd> openForRead(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return failure(Status::fromErrno(errno, "opening " + path.string()));
  return fd;
}

Result<std::string> preadExactly(int fd, std::uint64_t offset, std::uint64_t length) {
  std::string out(length, '\0');
  std::uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure(Status::fromErrno(errno, "reading data file"));
    if (n == 0) {
      return failure(Status::corruption(
          fmt::format("data file ends at {} bytes, expected {}", offset + done, offset + length)));
    }
    done += static_cast<std::uint64_t>(n);
  }
  return out;
}

Status writeNewFile(const std::filesystem::path& path, std::string_view data, bool durable) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::fromErrno(errno, "creating " + path.string());
  Status s = writeAll(fd.get(), data, path);
  if (s.isOk() && durable && ::fsync(fd.get()) != 0) {
    s = Status::fromErrno(errno, "syncing " + path.string());
  }
  if (s.isOk() && durable) s = syncDirectoryOf(path);
  if (!s.isOk()) ::unlink(path.c_str());
  return s;
}

Status writeFileDurably(const std::filesystem::path& path, std::string_view data) {
  auto tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  ::unlink(tmp.c_str());
  TIERFS_RETURN_IF_ERROR(writeNewFile(tmp, data, true));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::fromErrno(errno, "renaming " + tmp.string());
    ::unlink(tmp.c_str());
    return s;
  }
  return syncDirectoryOf(path);
}

Result<std::string> readSmallFile(const std::filesystem::path& path, std::size_t maxBytes) {
  TIERFS_ASSIGN_OR_RETURN(auto fd, openForRead(path));
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure(Status::fromErrno(errno, "reading " + path.string()));
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > maxBytes) {
      return failure(Status::invalidArgument(
          fmt::format("{} is larger than {} bytes", path.string(), maxBytes)));
    }
  }
}

}  // namespace tierfs
