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

namespace {

// The length of the valid UTF-8 sequence at the start of `s` (2 to 4), or 0 when there is none
// (a lone continuation byte, a truncated, over-long or surrogate sequence, beyond U+10FFFF).
std::size_t utf8Length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (c > 0xf4 || n == 0 || s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80) return 0;
  }
  if (c == 0xe0 && b(1) < 0xa0) return 0;   // over-long
  if (c == 0xed && b(1) >= 0xa0) return 0;  // UTF-16 surrogates
  if (c == 0xf0 && b(1) < 0x90) return 0;   // over-long
  if (c == 0xf4 && b(1) >= 0x90) return 0;  // beyond U+10FFFF
  return n;
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8Length(s.substr(i));
      if (n > 0) {
        out.append(s.substr(i, n));
        i += n;
        continue;
      }
    }
    ++i;
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace tierfs
