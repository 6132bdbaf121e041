#include "tools/BenchCommand.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <mutex>
#include <random>

#include "backends/SyncStore.h"
#include "common/Units.h"
#include "tools/BackendOptions.h"

namespace tierfs::tools {
namespace {

struct BenchArgs {
  BackendOptions backend;
  std::string size = "4M";
  unsigned inFlight = 16;
  double seconds = 10;
  bool json = false;
  bool keep = false;
};

struct PhaseResult {
  std::string phase;
  std::uint64_t ops = 0, bytes = 0, errors = 0;
  double seconds = 0, latencySum = 0;
  double cpuSeconds = 0;  // user + system time of this process during the phase
  std::string firstError;
};

double processCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Keeps `inFlight` calls outstanding until the time is up: the closed loop rados bench runs.
// As in rados bench, the calling thread issues every call and completions only count and wake
// it, so the store's completion thread is not also the submitting thread.
class ClosedLoop {
 public:
  using Issue = std::function<void(std::uint64_t seq, std::function<void(Status, std::uint64_t)>)>;

  ClosedLoop(unsigned inFlight, double seconds, Issue issue)
      : inFlight_(inFlight), seconds_(seconds), issue_(std::move(issue)) {}

  PhaseResult run(const std::string& phase) {
    result_.phase = phase;
    const double cpuBefore = processCpuSeconds();
    const auto start = Clock::now();
    const auto end =
        start + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds_));
    std::unique_lock lock(mu_);
    for (std::uint64_t seq = 0; Clock::now() < end; ++seq) {
      slotFree_.wait(lock, [this] { return outstanding_ < inFlight_; });
      ++outstanding_;
      lock.unlock();
      issue(seq);
      lock.lock();
    }
    slotFree_.wait(lock, [this] { return outstanding_ == 0; });
    result_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result_.cpuSeconds = processCpuSeconds() - cpuBefore;
    return result_;
  }

 private:
  void issue(std::uint64_t seq) {
    auto began = Clock::now();
    issue_(seq, [this, began](Status s, std::uint64_t bytes) {
      double latency = std::chrono::duration<double>(Clock::now() - began).count();
      std::lock_guard lock(mu_);
      if (s.isOk()) {
        ++result_.ops;
        result_.bytes += bytes;
        result_.latencySum += latency;
      } else if (result_.errors++ == 0) {
        result_.firstError = s.toString();
      }
      --outstanding_;
      slotFree_.notify_one();
    });
  }

  unsigned inFlight_;
  double seconds_;
  Issue issue_;
  std::mutex mu_;  // guards the members below
  std::condition_variable slotFree_;
  unsigned outstanding_ = 0;
  PhaseResult result_;
};

void report(const PhaseResult& r, std::uint64_t objectSize, unsigned inFlight, bool json) {
  double mib = r.bytes / 1048576.0 / r.seconds;
  double lat = r.ops ? r.latencySum / r.ops * 1000 : 0;
  double cpuUs = r.ops ? r.cpuSeconds / r.ops * 1e6 : 0;  // the client's CPU per call
  if (json) {
    fmt::print(
        "{{\"phase\":\"{}\",\"object_size\":{},\"in_flight\":{},\"ops\":{},\"seconds\":{:.3f},"
        "\"mib_per_s\":{:.1f},\"avg_latency_ms\":{:.2f},\"cpu_us_per_op\":{:.1f},\"errors\":{}}}\n",
        r.phase, objectSize, inFlight, r.ops, r.seconds, mib, lat, cpuUs, r.errors);
  } else {
    fmt::print(
        "{:<5} {:>9} B x{:<3}: {:>6} ops in {:.2f} s, {:>8.1f} MiB/s, avg latency {:.2f} ms, "
        "client CPU {:.1f} us/op",
        r.phase, objectSize, inFlight, r.ops, r.seconds, mib, lat, cpuUs);
    fmt::print("{}\n",
               r.errors ? fmt::format(", {} errors (first: {})", r.errors, r.firstError) : "");
  }
}

Status runBench(const BenchArgs& args) {
  TIERFS_ASSIGN_OR_RETURN(auto size, parseSize(args.size));
  if (size == 0) return Status::invalidArgument("--size must be at least 1 byte");
  TIERFS_ASSIGN_OR_RETURN(auto config, args.backend.resolve());
  TIERFS_ASSIGN_OR_RETURN(auto store, backends::openStore(config));
  // One buffer shared by every write, as rados bench does; its bytes are no more random.
  const Bytes payload(std::string(size, 'x'));
  const std::string prefix = fmt::format("tierfs-bench.{}.", ::getpid());
  auto name = [&](std::uint64_t i) { return prefix + std::to_string(i); };

  ClosedLoop writer(args.inFlight, args.seconds, [&](std::uint64_t seq, auto done) {
    store->writeFull(name(seq), payload,
                     [done, size](Result<std::uint64_t> r) { done(statusOf(r), size); });
  });
  PhaseResult written = writer.run("write");
  report(written, size, args.inFlight, args.json);
  if (written.errors) return Status::ioError("write phase failed: " + written.firstError);

  std::mt19937_64 rng(42);
  std::mutex rngMu;
  ClosedLoop reader(args.inFlight, args.seconds, [&](std::uint64_t, auto done) {
    std::uint64_t pick;
    {
      std::lock_guard lock(rngMu);
      pick = rng() % written.ops;
    }
    store->read(name(pick), 0, backends::kToEnd,
                [done](Result<Bytes> r) { done(statusOf(r), r ? r->size() : 0); });
  });
  PhaseResult read = reader.run("rand");
  report(read, size, args.inFlight, args.json);

  if (!args.keep) {
    backends::SyncStore sync(*store);
    for (std::uint64_t i = 0; i < written.ops; ++i) (void)sync.remove(name(i));
  }
  if (read.errors) return Status::ioError("read phase failed: " + read.firstError);
  return Status::ok();
}

}  // namespace

void addBenchCommand(CLI::App& app, int& exitCode) {
  CLI::App* bench = app.add_subcommand("bench", "measure a back end");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchArgs>();
  CLI::App* store = bench->add_subcommand(
      "store", "write objects for --seconds, then read random ones for --seconds");
  args->backend.addTo(*store);
  store->add_option("--size", args->size, "object size (e.g. 4M, 128K)")->capture_default_str();
  store->add_option("-t,--concurrent", args->inFlight, "requests outstanding (as rados bench -t)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  store->add_option("--seconds", args->seconds, "length of each phase")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  store->add_flag("--json", args->json, "one JSON object per phase");
  store->add_flag("--keep", args->keep, "leave the written objects in place");
  store->callback([args, &exitCode] {
    Status s = runBench(*args);
    exitCode = s.isOk() ? 0 : failCommand("bench store", s);
  });
}

}  // namespace tierfs::tools
