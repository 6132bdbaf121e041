#include "tools/FsckCommand.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "common/Units.h"
#include "fs/Fsck.h"
#include "fs/Volume.h"
#include "tools/BackendOptions.h"

namespace tierfs::tools {
namespace {

struct FsckArgs {
  BackendOptions backend;
  bool repair = false;
  bool deep = false;
  bool json = false;
  std::string minAge = "1h";
  std::string intentMinAge = "60s";
};

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;  // UTF-8 passes through; names that are not UTF-8 stay bytes
        }
    }
  }
  return out + "\"";
}

std::chrono::seconds seconds(const std::string& text) {
  // Validated by the option's check.
  return std::chrono::duration_cast<std::chrono::seconds>(*parseDuration(text));
}

void printText(const fs::FsckReport& r, const fs::FsckOptions& o) {
  for (const auto& f : r.findings) {
    fmt::print("{:<13} {}: {}{}: {}\n", fs::stateName(f.state), fs::kindName(f.kind), f.object,
               f.path.empty() ? "" : fmt::format(" ({})", f.path), f.detail);
  }
  fmt::print(
      "checked {} directories, {} files, {} symlinks; {} objects, {} chunk objects, {} "
      "referenced{}\n",
      r.directories, r.files, r.symlinks, r.objects, r.chunkObjects, r.chunksReferenced,
      o.deep ? fmt::format(", {} read and verified", r.chunksVerified) : "");
  if (r.orphanChunks > 0) {
    fmt::print("orphaned chunk objects: {} ({})\n", r.orphanChunks, formatSize(r.orphanBytes));
  }
  const std::uint64_t problems = r.problems();
  if (problems == 0) {
    fmt::print("clean{}\n", r.repaired() > 0 ? fmt::format(" after {} repairs", r.repaired()) : "");
  } else {
    fmt::print("{} problem(s) {}{}\n", problems, o.repair ? "remain" : "found",
               o.repair ? fmt::format(", {} repaired", r.repaired())
                        : "; --repair fixes those marked 'found'");
  }
}

void printJson(const fs::FsckReport& r, const fs::FsckOptions& o, const fs::Volume& volume,
               const std::string& store) {
  fmt::print("{{\n  \"volume\": {},\n  \"store\": {},\n  \"repair\": {},\n  \"deep\": {},\n",
             jsonString(volume.record().uuidString()), jsonString(store), o.repair, o.deep);
  fmt::print("  \"findings\": [");
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const auto& f = r.findings[i];
    fmt::print(
        "{}\n    {{\"kind\": {}, \"state\": {}, \"problem\": {}, \"object\": {}, \"path\": {}, "
        "\"detail\": {}}}",
        i ? "," : "", jsonString(fs::kindName(f.kind)), jsonString(fs::stateName(f.state)),
        f.isProblem(), jsonString(f.object), jsonString(f.path), jsonString(f.detail));
  }
  fmt::print("{}],\n", r.findings.empty() ? "" : "\n  ");
  fmt::print(
      "  \"summary\": {{\"directories\": {}, \"files\": {}, \"symlinks\": {}, \"objects\": {}, "
      "\"chunk_objects\": {}, \"chunks_referenced\": {}, \"chunks_verified\": {}, "
      "\"orphan_chunks\": {}, \"orphan_bytes\": {}, \"problems\": {}, \"repaired\": {}}},\n",
      r.directories, r.files, r.symlinks, r.objects, r.chunkObjects, r.chunksReferenced,
      r.chunksVerified, r.orphanChunks, r.orphanBytes, r.problems(), r.repaired());
  fmt::print("  \"clean\": {}\n}}\n", r.problems() == 0);
}

int runFsck(const FsckArgs& args) {
  auto config = args.backend.resolve();
  if (!config) return failCommand("fsck", config.error());
  config->dir.create = false;  // a mistyped --path must not become an empty store
  auto store = backends::openStore(*config);
  if (!store) return failCommand("fsck", store.error());
  auto volume = fs::Volume::open(**store);
  if (!volume) return failCommand("fsck", volume.error());
  fs::FsckOptions options;
  options.repair = args.repair;
  options.deep = args.deep;
  options.minAge = seconds(args.minAge);
  options.intentMinAge = seconds(args.intentMinAge);
  if (!args.json) {
    fmt::print("{} volume {} in {}{}\n", args.repair ? "repairing" : "checking",
               (*volume)->record().uuidString(), (*store)->describe(),
               args.deep ? " (deep: reading every chunk)" : "");
    std::fflush(stdout);
  }
  auto report = fs::checkVolume(**volume, options);
  if (!report) return failCommand("fsck", report.error());
  if (args.json) {
    printJson(*report, options, **volume, (*store)->describe());
  } else {
    printText(*report, options);
  }
  std::fflush(stdout);
  return report->problems() == 0 ? 0 : 1;
}

}  // namespace

void addFsckCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<FsckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fsck", "check a volume; --repair fixes what it safely can (exit 0 clean, 1 problems)");
  args->backend.addTo(*cmd);
  CLI::Validator duration(
      [](std::string& text) {
        auto d = parseDuration(text);
        return d ? std::string() : d.error().message();
      },
      "DURATION");
  cmd->add_flag("--repair", args->repair,
                "remove garbage older than --min-age, finish interrupted renames, and fix what "
                "can be fixed without losing data");
  cmd->add_flag("--deep", args->deep,
                "also read every referenced chunk and verify its frame and length");
  cmd->add_option("--min-age", args->minAge,
                  "orphans changed more recently than this are left alone (a live daemon may "
                  "still commit them)")
      ->check(duration)
      ->capture_default_str();
  cmd->add_option("--intent-min-age", args->intentMinAge,
                  "rename intents younger than this are left alone")
      ->check(duration)
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->callback([args, &exitCode] { exitCode = runFsck(*args); });
}

}  // namespace tierfs::tools
