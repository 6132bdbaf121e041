// tierfs: one binary, one subcommand per job.
#include <fmt/format.h>
#include <rocksdb/version.h>
#include <zstd.h>

#include <CLI/CLI.hpp>

#include "backends/StoreFactory.h"
#include "common/Version.h"
#include "tools/AdviseCommand.h"
#include "tools/Allocator.h"
#include "tools/BenchCommand.h"
#include "tools/ConfigCommand.h"
#include "tools/ControlCommands.h"
#include "tools/FsCommands.h"
#include "tools/FsckCommand.h"
#include "tools/ImportExport.h"
#include "tools/ObjectCommands.h"

namespace {

void addVersionCommand(CLI::App& app) {
  app.add_subcommand("version", "print the version of tierfs and of its libraries")->callback([] {
    fmt::print("tierfs {}\n", tierfs::kVersion);
    fmt::print("  rocksdb {}.{}.{}, zstd {}, librados back end: {}\n", ROCKSDB_MAJOR, ROCKSDB_MINOR,
               ROCKSDB_PATCH, ZSTD_versionString(),
               tierfs::backends::radosAvailable() ? "yes" : "no");
    fmt::print("  malloc: {}\n", tierfs::tools::allocatorName());
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("tierfs: a caching filesystem for GPU training data in Ceph RADOS", "tierfs");
  app.require_subcommand(1);
  int exitCode = 0;
  addVersionCommand(app);
  tierfs::tools::addFsCommands(app, exitCode);
  tierfs::tools::addImportExportCommands(app, exitCode);
  tierfs::tools::addFsckCommand(app, exitCode);
  tierfs::tools::addControlCommands(app, exitCode);
  tierfs::tools::addAdviseCommand(app, exitCode);
  tierfs::tools::addObjectCommands(app, exitCode);
  tierfs::tools::addBenchCommand(app, exitCode);
  tierfs::tools::addConfigCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Prints the usage or the error; a bad command line exits 2, as is the custom.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exitCode;
}
