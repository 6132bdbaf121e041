#include "tools/ControlCommands.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "common/FileUtil.h"
#include "common/Units.h"
#include "common/control/Socket.h"
#include "tools/CopyProgress.h"

namespace tierfs::tools {
namespace {

namespace ctl = control;
constexpr const char* kSocketXattr = "user.tierfs.control_socket";

// An empty path names no file (realpath would call it "no such file"): a usage error, exit 2.
int checkNotEmpty(const char* command, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (p.empty()) {
      std::fprintf(stderr, "tierfs %s: an empty path names no file or directory\n", command);
      return 2;
    }
  }
  return 0;
}

// Why `path` could not be resolved, naming the part that is wrong.
Status unresolvable(const std::string& path, int err) {
  if (err == ENAMETOOLONG) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const std::size_t slash = rest.find('/');
      const std::string_view name = rest.substr(0, slash);
      if (name.size() > NAME_MAX) {
        return Status::posix(err, fmt::format("{}: the name '{}...' is {} bytes long, more than "
                                              "the {} a file name may have",
                                              path, name.substr(0, 16), name.size(), NAME_MAX));
      }
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    }
    return Status::posix(
        err, fmt::format("{}: the path is longer than the {} bytes a path may have", path,
                         PATH_MAX - 1));
  }
  return Status::fromErrno(err, path);
}

// A path inside a tierfs mount: the daemon's socket, the mount point, the path below it.
struct Target {
  std::string socket;
  std::string mountpoint;
  std::string relative;  // "" for the mount point itself
};

Result<Target> locate(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return failure(unresolvable(path, errno));
  struct stat st {};
  if (::stat(real, &st) != 0) return failure(Status::fromErrno(errno, path));
  // The mount point is the topmost directory on the same device.
  std::filesystem::path root(real);
  if (!S_ISDIR(st.st_mode)) root = root.parent_path();
  while (root.has_parent_path() && root != root.parent_path()) {
    struct stat up {};
    if (::stat(root.parent_path().c_str(), &up) != 0 || up.st_dev != st.st_dev) break;
    root = root.parent_path();
  }
  char socket[PATH_MAX];
  const ssize_t n = ::getxattr(root.c_str(), kSocketXattr, socket, sizeof socket - 1);
  if (n < 0) {
    // Relative, or through a symlink or "..": say where the path led.
    const std::string via = path == real ? "" : fmt::format(", it resolves to {}", real);
    return failure(Status::invalidArgument(
        fmt::format("{} is not in a tierfs mount{} ({} has no control socket: {})", path, via,
                    root.string(), std::strerror(errno))));
  }
  Target t{std::string(socket, static_cast<std::size_t>(n)), root.string(), ""};
  const auto rel = std::filesystem::path(real).lexically_relative(root);
  if (rel != ".") t.relative = rel.string();
  return t;
}

// The mount points of the tierfs mounts of this node (from /proc/self/mounts).
std::vector<std::string> tierfsMounts() {
  std::vector<std::string> out;
  std::ifstream mounts("/proc/self/mounts");
  std::string source, point, type, rest;
  while (mounts >> source >> point >> type && std::getline(mounts, rest)) {
    if (type == "fuse.tierfs") out.push_back(point);
  }
  return out;
}

// Sends one request to the daemon behind `t` and hands each reply to `onReply`; an ErrorReply
// ends the call with its status.
Status request(const Target& t, const ctl::Request& r,
               const std::function<bool(const ctl::Reply&)>& onReply) {
  TIERFS_ASSIGN_OR_RETURN(UniqueFd fd, ctl::connectTo(t.socket));
  Status error;
  TIERFS_RETURN_IF_ERROR(ctl::call(fd.get(), r, [&](const ctl::Reply& reply) {
    if (const auto* e = std::get_if<ctl::ErrorReply>(&reply)) {
      error = e->error;
      return false;
    }
    return onReply(reply);
  }));
  return error;
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "100.0%" : fmt::format("{:.1f}%", 100.0 * part / whole);
}

// A ratio of counts: "n/a" when nothing was counted (no reads yet).
std::string ratio(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "n/a" : percent(part, whole);
}

