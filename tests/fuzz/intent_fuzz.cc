// Fuzz target: the rename intent (fs::decodeIntent), an omap value of the journal object that
// the next mount or fsck replays after a crash mid-rename (docs/FORMAT.md). Input: a mode byte,
// then a record or a body (record_fuzz.h). Checks:
//   - a rejected intent is rejected with Corruption;
//   - an accepted intent names two valid file names (fs::checkName), embeds a moved inode that
//     decodes, and a replaced inode that decodes or is empty;
//   - it re-encodes to exactly the input, and that decodes to the same intent.
// The embedded inodes are themselves sealed records: mutations mostly hit the intent's own fields
// and lengths (the inode target covers the inode decoder).
#include <cstddef>
#include <cstdint>

#include "fs/Format.h"
#include "tests/fuzz/record_fuzz.h"

using namespace tierfs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in = fuzz::recordFromInput(fuzz::asView(data, size));
  auto r = fs::decodeIntent(in);
  if (!r) {
    fuzz::checkRejection(r.error());
    return 0;
  }
  FUZZ_CHECK(fs::checkName(r->srcName).isOk(), r->srcName);
  FUZZ_CHECK(fs::checkName(r->dstName).isOk(), r->dstName);
  FUZZ_CHECK(fs::decodeInode(r->moved).has_value(), "moved inode does not decode");
  FUZZ_CHECK(r->replaced.empty() || fs::decodeInode(r->replaced).has_value(),
             "replaced inode does not decode");
  fuzz::checkRoundTrip(in, *r, fs::encodeIntent, fs::decodeIntent);
  return 0;
}
