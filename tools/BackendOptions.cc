#include "tools/BackendOptions.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "backends/Keyring.h"
#include "common/Units.h"
#include "tools/ConfigFile.h"

namespace tierfs::tools {
namespace {

using backends::BackendKind;
using backends::StoreConfig;

// `checkKeyring`: refuse a keyring that others may read (when the file's is the one used).
// `flagsNameIt`: --backend was given, so a file of tuning alone (no [backend]) is fine.
Status readBackendSection(const ConfigSection& b, StoreConfig& cfg, bool checkKeyring,
                          bool flagsNameIt) {
  if (!b.present()) {
    if (flagsNameIt) return Status::ok();
    return Status::invalidArgument(
        "no [backend] section (type = \"dir\" or \"rados\"), and no --backend flag");
  }
  TIERFS_RETURN_IF_ERROR(b.checkKeys({"type", "timeout", "requests_in_flight", "dir", "rados"}));
  std::string type = "dir";
  TIERFS_RETURN_IF_ERROR(b.getString("type", type));
  if (type != "dir" && type != "rados") {
    return b.problem("type", fmt::format("must be \"dir\" or \"rados\", not \"{}\"", type));
  }
  cfg.kind = type == "rados" ? BackendKind::kRados : BackendKind::kDir;
  Duration timeout = cfg.rados.timeout;
  TIERFS_RETURN_IF_ERROR(b.getDuration("timeout", timeout));
  cfg.dir.timeout = cfg.rados.timeout = timeout;
  std::int64_t inFlight = cfg.rados.maxInFlight;
  TIERFS_RETURN_IF_ERROR(b.getInt("requests_in_flight", 1, 4096, inFlight));
  cfg.rados.maxInFlight = static_cast<unsigned>(inFlight);
  ConfigSection d = b.sub("dir");
  TIERFS_RETURN_IF_ERROR(d.checkKeys({"path"}));
  std::string path = cfg.dir.root;
  TIERFS_RETURN_IF_ERROR(d.getString("path", path));
  cfg.dir.root = path;
  ConfigSection r = b.sub("rados");
  TIERFS_RETURN_IF_ERROR(
      r.checkKeys({"conf", "keyring", "user", "pool", "namespace", "allow_open_keyring"}));
  TIERFS_RETURN_IF_ERROR(r.getString("conf", cfg.rados.conf));
  TIERFS_RETURN_IF_ERROR(r.getString("keyring", cfg.rados.keyring));
  TIERFS_RETURN_IF_ERROR(r.getBool("allow_open_keyring", cfg.rados.allowOpenKeyring));
  if (checkKeyring && cfg.kind == BackendKind::kRados && !cfg.rados.keyring.empty()) {
    Status s = backends::checkKeyringMode(cfg.rados.keyring, cfg.rados.allowOpenKeyring);
    if (!s.isOk()) return r.problem("keyring", s.message());
  }
  TIERFS_RETURN_IF_ERROR(r.getString("user", cfg.rados.user));
  TIERFS_RETURN_IF_ERROR(r.getString("pool", cfg.rados.pool));
  return r.getString("namespace", cfg.rados.nspace);
}

Status loadFile(const std::string& file, StoreConfig& cfg, bool checkKeyring, bool flagsNameIt) {
  TIERFS_ASSIGN_OR_RETURN(toml::table root, parseConfigFile(file));
  Status s = readBackendSection(ConfigSection(root["backend"].as_table(), file, "backend"), cfg,
                                checkKeyring, flagsNameIt);
  if (!s.isOk() && s.message().find(file) == std::string::npos) return s.withContext(file);
  return s;
}

}  // namespace

std::string BackendOptions::configFile() const {
  return configFile_.empty() ? implicitConfigFile() : configFile_;
}

void BackendOptions::addTo(CLI::App& app) {
  app.add_option("--config", configFile_,
                 "TOML config file (default: $TIERFS_CONFIG, else /etc/tierfs/tierfs.toml if it "
                 "exists; docs/CONFIG.md)");
  app.add_option("--backend", backend_, "back end: dir or rados")
      ->check(CLI::IsMember({"dir", "rados"}));
  app.add_option("--path", path_, "dir back end: the store directory");
  app.add_option("--conf", conf_, "rados: ceph.conf path");
  app.add_option("--keyring", keyring_, "rados: keyring path");
  app.add_option("--user", user_, "rados: cephx user, client.NAME");
  app.add_option("--pool", pool_, "rados: pool");
  app.add_option("--namespace", nspace_, "rados: namespace in the pool");
  app.add_option("--timeout", timeout_, "deadline of each back-end call (e.g. 30s)");
  app.add_option("--in-flight", inFlight_, "rados: requests in flight")->check(CLI::Range(1, 4096));
  app.add_flag("--allow-open-keyring", allowOpenKeyring_,
               "rados: use a keyring that other users may read or write (refused by default)");
}

Result<StoreConfig> BackendOptions::resolve() const {
  StoreConfig cfg;
  const std::string file = configFile();
  // The file's keyring is checked at its line unless a flag replaces or allows it; the store
  // checks the keyring it is given again when it connects (RadosStore, backends/Keyring.h).
  if (!file.empty()) {
    TIERFS_RETURN_IF_ERROR(
        loadFile(file, cfg, keyring_.empty() && !allowOpenKeyring_, !backend_.empty()));
  }
  if (allowOpenKeyring_) cfg.rados.allowOpenKeyring = true;
  if (!backend_.empty()) cfg.kind = backend_ == "rados" ? BackendKind::kRados : BackendKind::kDir;
  if (!path_.empty()) cfg.dir.root = path_;
  if (!conf_.empty()) cfg.rados.conf = conf_;
  if (!keyring_.empty()) cfg.rados.keyring = keyring_;
  if (!user_.empty()) cfg.rados.user = user_;
  if (!pool_.empty()) cfg.rados.pool = pool_;
  if (!nspace_.empty()) cfg.rados.nspace = nspace_;
  if (inFlight_ != 0) cfg.rados.maxInFlight = inFlight_;
  if (!timeout_.empty()) {
    TIERFS_ASSIGN_OR_RETURN(auto d, parseDuration(timeout_));
    cfg.dir.timeout = cfg.rados.timeout = d;
  }
  // Named with the file when there is one: the key is missing there.
  auto missing = [&file](const char* what) {
    Status s = Status::invalidArgument(what);
    return failure(file.empty() ? s : s.withContext(file));
  };
  if (cfg.kind == BackendKind::kDir && cfg.dir.root.empty()) {
    return missing("the dir back end needs a store directory: [backend.dir] path (or --path DIR)");
  }
  // A daemon changes to / when it detaches: a relative store path must not change meaning.
  if (cfg.kind == BackendKind::kDir) cfg.dir.root = std::filesystem::absolute(cfg.dir.root);
  if (cfg.kind == BackendKind::kRados && cfg.rados.pool.empty()) {
    return missing("the rados back end needs a pool: [backend.rados] pool (or --pool NAME)");
  }
  return cfg;
}

}  // namespace tierfs::tools
