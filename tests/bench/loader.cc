// bench_loader: a C++ DataLoader-style reader for tests/bench/compare.py. It reads every file of
// a manifest once, in a shuffled (or the manifest's) order, with N reader threads taking the next
// file from a shared queue, checks each file's size and XXH64 against the manifest, and prints
// one JSON line of figures. What a training job's data loader does, without Python in the way.
//
// Manifest lines: "<xxh64 hex> <size> <path relative to --root>" (tests/bench/dataset.py).
// Exit status: 0 every byte right, 1 a file was missing, short or different (named on stderr,
// counted in "bad"), 2 bad usage or an unreadable manifest.

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Entry {
  std::uint64_t hash = 0;
  std::uint64_t size = 0;
  std::string path;
};

std::vector<Entry> readManifest(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot open manifest " + file);
  std::vector<Entry> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    Entry e;
    char hash[17] = {};
    int pathAt = 0;
    if (std::sscanf(line.c_str(), "%16s %lu %n", hash, &e.size, &pathAt) != 2 || pathAt == 0 ||
        static_cast<size_t>(pathAt) >= line.size()) {
      throw std::runtime_error(file + ":" + std::to_string(n) + ": not '<xxh64> <size> <path>'");
    }
    e.hash = std::stoull(hash, nullptr, 16);
    e.path = line.substr(pathAt);
    out.push_back(std::move(e));
  }
  return out;
}

// Reads `path` whole in `block`-sized reads; its XXH64, or an error text.
struct FileResult {
  std::uint64_t bytes = 0;
  std::uint64_t hash = 0;
  std::string error;
};

FileResult readWhole(const std::string& path, std::vector<char>& buf) {
  FileResult r;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.error = std::strerror(errno);
    return r;
  }
  XXH64_state_t state;
  XXH64_reset(&state, 0);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = std::strerror(errno);
      break;
    }
    if (n == 0) break;
    XXH64_update(&state, buf.data(), static_cast<size_t>(n));
    r.bytes += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  r.hash = XXH64_digest(&state);
  return r;
}

double percentileMs(std::vector<double>& seconds, double p) {
  if (seconds.empty()) return 0;
  std::sort(seconds.begin(), seconds.end());
  size_t i = std::min(seconds.size() - 1, static_cast<size_t>(p * seconds.size()));
  return seconds[i] * 1000;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Reads every file of a manifest with parallel readers and checks its bytes."};
  std::string root, manifestFile, order = "shuffled";
  unsigned readers = 8;
  unsigned seed = 0;
  std::size_t block = 1 << 20;
  app.add_option("--root", root, "directory the manifest's paths are relative to")->required();
  app.add_option("--manifest", manifestFile, "the manifest")->required()->check(CLI::ExistingFile);
  app.add_option("--readers", readers, "reader threads")->check(CLI::Range(1u, 256u));
  app.add_option("--order", order, "shuffled or manifest")
      ->check(CLI::IsMember({"shuffled", "manifest"}));
  app.add_option("--seed", seed, "seed of the shuffle (one per epoch)");
  app.add_option("--block", block, "bytes per read() call")->check(CLI::Range(4096ul, 64ul << 20));
  CLI11_PARSE(app, argc, argv);

  std::vector<Entry> files;
  try {
    files = readManifest(manifestFile);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loader: %s\n", e.what());
    return 2;
  }
  if (order == "shuffled") std::shuffle(files.begin(), files.end(), std::mt19937_64(seed));

  std::atomic<size_t> next{0};
  std::atomic<std::uint64_t> bytes{0}, bad{0};
  std::vector<std::vector<double>> latencies(readers);
  std::mutex errMu;
  auto reader = [&](unsigned id) {
    std::vector<char> buf(block);
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      const Entry& e = files[i];
      auto t0 = std::chrono::steady_clock::now();
      FileResult r = readWhole(root + "/" + e.path, buf);
      latencies[id].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      bytes += r.bytes;
      if (r.error.empty() && r.bytes == e.size && r.hash == e.hash) continue;
      ++bad;
      std::string why = !r.error.empty()    ? r.error
                        : r.bytes != e.size ? "read " + std::to_string(r.bytes) +
                                                  " bytes, expected " + std::to_string(e.size)
                                            : "content differs from the manifest's hash";
      std::lock_guard lock(errMu);
      std::fprintf(stderr, "bench_loader: %s: %s\n", e.path.c_str(), why.c_str());
    }
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < readers; ++i) threads.emplace_back(reader, i);
  for (auto& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  double p50 = percentileMs(all, 0.50), p99 = percentileMs(all, 0.99);
  std::printf(
      "{\"files\": %zu, \"bytes\": %lu, \"seconds\": %.4f, \"files_per_s\": %.2f, "
      "\"mib_per_s\": %.2f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"bad\": %lu}\n",
      files.size(), bytes.load(), seconds, files.size() / seconds,
      bytes.load() / seconds / (1 << 20), p50, p99, bad.load());
  return bad == 0 ? 0 : 1;
}
