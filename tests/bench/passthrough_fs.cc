// A minimal read-only passthrough FUSE filesystem on libfuse 3's low-level API: the ceiling
// tierfs is measured against in tests/bench/cache_compare.py (issue 4). It serves SRC at
// MOUNTPOINT with the FUSE settings tierfs uses (keep_cache on open, 1 s entry and attribute
// timeouts, 1 MiB max_read, 4 MiB read-ahead, 64 background requests, readdirplus, replies from
// buffers rather than splices, a multi-threaded loop of up to 16 threads), so that the
// difference between the two is tierfs's own work.
//
// Usage: passthrough_fs SRC MOUNTPOINT [--read-ahead-kb N] [--threads N] [--no-open]
//                       [--timeout SECONDS] [-d] [-o OPTIONS]
// Stays in the foreground; ends on `fusermount3 -u MOUNTPOINT`, SIGINT, SIGTERM or SIGHUP.
//
// Each inode looked up keeps an O_PATH descriptor (as libfuse's passthrough_ll): 10,000 files
// take 10,000 descriptors, so the soft RLIMIT_NOFILE is raised to the hard one at start.
//
// FUSE_USE_VERSION 312 as tierfs: below 3.12, fuse_session_loop_mt() is the 3.2 variant, which
// reads a fuse_loop_cfg_create() config as the older struct (clone_fd on, max_idle_threads 0)
// and then starts and ends a thread for every request.
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr unsigned kMaxRead = 1 << 20;
double timeout = 1.0;  // entry and attribute timeouts (--timeout), 1 s as tierfs's defaults

struct Inode {
  int fd = -1;  // O_PATH
  dev_t dev = 0;
  ino_t ino = 0;
  std::uint64_t nlookup = 0;  // guarded by Fs::mu
};

struct Fs {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, Inode*> inodes;
  Inode root;
};

struct DirHandle {
  DIR* dp = nullptr;
  off_t offset = 0;
  dirent* entry = nullptr;
};

Fs& fsOf(fuse_req_t req) { return *static_cast<Fs*>(fuse_req_userdata(req)); }

Inode& inodeOf(fuse_req_t req, fuse_ino_t ino) {
  if (ino == FUSE_ROOT_ID) return fsOf(req).root;
  return *reinterpret_cast<Inode*>(static_cast<std::uintptr_t>(ino));
}

std::string procPath(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

int doLookup(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_entry_param* e) {
  *e = fuse_entry_param{};
  e->attr_timeout = timeout;
  e->entry_timeout = timeout;
  int fd = openat(inodeOf(req, parent).fd, name, O_PATH | O_NOFOLLOW);
  if (fd < 0) return errno;
  if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    int err = errno;
    close(fd);
    return err;
  }
  Fs& fs = fsOf(req);
  std::lock_guard lock(fs.mu);
  auto key = std::make_pair(e->attr.st_dev, e->attr.st_ino);
  auto it = fs.inodes.find(key);
  Inode* node = nullptr;
  if (it != fs.inodes.end()) {
    node = it->second;
    close(fd);
  } else {
    node = new Inode{fd, e->attr.st_dev, e->attr.st_ino, 0};
    fs.inodes.emplace(key, node);
  }
  ++node->nlookup;
  e->ino = reinterpret_cast<std::uintptr_t>(node);
  return 0;
}

void forgetOne(fuse_req_t req, fuse_ino_t ino, std::uint64_t n) {
  if (ino == FUSE_ROOT_ID) return;
  Fs& fs = fsOf(req);
  Inode* node = &inodeOf(req, ino);
  std::lock_guard lock(fs.mu);
  node->nlookup -= std::min(n, node->nlookup);
  if (node->nlookup == 0) {
    fs.inodes.erase({node->dev, node->ino});
    close(node->fd);
    delete node;
  }
}

void opInit(void*, fuse_conn_info* conn) {
  conn->max_read = kMaxRead;  // libfuse 3.14 fails the mount unless it equals -o max_read
  conn->max_write = std::min<unsigned>(conn->max_write, kMaxRead);
  conn->max_readahead = std::min<unsigned>(conn->max_readahead, kMaxRead);
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
}

void opLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  fuse_entry_param e;
  int err = doLookup(req, parent, name, &e);
  err ? (void)fuse_reply_err(req, err) : (void)fuse_reply_entry(req, &e);
}

