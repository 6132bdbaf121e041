#include "tools/ConfigCommand.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/Units.h"
#include "tools/ConfigFile.h"
#include "tools/MountConfig.h"

namespace tierfs::tools {
namespace {

constexpr int kInvalid = 1;
constexpr int kUsage = 2;

// A TOML basic string: quoted, with backslashes, quotes and control characters escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string size(std::uint64_t bytes) { return quoted(sizeForConfig(bytes)); }
std::string duration(Duration d) { return quoted(durationForConfig(d)); }
const char* boolean(bool b) { return b ? "true" : "false"; }

void printBackend(const backends::StoreConfig& s) {
  const bool rados = s.kind == backends::BackendKind::kRados;
  fmt::print("[backend]\ntype = {}\ntimeout = {}\nrequests_in_flight = {}\n\n",
             quoted(rados ? "rados" : "dir"), duration(rados ? s.rados.timeout : s.dir.timeout),
             s.rados.maxInFlight);
  fmt::print("[backend.dir]\npath = {}\n\n", quoted(s.dir.root.string()));
  // The keyring is named, never read here: no secret is printed.
  fmt::print(
      "[backend.rados]\nconf = {}\nkeyring = {}\nuser = {}\npool = {}\nnamespace = {}\n"
      "allow_open_keyring = {}\n\n",
      quoted(s.rados.conf), quoted(s.rados.keyring), quoted(s.rados.user), quoted(s.rados.pool),
      quoted(s.rados.nspace), boolean(s.rados.allowOpenKeyring));
}

void printFuse(const fs::MountOptions& m) {
  fmt::print(
      "[fuse]\nattr_timeout = {}\nentry_timeout = {}\nnegative_timeout = {}\nallow_other = {}\n"
      "read_only = {}\nmax_read = {}\nread_ahead = {}\nmax_background = {}\nthreads = {}\n\n",
      duration(m.attrTimeout), duration(m.entryTimeout), duration(m.negativeTimeout),
      boolean(m.allowOther), boolean(m.readOnly), size(m.maxRead),
      size(std::uint64_t{m.readAheadKb} << 10), m.maxBackground, m.maxThreads);
}

const char* evictionName(cache::EvictionPolicy p) {
  return p == cache::EvictionPolicy::kFifo  ? "fifo"
         : p == cache::EvictionPolicy::kLru ? "lru"
                                            : "training";
}

void printCache(const DaemonConfig& c) {
  const cache::RegionCacheOptions& r = c.devices.regions;
  fmt::print(
      "[cache]\nmemory_size = {}\nregion_size = {}\neviction = {}\nprotect_for = {}\nbuffers = {}\n"
      "store_compressed = {}\nadmission = {}\nindex_dir = {}\ndevice_threads = {}\n"
      "high_watermark = {}\nlow_watermark = {}\n\n",
      size(c.cache.capacityBytes), size(r.regionSize), quoted(evictionName(r.eviction)),
      duration(r.protectFor), r.buffers, boolean(c.devices.storeCompressed),
      quoted(c.devices.admission == cache::Admission::kAlways ? "always" : "second_miss"),
      quoted(c.devices.indexDir), c.cache.deviceThreads, r.highWatermark, r.lowWatermark);
  for (const cache::DeviceSpec& d : c.devices.devices) {
    fmt::print("[[cache.device]]\npath = {}\nsize = {}\n\n", quoted(d.path), size(d.size));
  }
}

void printPrefetch(const DaemonConfig& c) {
  const cache::FetchSchedulerOptions& f = c.cache.fetch;
  fmt::print(
      "[prefetch]\nmax_window = {}\nread_ahead_budget = {}\nmax_in_flight = {}\n"
      "max_in_flight_bytes = {}\nbackground_share = {}\nbackground_bandwidth = {}\nsweep = {}\n"
      "sweep_after = {}\n\n",
      size(c.fs.readAhead.maxWindow), size(c.fs.readAhead.budget), f.maxInFlight,
      size(f.maxInFlightBytes), f.backgroundPercent, size(f.backgroundBytesPerSecond),
      boolean(c.fs.sweep.enabled), c.fs.sweep.after);
}

void printFs(const DaemonConfig& c) {
  fmt::print("[fs]\n");
  if (c.codec) {
    fmt::print("compression = {}\n", quoted(*c.codec == cache::Codec::kNone ? "none" : "zstd"));
  } else {
    fmt::print("# compression: the volume's default\n");
  }
  if (c.zstdLevel) {
    fmt::print("zstd_level = {}\n", *c.zstdLevel);
  } else {
    fmt::print("# zstd_level: the volume's default\n");
  }
  fmt::print("dirty_limit = {}\ngc_delay = {}\nreaddir_page = {}\n\n", size(c.fs.dirtyLimitPerFile),
             duration(c.fs.gcDelay), c.fs.readdirPage);
}

void printService(const DaemonConfig& c) {
  fmt::print("[control]\nsocket = {}{}\nallow_users = [{}]\nallow_groups = [{}]\n\n",
             quoted(c.controlSocket),
             c.controlSocket.empty() ? "  # /run/tierfs/<mount point>.sock" : "",
             fmt::join(c.controlUsers, ", "), fmt::join(c.controlGroups, ", "));
  fmt::print("[metrics]\nenabled = {}\naddress = {}\n\n", boolean(c.metrics.enabled),
             quoted(c.metrics.address));
  fmt::print("[logging]\nlevel = {}\ntarget = {}\nrepeat_window = {}\n\n", quoted(c.logging.level),
             quoted(c.logging.target), duration(c.logging.repeatWindow));
  fmt::print("[advisor]\nenabled = {}\nsample_rate = {}\nmax_samples = {}\ntrace_file = {}\n",
             boolean(c.advisor.enabled), c.advisor.sampleRate, c.advisor.maxSamples,
             quoted(c.advisor.tracePath));
  if (!c.faults.empty()) {
    fmt::print("\n# {} [[fault]] rule(s) not shown: for tests only\n", c.faults.size());
  }
}

void printConfig(const DaemonConfig& c) {
  printBackend(c.store);
  printFuse(c.mount);
  printCache(c);
  printPrefetch(c);
  printFs(c);
  printService(c);
}

// The file named, else the implicit one; exit code kUsage when there is none or it cannot be
// read (a usage problem, not an invalid config).
int chooseFile(const std::string& given, const char* command, std::string& file) {
  file = given.empty() ? implicitConfigFile() : given;
  if (file.empty()) {
    std::fprintf(stderr,
                 "tierfs config %s: no config file: name one, set TIERFS_CONFIG or create %s\n",
                 command, kDefaultConfigFile);
    return kUsage;
  }
  if (::access(file.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "tierfs config %s: cannot read %s: %s\n", command, file.c_str(),
                 std::strerror(errno));
    return kUsage;
  }
  return 0;
}

int runCheck(const std::string& given) {
  MountArgs args;
  std::string file;
  if (int rc = chooseFile(given, "check", file); rc != 0) return rc;
  args.backend.setConfigFile(file);
  auto cfg = resolveSettings(args);
  if (!cfg) return failCommand("config check", cfg.error(), kInvalid);
  std::printf("%s: valid\n", file.c_str());
  if (std::string note = readAheadClampNote(*cfg); !note.empty()) {
    std::printf("note: %s\n", note.c_str());
  }
  return 0;
}

int runShow(const std::string& given, MountArgs& args) {
  if (!given.empty()) {
    std::string file;
    if (int rc = chooseFile(given, "show", file); rc != 0) return rc;
    args.backend.setConfigFile(file);
  }
  if (args.backend.nothingConfigured()) args.backend.defaultToDir(defaultStorePath());
  auto cfg = resolveSettings(args);
  if (!cfg) return failCommand("config show", cfg.error(), kInvalid);
  printConfig(*cfg);
  return 0;
}

}  // namespace

void addConfigCommand(CLI::App& app, int& exitCode) {
  CLI::App* config = app.add_subcommand("config", "check or show a config file (docs/CONFIG.md)");
  config->require_subcommand(1);

  auto checkFile = std::make_shared<std::string>();
  CLI::App* check = config->add_subcommand(
      "check", "validate a config file without mounting: exit 0 valid, 1 invalid, 2 unreadable");
  check->add_option("file", *checkFile, "default: $TIERFS_CONFIG, else /etc/tierfs/tierfs.toml");
  check->callback([checkFile, &exitCode] { exitCode = runCheck(*checkFile); });

  auto showFile = std::make_shared<std::string>();
  auto showArgs = std::make_shared<MountArgs>();
  CLI::App* show = config->add_subcommand(
      "show", "print the effective config (defaults included, mount flags applied) as TOML");
  show->add_option("file", *showFile, "default: $TIERFS_CONFIG, else /etc/tierfs/tierfs.toml");
  showArgs->backend.addTo(*show);
  addMountOptions(*show, *showArgs);
  show->callback([showFile, showArgs, &exitCode] { exitCode = runShow(*showFile, *showArgs); });
}

}  // namespace tierfs::tools
