// Fuzz target: the config file parser (tools::readDaemonSections and the [backend] reader,
// tools::BackendOptions::resolve): TOML text to the daemon's whole configuration, as `tierfs
// mount` and `tierfs config check` read it (docs/CONFIG.md). Input: the text of a config file.
//
// Confinement: the parser looks at the filesystem for a few keys ([[cache.device]] path: the free
// space and block-device size where a device would go; [cache] index_dir: the bytes an earlier
// index occupies, by walking it; [logging] target: that its directory exists). Before the real
// parse, the text is parsed here too and every such absolute path is replaced by one inside a
// private empty temporary directory (the rewritten table is what the parser then reads), so the
// target never looks at or walks a path it invented. The target writes only the input file, in
// that directory (under $TMPDIR, default /tmp), and removes the directory at exit. Nothing in
// the parser creates files.
//
// Checks:
//   - every rejection is InvalidArgument and names the file (a user reads it to fix the file);
//   - an accepted config has its values in the ranges the daemon relies on: region size from
//     1M to 256M in 4K steps, watermarks 0 < low <= high <= 1, 1..64 buffers, every cache device
//     with an absolute path and a size that holds a region, an absolute control socket path
//     when set, an advisor sample rate in (0, 1];
//   - parsing is deterministic: the same text twice gives the same outcome;
//   - parsing creates no file (the temporary directory holds only the input afterwards).
#include <fmt/format.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/FuzzCheck.h"
#include "tools/BackendOptions.h"
#include "tools/MountConfig.h"

using namespace tierfs;

namespace {

std::string jail;  // the private temporary directory; "" until LLVMFuzzerInitialize

void removeJail() {
  std::error_code ec;
  if (!jail.empty()) std::filesystem::remove_all(jail, ec);
}

// Replaces an absolute path string at `node` by `inside`.
bool confinePath(toml::node* node, const std::string& inside) {
  if (node == nullptr || !node->is_string()) return false;
  std::string& path = node->as_string()->get();
  if (path.empty() || path.front() != '/') return false;
  path = inside;
  return true;
}

// Confines every path the parser would look at (see the top comment). True when one changed.
bool confine(toml::table& root) {
  bool changed = false;
  if (toml::table* cache = root["cache"].as_table()) {
    changed |= confinePath(cache->get("index_dir"), jail + "/index");
    if (toml::array* devices = (*cache)["device"].as_array()) {
      for (std::size_t i = 0; i < devices->size(); ++i) {
        if (toml::table* d = devices->get(i)->as_table()) {
          changed |= confinePath(d->get("path"), fmt::format("{}/device{}", jail, i));
        }
      }
    }
  }
  if (toml::table* logging = root["logging"].as_table()) {
    changed |= confinePath(logging->get("target"), jail + "/log");
  }
  return changed;
}

void writeFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  FUZZ_CHECK(out.good(), "cannot write " + path);
}

// The outcome of one parse, for the determinism check.
std::string outcome(const Status& s, const tools::DaemonConfig& c) {
  if (!s.isOk()) return s.toString();
  return fmt::format("{} {} {} {} {} {}", c.devices.regions.regionSize, c.devices.devices.size(),
                     c.cache.capacityBytes, c.controlSocket, c.logging.target,
                     c.advisor.sampleRate);
}

void checkRejection(const Status& s, const std::string& file) {
  FUZZ_CHECK(s.code() == StatusCode::kInvalidArgument, s.toString());
  FUZZ_CHECK(s.message().find(file) != std::string::npos, "does not name the file: " + s.message());
}

void checkAccepted(const tools::DaemonConfig& c) {
  const auto& r = c.devices.regions;
  FUZZ_CHECK(r.regionSize >= (1u << 20) && r.regionSize <= (256u << 20) && r.regionSize % 4096 == 0,
             std::to_string(r.regionSize));
  FUZZ_CHECK(r.lowWatermark > 0 && r.lowWatermark <= r.highWatermark && r.highWatermark <= 1,
             fmt::format("{} {}", r.lowWatermark, r.highWatermark));
  FUZZ_CHECK(r.buffers >= 1 && r.buffers <= 64, std::to_string(r.buffers));
  for (const cache::DeviceSpec& d : c.devices.devices) {
    FUZZ_CHECK(!d.path.empty() && d.path.front() == '/', d.path);
    FUZZ_CHECK(d.size >= r.regionSize, std::to_string(d.size));
  }
  FUZZ_CHECK(c.controlSocket.empty() || c.controlSocket.front() == '/', c.controlSocket);
  FUZZ_CHECK(c.advisor.sampleRate > 0 && c.advisor.sampleRate <= 1,
             std::to_string(c.advisor.sampleRate));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/tierfs-config-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr, "mkdtemp " + pattern);
  jail = pattern;
  std::atexit(removeJail);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::asView(data, size);
  const std::string file = jail + "/tierfs.toml";
  std::string confined(text);
  try {
    toml::table root = toml::parse(text, file);
    if (confine(root)) {
      std::ostringstream out;
      out << root;
      confined = out.str();
    }
  } catch (const toml::parse_error&) {
    // The parser under test reports it.
  }
  writeFile(file, confined);

  std::string first;
  for (int round = 0; round < 2; ++round) {
    tools::DaemonConfig cfg;
    const Status s = tools::readDaemonSections(file, cfg);
    if (!s.isOk()) checkRejection(s, file);
    if (s.isOk()) checkAccepted(cfg);
    tools::BackendOptions backend;
    backend.setConfigFile(file);
    auto store = backend.resolve();
    if (!store) checkRejection(store.error(), file);
    const std::string o = outcome(s, cfg) + " | " + (store ? "ok" : store.error().toString());
    if (round == 0) first = o;
    FUZZ_CHECK(round == 0 || o == first, "a second parse differs: " + first + " / " + o);
  }
  // Reading a config creates nothing, not even where the devices and the index would go.
  for (const auto& entry : std::filesystem::directory_iterator(jail)) {
    FUZZ_CHECK(entry.path() == file, "the parser created " + entry.path().string());
  }
  return 0;
}
