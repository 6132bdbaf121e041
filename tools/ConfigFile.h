#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/Deadline.h"
#include "common/Result.h"

namespace tierfs::tools {

// The sections a tierfs config file may have; anything else is an error naming its line.
inline const std::set<std::string> kConfigSections = {
    "backend", "fuse", "cache", "fs", "prefetch", "control", "metrics", "logging", "advisor"};

// The config file of a daemon or command given none: read only when it exists.
inline constexpr const char* kDefaultConfigFile = "/etc/tierfs/tierfs.toml";

// The config file to read when none was named on the command line: `envValue` ($TIERFS_CONFIG)
// when set and not empty, else `defaultFile` when it exists, else "" (flags alone).
std::string implicitConfigFile(const char* envValue, const std::string& defaultFile);
// The same from the environment and kDefaultConfigFile.
std::string implicitConfigFile();

// Parses a TOML config file: InvalidArgument naming file:line on a syntax error.
Result<toml::table> parseConfigFile(const std::string& file);

// One [section] of a config file (absent sections read as empty). Every getter leaves `out` as it
// is when the key is absent, and names file:line, section and key when the value is wrong.
class ConfigSection {
 public:
  ConfigSection(const toml::table* table, std::string file, std::string name)
      : table_(table), file_(std::move(file)), name_(std::move(name)) {}

  bool present() const { return table_ != nullptr; }
  ConfigSection sub(const std::string& name) const;
  // The tables of an array of tables ([[section.key]]); none when the key is absent.
  Result<std::vector<ConfigSection>> tables(const char* key) const;
  Status checkKeys(const std::set<std::string>& known) const;

  Status getString(const char* key, std::string& out) const;
  Status getBool(const char* key, bool& out) const;
  Status getInt(const char* key, std::int64_t min, std::int64_t max, std::int64_t& out) const;
  Status getDouble(const char* key, double& out) const;       // 0.5 (or an integer)
  Status getDuration(const char* key, Duration& out) const;   // "30s", "500ms"
  Status getSize(const char* key, std::uint64_t& out) const;  // "4M", "1.5T", or bytes
  // An array of names and non-negative integer ids (["alice", 1001]); ids come back in decimal.
  Status getNamesOrIds(const char* key, std::vector<std::string>& out) const;

  // An InvalidArgument for a value that parsed but is wrong: "FILE:LINE: [section] key what",
  // at the key's line (the section's when the key is absent).
  Status problem(const char* key, const std::string& what) const;
  // "FILE:LINE" of the key (of the section when the key is absent; FILE alone without either).
  std::string where(const char* key) const;

 private:
  const toml::node* node(const char* key) const;
  Status bad(const toml::node& n, const char* key, const std::string& problem) const;

  const toml::table* table_;
  std::string file_;
  std::string name_;
};

}  // namespace tierfs::tools