void opForget(fuse_req_t req, fuse_ino_t ino, std::uint64_t nlookup) {
  forgetOne(req, ino, nlookup);
  fuse_reply_none(req);
}

void opForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) forgetOne(req, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void opGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  struct stat st {};
  if (fstatat(inodeOf(req, ino).fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return (void)fuse_reply_err(req, errno);
  }
  fuse_reply_attr(req, &st, timeout);
}

bool noOpen = false;  // --no-open: as a tierfs --read-only mount

void opOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // ENOSYS makes the kernel stop sending OPEN and RELEASE (no_open): reads then carry no handle.
  if (noOpen) return (void)fuse_reply_err(req, ENOSYS);
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return (void)fuse_reply_err(req, EROFS);
  int fd = ::open(procPath(inodeOf(req, ino).fd).c_str(), fi->flags & ~(O_NOFOLLOW | O_CREAT));
  if (fd < 0) return (void)fuse_reply_err(req, errno);
  fi->fh = static_cast<std::uint64_t>(fd);
  fi->keep_cache = 1;
  fi->noflush = 1;
  if (fuse_reply_open(req, fi) != 0) close(fd);
}

void opRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  thread_local std::vector<char> buf;
  if (buf.size() < size) buf.resize(size);
  // Without OPEN (--no-open) there is no handle: the file is opened for this read alone.
  int fd = fi != nullptr && fi->fh != 0 ? static_cast<int>(fi->fh) : -1;
  const bool own = fd < 0;
  if (own) fd = ::open(procPath(inodeOf(req, ino).fd).c_str(), O_RDONLY);
  if (fd < 0) return (void)fuse_reply_err(req, errno);
  size_t done = 0;
  int err = 0;
  while (done < size) {
    ssize_t n = pread(fd, buf.data() + done, size - done, off + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (own) close(fd);
  err != 0 ? (void)fuse_reply_err(req, err) : (void)fuse_reply_buf(req, buf.data(), done);
}

void opRelease(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  if (fi->fh != 0) close(static_cast<int>(fi->fh));
  fuse_reply_err(req, 0);
}

void opOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  int fd = openat(inodeOf(req, ino).fd, ".", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return (void)fuse_reply_err(req, errno);
  DIR* dp = fdopendir(fd);
  if (dp == nullptr) {
    int err = errno;
    close(fd);
    return (void)fuse_reply_err(req, err);
  }
  auto* d = new DirHandle{dp, 0, nullptr};
  fi->fh = reinterpret_cast<std::uintptr_t>(d);
  fi->keep_cache = 1;
  if (fuse_reply_open(req, fi) != 0) {
    closedir(dp);
    delete d;
  }
}

bool isDotOrDotDot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

void doReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi,
               bool plus) {
  auto* d = reinterpret_cast<DirHandle*>(static_cast<std::uintptr_t>(fi->fh));
  std::vector<char> buf(size);
  char* p = buf.data();
  size_t rem = size;
  if (offset != d->offset) {
    seekdir(d->dp, offset);
    d->entry = nullptr;
    d->offset = offset;
  }
  int err = 0;
  for (;;) {
    if (d->entry == nullptr) {
      errno = 0;
      d->entry = readdir(d->dp);
      if (d->entry == nullptr) {
        err = errno;
        break;
      }
    }
    const off_t next = d->entry->d_off;
    const char* name = d->entry->d_name;
    fuse_ino_t looked = 0;
    size_t entsize = 0;
    if (plus) {
      fuse_entry_param e{};
      if (isDotOrDotDot(name)) {
        e.attr.st_ino = d->entry->d_ino;
        e.attr.st_mode = static_cast<mode_t>(d->entry->d_type << 12);
      } else {
        err = doLookup(req, ino, name, &e);
        if (err != 0) break;
        looked = e.ino;
      }
      entsize = fuse_add_direntry_plus(req, p, rem, name, &e, next);
    } else {
      struct stat st {};
      st.st_ino = d->entry->d_ino;
      st.st_mode = static_cast<mode_t>(d->entry->d_type << 12);
      entsize = fuse_add_direntry(req, p, rem, name, &st, next);
    }
    if (entsize > rem) {  // does not fit: keep the entry for the next call
      if (looked != 0) forgetOne(req, looked, 1);
      break;
    }
    p += entsize;
    rem -= entsize;
    d->entry = nullptr;
    d->offset = next;
  }
  // An error after some entries: return those; the next call meets the error again.
  if (err != 0 && rem == size) return (void)fuse_reply_err(req, err);
  fuse_reply_buf(req, buf.data(), size - rem);
}

void opReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  doReaddir(req, ino, size, off, fi, false);
}

void opReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  doReaddir(req, ino, size, off, fi, true);
}

void opReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  auto* d = reinterpret_cast<DirHandle*>(static_cast<std::uintptr_t>(fi->fh));
  closedir(d->dp);
  delete d;
  fuse_reply_err(req, 0);
}

void opStatfs(fuse_req_t req, fuse_ino_t ino) {
  struct statvfs sv {};
  if (fstatvfs(inodeOf(req, ino).fd, &sv) != 0) return (void)fuse_reply_err(req, errno);
  fuse_reply_statfs(req, &sv);
}

// Kernel read-ahead above 128 KiB is set only through the FUSE bdi in sysfs (as tierfs does).
void raiseReadAhead(std::string mountpoint, unsigned kb) {
  struct stat st {};
  if (stat(mountpoint.c_str(), &st) != 0) return;
  std::ofstream out("/sys/class/bdi/" + std::to_string(major(st.st_dev)) + ":" +
                    std::to_string(minor(st.st_dev)) + "/read_ahead_kb");
  out << kb;
  if (!out) std::fprintf(stderr, "passthrough_fs: could not set read_ahead_kb\n");
}

int usage() {
  std::fprintf(stderr,
               "usage: passthrough_fs SRC MOUNTPOINT [--read-ahead-kb N] [--threads N] [--no-open] "
               "[--timeout SECONDS] [-d] [-o OPTIONS]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string src = argv[1], mountpoint = argv[2];
  unsigned readAheadKb = 4096, threads = 16;
  std::string options = "fsname=passthrough,subtype=passthrough,default_permissions,max_read=" +
                        std::to_string(kMaxRead);
  std::vector<std::string> extra;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--read-ahead-kb" && i + 1 < argc) {
      readAheadKb = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--no-open") {
      noOpen = true;
    } else if (a == "--timeout" && i + 1 < argc) {
      timeout = std::strtod(argv[++i], nullptr);
    } else if (a == "-o" && i + 1 < argc) {
      options += std::string(",") + argv[++i];
    } else if (a == "-d") {
      extra.push_back(a);
    } else {
      return usage();
    }
  }

  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }

  Fs fs;
  fs.root.fd = ::open(src.c_str(), O_PATH | O_DIRECTORY);
  if (fs.root.fd < 0) {
    std::perror(src.c_str());
    return 1;
  }
  fs.root.nlookup = 2;  // never forgotten

  fuse_lowlevel_ops ops{};
  ops.init = opInit;
  ops.lookup = opLookup;
  ops.forget = opForget;
  ops.forget_multi = opForgetMulti;
  ops.getattr = opGetattr;
  ops.open = opOpen;
  ops.read = opRead;
  ops.release = opRelease;
  ops.opendir = opOpendir;
  ops.readdir = opReaddir;
  ops.readdirplus = opReaddirplus;
  ops.releasedir = opReleasedir;
  ops.statfs = opStatfs;

  std::vector<const char*> fargv = {argv[0], "-o", options.c_str()};
  for (const auto& e : extra) fargv.push_back(e.c_str());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(fargv.size()), const_cast<char**>(fargv.data()));
  fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), &fs);
  fuse_opt_free_args(&args);
  if (se == nullptr) return 1;
  int rc = 1;
  if (fuse_set_signal_handlers(se) == 0) {
    if (fuse_session_mount(se, mountpoint.c_str()) == 0) {
      std::thread readAhead;
      if (readAheadKb > 0) readAhead = std::thread(raiseReadAhead, mountpoint, readAheadKb);
      fuse_loop_config* cfg = fuse_loop_cfg_create();
      fuse_loop_cfg_set_max_threads(cfg, threads);
      rc = fuse_session_loop_mt(se, cfg);
      fuse_loop_cfg_destroy(cfg);
      if (readAhead.joinable()) readAhead.join();
      fuse_session_unmount(se);
      if (rc == SIGINT || rc == SIGTERM || rc == SIGHUP) rc = 0;
    }
    fuse_remove_signal_handlers(se);
  }
  fuse_session_destroy(se);
  for (auto& [key, node] : fs.inodes) {
    close(node->fd);
    delete node;
  }
  close(fs.root.fd);
  return rc == 0 ? 0 : 1;
}
