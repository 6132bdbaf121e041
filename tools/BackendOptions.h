#pragma once

#include <string>

#include "backends/StoreFactory.h"
#include "tools/CliApp.h"

namespace tierfs::tools {

// The back end a command talks to: from a TOML config file ([backend] section), from flags, or
// both (flags override the file, key by key).
class BackendOptions {
 public:
  // Adds --config, --backend, --path, --conf, --keyring, --user, --pool, --namespace,
  // --timeout, --in-flight to `app`.
  void addTo(CLI::App& app);

  // The effective configuration, or an error naming the bad key or flag.
  Result<backends::StoreConfig> resolve() const;

  // The config file read: the one given with --config (or set by the command), else
  // $TIERFS_CONFIG, else /etc/tierfs/tierfs.toml when it exists; "" when none.
  std::string configFile() const;
  void setConfigFile(std::string file) { configFile_ = std::move(file); }
  // True when neither a config file nor a back-end flag names a store.
  bool nothingConfigured() const {
    return configFile().empty() && backend_.empty() && path_.empty() && pool_.empty();
  }
  // Uses the dir back end at `path` (the embedded default of a daemon with no Ceph configured).
  void defaultToDir(std::string path) {
    backend_ = "dir";
    path_ = std::move(path);
  }

 private:
  std::string configFile_;
  std::string backend_;
  std::string path_;
  std::string conf_, keyring_, user_, pool_, nspace_;
  std::string timeout_;
  unsigned inFlight_ = 0;
  bool allowOpenKeyring_ = false;
};

}  // namespace tierfs::tools
