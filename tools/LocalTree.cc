// A local directory as the source of tierfs import and the destination of tierfs export.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "common/FileUtil.h"
#include "tools/TreeCopy.h"

namespace tierfs::tools::copy {
namespace {

constexpr std::string_view kUserPrefix = "user.";

Status sysError(const char* what, const std::string& path, int err = errno) {
  return Status::fromErrno(err, fmt::format("{} '{}'", what, path));
}

Status existsError(const std::string& path) {
  return Status::alreadyExists(fmt::format("'{}' exists (--overwrite replaces it)", path));
}

Kind kindOf(mode_t mode) {
  if (S_ISREG(mode)) return Kind::kFile;
  if (S_ISDIR(mode)) return Kind::kDir;
  if (S_ISLNK(mode)) return Kind::kSymlink;
  return Kind::kOther;
}

// The user.* attributes of a file or directory (never a symlink's: Linux allows none there).
Result<Xattrs> readXattrs(const std::string& path) {
  Xattrs out;
  std::string names;
  for (;;) {
    ssize_t n = ::llistxattr(path.c_str(), nullptr, 0);
    if (n < 0 && (errno == ENOTSUP || errno == ENOSYS)) return out;
    if (n < 0) return failure(sysError("listing the xattrs of", path));
    if (n == 0) return out;
    names.resize(static_cast<std::size_t>(n));
    n = ::llistxattr(path.c_str(), names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<std::size_t>(n));
      break;
    }
    if (errno != ERANGE) return failure(sysError("listing the xattrs of", path));
  }
  for (std::size_t at = 0; at < names.size();) {
    std::string name = names.c_str() + at;
    at += name.size() + 1;
    if (!std::string_view(name).starts_with(kUserPrefix)) continue;
    std::string value(64 << 10, '\0');  // XATTR_SIZE_MAX
    ssize_t n = ::lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (n < 0 && errno == ENODATA) continue;  // removed meanwhile
    if (n < 0) return failure(sysError(("reading xattr " + name + " of").c_str(), path));
    value.resize(static_cast<std::size_t>(n));
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

// The attributes of the entry at `path` (not following a symlink).
Result<Attrs> readAttrs(const std::string& path, const struct stat& st) {
  Attrs a;
  a.kind = kindOf(st.st_mode);
  a.mode = st.st_mode & 07777;
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.size = static_cast<std::uint64_t>(st.st_size);
  a.atime = st.st_atim;
  a.mtime = st.st_mtim;
  if (a.kind == Kind::kSymlink) {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return failure(sysError("reading the symlink", path));
    if (static_cast<std::size_t>(n) == target.size()) {
      return failure(Status::ioError(fmt::format("symlink '{}' changed while read", path)));
    }
    target.resize(static_cast<std::size_t>(n));
    a.symlinkTarget = std::move(target);
  } else if (a.kind != Kind::kOther) {
    TIERFS_ASSIGN_OR_RETURN(a.xattrs, readXattrs(path));
  }
  return a;
}

class LocalReader final : public FileReader {
 public:
  LocalReader(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Status read(std::uint64_t offset, std::size_t max, std::string& out) override {
    out.resize(max);
    ssize_t n;
    do {
      n = ::pread(fd_.get(), out.data(), max, static_cast<off_t>(offset));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return sysError("reading", path_);
    out.resize(static_cast<std::size_t>(n));
    return Status::ok();
  }

 private:
  UniqueFd fd_;
  std::string path_;
};

class LocalSource final : public Source {
 public:
  explicit LocalSource(std::string root) : root_(std::move(root)) {}

  // The root is followed when it is a symlink (the directory it names is what is meant).
  Result<Entry> root() override {
    struct stat st {};
    if (::stat(root_.c_str(), &st) != 0) return failure(sysError("reading", root_));
    Entry e;
    std::string_view trimmed = root_;
    while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
    e.name = std::string(trimmed.substr(trimmed.rfind('/') + 1));
    TIERFS_ASSIGN_OR_RETURN(e.attrs, readAttrs(root_, st));
    return e;
  }

  Result<Listing> list(const Entry&, const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (!dir) return failure(sysError("listing", path));
    Listing out;
    int err = 0;
    for (;;) {
      errno = 0;
      const dirent* d = ::readdir(dir);
      if (!d) {
        err = errno;
        break;
      }
      std::string name = d->d_name;
      if (name == "." || name == "..") continue;
      std::string full = joinPath(path, name);
      struct stat st {};
      if (::fstatat(::dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) out.problems.push_back(sysError("reading", full));  // else: gone
        continue;
      }
      auto attrs = readAttrs(full, st);
      if (!attrs) {
        out.problems.push_back(attrs.error());
        continue;
      }
      out.entries.push_back(Entry{std::move(name), 0, std::move(*attrs)});
    }
    ::closedir(dir);
    if (err != 0) return failure(sysError("listing", path, err));
    return out;
  }

  Result<std::unique_ptr<FileReader>> open(std::uint64_t, const Entry&,
                                           const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) return failure(sysError("opening", path));
    (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::make_unique<LocalReader>(std::move(fd), path);
  }

 private:
  const std::string root_;
};

// Sets a written entry's xattrs, owner (as root), mode and times: in this order, since chown
// clears the set-ID bits and every change but the times moves the ctime only.
Status applyAttrs(int fd, const std::string& path, const Attrs& a, bool owner) {
  for (const auto& [name, value] : a.xattrs) {
    if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) != 0) {
      return sysError(("setting xattr " + name + " on").c_str(), path);
    }
  }
  if (owner && ::fchown(fd, a.uid, a.gid) != 0) return sysError("changing the owner of", path);
  if (::fchmod(fd, a.mode) != 0) return sysError("changing the mode of", path);
  const timespec times[2] = {a.atime, a.mtime};
  if (::futimens(fd, times) != 0) return sysError("setting the times of", path);
  return Status::ok();
}

class LocalSink final : public FileSink {
 public:
  LocalSink(UniqueFd fd, std::string path, bool owner)
      : fd_(std::move(fd)), path_(std::move(path)), owner_(owner) {}
  ~LocalSink() override {
    if (fd_.valid()) {  // not finished: leave nothing half-written
      fd_.reset();
      (void)::unlink(path_.c_str());
    }
  }

  Status write(std::uint64_t offset, std::string_view data) override {
    while (!data.empty()) {
      ssize_t n = ::pwrite(fd_.get(), data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return sysError("writing", path_);
      data.remove_prefix(static_cast<std::size_t>(n));
      offset += static_cast<std::uint64_t>(n);
    }
    return Status::ok();
  }

  Status finish(const Attrs& attrs) override {
    TIERFS_RETURN_IF_ERROR(applyAttrs(fd_.get(), path_, attrs, owner_));
    if (::close(fd_.release()) != 0) {
      Status s = sysError("closing", path_);
      (void)::unlink(path_.c_str());
      return s;
    }
    return Status::ok();
  }

 private:
  UniqueFd fd_;
  std::string path_;
  bool owner_;
};

class LocalDestination final : public Destination {
 public:
  LocalDestination(std::string root, bool overwrite)
      : root_(std::move(root)), overwrite_(overwrite), owner_(geteuid() == 0) {}

  // An existing directory is used even through a symlink (the directory it names is meant).
  Result<MadeDir> rootDir(const Attrs& attrs) override {
    struct stat st {};
    if (::stat(root_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return existingDir(root_, st);
    TIERFS_RETURN_IF_ERROR(makeParents(root_));
    return makeDir(0, "", root_, attrs);
  }

  Result<Spot> rootSpot(const std::string& name) override {
    struct stat st {};
    if (::stat(root_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Spot{0, name, joinPath(root_, name)};
    }
    TIERFS_RETURN_IF_ERROR(makeParents(root_));
    return Spot{0, "", root_};
  }

  // Made 0700 so that it can be filled whatever its mode; finishDir sets the mode.
  Result<MadeDir> makeDir(std::uint64_t, const std::string&, const std::string& path,
                          const Attrs&) override {
    if (::mkdir(path.c_str(), 0700) == 0) return MadeDir{0, true};
    if (errno != EEXIST) return failure(sysError("creating directory", path));
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return existingDir(path, st);
    TIERFS_RETURN_IF_ERROR(removeExisting(path, true));
    if (::mkdir(path.c_str(), 0700) != 0) return failure(sysError("creating directory", path));
    return MadeDir{0, true};
  }

  Result<std::unique_ptr<FileSink>> createFile(std::uint64_t, const std::string&,
                                               const std::string& path, const Attrs&) override {
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
    UniqueFd fd(::open(path.c_str(), flags, 0600));
    if (!fd.valid() && errno == EEXIST) {
      TIERFS_RETURN_IF_ERROR(removeExisting(path, false));
      fd = UniqueFd(::open(path.c_str(), flags, 0600));
    }
    if (!fd.valid()) return failure(sysError("creating", path));
    return std::make_unique<LocalSink>(std::move(fd), path, owner_);
  }

  Status makeSymlink(std::uint64_t, const std::string&, const std::string& path,
                     const Attrs& a) override {
    if (::symlink(a.symlinkTarget.c_str(), path.c_str()) != 0) {
      if (errno != EEXIST) return sysError("creating symlink", path);
      TIERFS_RETURN_IF_ERROR(removeExisting(path, false));
      if (::symlink(a.symlinkTarget.c_str(), path.c_str()) != 0) {
        return sysError("creating symlink", path);
      }
    }
    if (owner_ && ::lchown(path.c_str(), a.uid, a.gid) != 0) {
      return sysError("changing the owner of", path);
    }
    const timespec times[2] = {a.atime, a.mtime};
    if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
      return sysError("setting the times of", path);
    }
    return Status::ok();
  }

  Status finishDir(std::uint64_t, const std::string& path, const Attrs& attrs) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return sysError("opening directory", path);
    return applyAttrs(fd.get(), path, attrs, owner_);
  }

 private:
  // Makes the missing directories above `path`.
  static Status makeParents(const std::string& path) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) return Status::ok();
    return createDirectories(parent);
  }

  // A directory that exists is merged with the copy. When overwriting, it is made writable for
  // the owner, so that its files can be replaced; finishDir then sets its mode.
  Result<MadeDir> existingDir(const std::string& path, const struct stat& st) const {
    if (overwrite_ && (st.st_mode & 0700) != 0700 &&
        ::chmod(path.c_str(), (st.st_mode & 07777) | 0700) != 0) {
      return failure(sysError("changing the mode of", path));
    }
    return MadeDir{0, false};
  }

  // Removes the file or symlink at `path` when overwriting (never a directory).
  Status removeExisting(const std::string& path, bool forDir) const {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return sysError("reading", path);
    if (S_ISDIR(st.st_mode)) {
      return Status::posix(EISDIR, fmt::format("'{}' exists and is a directory", path));
    }
    if (!overwrite_) {
      if (forDir) {
        return Status::posix(
            ENOTDIR,
            fmt::format("'{}' exists and is not a directory (--overwrite replaces it)", path));
      }
      return existsError(path);
    }
    if (::unlink(path.c_str()) != 0) return sysError("removing", path);
    return Status::ok();
  }

  const std::string root_;
  const bool overwrite_;
  const bool owner_;  // root: owners are copied
};

}  // namespace

std::unique_ptr<Source> makeLocalSource(std::string path) {
  return std::make_unique<LocalSource>(std::move(path));
}

std::unique_ptr<Destination> makeLocalDestination(std::string path, bool overwrite) {
  return std::make_unique<LocalDestination>(std::move(path), overwrite);
}

}  // namespace tierfs::tools::copy
