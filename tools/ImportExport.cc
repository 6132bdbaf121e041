#include "tools/ImportExport.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <thread>

#include "common/Units.h"
#include "tools/BackendOptions.h"
#include "tools/MountConfig.h"
#include "tools/TreeCopy.h"

namespace tierfs::tools {
namespace {

constexpr int kUsageError = 2;

struct CopyArgs {
  BackendOptions backend;
  std::vector<std::string> paths;  // import: SRC_DIR VOLUME_PATH; export: VOLUME_PATH DST_DIR
  unsigned jobs = 8;
  bool overwrite = false;
  std::string compression;  // import: codec of new chunks ("" = the config's or the volume's)
};

// The daemon's configuration for the same flags and config file: the back end, [cache] and [fs]
// (compression, zstd_level) apply to a copy as to a mount.
Result<DaemonConfig> resolveConfig(const CopyArgs& args, bool import, bool defaultStore) {
  DaemonConfig cfg;
  TIERFS_ASSIGN_OR_RETURN(cfg.store, args.backend.resolve());
  const std::string& file = args.backend.configFile();
  if (!file.empty()) TIERFS_RETURN_IF_ERROR(readDaemonSections(file, cfg));
  if (!args.compression.empty()) {
    cfg.codec = args.compression == "none" ? cache::Codec::kNone : cache::Codec::kZstd;
  }
  cfg.fs.attrTimeout = cfg.mount.attrTimeout;
  cfg.fs.readOnly = !import;
  // The cache devices are the daemon's (it holds their index open): a copy goes to the back end.
  cfg.devices.devices.clear();
  // Only the daemon's default store is made when missing: a mistyped --path must fail.
  cfg.store.dir.create = defaultStore;
  // Enough store and codec threads for the workers (the format does not depend on either).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cfg.store.dir.threads = std::max(cfg.store.dir.threads, args.jobs);
  cfg.cache.codecThreads = std::max(cfg.cache.codecThreads, std::min(args.jobs, cores));
  return cfg;
}

std::string count(std::uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

void printSummary(const char* verb, const copy::CopyTotals& t) {
  const double secs = std::max(t.seconds, 1e-3);
  std::string stored = t.storedBytes ? fmt::format(" (stored: {})", formatSize(t.storedBytes)) : "";
  std::string problems;
  if (t.skipped) problems += fmt::format(", {} skipped", t.skipped);
  if (t.failed) problems += fmt::format(", {} FAILED", t.failed);
  fmt::print("tierfs {}: {}, {}, {}, {}{} in {:.1f} s: {:.1f} MiB/s, {:.0f} files/s{}\n", verb,
             count(t.files, "file", "files"), count(t.dirs, "directory", "directories"),
             count(t.symlinks, "symlink", "symlinks"), formatSize(t.bytes), stored, secs,
             t.bytes / secs / (1 << 20), (t.files + t.symlinks) / secs, problems);
  std::fflush(stdout);
}

int runCopy(CopyArgs& args, bool import) {
  const char* verb = import ? "import" : "export";
  const std::string& local = import ? args.paths[0] : args.paths[1];
  const std::string& inVolume = import ? args.paths[1] : args.paths[0];
  auto parts = copy::splitVolumePath(inVolume);
  if (!parts) return failCommand(verb, parts.error(), kUsageError);
  std::string volumePath;
  for (const auto& p : *parts) volumePath += "/" + p;
  if (volumePath.empty()) volumePath = "/";
  struct stat st {};
  if (import && ::stat(local.c_str(), &st) != 0) {
    return failCommand(verb, Status::fromErrno(errno, fmt::format("source '{}'", local)),
                       kUsageError);
  }
  const bool defaultStore = args.backend.nothingConfigured();
  if (defaultStore) args.backend.defaultToDir(defaultStorePath());
  auto cfg = resolveConfig(args, import, defaultStore && import);
  if (!cfg) return failCommand(verb, cfg.error());
  // The advisor models a mount's readers: a copy's reads are not theirs (nor for its trace).
  cfg->advisor.enabled = false;
  auto stack = openFilesystem(*cfg, defaultStore && import);
  if (!stack) return failCommand(verb, stack.error());
  fs::Filesystem& filesystem = *(*stack)->filesystem;

  std::unique_ptr<copy::Source> source;
  std::unique_ptr<copy::Destination> destination;
  if (import) {
    source = copy::makeLocalSource(local);
    destination = copy::makeVolumeDestination(filesystem, volumePath, args.overwrite);
  } else {
    source = copy::makeVolumeSource(filesystem, volumePath);
    destination = copy::makeLocalDestination(local, args.overwrite);
  }
  copy::CopyOptions options;
  options.verb = verb;
  options.jobs = args.jobs;
  options.overwrite = args.overwrite;
  options.progress = ::isatty(STDERR_FILENO) == 1;
  auto totals = copy::copyTree(*source, *destination, import ? local : volumePath,
                               import ? volumePath : local, options);
  source.reset();  // forgets the inodes they hold
  destination.reset();
  if (!totals) return failCommand(verb, totals.error());
  Status flushed = filesystem.flushAll();
  if (!flushed.isOk()) {
    failCommand(verb, flushed.withContext("committing to the volume"));
    ++totals->failed;
  }
  printSummary(verb, *totals);
  return totals->failed == 0 ? 0 : 1;
}

constexpr const char* kFooter =
    "Regular files, directories and symlinks are copied with their mode, times (to the "
    "nanosecond) and user.* xattrs, and as root their owners. Hard-linked files are copied as "
    "separate files; fifos, sockets and devices are skipped with a warning. An existing file is "
    "an error unless --overwrite; existing directories are merged. Exit status: 0 everything "
    "copied, 1 something failed (each failure is named), 2 a bad command line.\n";

void addCopyCommand(CLI::App& app, int& exitCode, bool import) {
  auto args = std::make_shared<CopyArgs>();
  CLI::App* cmd =
      import ? app.add_subcommand("import",
                                  "copy a local tree into a volume: tierfs import SRC_DIR "
                                  "VOLUME_PATH (its missing parents are made)")
             : app.add_subcommand("export",
                                  "copy a tree of a volume to a local directory: tierfs export "
                                  "VOLUME_PATH DST_DIR (a file path exports that file)");
  args->backend.addTo(*cmd);
  cmd->add_option("paths", args->paths, import ? "SRC_DIR VOLUME_PATH" : "VOLUME_PATH DST_DIR")
      ->required()
      ->expected(2);
  cmd->add_option("-j,--jobs", args->jobs, "files copied at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_flag("--overwrite", args->overwrite,
                import ? "replace existing files in the volume" : "replace existing local files");
  if (import) {
    cmd->add_option("--compression", args->compression,
                    "codec of new chunks (default: [fs] compression, else the volume's)")
        ->check(CLI::IsMember({"zstd", "none"}));
  }
  cmd->footer(kFooter);
  cmd->callback([args, &exitCode, import] { exitCode = runCopy(*args, import); });
}

}  // namespace

void addImportExportCommands(CLI::App& app, int& exitCode) {
  addCopyCommand(app, exitCode, true);
  addCopyCommand(app, exitCode, false);
}

}  // namespace tierfs::tools
