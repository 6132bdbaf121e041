// A path in a tierfs volume as the destination of tierfs import.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>

#include "tools/VolumeTree.h"

namespace tierfs::tools::copy {
namespace {

using fs::Caller;
using fs::Ino;
using fs::Inode;

// Read-only, computed by the Filesystem: the bytes a file's chunks take in the store.
constexpr std::string_view kStoredSizeXattr = "user.tierfs.stored_size";

// The xattrs, then the owner (as root), mode and times: the last change to the inode.
Status applyAttrs(fs::Filesystem& fs, Ino ino, const std::string& path, const Attrs& a,
                  bool owner) {
  for (const auto& [name, value] : a.xattrs) {
    if (Status s = fs.setxattr(ino, name, value, 0); !s.isOk()) {
      return fsError(s, ("setting xattr " + name + " on").c_str(), path);
    }
  }
  fs::SetAttr c;
  c.setMode = c.setAtime = c.setMtime = true;
  c.setUid = c.setGid = owner;
  c.mode = a.mode;
  c.uid = a.uid;
  c.gid = a.gid;
  c.atime = toTimestamp(a.atime);
  c.mtime = toTimestamp(a.mtime);
  auto r = fs.setattr(ino, c);
  return r ? Status::ok() : fsError(r.error(), "setting the attributes of", path);
}

class VolumeSink final : public FileSink {
 public:
  struct Where {
    Ino dir;
    std::string name;
    std::string path;
  };
  VolumeSink(fs::Filesystem& fs, Where where, Ino ino, std::unique_ptr<fs::OpenFile> file,
             bool owner, std::atomic<std::uint64_t>& stored)
      : fs_(fs),
        where_(std::move(where)),
        ino_(ino),
        file_(std::move(file)),
        owner_(owner),
        stored_(stored) {}

  ~VolumeSink() override {
    if (file_) (void)fs_.release(std::move(file_));
    if (!finished_) (void)fs_.unlink(where_.dir, where_.name);  // leave nothing half-written
    fs_.forget(ino_, 1);
  }

  Status write(std::uint64_t offset, std::string_view data) override {
    auto n = fs_.write(*file_, offset, data);
    if (!n) return fsError(n.error(), "writing", where_.path);
    return Status::ok();
  }

  // setattr commits the data first, so the times set are the last change (as tar does).
  Status finish(const Attrs& attrs) override {
    TIERFS_RETURN_IF_ERROR(applyAttrs(fs_, ino_, where_.path, attrs, owner_));
    Status s = fs_.release(std::move(file_));
    if (!s.isOk()) return fsError(s, "closing", where_.path);
    finished_ = true;
    if (auto size = fs_.getxattr(ino_, kStoredSizeXattr)) {
      std::uint64_t n = 0;
      std::from_chars(size->data(), size->data() + size->size(), n);
      stored_ += n;
    }
    return Status::ok();
  }

 private:
  fs::Filesystem& fs_;
  const Where where_;
  const Ino ino_;
  std::unique_ptr<fs::OpenFile> file_;
  const bool owner_;
  std::atomic<std::uint64_t>& stored_;
  bool finished_ = false;
};

class VolumeDestination final : public Destination {
 public:
  VolumeDestination(fs::Filesystem& fs, std::vector<std::string> parts, bool overwrite)
      : fs_(fs),
        held_(fs),
        parts_(std::move(parts)),
        path_(displayPath(parts_)),
        overwrite_(overwrite),
        owner_(geteuid() == 0),
        me_{geteuid(), getegid()} {}

  Result<MadeDir> rootDir(const Attrs& attrs) override {
    if (parts_.empty()) return MadeDir{fs::kRootIno, false};
    TIERFS_ASSIGN_OR_RETURN(Ino parent, makeParents());
    return makeDir(parent, parts_.back(), path_, attrs);
  }

  Result<Spot> rootSpot(const std::string& name) override {
    if (parts_.empty()) return Spot{fs::kRootIno, name, joinPath(path_, name)};
    TIERFS_ASSIGN_OR_RETURN(Ino parent, makeParents());
    auto found = fs_.lookup(parent, parts_.back());
    if (found && found->isDir()) {
      held_.hold(found->ino);
      return Spot{found->ino, name, joinPath(path_, name)};
    }
    if (found) fs_.forget(found->ino, 1);
    if (!found && found.error().toErrno() != ENOENT) {
      return failure(fsError(found.error(), "looking up", path_));
    }
    return Spot{parent, parts_.back(), path_};
  }

