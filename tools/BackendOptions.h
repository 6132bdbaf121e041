#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "backends/StoreFactory.h"

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

 private:
  std::string configFile_;
  std::string backend_;
  std::string path_;
  std::string conf_, keyring_, user_, pool_, nspace_;
  std::string timeout_;
  unsigned inFlight_ = 0;
};

}  // namespace tierfs::tools
