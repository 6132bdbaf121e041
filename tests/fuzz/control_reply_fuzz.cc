// Fuzz target: the control protocol's replies (control::decodeReply and control::recvFrame), what
// the CLI (warm, status, evict, hint, advise) reads from a daemon's socket (docs/CONTROL.md).
// Input: a mode byte, then bytes. Mode bit 0 clear: the bytes are one payload. Set: they are a
// stream of frames over a real socketpair (control_stream.h), each payload decoded as a reply;
// bit 1 clear also folds frame lengths beyond the input under it (foldLengths).
// Checks:
//   - a rejected payload is rejected with Corruption, or NotSupported for another protocol
//     version;
//   - an accepted reply re-encodes to exactly the payload, and that decodes to the same reply;
//     an ErrorReply carries a known, non-OK status code;
//   - the framing: see control_stream.h.
#include <cstddef>
#include <cstdint>

#include "common/control/Protocol.h"
#include "tests/fuzz/control_stream.h"

using namespace tierfs;

namespace {

void decodeOne(std::string_view payload) {
  auto r = control::decodeReply(payload);
  if (!r) {
    const Status& s = r.error();
    FUZZ_CHECK(s.code() == StatusCode::kCorruption || s.code() == StatusCode::kNotSupported,
               s.toString());
    if (s.code() == StatusCode::kNotSupported) {
      FUZZ_CHECK(!payload.empty() && payload[0] != static_cast<char>(control::kProtocolVersion),
                 "NotSupported for this protocol's version");
    }
    return;
  }
  if (const auto* e = std::get_if<control::ErrorReply>(&*r)) {
    FUZZ_CHECK(!e->error.isOk(), "an ErrorReply with an OK status");
  }
  const std::string again = control::encodeReply(*r);
  FUZZ_CHECK(again == payload, "decoded, but re-encodes to other bytes");
  auto back = control::decodeReply(again);
  FUZZ_CHECK(back.has_value() && *back == *r, "decode(encode(x)) != x");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::runControlInput(data, size, decodeOne);
}
