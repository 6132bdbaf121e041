// Fuzz target: the cache index's region record (cache::decodeRegionRecord), read from the
// RocksDB index on the cache device at every daemon start: what each sealed region holds. The
// index survives kill -9 and disk damage, so its bytes are untrusted. Input: 4 bytes of region
// number (little-endian), then the record. Checks:
//   - a rejected record is rejected with Corruption naming the region;
//   - an accepted record carries the region number given, and every entry ends before 2^32;
//   - it re-encodes to exactly the input, and that decodes to the same record.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "cache/IndexDb.h"
#include "tests/fuzz/record_fuzz.h"

using namespace tierfs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  std::uint32_t region = 0;
  for (int i = 0; i < 4; ++i) region |= std::uint32_t{data[i]} << (8 * i);
  const std::string_view in = fuzz::asView(data + 4, size - 4);
  auto r = cache::decodeRegionRecord(region, in);
  if (!r) {
    fuzz::checkRejection(r.error());
    FUZZ_CHECK(
        r.error().message().find("region record " + std::to_string(region)) != std::string::npos,
        r.error().message());
    return 0;
  }
  FUZZ_CHECK(r->region == region, "region number");
  for (const cache::EntryRecord& e : r->entries) {
    FUZZ_CHECK(std::uint64_t{e.offset} + e.length <= std::numeric_limits<std::uint32_t>::max(),
               "entry ends past 2^32");
  }
  fuzz::checkRoundTrip(in, *r, cache::encodeRegionRecord, [region](std::string_view b) {
    return cache::decodeRegionRecord(region, b);
  });
  return 0;
}
