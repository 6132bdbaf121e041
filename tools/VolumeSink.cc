// A path in a tierfs volume as the destination of tierfs import.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <mutex>
#include <unordered_set>

#include "tools/VolumeTree.h"

namespace tierfs::tools::copy {
namespace {

using fs::Caller;
using fs::Ino;

// The attributes a copied file or directory gets: the source's mode and times, its owner when
// copying as root (as tar does), its user.* xattrs.
fs::NewFileAttrs newAttrs(const Attrs& a, bool owner) {
  fs::NewFileAttrs n;
  n.set.setMode = n.set.setAtime = n.set.setMtime = true;
  n.set.setUid = n.set.setGid = owner;
  n.set.mode = a.mode;
  n.set.uid = a.uid;
  n.set.gid = a.gid;
  n.set.atime = toTimestamp(a.atime);
  n.set.mtime = toTimestamp(a.mtime);
  n.xattrs = a.xattrs;
  return n;
}

// A directory's attributes, set once everything in it is copied: its xattrs, then its owner,
// mode and times (the last change to it).
Status setDirAttrs(fs::Filesystem& fs, Ino ino, const std::string& path,
                   const fs::NewFileAttrs& a) {
  for (const auto& [name, value] : a.xattrs) {
    if (Status s = fs.setxattr(ino, name, value, 0); !s.isOk()) {
      return fsError(s, ("setting xattr " + name + " on").c_str(), path);
    }
  }
  auto r = fs.setattr(ino, a.set);
  return r ? Status::ok() : fsError(r.error(), "setting the attributes of", path);
}

// A file staged in the volume (Filesystem::stageFile): its name appears, with all of its
// content and attributes, when the copy of it is finished, and never before.
class VolumeSink final : public FileSink {
 public:
  struct Where {
    Ino dir;
    std::string name;
    std::string path;
  };
  // `makeRoom` removes what holds the name (--overwrite) or says why it cannot.
  VolumeSink(fs::Filesystem& fs, Where where, std::unique_ptr<fs::NewFile> file, bool owner,
             std::function<Status()> makeRoom, std::atomic<std::uint64_t>& stored)
      : fs_(fs),
        where_(std::move(where)),
        file_(std::move(file)),
        owner_(owner),
        makeRoom_(std::move(makeRoom)),
        stored_(stored) {}

  ~VolumeSink() override {
    if (!file_->published) fs_.discard(*file_);  // leaves nothing behind
  }

  Status write(std::uint64_t offset, std::string_view data) override {
    Status s = fs_.writeNew(*file_, offset, data);
    return s.isOk() ? s : fsError(s, "writing", where_.path);
  }

  Status finish(const Attrs& attrs) override {
    const fs::NewFileAttrs set = newAttrs(attrs, owner_);
    auto made = fs_.publish(*file_, where_.dir, where_.name, set);
    if (!made && made.error().toErrno() == EEXIST) {  // made meanwhile, by someone else
      TIERFS_RETURN_IF_ERROR(makeRoom_());
      made = fs_.publish(*file_, where_.dir, where_.name, set);
    }
    if (!made) return fsError(made.error(), "creating", where_.path);
    fs_.forget(made->ino, 1);
    stored_ += file_->storedBytes;
    return Status::ok();
  }

 private:
  fs::Filesystem& fs_;
  const Where where_;
  std::unique_ptr<fs::NewFile> file_;
  const bool owner_;
  const std::function<Status()> makeRoom_;
  std::atomic<std::uint64_t>& stored_;
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
    std::lock_guard lock(madeMu_);
    made_.insert(made->ino);
    return MadeDir{made->ino, true};
  }

  Result<std::unique_ptr<FileSink>> createFile(std::uint64_t dir, const std::string& name,
                                               const std::string& path,
                                               const Attrs& attrs) override {
    // In a directory that was there before the copy, a name taken is found before the data is
    // copied (publish() would find it after); in one this copy made, nothing else is expected.
    if (!madeHere(dir)) {
      auto found = fs_.lookup(dir, name);
      if (found) fs_.forget(found->ino, 1);
      if (found) TIERFS_RETURN_IF_ERROR(removeExisting(dir, name, path, false));
      if (!found && found.error().toErrno() != ENOENT) {
        return failure(fsError(found.error(), "looking up", path));
      }
    }
    auto staged = fs_.stageFile(dir, attrs.mode, callerFor(attrs));
    if (!staged) return failure(fsError(staged.error(), "creating", path));
    auto makeRoom = [this, dir, name, path] { return removeExisting(dir, name, path, false); };
    return std::make_unique<VolumeSink>(fs_, VolumeSink::Where{dir, name, path}, std::move(*staged),
                                        owner_, makeRoom, stored_);
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
    return setDirAttrs(fs_, ref, path, newAttrs(attrs, owner_));
  }

  std::uint64_t storedBytes() const override { return stored_; }

 private:
  bool madeHere(Ino dir) {
    std::lock_guard lock(madeMu_);
    return made_.count(dir) > 0;
  }

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
  std::mutex madeMu_;             // guards made_
  std::unordered_set<Ino> made_;  // directories this copy made
};

}  // namespace

std::unique_ptr<Destination> makeVolumeDestination(fs::Filesystem& filesystem, std::string path,
                                                   bool overwrite) {
  auto parts = splitVolumePath(path);
  return std::make_unique<VolumeDestination>(
      filesystem, parts ? *parts : std::vector<std::string>{}, overwrite);
}

}  // namespace tierfs::tools::copy