std::string countsJson(const ctl::TreeCounts& c) {
  return fmt::format(R"({{"files":{},"bytes":{},"cached_files":{},"cached_bytes":{}}})", c.files,
                     c.bytes, c.cachedFiles, c.cachedBytes);
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// ---------------------------------------------------------------- status

void printStatus(const ctl::StatusReply& r, const std::string& path, bool json) {
  const ctl::DaemonStatus& d = r.daemon;
  if (json) {
    std::string tree =
        r.tree ? fmt::format(R"(,"path":{},"tree":{})", jsonString(path), countsJson(*r.tree)) : "";
    fmt::print(R"({{"mountpoint":{},"backend":{},"capacity_bytes":{},"used_bytes":{},"entries":{},)"
               R"("hits":{},"misses":{},"bytes_from_cache":{},"bytes_from_backend":{},)"
               R"("evicted_regions":{},"corruptions":{},"warm_jobs":{},"prefetched":{},)"
               R"("prefetch_used":{}{}}})"
               "\n",
               jsonString(d.mountpoint), jsonString(d.backend), d.capacityBytes, d.usedBytes,
               d.entries, d.hits, d.misses, d.bytesFromCache, d.bytesFromBackend, d.evictedRegions,
               d.corruptions, d.warmJobs, d.prefetched, d.prefetchUsed, tree);
    return;
  }
  if (r.tree) {
    const ctl::TreeCounts& t = *r.tree;
    fmt::print("{}: {} of {} files cached ({}), {} of {} ({})\n", printable(path), t.cachedFiles,
               t.files, percent(t.cachedFiles, t.files), formatSize(t.cachedBytes),
               formatSize(t.bytes), percent(t.cachedBytes, t.bytes));
    return;
  }
  fmt::print("{} ({})\n", printable(d.mountpoint), d.backend);
  if (d.capacityBytes > 0) {
    fmt::print("  cache: {} of {} used ({}), {} free, {} chunks\n", formatSize(d.usedBytes),
               formatSize(d.capacityBytes), percent(d.usedBytes, d.capacityBytes),
               formatSize(d.capacityBytes - std::min(d.usedBytes, d.capacityBytes)), d.entries);
  } else {
    fmt::print("  cache: memory only (no cache device)\n");
  }
  fmt::print("  hit ratio: {} ({} hits, {} misses); {} from cache devices, {} from the back end\n",
             ratio(d.hits, d.hits + d.misses), d.hits, d.misses, formatSize(d.bytesFromCache),
             formatSize(d.bytesFromBackend));
  fmt::print("  prefetch accuracy: {} ({} of {} chunks fetched ahead were then read)\n",
             ratio(d.prefetchUsed, d.prefetched), d.prefetchUsed, d.prefetched);
  fmt::print("  evicted regions: {}, corrupt entries: {}, warm-ups running: {}\n", d.evictedRegions,
             d.corruptions, d.warmJobs);
}

int runStatus(const std::vector<std::string>& paths, bool json) {
  if (int usage = checkNotEmpty("status", paths)) return usage;
  std::vector<std::pair<Target, std::string>> targets;  // and the path as the user named it
  if (paths.empty()) {
    for (const std::string& m : tierfsMounts()) {
      auto t = locate(m);
      if (!t) return failCommand("status", t.error());
      targets.emplace_back(*t, "");
    }
    if (targets.empty())
      return failCommand("status", Status::notFound("no tierfs mount on this node"));
  }
  for (const std::string& p : paths) {
    auto t = locate(p);
    if (!t) return failCommand("status", t.error());
    targets.emplace_back(*t, p);
  }
  int code = 0;
  for (const auto& [t, named] : targets) {
    // The root itself is asked for as ".", so that "" still means the daemon alone.
    ctl::StatusRequest r{named.empty() ? "" : (t.relative.empty() ? "." : t.relative)};
    Status s = request(t, r, [&](const ctl::Reply& reply) {
      if (const auto* st = std::get_if<ctl::StatusReply>(&reply)) printStatus(*st, named, json);
      return false;
    });
    if (!s.isOk()) code = failCommand("status", s);
  }
  return code;
}

// ---------------------------------------------------------------- warm

// Ctrl-C (or SIGTERM) ends the command at once; the daemon sees the connection close and
// cancels the job. Installed even when the signal came in ignored (a background job of a
// script), so that interrupting a warm-up always stops it.
void onInterrupt(int) {
  static const char kMessage[] = "\ntierfs: interrupted: the daemon ends the job\n";
  (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(130);
}

void exitOnInterrupt() {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int runWarm(const std::vector<std::string>& paths, unsigned parallel, bool json) {
  if (int usage = checkNotEmpty("warm", paths)) return usage;
  // One request per mount (the paths of one mount together).
  std::map<std::string, std::pair<Target, std::vector<std::string>>> byMount;
  for (const std::string& p : paths) {
    auto t = locate(p);
    if (!t) return failCommand("warm", t.error());
    auto& slot = byMount[t->socket];
    slot.first = *t;
    slot.second.push_back(t->relative.empty() ? "." : t->relative);
  }
  exitOnInterrupt();
  const bool terminal = ::isatty(STDERR_FILENO) == 1 && !json;
  int code = 0;
  for (const auto& [socket, entry] : byMount) {
    const auto& [target, relative] = entry;
    copy::Progress progress("warm", terminal);
    progress.startCopy();
    std::uint64_t files = 0, bytes = 0;
    Clock::time_point nextLine = Clock::now();
    ctl::WarmProgress last;
    Status s = request(target, ctl::WarmRequest{relative, parallel}, [&](const ctl::Reply& reply) {
      const auto* p = std::get_if<ctl::WarmProgress>(&reply);
      if (p == nullptr) return false;
      last = *p;
      if (files == 0 && bytes == 0) progress.addTotals(p->total.files, p->total.bytes);
      for (; files < p->done.files; ++files) progress.fileDone();
      progress.addBytes(p->done.bytes - std::min(bytes, p->done.bytes));
      bytes = std::max(bytes, p->done.bytes);
      if (json) {
        fmt::print(R"({{"total":{},"done":{},"fetched_bytes":{},"finished":{}}})"
                   "\n",
                   countsJson(p->total), countsJson(p->done), p->fetchedBytes, p->finished);
        std::fflush(stdout);
      } else if (terminal) {
        progress.draw();
      } else if (Clock::now() >= nextLine || p->finished) {
        std::fprintf(stderr, "%s\n", progress.line().c_str());
        nextLine = Clock::now() + std::chrono::seconds(5);
      }
      return !p->finished;
    });
    progress.clear();
    if (!s.isOk()) {
      code = failCommand("warm", s);
      continue;
    }
    if (!last.finished) {
      code = failCommand("warm",
                         Status::unavailable("the daemon ended the warm-up without an answer"));
      continue;
    }
    if (!json) {
      fmt::print("warmed {}: {} of {} files cached, {} of {}, {} fetched from the back end\n",
                 printable(target.mountpoint), last.done.cachedFiles, last.total.files,
                 formatSize(last.done.cachedBytes), formatSize(last.total.bytes),
                 formatSize(last.fetchedBytes));
    }
    if (!last.failures.empty() || last.done.cachedFiles != last.total.files) {
      std::fprintf(stderr, "tierfs warm: %zu file(s) could not be cached:\n", last.failures.size());
      for (const auto& f : last.failures) {
        std::fprintf(stderr, "  %s/%s: %s\n", printable(target.mountpoint).c_str(),
                     printable(f.path).c_str(), printable(f.message).c_str());
      }
      code = 1;
    }
  }
  return code;
}

// ---------------------------------------------------------------- hint

// The paths of the order, one a line, from `file` ("-": standard input): absolute, or relative
// to `base`.
Result<std::vector<std::string>> readOrder(const std::string& file, const std::string& base) {
  std::ifstream in;
  if (file != "-") {
    in.open(file);
    if (!in) return failure(Status::fromErrno(errno, "reading the order from " + file));
  }
  std::istream& lines = file == "-" ? std::cin : in;
  std::vector<std::string> out;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    out.push_back(line.front() == '/' ? line : base + "/" + line);
  }
  return out;
}

int runHint(const std::string& base, const std::string& from, unsigned distance) {
  if (int usage = checkNotEmpty("hint", {base})) return usage;
  exitOnInterrupt();
  auto target = locate(base);
  if (!target) return failCommand("hint", target.error());
  auto paths = readOrder(from, base);
  if (!paths) return failCommand("hint", paths.error());
  ctl::HintRequest hint{{}, distance};
  const std::string root = target->mountpoint + "/";
  for (const std::string& p : *paths) {
    const std::string abs = std::filesystem::absolute(p).lexically_normal().string();
    if (!abs.starts_with(root)) {
      return failCommand("hint", Status::invalidArgument(fmt::format("{} is not under the mount {}",
                                                                     p, target->mountpoint)));
    }
    hint.paths.push_back(abs.substr(root.size()));
  }
  ctl::HintReply last;
  Status s = request(*target, hint, [&](const ctl::Reply& reply) {
    const auto* h = std::get_if<ctl::HintReply>(&reply);
    if (h == nullptr) return false;
    if (!h->finished) {
      std::fprintf(stderr,
                   "tierfs hint: fetching ahead in the order of %llu files (%zu not found)\n",
                   static_cast<unsigned long long>(h->files), hint.paths.size() - h->files);
    }
    last = *h;
    return !h->finished;
  });
  if (!s.isOk()) return failCommand("hint", s);
  fmt::print("hint: the reader reached {} of {} files; {} read ahead ({})\n", last.position,
             last.files, last.prefetched, formatSize(last.bytes));
  return 0;
}

// ---------------------------------------------------------------- evict

int runEvict(const std::vector<std::string>& paths) {
  if (int usage = checkNotEmpty("evict", paths)) return usage;
  // Every path is resolved before anything is dropped: a bad one evicts nothing.
  std::vector<Target> targets;
  for (const std::string& p : paths) {
    auto t = locate(p);
    if (!t) return failCommand("evict", t.error());
    targets.push_back(std::move(*t));
  }
  int code = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const Target& t = targets[i];
    auto print = [&](const ctl::Reply& reply) {
      if (const auto* e = std::get_if<ctl::EvictReply>(&reply)) {
        fmt::print("{}: dropped {} of {} files ({}) from this node's cache\n", printable(paths[i]),
                   e->evicted.cachedFiles, e->evicted.files, formatSize(e->evicted.cachedBytes));
      }
      return false;
    };
    Status s = request(t, ctl::EvictRequest{{t.relative.empty() ? "." : t.relative}}, print);
    if (!s.isOk()) code = failCommand("evict", s);
  }
  return code;
}

}  // namespace