  Result<MadeDir> makeDir(std::uint64_t dir, const std::string& name, const std::string& path,
                          const Attrs& attrs) override {
    auto made = fs_.mkdir(dir, name, attrs.mode, callerFor(attrs));
    if (!made && made.error().toErrno() == EEXIST) {
      auto found = fs_.lookup(dir, name);
      if (found && found->isDir()) {
        held_.hold(found->ino);
        return MadeDir{found->ino, false};
      }
      if (found) fs_.forget(found->ino, 1);
      TIERFS_RETURN_IF_ERROR(removeExisting(dir, name, path, true));
      made = fs_.mkdir(dir, name, attrs.mode, callerFor(attrs));
    }
    if (!made) return failure(fsError(made.error(), "creating directory", path));
    held_.hold(made->ino);
    return MadeDir{made->ino, true};
  }

  Result<std::unique_ptr<FileSink>> createFile(std::uint64_t dir, const std::string& name,
                                               const std::string& path,
                                               const Attrs& attrs) override {
    const int flags = O_WRONLY | O_CREAT | O_EXCL;
    auto made = fs_.create(dir, name, attrs.mode, flags, callerFor(attrs));
    if (!made && made.error().toErrno() == EEXIST) {
      TIERFS_RETURN_IF_ERROR(removeExisting(dir, name, path, false));
      made = fs_.create(dir, name, attrs.mode, flags, callerFor(attrs));
    }
    if (!made) return failure(fsError(made.error(), "creating", path));
    return std::make_unique<VolumeSink>(fs_, VolumeSink::Where{dir, name, path}, made->first.ino,
                                        std::move(made->second), owner_, stored_);
  }

  Status makeSymlink(std::uint64_t dir, const std::string& name, const std::string& path,
                     const Attrs& attrs) override {
    auto made = fs_.symlink(dir, name, attrs.symlinkTarget, callerFor(attrs));
    if (!made && made.error().toErrno() == EEXIST) {
      TIERFS_RETURN_IF_ERROR(removeExisting(dir, name, path, false));
      made = fs_.symlink(dir, name, attrs.symlinkTarget, callerFor(attrs));
    }
    if (!made) return fsError(made.error(), "creating symlink", path);
    fs::SetAttr c;
    c.setAtime = c.setMtime = true;
    c.atime = toTimestamp(attrs.atime);
    c.mtime = toTimestamp(attrs.mtime);
    auto set = fs_.setattr(made->ino, c);
    fs_.forget(made->ino, 1);
    return set ? Status::ok() : fsError(set.error(), "setting the times of", path);
  }

  Status finishDir(std::uint64_t ref, const std::string& path, const Attrs& attrs) override {
    return applyAttrs(fs_, ref, path, attrs, owner_);
  }

  std::uint64_t storedBytes() const override { return stored_; }

 private:
  // The owner of what is made: the source's as root (as tar does), else the caller's.
  Caller callerFor(const Attrs& a) const { return owner_ ? Caller{a.uid, a.gid} : me_; }

  // The directories above the destination path, made (0755, the caller's) when missing.
  Result<Ino> makeParents() {
    std::vector<std::string> above(parts_.begin(), parts_.end() - 1);
    Ino at = fs::kRootIno;
    for (std::size_t i = 0; i < above.size(); ++i) {
      const std::string path = displayPath({above.begin(), above.begin() + i + 1});
      auto next = fs_.mkdir(at, above[i], 0755, me_);
      if (!next && next.error().toErrno() == EEXIST) next = fs_.lookup(at, above[i]);
      if (!next) return failure(fsError(next.error(), "creating directory", path));
      held_.hold(next->ino);
      if (!next->isDir()) {
        return failure(Status::posix(ENOTDIR, fmt::format("'{}' is not a directory", path)));
      }
      at = next->ino;
    }
    return at;
  }

  // Removes the file or symlink `name` in `dir` when overwriting (never a directory).
  Status removeExisting(Ino dir, const std::string& name, const std::string& path, bool forDir) {
    auto found = fs_.lookup(dir, name);
    if (!found) return fsError(found.error(), "looking up", path);
    fs_.forget(found->ino, 1);
    if (found->isDir()) {
      return Status::posix(EISDIR,
                           fmt::format("'{}' exists in the volume and is a directory", path));
    }
    if (!overwrite_) {
      return Status::posix(EEXIST, fmt::format("'{}' exists in the volume{} (--overwrite "
                                               "replaces it)",
                                               path, forDir ? " and is not a directory" : ""));
    }
    Status s = fs_.unlink(dir, name);
    return s.isOk() ? s : fsError(s, "removing", path);
  }

  fs::Filesystem& fs_;
  HeldInodes held_;
  const std::vector<std::string> parts_;
  const std::string path_;
  const bool overwrite_;
  const bool owner_;  // root: owners are copied
  const Caller me_;
  std::atomic<std::uint64_t> stored_{0};
};

}  // namespace

std::unique_ptr<Destination> makeVolumeDestination(fs::Filesystem& filesystem, std::string path,
                                                   bool overwrite) {
  auto parts = splitVolumePath(path);
  return std::make_unique<VolumeDestination>(
      filesystem, parts ? *parts : std::vector<std::string>{}, overwrite);
}

}  // namespace tierfs::tools::copy
