// Writes the seed corpus of every fuzz target with the real encoders, so that the seeds stay
// valid when a format changes: `tierfs_fuzz_seeds DIR` writes DIR/<target>/<seed>. The corpus in
// tests/fuzz/corpus is this program's output (tests/fuzz/run.sh --seeds regenerates it), plus
// deploy/tierfs.toml as a config seed. Each seed carries its target's input convention (the mode
// byte or the region number described at the top of each <target>_fuzz.cc).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/ChunkCodec.h"
#include "cache/IndexDb.h"
#include "common/control/Protocol.h"
#include "fs/Format.h"
#include "tests/support/FormatSamples.h"

using namespace tierfs;
using testing::bodyOf;

namespace {

std::filesystem::path root;

void put(const std::string& target, const std::string& name, std::string_view bytes) {
  const auto dir = root / target;
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
    std::exit(1);
  }
}

// A sealed record both ways: whole ("\0" mode) and as a body the target seals ("\1" mode).
void putRecord(const std::string& target, const std::string& name, const std::string& record) {
  put(target, name + ".whole", std::string(1, '\0') + record);
  put(target, name + ".body", std::string(1, '\1') + std::string(bodyOf(record)));
}

void formatSeeds() {
  putRecord("volume", "default", fs::encodeVolume(testing::sampleVolume()));
  fs::VolumeRecord raw = testing::sampleVolume();
  raw.codec = cache::Codec::kNone;
  raw.zstdLevel = -7;
  raw.chunkSize = fs::kMinChunkSize;
  putRecord("volume", "raw-min", fs::encodeVolume(raw));
  putRecord("inode", "file", fs::encodeInode(testing::sampleFile()));
  putRecord("inode", "dir", fs::encodeInode(testing::sampleDir()));
  putRecord("inode", "symlink", fs::encodeInode(testing::sampleSymlink()));
  putRecord("intent", "replacing", fs::encodeIntent(testing::sampleIntent()));
  fs::RenameIntent plain = testing::sampleIntent();
  plain.replaced.clear();
  plain.moved = fs::encodeInode(testing::sampleDir());
  putRecord("intent", "plain", fs::encodeIntent(plain));
}

void regionSeeds() {
  auto withRegion = [](std::uint32_t region, const std::string& record) {
    std::string out;
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(region >> (8 * i)));
    return out + record;
  };
  cache::RegionRecord empty{.region = 0, .sealSeq = 1};
  put("region_record", "empty", withRegion(0, cache::encodeRegionRecord(empty)));
  cache::RegionRecord r{.region = 7, .sealSeq = 123456};
  r.entries = {{{1, 2, 0}, 0, 4096, 0x0123456789abcdefull},
               {{0x1234, 99, 3}, 8192, 65536, 42},
               {{UINT64_MAX, 1, UINT32_MAX}, 1u << 30, 100, UINT64_MAX}};
  put("region_record", "three", withRegion(7, cache::encodeRegionRecord(r)));
}

void chunkSeeds() {
  auto frame = [](std::string_view raw, cache::Codec codec) {
    auto f = cache::encodeChunk(raw, {.codec = codec, .probeBytes = 0});
    if (!f) std::exit(1);
    return *f;
  };
  const std::string text(3000, 'a');
  std::string mixed;
  for (int i = 0; i < 600; ++i) mixed += fmt::format("{}:{};", i % 17, i * 7919 % 1000);
  put("chunk", "empty", std::string(1, '\0') + frame("", cache::Codec::kNone));
  put("chunk", "raw", std::string(1, '\0') + frame("hello, chunk", cache::Codec::kNone));
  put("chunk", "raw-repair", std::string(1, '\1') + frame("hello, chunk", cache::Codec::kNone));
  put("chunk", "zstd-run", std::string(1, '\0') + frame(text, cache::Codec::kZstd));
  put("chunk", "zstd-mixed", std::string(1, '\0') + frame(mixed, cache::Codec::kZstd));
  put("chunk", "zstd-repair", std::string(1, '\7') + frame(mixed, cache::Codec::kZstd));
}

