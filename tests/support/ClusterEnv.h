#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "backends/RadosStore.h"

namespace tierfs::testing {

// RadosOptions for the test cluster, from the client.env that deploy/dev-cluster/start.sh
// writes; its path is in $TIERFS_TEST_CLUSTER_ENV (ctest sets it). nullopt, with `error` set,
// when the file is missing or incomplete.
inline std::optional<backends::RadosOptions> testClusterOptions(std::string& error) {
  const char* path = std::getenv("TIERFS_TEST_CLUSTER_ENV");
  if (path == nullptr || *path == '\0') {
    error =
        "TIERFS_TEST_CLUSTER_ENV is not set: run these tests through ctest (label ceph), "
        "which starts the test cluster";
    return std::nullopt;
  }
  std::ifstream in(path);
  if (!in) {
    error = std::string("cannot read ") + path + " (did the cluster start?)";
    return std::nullopt;
  }
  std::map<std::string, std::string> env;
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos || line[0] == '#') continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
      value = value.substr(1, value.size() - 2);
    }
    env[line.substr(0, eq)] = value;
  }
  backends::RadosOptions o;
  o.conf = env["TIERFS_CEPH_CONF"];
  o.keyring = env["TIERFS_CEPH_KEYRING"];
  o.user = env["TIERFS_CEPH_USER"];
  o.pool = env["TIERFS_CEPH_POOL"];
  o.timeout = std::chrono::seconds(30);
  if (o.conf.empty() || o.user.empty() || o.pool.empty()) {
    error = std::string(path) + " lacks TIERFS_CEPH_CONF, TIERFS_CEPH_USER or TIERFS_CEPH_POOL";
    return std::nullopt;
  }
  return o;
}

}  // namespace tierfs::testing
