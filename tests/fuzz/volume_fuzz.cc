// Fuzz target: the volume record (fs::decodeVolume), the object "tierfs.volume" that a mount
// reads first (docs/FORMAT.md). Input: a mode byte, then a record or a body (record_fuzz.h).
// Checks:
//   - a rejected record is rejected with Corruption;
//   - an accepted record has its fields in range (chunk size from kMinChunkSize to
//     cache::kMaxChunkSize, a known codec, a zstd level from -7 to 22);
//   - it re-encodes to exactly the input, and that decodes to the same record.
#include <cstddef>
#include <cstdint>

#include "fs/Format.h"
#include "tests/fuzz/record_fuzz.h"

using namespace tierfs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in = fuzz::recordFromInput(fuzz::asView(data, size));
  auto v = fs::decodeVolume(in);
  if (!v) {
    fuzz::checkRejection(v.error());
    return 0;
  }
  FUZZ_CHECK(v->chunkSize >= fs::kMinChunkSize && v->chunkSize <= cache::kMaxChunkSize,
             std::to_string(v->chunkSize));
  FUZZ_CHECK(v->codec == cache::Codec::kNone || v->codec == cache::Codec::kZstd, "codec");
  FUZZ_CHECK(v->zstdLevel >= -7 && v->zstdLevel <= 22, std::to_string(v->zstdLevel));
  FUZZ_CHECK(v->uuidString().size() == 36, v->uuidString());
  fuzz::checkRoundTrip(in, *v, fs::encodeVolume, fs::decodeVolume);
  return 0;
}
