#include "tools/ConfigFile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "common/Units.h"

namespace tierfs::tools {

std::string implicitConfigFile(const char* envValue, const std::string& defaultFile) {
  if (envValue && *envValue) return envValue;
  std::error_code ec;
  return std::filesystem::exists(defaultFile, ec) ? defaultFile : std::string();
}

std::string implicitConfigFile() {
  return implicitConfigFile(std::getenv("TIERFS_CONFIG"), kDefaultConfigFile);
}

Result<toml::table> parseConfigFile(const std::string& file) {
  toml::table root;
  try {
    root = toml::parse_file(file);  // Debian's toml++ is built with exceptions
  } catch (const toml::parse_error& err) {
    return failure(Status::invalidArgument(
        fmt::format("{}:{}: {}", file, err.source().begin.line, err.description())));
  }
  for (auto&& [key, node] : root) {
    const std::string name(key.str());
    const bool known = kConfigSections.count(name) ? node.is_table()
                       : name == "fault"           ? node.is_array_of_tables()
                                                   : false;
    if (!known && kConfigSections.count(name)) {
      return failure(Status::invalidArgument(fmt::format("{}:{}: '{}' must be a table: [{}]", file,
                                                         node.source().begin.line, name, name)));
    }
    if (!known) {
      return failure(Status::invalidArgument(fmt::format("{}:{}: unknown section '{}' (known: {})",
                                                         file, node.source().begin.line, key.str(),
                                                         fmt::join(kConfigSections, ", "))));
    }
  }
  return root;
}

ConfigSection ConfigSection::sub(const std::string& name) const {
  const toml::table* t = table_ ? (*table_)[name].as_table() : nullptr;
  return ConfigSection(t, file_, name_ + "." + name);
}

Result<std::vector<ConfigSection>> ConfigSection::tables(const char* key) const {
  std::vector<ConfigSection> out;
  const toml::node* n = node(key);
  if (!n) return out;
  const toml::array* array = n->as_array();
  if (!array || !array->is_array_of_tables()) {
    return failure(bad(*n, key, fmt::format("must be tables: [[{}.{}]]", name_, key)));
  }
  for (const toml::node& t : *array) {
    out.emplace_back(t.as_table(), file_, fmt::format("{}.{}#{}", name_, key, out.size() + 1));
  }
  return out;
}

Status ConfigSection::checkKeys(const std::set<std::string>& known) const {
  if (!table_) return Status::ok();
  for (auto&& [key, n] : *table_) {
    if (!known.count(std::string(key.str()))) {
      return Status::invalidArgument(fmt::format("{}:{}: unknown key '{}' in [{}]", file_,
                                                 n.source().begin.line, key.str(), name_));
    }
  }
  return Status::ok();
}

const toml::node* ConfigSection::node(const char* key) const {
  return table_ ? table_->get(key) : nullptr;
}

Status ConfigSection::bad(const toml::node& n, const char* key, const std::string& problem) const {
  return Status::invalidArgument(
      fmt::format("{}:{}: [{}] {} {}", file_, n.source().begin.line, name_, key, problem));
}

std::string ConfigSection::where(const char* key) const {
  const toml::node* n = node(key);
  if (n) return fmt::format("{}:{}", file_, n->source().begin.line);
  if (table_ && table_->source().begin.line > 0) {
    return fmt::format("{}:{}", file_, table_->source().begin.line);
  }
  return file_;
}

Status ConfigSection::problem(const char* key, const std::string& what) const {
  return Status::invalidArgument(fmt::format("{}: [{}] {} {}", where(key), name_, key, what));
}

Status ConfigSection::getString(const char* key, std::string& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  auto v = n->value<std::string>();
  if (!v) return bad(*n, key, "must be a string");
  out = *v;
  return Status::ok();
}

Status ConfigSection::getBool(const char* key, bool& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  if (!n->is_boolean()) return bad(*n, key, "must be true or false");
  out = *n->value<bool>();
  return Status::ok();
}

Status ConfigSection::getInt(const char* key, std::int64_t min, std::int64_t max,
                             std::int64_t& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  auto v = n->is_integer() ? n->value<std::int64_t>() : std::nullopt;
  if (!v || *v < min || *v > max) {
    return bad(*n, key, fmt::format("must be an integer from {} to {}", min, max));
  }
  out = *v;
  return Status::ok();
}

Status ConfigSection::getDouble(const char* key, double& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  if (!n->is_number()) return bad(*n, key, "must be a number");
  out = *n->value<double>();
  return Status::ok();
}

Status ConfigSection::getDuration(const char* key, Duration& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  auto text = n->value<std::string>();
  if (!text) return bad(*n, key, "must be a duration string such as \"30s\" or \"500ms\"");
  auto d = parseDuration(*text);
  if (!d) return bad(*n, key, d.error().message());
  out = *d;
  return Status::ok();
}

Status ConfigSection::getSize(const char* key, std::uint64_t& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  if (auto bytes = n->is_integer() ? n->value<std::int64_t>() : std::nullopt) {
    if (*bytes < 0) return bad(*n, key, "must not be negative");
    out = static_cast<std::uint64_t>(*bytes);
    return Status::ok();
  }
  auto text = n->value<std::string>();
  if (!text) return bad(*n, key, "must be a size such as \"4M\", \"1.5T\" or \"256MiB\"");
  auto s = parseSize(*text);
  if (!s) return bad(*n, key, s.error().message());
  out = *s;
  return Status::ok();
}

Status ConfigSection::getNamesOrIds(const char* key, std::vector<std::string>& out) const {
  const toml::node* n = node(key);
  if (!n) return Status::ok();
  const toml::array* array = n->as_array();
  constexpr const char* kWhat = "must be an array of names and ids, such as [\"alice\", 1001]";
  if (array == nullptr) return bad(*n, key, kWhat);
  out.clear();
  for (const toml::node& e : *array) {
    if (auto id = e.is_integer() ? e.value<std::int64_t>() : std::nullopt) {
      if (*id < 0 || *id > 0xfffffffe)
        return bad(e, key, fmt::format("id {} is out of range", *id));
      out.push_back(std::to_string(*id));
    } else if (auto name = e.value<std::string>(); name && !name->empty()) {
      out.push_back(*name);
    } else {
      return bad(e, key, kWhat);
    }
  }
  return Status::ok();
}

}  // namespace tierfs::tools
