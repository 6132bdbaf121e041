#include "tools/FaultConfig.h"

#include <fmt/format.h>

#include <map>

namespace tierfs::tools {
namespace {

const std::map<std::string, std::optional<backends::FaultOp>> kOps = {
    {"any", std::nullopt},
    {"read", backends::FaultOp::kRead},
    {"stat", backends::FaultOp::kStat},
    {"getxattr", backends::FaultOp::kGetXattr},
    {"omap_get", backends::FaultOp::kOmapGet},
    {"omap_list", backends::FaultOp::kOmapList},
    {"mutate", backends::FaultOp::kMutate},
};
const std::map<std::string, backends::FaultAction> kActions = {
    {"fail", backends::FaultAction::kFail},
    {"delay", backends::FaultAction::kDelay},
    {"hang", backends::FaultAction::kHang},
    {"corrupt", backends::FaultAction::kCorruptRead},
};

template <typename T>
Status pick(const ConfigSection& s, const char* key, const std::map<std::string, T>& choices,
            T& out) {
  std::string text;
  TIERFS_RETURN_IF_ERROR(s.getString(key, text));
  if (text.empty()) return Status::ok();
  auto it = choices.find(text);
  if (it == choices.end()) {
    std::vector<std::string> names;
    for (const auto& [name, value] : choices) names.push_back(name);
    // At the key's file:line, as every other config error (the config fuzzer found this one bare).
    return s.problem(key,
                     fmt::format("must be one of {}, not \"{}\"", fmt::join(names, ", "), text));
  }
  out = it->second;
  return Status::ok();
}

}  // namespace

Result<std::vector<backends::FaultRule>> readFaults(const ConfigSection& root) {
  std::vector<backends::FaultRule> rules;
  TIERFS_ASSIGN_OR_RETURN(auto tables, root.tables("fault"));
  for (const ConfigSection& t : tables) {
    TIERFS_RETURN_IF_ERROR(t.checkKeys({"op", "object_prefix", "action", "delay", "count"}));
    backends::FaultRule rule;
    TIERFS_RETURN_IF_ERROR(pick(t, "op", kOps, rule.op));
    TIERFS_RETURN_IF_ERROR(pick(t, "action", kActions, rule.action));
    TIERFS_RETURN_IF_ERROR(t.getString("object_prefix", rule.oidPrefix));
    TIERFS_RETURN_IF_ERROR(t.getDuration("delay", rule.delay));
    std::int64_t count = rule.count;
    TIERFS_RETURN_IF_ERROR(t.getInt("count", -1, 1 << 30, count));
    rule.count = static_cast<int>(count);
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace tierfs::tools
