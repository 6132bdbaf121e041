#include "tools/BackendOptions.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <set>

#include "common/Units.h"

namespace tierfs::tools {
namespace {

using backends::BackendKind;
using backends::StoreConfig;

std::string where(const toml::node& node, const std::string& file) {
  return fmt::format("{}:{}", file, node.source().begin.line);
}

// Rejects keys of `table` that are not in `known`, naming the first one and its line.
Status checkKeys(const toml::table& table, const std::set<std::string>& known,
                 const std::string& section, const std::string& file) {
  for (auto&& [key, node] : table) {
    if (!known.count(std::string(key.str()))) {
      return Status::invalidArgument(
          fmt::format("{}: unknown key '{}' in [{}]", where(node, file), key.str(), section));
    }
  }
  return Status::ok();
}

Status readString(const toml::table& t, const char* key, std::string& out,
                  const std::string& section, const std::string& file) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::ok();
  auto value = node->value<std::string>();
  if (!value) {
    return Status::invalidArgument(
        fmt::format("{}: [{}] {} must be a string", where(*node, file), section, key));
  }
  out = *value;
  return Status::ok();
}

Status readBackendTable(const toml::table& root, const std::string& file, StoreConfig& cfg) {
  TIERFS_RETURN_IF_ERROR(checkKeys(root, {"backend"}, "top level", file));
  const toml::table* b = root["backend"].as_table();
  if (b == nullptr) return Status::invalidArgument(file + ": no [backend] section");
  TIERFS_RETURN_IF_ERROR(
      checkKeys(*b, {"type", "timeout", "requests_in_flight", "dir", "rados"}, "backend", file));
  std::string type = "dir", timeout;
  TIERFS_RETURN_IF_ERROR(readString(*b, "type", type, "backend", file));
  if (type != "dir" && type != "rados") {
    return Status::invalidArgument(
        fmt::format("{}: [backend] type must be \"dir\" or \"rados\", not \"{}\"",
                    where(*b->get("type"), file), type));
  }
  cfg.kind = type == "rados" ? BackendKind::kRados : BackendKind::kDir;
  TIERFS_RETURN_IF_ERROR(readString(*b, "timeout", timeout, "backend", file));
  if (!timeout.empty()) {
    auto d = parseDuration(timeout);
    if (!d) return d.error().withContext(where(*b->get("timeout"), file) + ": [backend] timeout");
    cfg.dir.timeout = cfg.rados.timeout = *d;
  }
  if (const toml::node* n = b->get("requests_in_flight")) {
    auto v = n->value<std::int64_t>();
    if (!v || *v < 1 || *v > 4096) {
      return Status::invalidArgument(fmt::format(
          "{}: [backend] requests_in_flight must be an integer from 1 to 4096", where(*n, file)));
    }
    cfg.rados.maxInFlight = static_cast<unsigned>(*v);
  }
  if (const toml::table* d = (*b)["dir"].as_table()) {
    TIERFS_RETURN_IF_ERROR(checkKeys(*d, {"path"}, "backend.dir", file));
    std::string path;
    TIERFS_RETURN_IF_ERROR(readString(*d, "path", path, "backend.dir", file));
    cfg.dir.root = path;
  }
  if (const toml::table* r = (*b)["rados"].as_table()) {
    TIERFS_RETURN_IF_ERROR(
        checkKeys(*r, {"conf", "keyring", "user", "pool", "namespace"}, "backend.rados", file));
    TIERFS_RETURN_IF_ERROR(readString(*r, "conf", cfg.rados.conf, "backend.rados", file));
    TIERFS_RETURN_IF_ERROR(readString(*r, "keyring", cfg.rados.keyring, "backend.rados", file));
    TIERFS_RETURN_IF_ERROR(readString(*r, "user", cfg.rados.user, "backend.rados", file));
    TIERFS_RETURN_IF_ERROR(readString(*r, "pool", cfg.rados.pool, "backend.rados", file));
    TIERFS_RETURN_IF_ERROR(readString(*r, "namespace", cfg.rados.nspace, "backend.rados", file));
  }
  return Status::ok();
}

Status loadFile(const std::string& file, StoreConfig& cfg) {
  toml::table root;
  try {
    root = toml::parse_file(file);  // Debian's toml++ is built with exceptions
  } catch (const toml::parse_error& err) {
    return Status::invalidArgument(
        fmt::format("{}:{}: {}", file, err.source().begin.line, err.description()));
  }
  return readBackendTable(root, file, cfg);
}

}  // namespace

void BackendOptions::addTo(CLI::App& app) {
  app.add_option("--config", configFile_, "TOML config file with a [backend] section");
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
}

Result<StoreConfig> BackendOptions::resolve() const {
  StoreConfig cfg;
  if (!configFile_.empty()) TIERFS_RETURN_IF_ERROR(loadFile(configFile_, cfg));
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
  if (cfg.kind == BackendKind::kDir && cfg.dir.root.empty()) {
    return failure(Status::invalidArgument(
        "the dir back end needs a store directory: --path DIR (or [backend.dir] path)"));
  }
  if (cfg.kind == BackendKind::kRados && cfg.rados.pool.empty()) {
    return failure(Status::invalidArgument(
        "the rados back end needs a pool: --pool NAME (or [backend.rados] pool)"));
  }
  return cfg;
}

}  // namespace tierfs::tools
