// The sizing advisor around its curves: the access trace format (and its errors naming
// file:line), the per-dataset curves and their bound, the control protocol's Advise messages,
// and the accesses a Filesystem's reads record.
#include <gtest/gtest.h>

#include <fstream>

#include "cache/SizingAdvisor.h"
#include "common/control/Protocol.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"
#include "tests/unit/FilesystemFixture.h"

namespace tierfs {
namespace {

using testing::TempDir;

TEST(AccessTrace, LinesRoundTrip) {
  for (const std::string& dataset : {std::string(), std::string("imagenet"),
                                     std::string("with space%and\nnewline"), std::string("é")}) {
    const std::string line = cache::formatTraceLine(0xfedcba9876543210ull, 4 << 20, dataset);
    ASSERT_EQ(line.back(), '\n');
    ASSERT_EQ(std::count(line.begin(), line.end(), ' '), 2) << line;
    auto back = cache::parseTraceLine(std::string_view(line).substr(0, line.size() - 1));
    ASSERT_OK(back);
    EXPECT_EQ(*back, (cache::TraceRecord{0xfedcba9876543210ull, 4 << 20, dataset}));
  }
}

TEST(AccessTrace, BadLinesAreNamedByFileAndLine) {
  TempDir dir;
  const std::string path = (dir.path() / "trace").string();
  const std::pair<std::string, std::string> cases[] = {
      {"00000000000000ff 12", "three fields"},
      {"zz 12 data", "key hash \"zz\" is not a number"},
      {"00000000000000ff 12x data", "size \"12x\" is not a number"},
      {"00000000000000ff 12 da%4", "'%' not followed by two hex digits"},
  };
  for (const auto& [bad, why] : cases) {
    std::ofstream(path) << "# a comment\n00000000000000ff 4096 /\n\n" << bad << "\n";
    int seen = 0;
    Status s = cache::replayTrace(path, [&](const cache::TraceRecord&) { ++seen; });
    EXPECT_FALSE(s.isOk()) << bad;
    EXPECT_NE(s.message().find(path + ":4: "), std::string::npos) << s.toString();
    EXPECT_NE(s.message().find(why), std::string::npos) << s.toString();
    EXPECT_EQ(seen, 1);
  }
  EXPECT_FALSE(cache::replayTrace((dir.path() / "none").string(), [](auto&) {}).isOk());
}

TEST(AccessTrace, WriterAppendsEveryLine) {
  TempDir dir;
  const std::string path = (dir.path() / "trace").string();
  {
    auto writer = cache::TraceWriter::open(path);
    ASSERT_OK(writer);
    for (std::uint64_t i = 0; i < 10'000; ++i) (*writer)->append(i, 100 + i, i % 2 ? "a" : "");
    EXPECT_EQ((*writer)->droppedLines(), 0u);
  }
  std::uint64_t next = 0;
  ASSERT_OK(cache::replayTrace(path, [&](const cache::TraceRecord& r) {
    EXPECT_EQ(r, (cache::TraceRecord{next, 100 + next, next % 2 ? "a" : ""}));
    ++next;
  }));
  EXPECT_EQ(next, 10'000u);
  EXPECT_FALSE(cache::TraceWriter::open((dir.path() / "no/such/dir").string()).has_value());
}

TEST(SizingAdvisor, KeepsOneCurvePerDatasetUpToTheBound) {
  cache::SizingAdvisor advisor({{1.0, 8192}, 2, ""});
  for (std::uint64_t i = 0; i < 300; ++i) {
    advisor.record(i, 1000, i % 3 == 0 ? "" : (i % 3 == 1 ? "a" : "b"));
  }
  for (std::uint64_t i = 0; i < 300; ++i) {
    advisor.record(i + 1'000'000, 1000, "c");  // a third dataset: the volume's curve only
  }
  EXPECT_EQ(advisor.volume().sampledAccesses(), 600u);
  ASSERT_EQ(advisor.datasets().size(), 2u);
  ASSERT_NE(advisor.dataset("a"), nullptr);
  EXPECT_EQ(advisor.dataset("a")->sampledAccesses(), 100u);
  EXPECT_EQ(advisor.dataset("c"), nullptr);
  const auto summaries = advisor.summaries(1 << 20);
  ASSERT_EQ(summaries.size(), 3u);
  EXPECT_EQ(summaries[0].dataset, "");
  EXPECT_EQ(summaries[0].workingSetBytes, 600'000u);
  EXPECT_EQ(summaries[0].hitRatioAtConfigured, 0.0);  // every key read once: all cold
  EXPECT_FALSE(summaries[0].bytesFor95.has_value());
}

TEST(SizingAdvisor, AsksForTheDatasetOnlyOfWhatItSamplesUnlessTracing) {
  cache::SizingAdvisor sampled({{0.01, 8192}, 32, ""});
  int wanted = 0;
  for (std::uint64_t i = 0; i < 100'000; ++i) wanted += sampled.count(i * 0x9E3779B97F4A7C15ull, 1);
  EXPECT_NEAR(wanted, 1000, 200);
  TempDir dir;
  auto traced = cache::SizingAdvisor::open({{0.01, 8192}, 32, (dir.path() / "t").string()});
  ASSERT_OK(traced);
  EXPECT_TRUE((*traced)->count(12345, 1));
}

TEST(AdviseProtocol, MessagesRoundTrip) {
  const control::Request request =
      control::AdviseRequest{{1 << 30, 2ull << 30}, "imagenet", 990'000};
  auto back = control::decodeRequest(control::encodeRequest(request));
  ASSERT_OK(back);
  EXPECT_TRUE(*back == request);
  control::AdviseReply reply{256 << 20, 950'000, {}};
  reply.curves.push_back({"", 5ull << 30, 8192, 123'456, 10'000, {{1 << 30, 400'000}}, 3ull << 30});
  reply.curves.push_back({"imagenet", 1 << 30, 100, 200, 1'000'000, {}, std::nullopt});
  const std::string payload = control::encodeReply(reply);
  auto decoded = control::decodeReply(payload);
  ASSERT_OK(decoded);
  EXPECT_TRUE(*decoded == control::Reply(reply));
  for (std::size_t cut = 2; cut < payload.size(); ++cut) {
    EXPECT_FALSE(control::decodeReply(payload.substr(0, cut)).has_value()) << cut;
  }
}

class AdvisorFilesystemTest : public testing::FilesystemTest {};

TEST_F(AdvisorFilesystemTest, ReadsRecordTheirChunksUnderTheTopLevelDirectory) {
  TempDir dir;
  const std::string tracePath = (dir.path() / "trace").string();
  auto advisor = cache::SizingAdvisor::open({{1.0, 8192}, 32, tracePath});
  ASSERT_OK(advisor);
  fs::FsOptions options;
  options.advisor = advisor->get();
  options.readAhead.maxWindow = 0;  // demand reads only
  auto node = startNode(options);
  fs::Filesystem& f = *node->fs;
  auto data = f.mkdir(testing::kRootIno, "data", 0755, {});
  ASSERT_OK(data);
  auto sub = f.mkdir(data->ino, "sub", 0755, {});
  ASSERT_OK(sub);
  const std::string content(3 * kChunk, 'x');
  auto deep = writeFile(f, sub->ino, "f", content);
  ASSERT_OK(deep);
  auto top = writeFile(f, testing::kRootIno, "g", content.substr(0, 1000));
  ASSERT_OK(top);
  ASSERT_OK(readFile(f, *deep));  // three chunks in one read
  ASSERT_OK(readFile(f, *top));   // one chunk
  EXPECT_EQ((*advisor)->volume().sampledAccesses(), 4u);
  ASSERT_NE((*advisor)->dataset("data"), nullptr);
  EXPECT_EQ((*advisor)->dataset("data")->sampledAccesses(), 3u);
  EXPECT_EQ((*advisor)->datasets().size(), 1u);  // "g" is in the root: no dataset
  // Each access weighs what the memory cache charges the chunk: its slab slot (64 KiB exactly for
  // a whole chunk, a 4 KiB page for the 1000-byte tail).
  const std::uint64_t chunkCharge = node->cache->memoryCharge(kChunk);
  const std::uint64_t tailCharge = node->cache->memoryCharge(1000);
  EXPECT_EQ(chunkCharge, kChunk);
  EXPECT_EQ(tailCharge, 4096u);
  EXPECT_EQ((*advisor)->volume().workingSetBytes(), 3 * chunkCharge + tailCharge);
  node.reset();
  advisor->reset();  // writes the trace out
  std::vector<cache::TraceRecord> lines;
  ASSERT_OK(cache::replayTrace(tracePath, [&](const auto& r) { lines.push_back(r); }));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].dataset, "data");
  EXPECT_EQ(lines[0].bytes, chunkCharge);
  EXPECT_EQ(lines[3].dataset, "");
  EXPECT_EQ(lines[3].bytes, tailCharge);
}

}  // namespace
}  // namespace tierfs
