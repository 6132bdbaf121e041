// tierfs_test_populate: fills one directory of a volume on the test cluster with COUNT empty
// files, writing the dentries straight into the directory object a thousand at a time. Creating
// a million files through a mount takes an hour; the load test needs a million-entry directory to
// list and stat through the mount, not a million creates. The dentries are what Filesystem's
// create writes (Volume::updateDir, ids from Volume::newId), so the mount and fsck read them as
// any others.
//
// Usage: TIERFS_TEST_CLUSTER_ENV=client.env tierfs_test_populate NAMESPACE DIR_INO COUNT PREFIX
// makes PREFIX000000000 ... in the directory with inode DIR_INO (as `stat -c %i` shows it).
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/RadosStore.h"
#include "fs/Format.h"
#include "fs/Volume.h"
#include "tests/support/ClusterEnv.h"

namespace {

using namespace tierfs;

std::uint64_t parseNumber(const char* text, const char* what) {
  std::uint64_t value = 0;
  const std::string_view s(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw std::runtime_error(fmt::format("{} must be a number, not '{}'", what, s));
  }
  return value;
}

int populate(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: tierfs_test_populate NAMESPACE DIR_INO COUNT PREFIX\n");
    return 2;
  }
  std::string error;
  auto options = testing::testClusterOptions(error);
  if (!options) throw std::runtime_error(error);
  options->nspace = argv[1];
  const fs::Ino dir = parseNumber(argv[2], "DIR_INO");
  const std::uint64_t count = parseNumber(argv[3], "COUNT");
  const std::string prefix = argv[4];

  auto store = backends::RadosStore::connect(*options);
  if (!store) throw std::runtime_error(store.error().toString());
  auto volume = fs::Volume::open(**store);
  if (!volume) throw std::runtime_error(volume.error().toString());

  constexpr std::uint64_t kBatch = 1000;
  for (std::uint64_t first = 0; first < count; first += kBatch) {
    std::vector<fs::DentryUpdate> updates;
    for (std::uint64_t i = first; i < std::min(count, first + kBatch); ++i) {
      fs::Inode n;
      auto ino = (*volume)->newId();
      if (!ino) throw std::runtime_error(ino.error().toString());
      n.ino = *ino;
      n.mode = 0644;
      n.atime = n.mtime = n.ctime = fs::Timestamp::now();
      updates.push_back({fmt::format("{}{:09}", prefix, i), "", fs::encodeInode(n)});
    }
    auto s = (*volume)->updateDir(fs::dirObject(dir), updates);
    if (!s.isOk())
      throw std::runtime_error(fmt::format("entries from {}: {}", first, s.toString()));
  }
  std::printf("populated %llu entries\n", static_cast<unsigned long long>(count));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return populate(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tierfs_test_populate: %s\n", e.what());
    return 1;
  }
}
