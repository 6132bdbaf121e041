// Encode and decode throughput of the chunk codec, per core, on 4 MiB chunks of the kinds of data
// a training cluster stores. "ratio" is raw bytes / stored bytes (1.0: stored raw) and "zstd" says
// whether the frame was stored compressed, so the early abort's choices show next to their cost.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cache/ChunkCodec.h"

namespace tierfs::cache {
namespace {

constexpr std::size_t kChunkSize = 4 << 20;  // the volume's default chunk size
constexpr std::uint64_t kSeed = 42;

enum class Data { kRandom, kTokens16, kTokens32, kFloat32, kText };

template <typename T>
void appendPod(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Ranks 0..n-1 drawn with probability proportional to 1/(rank+1), the rank-frequency law of words
// and BPE tokens in natural text.
class ZipfSampler {
 public:
  explicit ZipfSampler(std::size_t n) : cdf_(n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) cdf_[i] = sum += 1.0 / static_cast<double>(i + 1);
    for (double& c : cdf_) c /= sum;
  }
  std::size_t operator()(std::mt19937_64& rng) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return std::min<std::size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin(),
                                 cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

// Token ids of a tokenized text dataset, drawn independently. Id = frequency rank, as BPE
// vocabularies roughly give frequent tokens low ids. Independent draws have none of text's
// repeated phrases, so real token files compress a little better than these.
template <typename T>
std::string tokens(std::size_t vocabulary, std::mt19937_64& rng) {
  ZipfSampler zipf(vocabulary);
  std::string out;
  out.reserve(kChunkSize);
  while (out.size() < kChunkSize) appendPod(out, static_cast<T>(zipf(rng)));
  return out;
}

// Checkpoint weights: float32 from N(0, 0.02), a common initialisation scale.
std::string floats(std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0F, 0.02F);
  std::string out;
  out.reserve(kChunkSize);
  while (out.size() < kChunkSize) appendPod(out, normal(rng));
  return out;
}

// Prose: Zipf-distributed words from a vocabulary of made-up words, with punctuation and lines.
std::string text(std::mt19937_64& rng) {
  static constexpr std::string_view kLetters = "etaoinshrdlcumwfgypbvkjxqz";
  std::vector<std::string> words(20000);
  for (auto& word : words) {
    const std::size_t length = 1 + rng() % 9;
    for (std::size_t i = 0; i < length; ++i) {
      const std::size_t common = 1 + rng() % kLetters.size();  // skews toward frequent letters
      word += kLetters[rng() % common];
    }
  }
  ZipfSampler zipf(words.size());
  std::string out;
  out.reserve(kChunkSize + 16);
  while (out.size() < kChunkSize) {
    out += words[zipf(rng)];
    out += (rng() % 15 == 0) ? ".\n" : " ";
  }
  out.resize(kChunkSize);
  return out;
}

std::string randomBytes(std::mt19937_64& rng) {
  std::string out;
  out.reserve(kChunkSize);
  while (out.size() < kChunkSize) appendPod(out, rng());
  return out;
}

std::string generate(Data data) {
  std::mt19937_64 rng(kSeed);
  switch (data) {
    case Data::kRandom:
      return randomBytes(rng);
    case Data::kTokens16:
      return tokens<std::uint16_t>(50257, rng);  // GPT-2's vocabulary
    case Data::kTokens32:
      return tokens<std::uint32_t>(128256, rng);  // Llama 3's vocabulary
    case Data::kFloat32:
      return floats(rng);
    case Data::kText:
      return text(rng);
  }
  return {};
}

// Each chunk generated once per process, whichever benchmark asks first.
const std::string& chunkOf(Data data) {
  static std::array<std::string, 5> chunks;
  std::string& chunk = chunks[static_cast<std::size_t>(data)];
  if (chunk.empty()) chunk = generate(data);
  return chunk;
}

void reportFrame(benchmark::State& state, const std::string& frame) {
  auto header = parseFrameHeader(frame);
  if (!header) return state.SkipWithError(header.error().toString().c_str());
  state.counters["ratio"] = static_cast<double>(header->rawLength) / frame.size();
  state.counters["zstd"] = header->codec == Codec::kZstd ? 1 : 0;
}

void encode(benchmark::State& state, Data data) {
  const std::string& raw = chunkOf(data);
  std::string frame;
  for (auto _ : state) {
    auto encoded = encodeChunk(raw);
    if (!encoded) return state.SkipWithError(encoded.error().toString().c_str());
    frame = std::move(*encoded);
    benchmark::DoNotOptimize(frame.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * raw.size()));
  reportFrame(state, frame);
}

void decode(benchmark::State& state, Data data) {
  const std::string& raw = chunkOf(data);
  auto frame = encodeChunk(raw);
  if (!frame) return state.SkipWithError(frame.error().toString().c_str());
  for (auto _ : state) {
    auto decoded = decodeChunk(*frame);
    if (!decoded || decoded->size() != raw.size()) return state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(decoded->data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * raw.size()));
  reportFrame(state, *frame);
}

BENCHMARK_CAPTURE(encode, random, Data::kRandom)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, tokens_u16, Data::kTokens16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, tokens_u32, Data::kTokens32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, float32, Data::kFloat32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, text, Data::kText)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, random, Data::kRandom)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, tokens_u16, Data::kTokens16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, tokens_u32, Data::kTokens32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, float32, Data::kFloat32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, text, Data::kText)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tierfs::cache

BENCHMARK_MAIN();