Status askDaemonOf(const std::string& path, const ctl::Request& r,
                   const std::function<bool(const ctl::Reply&)>& onReply) {
  std::string at = path;
  if (at.empty()) {
    const std::vector<std::string> mounts = tierfsMounts();
    if (mounts.size() != 1) {
      return Status::invalidArgument(
          fmt::format("{} tierfs mounts on this node: name the one to ask about", mounts.size()));
    }
    at = mounts[0];
  }
  TIERFS_ASSIGN_OR_RETURN(Target t, locate(at));
  return request(t, r, onReply);
}

void addControlCommands(CLI::App& app, int& exitCode) {
  struct Args {
    std::vector<std::string> paths;
    unsigned parallel = 16;
    bool json = false;
    std::string from = "-";
    unsigned distance = 64;
  };
  auto args = std::make_shared<Args>();

  auto* status = app.add_subcommand(
      "status", "the cache of this node's tierfs daemons, or how much of PATH it holds");
  status->add_option("paths", args->paths, "files or trees inside a tierfs mount");
  status->add_flag("--json", args->json, "print JSON");
  status->callback([args, &exitCode] { exitCode = runStatus(args->paths, args->json); });

  auto* warm = app.add_subcommand(
      "warm", "load files and trees into this node's cache; exit 0 only when all is cached");
  warm->add_option("paths", args->paths, "files or trees inside a tierfs mount")->required();
  warm->add_option("--parallel", args->parallel, "chunks fetched at once")
      ->check(CLI::Range(1, 1024));
  warm->add_flag("--json", args->json, "print the progress as JSON lines");
  warm->callback(
      [args, &exitCode] { exitCode = runWarm(args->paths, args->parallel, args->json); });

  auto* hint = app.add_subcommand(
      "hint", "tell the daemon the order a reader will open files in: it fetches ahead in it");
  hint->add_option("path", args->paths,
                   "the mount (or a directory in it) the order's relative paths start from")
      ->required()
      ->expected(1);
  hint->add_option("--from", args->from, "the order, a path a line (default: standard input)");
  hint->add_option("--distance", args->distance, "files fetched ahead of the reader")
      ->check(CLI::Range(1, 1 << 20));
  hint->callback(
      [args, &exitCode] { exitCode = runHint(args->paths.front(), args->from, args->distance); });

  auto* evict = app.add_subcommand("evict", "drop files and trees from this node's cache");
  evict->add_option("paths", args->paths, "files or trees inside a tierfs mount")->required();
  evict->callback([args, &exitCode] { exitCode = runEvict(args->paths); });
}

}  // namespace tierfs::tools
