#pragma once

#include <time.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/Result.h"

// Copying a tree between two places that are not both local directories: a local directory and
// a path in a tierfs volume (tierfs import, tierfs export). The copy engine (TreeCopy.cc) walks a
// Source and recreates what it finds in a Destination with a pool of workers; the two sides are
// LocalTree.cc and VolumeTree.cc.

namespace tierfs::fs {
class Filesystem;
}

namespace tierfs::tools::copy {

enum class Kind : std::uint8_t { kFile, kDir, kSymlink, kOther };

using Xattrs = std::vector<std::pair<std::string, std::string>>;

// What is copied of an entry besides a file's bytes.
struct Attrs {
  Kind kind = Kind::kOther;
  std::uint32_t mode = 0;  // permission bits and suid/sgid/sticky (07777)
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;
  timespec atime{};
  timespec mtime{};
  std::string symlinkTarget;
  Xattrs xattrs;  // user.* only
};

// An entry of a tree. `ref` is the tree's handle of it: an inode number in a volume, unused (0)
// in a local tree, which goes by path.
struct Entry {
  std::string name;
  std::uint64_t ref = 0;
  Attrs attrs;
};

// A directory's entries; `problems` are the entries that could not be read (each names its path).
struct Listing {
  std::vector<Entry> entries;
  std::vector<Status> problems;
};

// A file's bytes, read in order.
class FileReader {
 public:
  virtual ~FileReader() = default;
  // Up to `max` bytes at `offset` into `out`; empty at the end of the file.
  virtual Status read(std::uint64_t offset, std::size_t max, std::string& out) = 0;
};

// A file being written. Destroyed without a successful finish(), it removes the file, so that a
// failed copy leaves nothing half-written behind.
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual Status write(std::uint64_t offset, std::string_view data) = 0;
  // Sets the xattrs, the owner (when preserved), the mode and the times, and closes the file.
  virtual Status finish(const Attrs& attrs) = 0;
};

// Where a copy reads from. Paths are the tree's display paths; every error names one.
// Thread-safe.
class Source {
 public:
  virtual ~Source() = default;
  // The entry the copy starts at: a directory, or a single file or symlink.
  virtual Result<Entry> root() = 0;
  virtual Result<Listing> list(const Entry& dir, const std::string& path) = 0;
  virtual Result<std::unique_ptr<FileReader>> open(std::uint64_t dirRef, const Entry& file,
                                                   const std::string& path) = 0;
};

// A directory made (or found) at the destination.
struct MadeDir {
  std::uint64_t ref = 0;
  bool created = false;  // false: it existed (its contents are merged with the copy)
};

// Where a single file or symlink goes.
struct Spot {
  std::uint64_t dirRef = 0;
  std::string name;
  std::string path;
};

// Where a copy writes to. An existing file or symlink is an error (AlreadyExists, naming it)
// unless the destination was made to overwrite, which replaces it; an existing directory is
// merged with the copy. Thread-safe.
class Destination {
 public:
  virtual ~Destination() = default;
  // The destination path as a directory for a directory root: made with `attrs` (and missing
  // parents with default attributes), or found.
  virtual Result<MadeDir> rootDir(const Attrs& attrs) = 0;
  // Where a lone file or symlink named `name` goes: into the destination path when it is a
  // directory, else at that path (missing parents are made).
  virtual Result<Spot> rootSpot(const std::string& name) = 0;
  virtual Result<MadeDir> makeDir(std::uint64_t dirRef, const std::string& name,
                                  const std::string& path, const Attrs& attrs) = 0;
  virtual Result<std::unique_ptr<FileSink>> createFile(std::uint64_t dirRef,
                                                       const std::string& name,
                                                       const std::string& path,
                                                       const Attrs& attrs) = 0;
  virtual Status makeSymlink(std::uint64_t dirRef, const std::string& name, const std::string& path,
                             const Attrs& attrs) = 0;
  // The attributes of a directory, set once everything in it is written (as tar does).
  virtual Status finishDir(std::uint64_t ref, const std::string& path, const Attrs& attrs) = 0;
  // Bytes the files written take in the store, when the destination knows (else 0).
  virtual std::uint64_t storedBytes() const { return 0; }
};

struct CopyOptions {
  std::string verb;  // "import" or "export": the prefix of every message
  unsigned jobs = 8;
  bool overwrite = false;  // also: attributes of directories that existed are set
  bool progress = false;   // draw a progress line on standard error
  std::size_t pieceSize = 1 << 20;
};

struct CopyTotals {
  std::uint64_t files = 0, dirs = 0, symlinks = 0, bytes = 0, storedBytes = 0;
  std::uint64_t skipped = 0;  // fifos, sockets, devices
  std::uint64_t failed = 0;   // entries not copied (reported with the reason)
  double seconds = 0;
};

// Copies the tree at `source` (shown as `srcPath`) to `destination` (shown as `dstPath`).
// Failures of single entries are reported on standard error and counted; the copy goes on.
// An error is returned only when nothing could start (the root).
Result<CopyTotals> copyTree(Source& source, Destination& destination, const std::string& srcPath,
                            const std::string& dstPath, const CopyOptions& options);

// "a/b" under "/x" is "/x/a/b"; under "/" it is "/a/b".
std::string joinPath(const std::string& dir, const std::string& name);

// A local directory tree at `path` (LocalTree.cc). The destination copies owners when run as
// root; otherwise what it writes belongs to the caller.
std::unique_ptr<Source> makeLocalSource(std::string path);
std::unique_ptr<Destination> makeLocalDestination(std::string path, bool overwrite);

// The names of a path in a volume ("/datasets/x": datasets, x); InvalidArgument for "..".
Result<std::vector<std::string>> splitVolumePath(const std::string& path);

// The tree at `path` in a volume (VolumeTree.cc, VolumeSink.cc): "/" or "/datasets/x". The
// destination writes what the caller's uid/gid own, or (as root) what the source's entries are
// owned by.
std::unique_ptr<Source> makeVolumeSource(fs::Filesystem& filesystem, std::string path);
std::unique_ptr<Destination> makeVolumeDestination(fs::Filesystem& filesystem, std::string path,
                                                   bool overwrite);

}  // namespace tierfs::tools::copy
