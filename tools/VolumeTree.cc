// A path in a tierfs volume as the source of tierfs export (the destination side of import is in
// VolumeSink.cc), and what both sides share.
#include "tools/VolumeTree.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tierfs::tools::copy {

using fs::Ino;
using fs::Inode;

Status fsError(const Status& s, const char* what, const std::string& path) {
  const int err = s.toErrno();
  return Status::posix(
      err, fmt::format("{} '{}': {} ({})", what, path, std::strerror(err), s.toString()));
}

timespec toTimespec(const fs::Timestamp& t) {
  return {static_cast<time_t>(t.sec), static_cast<long>(t.nsec)};
}

fs::Timestamp toTimestamp(const timespec& t) {
  return {t.tv_sec, static_cast<std::uint32_t>(t.tv_nsec)};
}

Attrs attrsOf(const Inode& i) {
  Attrs a;
  a.kind = i.isDir() ? Kind::kDir : i.isSymlink() ? Kind::kSymlink : Kind::kFile;
  a.mode = i.mode;
  a.uid = i.uid;
  a.gid = i.gid;
  a.size = i.size;
  a.atime = toTimespec(i.atime);
  a.mtime = toTimespec(i.mtime);
  a.symlinkTarget = i.symlinkTarget;
  a.xattrs.assign(i.xattrs.begin(), i.xattrs.end());  // only user.* are stored
  return a;
}

Result<std::vector<std::string>> splitVolumePath(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t end = std::min(path.find('/', at), path.size());
    std::string part = path.substr(at, end - at);
    at = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return failure(Status::invalidArgument(fmt::format("volume path '{}' has '..'", path)));
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

std::string displayPath(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

HeldInodes::~HeldInodes() {
  for (Ino ino : held_) fs_.forget(ino, 1);
}

void HeldInodes::hold(Ino ino) {
  std::lock_guard lock(mu_);
  held_.push_back(ino);
}

Result<Inode> walk(fs::Filesystem& fs, HeldInodes& held, const std::vector<std::string>& parts) {
  TIERFS_ASSIGN_OR_RETURN(Inode at, fs.getattr(fs::kRootIno));
  std::vector<std::string> done;
  for (const auto& part : parts) {
    if (!at.isDir()) {
      return failure(Status::posix(
          ENOTDIR, fmt::format("'{}' in the volume is not a directory", displayPath(done))));
    }
    done.push_back(part);
    auto next = fs.lookup(at.ino, part);
    if (!next && next.error().toErrno() == ENOENT) {
      return failure(
          Status::notFound(fmt::format("'{}' does not exist in the volume", displayPath(parts))));
    }
    if (!next) return failure(fsError(next.error(), "looking up", displayPath(done)));
    held.hold(next->ino);
    at = *next;
  }
  return at;
}

namespace {

class VolumeReader final : public FileReader {
 public:
  VolumeReader(fs::Filesystem& fs, std::unique_ptr<fs::OpenFile> file, std::string path,
               bool forget)
      : fs_(fs),
        file_(std::move(file)),
        ino_(file_->node->ino),
        path_(std::move(path)),
        forget_(forget) {}
  ~VolumeReader() override {
    (void)fs_.release(std::move(file_));
    if (forget_) fs_.forget(ino_, 1);
  }

  Status read(std::uint64_t offset, std::size_t max, std::string& out) override {
    auto r = fs_.read(*file_, offset, max);
    if (!r) return fsError(r.error(), "reading", path_);
    out = std::move(*r);
    return Status::ok();
  }

 private:
  fs::Filesystem& fs_;
  std::unique_ptr<fs::OpenFile> file_;
  const Ino ino_;
  const std::string path_;
  const bool forget_;
};

class VolumeSource final : public Source {
 public:
  VolumeSource(fs::Filesystem& fs, std::vector<std::string> parts)
      : fs_(fs), held_(fs), parts_(std::move(parts)) {}

  Result<Entry> root() override {
    TIERFS_ASSIGN_OR_RETURN(Inode inode, walk(fs_, held_, parts_));
    return Entry{parts_.empty() ? "" : parts_.back(), inode.ino, attrsOf(inode)};
  }

  // Files and symlinks come from the dentries of the listing; directories are looked up, which
  // gives their mtime (kept with their entries) and lets them be listed in turn.
  Result<Listing> list(const Entry& dir, const std::string& path) override {
    auto cursor = fs_.opendir(dir.ref);
    if (!cursor) return failure(fsError(cursor.error(), "listing", path));
    Listing out;
    Status s = fs_.readdir(**cursor, 0, [&](const fs::DirEntry& e) {
      if (e.dentry) {  // not "." or ".."
        out.entries.push_back(Entry{std::string(e.name), e.ino, attrsOf(e.dentry->inode)});
      }
      return true;
    });
    if (!s.isOk()) return failure(fsError(s, "listing", path));
    for (auto it = out.entries.begin(); it != out.entries.end();) {
      if (it->attrs.kind != Kind::kDir) {
        ++it;
        continue;
      }
      auto found = fs_.lookup(dir.ref, it->name);
      if (found) {
        held_.hold(found->ino);
        it->ref = found->ino;
        it->attrs = attrsOf(*found);
        ++it;
        continue;
      }
      if (found.error().toErrno() != ENOENT) {  // else: removed meanwhile
        out.problems.push_back(fsError(found.error(), "looking up", joinPath(path, it->name)));
      }
      it = out.entries.erase(it);
    }
    return out;
  }

  Result<std::unique_ptr<FileReader>> open(std::uint64_t dirRef, const Entry& file,
                                           const std::string& path) override {
    Ino ino = file.ref;  // a lone file is held since root()
    if (dirRef != 0) {
      auto found = fs_.lookup(dirRef, file.name);
      if (!found) return failure(fsError(found.error(), "looking up", path));
      ino = found->ino;
      if (!found->isFile()) {
        fs_.forget(ino, 1);
        return failure(Status::posix(EISDIR, fmt::format("'{}' is no longer a file", path)));
      }
    }
    bool keepCache = false;
    auto handle = fs_.open(ino, O_RDONLY, &keepCache);
    if (!handle) {
      if (dirRef != 0) fs_.forget(ino, 1);
      return failure(fsError(handle.error(), "opening", path));
    }
    return std::make_unique<VolumeReader>(fs_, std::move(*handle), path, dirRef != 0);
  }

 private:
  fs::Filesystem& fs_;
  HeldInodes held_;
  const std::vector<std::string> parts_;
};

}  // namespace

std::unique_ptr<Source> makeVolumeSource(fs::Filesystem& filesystem, std::string path) {
  auto parts = splitVolumePath(path);
  return std::make_unique<VolumeSource>(filesystem, parts ? *parts : std::vector<std::string>{});
}

}  // namespace tierfs::tools::copy