std::string framed(const std::vector<std::string>& payloads) {
  std::string out(1, '\1');  // stream mode
  for (const std::string& p : payloads) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(p.size() >> (8 * i)));
    out += p;
  }
  return out;
}

void controlSeeds() {
  using namespace control;
  const std::vector<std::pair<std::string, Request>> requests = {
      {"status", StatusRequest{"datasets/train"}},
      {"warm", WarmRequest{{"a", "b/c"}, 16}},
      {"evict", EvictRequest{{"old"}}},
      {"hint", HintRequest{{"x/1.jpg", "x/2.jpg", "y"}, 8}},
      {"advise", AdviseRequest{{1 << 30, 4ull << 30}, "train", 900'000}},
  };
  std::vector<std::string> payloads;
  for (const auto& [name, r] : requests) {
    payloads.push_back(encodeRequest(r));
    put("control_request", name, std::string(1, '\0') + payloads.back());
  }
  put("control_request", "stream", framed({payloads[0], payloads[1]}));

  AdviseCurve curve{.dataset = "train",
                    .workingSetBytes = 5 << 20,
                    .samples = 100,
                    .sampledAccesses = 1000,
                    .sampleRatePpm = 10'000,
                    .points = {{1 << 20, 500'000}, {4 << 20, 990'000}},
                    .targetBytes = 3 << 20};
  const std::vector<std::pair<std::string, Reply>> replies = {
      {"status", StatusReply{{"/mnt/t", "dir:/s", 1 << 30, 1 << 20, 3, 10, 2, 7, 8, 1, 0, 0, 5, 4},
                             TreeCounts{10, 1000, 5, 500}}},
      {"warm",
       WarmProgress{{4, 400, 1, 100}, {2, 200, 1, 100}, 150, true, {{"a/b", "no such file"}}}},
      {"evict", EvictReply{{3, 300, 2, 200}}},
      {"error", ErrorReply{Status::notFound("no such mount")}},
      {"hint", HintReply{10, 4, 6, 6000, false}},
      {"advise", AdviseReply{8 << 20, 950'000, {curve}}},
  };
  payloads.clear();
  for (const auto& [name, r] : replies) {
    payloads.push_back(encodeReply(r));
    put("control_reply", name, std::string(1, '\0') + payloads.back());
  }
  put("control_reply", "stream", framed({payloads[1], payloads[1], payloads[0]}));
}

void configSeeds() {
  put("config", "minimal", "[backend]\ntype = \"dir\"\n[backend.dir]\npath = \"/srv/store\"\n");
  put("config", "devices", R"([backend]
type = "rados"
timeout = "5s"
[backend.rados]
pool = "data"
user = "client.tierfs"
[cache]
memory_size = "64M"
region_size = "4M"
eviction = "training"
protect_for = "30m"
admission = "second_miss"
high_watermark = 0.9
low_watermark = 0.8
index_dir = "/var/cache/tierfs/index"
[[cache.device]]
path = "/var/cache/tierfs/dev0"
size = "1G"
[[cache.device]]
path = "/var/cache/tierfs/dev1"
size = 67108864
[logging]
level = "debug"
target = "/var/log/tierfs.log"
[metrics]
enabled = true
address = "[::1]:9464"
)");
  put("config", "faults", R"([backend]
type = "dir"
[[fault]]
op = "read"
object_prefix = "c."
action = "delay"
delay = "10ms"
count = 3
[[fault]]
op = "any"
action = "corrupt"
[fuse]
max_read = "128K"
threads = 4
[prefetch]
max_window = "0"
background_bandwidth = "200M"
[advisor]
sample_rate = 0.5
max_samples = 64
trace_file = "/tmp/trace"
)");
  put("config", "bad-key", "[cache]\nregion_sise = \"16M\"\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  root = argv[1];
  formatSeeds();
  regionSeeds();
  chunkSeeds();
  controlSeeds();
  configSeeds();
  return 0;
}
