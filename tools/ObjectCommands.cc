#include "tools/ObjectCommands.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <memory>

#include "backends/SyncStore.h"
#include "common/FileUtil.h"
#include "common/Units.h"
#include "tools/BackendOptions.h"

namespace tierfs::tools {
namespace {

using backends::SyncStore;

// What every object command shares: the back-end flags and the object name.
struct ObjectArgs {
  BackendOptions backend;
  std::string oid;
  std::string file;  // "" or "-": standard input/output
  std::string cursorPrefix;
};

// Only `put` may create a dir store: a mistyped --path must not leave an empty store behind.
Result<std::unique_ptr<backends::ObjectStore>> openStore(const ObjectArgs& args,
                                                         bool create = false) {
  TIERFS_ASSIGN_OR_RETURN(auto config, args.backend.resolve());
  config.dir.create = create;
  return backends::openStore(config);
}

Result<std::string> readInput(const std::string& file) {
  if (!file.empty() && file != "-") return readSmallFile(file, std::size_t{1} << 30);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure(Status::fromErrno(errno, "reading standard input"));
    if (n == 0) return data;
    data.append(buf, static_cast<std::size_t>(n));
  }
}

Status writeOutput(const std::string& file, std::string_view data) {
  if (!file.empty() && file != "-") return writeFileDurably(file, data);
  if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() || std::fflush(stdout)) {
    return Status::ioError("writing standard output");
  }
  return Status::ok();
}

Status put(const ObjectArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto data, readInput(args.file));
  TIERFS_ASSIGN_OR_RETURN(auto store, openStore(args, true));
  return statusOf(SyncStore(*store).writeFull(args.oid, std::move(data)));
}

Status get(const ObjectArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto store, openStore(args));
  TIERFS_ASSIGN_OR_RETURN(auto data, SyncStore(*store).read(args.oid));
  return writeOutput(args.file, data);
}

Status stat(const ObjectArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto store, openStore(args));
  TIERFS_ASSIGN_OR_RETURN(auto st, SyncStore(*store).stat(args.oid));
  std::time_t mtime = st.mtimeSec;
  std::tm utc{};
  gmtime_r(&mtime, &utc);
  fmt::print("object:  {}\nsize:    {}\nversion: {}\nmtime:   {:%Y-%m-%dT%H:%M:%SZ}\n", args.oid,
             st.size, st.version, utc);
  return Status::ok();
}

Status rm(const ObjectArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto store, openStore(args));
  return statusOf(SyncStore(*store).remove(args.oid));
}

Status ls(const ObjectArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto store, openStore(args));
  SyncStore sync(*store);
  std::string cursor;
  for (;;) {
    TIERFS_ASSIGN_OR_RETURN(auto page, sync.listObjects(cursor, 1000));
    for (const auto& name : page.names) {
      if (name.starts_with(args.cursorPrefix)) fmt::print("{}\n", name);
    }
    if (!page.more) return Status::ok();
    cursor = page.nextCursor;
  }
}

Status df(const ObjectArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto store, openStore(args));
  TIERFS_ASSIGN_OR_RETURN(auto u, SyncStore(*store).usage());
  auto line = [](const char* what, std::uint64_t bytes) {
    fmt::print("{:<10} {:>10} ({} bytes)\n", what, formatSize(bytes), bytes);
  };
  fmt::print("{:<10} {}\n", "store:", store->describe());
  line("total:", u.totalBytes);
  line("used:", u.usedBytes);
  line("avail:", u.availBytes);
  fmt::print("{:<10} {}\n", "objects:", u.objects);
  return Status::ok();
}

// What a command takes besides the back-end flags.
enum class Operands { kNone, kOid, kOidAndFile, kPrefix };

void addCommand(CLI::App& object, const char* name, const char* help,
                Status (*run)(const ObjectArgs&), int& exitCode, Operands operands) {
  auto args = std::make_shared<ObjectArgs>();
  CLI::App* cmd = object.add_subcommand(name, help);
  args->backend.addTo(*cmd);
  if (operands == Operands::kOid || operands == Operands::kOidAndFile) {
    cmd->add_option("object", args->oid, "object name")->required();
  }
  if (operands == Operands::kOidAndFile) {
    cmd->add_option("file", args->file, "local file (default: standard input/output)");
  }
  if (operands == Operands::kPrefix) {
    cmd->add_option("--prefix", args->cursorPrefix, "only names starting with this");
  }
  cmd->callback([args, run, name, &exitCode] {
    Status s = run(*args);
    exitCode = s.isOk() ? 0 : failCommand(std::string("object ") + name, s);
  });
}

}  // namespace

void addObjectCommands(CLI::App& app, int& exitCode) {
  CLI::App* object = app.add_subcommand("object", "read and write raw objects of a back end");
  object->require_subcommand(1);
  addCommand(*object, "put", "store a file (or standard input) as an object", put, exitCode,
             Operands::kOidAndFile);
  addCommand(*object, "get", "write an object to a file (or standard output)", get, exitCode,
             Operands::kOidAndFile);
  addCommand(*object, "stat", "show an object's size, version and mtime", stat, exitCode,
             Operands::kOid);
  addCommand(*object, "rm", "remove an object", rm, exitCode, Operands::kOid);
  addCommand(*object, "ls", "list object names", ls, exitCode, Operands::kPrefix);
  addCommand(*object, "df", "show capacity, space used and available, and the object count", df,
             exitCode, Operands::kNone);
}

}  // namespace tierfs::tools
