#include "tools/AdviseCommand.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "cache/ExactLru.h"
#include "common/Units.h"
#include "tools/ControlCommands.h"

namespace tierfs::tools {
namespace {

namespace ctl = control;

constexpr double kPpm = 1e6;

std::uint32_t toPpm(double ratio) {
  return static_cast<std::uint32_t>(std::lround(std::clamp(ratio, 0.0, 1.0) * kPpm));
}

// Powers of two from 1/64 of the working set (at least 1 MiB) to the first at or beyond 1.25
// times it: where the curve changes, and a little past where it stops changing.
std::vector<std::uint64_t> defaultSizes(std::uint64_t workingSet, std::uint64_t configured) {
  constexpr std::uint64_t kSmallest = 1 << 20;
  const std::uint64_t top = std::max<std::uint64_t>(workingSet + workingSet / 4, kSmallest);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s =
           std::max(kSmallest, std::bit_floor(std::max<std::uint64_t>(workingSet / 64, 1)));
       ; s *= 2) {
    sizes.push_back(s);
    if (s >= top) break;
  }
  if (configured > 0) sizes.push_back(configured);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// A curve of either model (ShardsCurve or ExactLru) at the sizes asked for.
template <typename Model>
ctl::AdviseCurve curveOf(std::string name, const Model& model, const ctl::AdviseRequest& request,
                         std::uint64_t configured) {
  ctl::AdviseCurve c;
  c.dataset = std::move(name);
  c.workingSetBytes = model.workingSetBytes();
  const auto sizes =
      request.sizes.empty() ? defaultSizes(c.workingSetBytes, configured) : request.sizes;
  for (std::uint64_t size : sizes) c.points.push_back({size, toPpm(1.0 - model.missRatio(size))});
  c.targetBytes = model.smallestSizeFor(request.targetPpm / kPpm);
  return c;
}

ctl::AdviseCurve shardsCurve(std::string name, const cache::ShardsCurve& curve,
                             const ctl::AdviseRequest& request, std::uint64_t configured) {
  ctl::AdviseCurve c = curveOf(std::move(name), curve, request, configured);
  c.samples = curve.samples();
  c.sampledAccesses = curve.sampledAccesses();
  c.sampleRatePpm = toPpm(curve.sampleRate());
  return c;
}

std::string jsonText(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string ratioText(std::uint32_t ppm) { return fmt::format("{:.1f}%", ppm / 1e4); }

void printCurve(const ctl::AdviseCurve& c, std::uint64_t configured, std::uint32_t targetPpm) {
  fmt::print("{}: working set {}, {} accesses sampled ({} keys, rate {:.4f})\n",
             c.dataset.empty() ? "volume" : "dataset " + c.dataset, formatSize(c.workingSetBytes),
             c.sampledAccesses, c.samples, c.sampleRatePpm / kPpm);
  fmt::print("  {:>12}  {}\n", "cache size", "expected hit ratio");
  for (const ctl::CurvePoint& p : c.points) {
    fmt::print("  {:>12}  {:>7}{}\n", formatSize(p.cacheBytes), ratioText(p.hitPpm),
               p.cacheBytes == configured ? "  (configured)" : "");
  }
  if (c.targetBytes) {
    fmt::print("  smallest size reaching {}: {}\n", ratioText(targetPpm),
               formatSize(*c.targetBytes));
  } else {
    fmt::print("  no size up to the working set reaches {} (first reads always miss)\n",
               ratioText(targetPpm));
  }
}

std::string curveJson(const ctl::AdviseCurve& c, std::uint64_t configured) {
  std::string points, atConfigured = "null";
  for (const ctl::CurvePoint& p : c.points) {
    if (!points.empty()) points += ",";
    points +=
        fmt::format(R"({{"cache_bytes":{},"hit_ratio":{:.6f}}})", p.cacheBytes, p.hitPpm / kPpm);
    if (p.cacheBytes == configured) atConfigured = fmt::format("{:.6f}", p.hitPpm / kPpm);
  }
  return fmt::format(
      R"({{"dataset":{},"working_set_bytes":{},"samples":{},"sampled_accesses":{},)"
      R"("sample_rate":{:.6f},"configured_hit_ratio":{},"target_bytes":{},"points":[{}]}})",
      jsonText(c.dataset), c.workingSetBytes, c.samples, c.sampledAccesses, c.sampleRatePpm / kPpm,
      atConfigured, c.targetBytes ? std::to_string(*c.targetBytes) : "null", points);
}

void printReply(const ctl::AdviseReply& r, bool json) {
  if (json) {
    std::string curves;
    for (const auto& c : r.curves)
      curves += (curves.empty() ? "" : ",") + curveJson(c, r.configuredBytes);
    fmt::print(R"({{"configured_bytes":{},"target":{:.6f},"curves":[{}]}})"
               "\n",
               r.configuredBytes, r.targetPpm / kPpm, curves);
    return;
  }
  if (r.configuredBytes > 0) fmt::print("configured cache: {}\n", formatSize(r.configuredBytes));
  for (const auto& c : r.curves) printCurve(c, r.configuredBytes, r.targetPpm);
}

struct AdviseArgs {
  std::string mountpoint;
  double target = 0.95;
  std::vector<std::string> sizes;
  std::string dataset;
  bool json = false;
  std::string trace;
  double sampleRate = 1.0;  // offline: start exact, lowered to keep maxSamples
  std::uint32_t maxSamples = 8192;
  bool exact = false;
};

Result<ctl::AdviseRequest> requestOf(const AdviseArgs& a) {
  if (!(a.target > 0 && a.target <= 1)) {
    return failure(Status::invalidArgument(fmt::format("--target {}: not in (0, 1]", a.target)));
  }
  ctl::AdviseRequest r{{}, a.dataset, toPpm(a.target)};
  for (const std::string& text : a.sizes) {
    auto size = parseSize(text);
    if (!size) return failure(size.error().withContext("--sizes " + text));
    r.sizes.push_back(*size);
  }
  std::sort(r.sizes.begin(), r.sizes.end());
  return r;
}

// Replays the trace through exact LRU stacks: the volume's and each dataset's.
Result<ctl::AdviseReply> replayExact(const AdviseArgs& a, const ctl::AdviseRequest& request) {
  cache::ExactLru volume;
  std::map<std::string, cache::ExactLru> datasets;
  TIERFS_RETURN_IF_ERROR(cache::replayTrace(a.trace, [&](const cache::TraceRecord& r) {
    volume.record(r.keyHash, r.bytes);
    if (!r.dataset.empty()) datasets[r.dataset].record(r.keyHash, r.bytes);
  }));
  ctl::AdviseReply reply{0, request.targetPpm, {}};
  auto add = [&](const std::string& name, const cache::ExactLru& lru) {
    ctl::AdviseCurve c = curveOf(name, lru, request, 0);
    c.sampledAccesses = lru.accesses();
    c.sampleRatePpm = toPpm(1.0);
    reply.curves.push_back(std::move(c));
  };
  if (request.dataset.empty()) add("", volume);
  for (const auto& [name, lru] : datasets) {
    if (request.dataset.empty() || request.dataset == name) add(name, lru);
  }
  if (reply.curves.empty()) return failure(Status::notFound("no dataset " + request.dataset));
  return reply;
}

Result<ctl::AdviseReply> replayShards(const AdviseArgs& a, const ctl::AdviseRequest& request) {
  if (!(a.sampleRate > 0 && a.sampleRate <= 1)) {
    return failure(
        Status::invalidArgument(fmt::format("--sample-rate {}: not in (0, 1]", a.sampleRate)));
  }
  cache::SizingAdvisor advisor({{a.sampleRate, a.maxSamples}, 32, ""});
  TIERFS_RETURN_IF_ERROR(cache::replayTrace(a.trace, [&](const cache::TraceRecord& r) {
    advisor.record(r.keyHash, r.bytes, r.dataset);
  }));
  return adviseReply(advisor, request, 0);
}

Result<ctl::AdviseReply> askDaemon(const AdviseArgs& a, const ctl::AdviseRequest& request) {
  std::optional<ctl::AdviseReply> answer;
  TIERFS_RETURN_IF_ERROR(askDaemonOf(a.mountpoint, request, [&](const ctl::Reply& reply) {
    if (const auto* r = std::get_if<ctl::AdviseReply>(&reply)) answer = *r;
    return false;  // one reply
  }));
  if (!answer) return failure(Status::internal("the daemon did not answer the advise request"));
  return *answer;
}

int runAdvise(const AdviseArgs& a) {
  auto request = requestOf(a);
  Result<ctl::AdviseReply> reply = failure(Status::ok());
  if (!request) {
    reply = failure(request.error());
  } else if (a.trace.empty()) {
    reply = askDaemon(a, *request);
  } else {
    reply = a.exact ? replayExact(a, *request) : replayShards(a, *request);
  }
  if (!reply) return failCommand("advise", reply.error());
  printReply(*reply, a.json);
  return 0;
}

}  // namespace

Result<ctl::AdviseReply> adviseReply(const cache::SizingAdvisor& advisor,
                                     const ctl::AdviseRequest& request,
                                     std::uint64_t configuredBytes) {
  ctl::AdviseReply reply{configuredBytes, request.targetPpm, {}};
  if (!request.dataset.empty()) {
    const cache::ShardsCurve* curve = advisor.dataset(request.dataset);
    if (!curve) {
      return failure(Status::notFound(fmt::format(
          "no curve for dataset {:?}: not read since the mount, or beyond the first {} datasets",
          request.dataset, advisor.maxDatasets())));
    }
    reply.curves.push_back(shardsCurve(request.dataset, *curve, request, configuredBytes));
    return reply;
  }
  reply.curves.push_back(shardsCurve("", advisor.volume(), request, configuredBytes));
  for (const auto& [name, curve] : advisor.datasets()) {
    reply.curves.push_back(shardsCurve(name, *curve, request, configuredBytes));
  }
  return reply;
}

void addAdviseCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<AdviseArgs>();
  auto* cmd = app.add_subcommand(
      "advise", "how large a cache the reads seen need: cache size -> expected hit ratio");
  cmd->add_option("mountpoint", args->mountpoint,
                  "a tierfs mount (default: the only one on this node)");
  cmd->add_option("--target", args->target, "the hit ratio wanted (default 0.95)");
  cmd->add_option("--sizes", args->sizes, "cache sizes to answer for (1G,2G,...)")->delimiter(',');
  cmd->add_option("--dataset", args->dataset, "one top-level directory only");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_option("--trace", args->trace, "replay a recorded access trace instead of asking");
  cmd->add_option("--sample-rate", args->sampleRate, "with --trace: the initial SHARDS rate");
  cmd->add_option("--max-samples", args->maxSamples, "with --trace: keys sampled at most");
  cmd->add_flag("--exact", args->exact, "with --trace: an exact LRU simulation, no sampling");
  cmd->callback([args, &exitCode] { exitCode = runAdvise(*args); });
}

}  // namespace tierfs::tools
