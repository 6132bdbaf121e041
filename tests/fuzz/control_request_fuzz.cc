// Fuzz target: the control protocol's requests (control::decodeRequest and control::recvFrame),
// what the daemon reads from any local client allowed on its socket (docs/CONTROL.md). Input: a
// mode byte, then bytes. Mode bit 0 clear: the bytes are one payload. Set: they are a stream of
// frames over a real socketpair (control_stream.h), each payload decoded as a request; bit 1
// clear also folds frame lengths beyond the input under it (control_stream.h, foldLengths).
// Checks:
//   - a rejected payload is rejected with Corruption, or NotSupported for another protocol
//     version (what the daemon answers with an ErrorReply);
//   - an accepted request re-encodes to exactly the payload, and that decodes to the same
//     request; its strings are within the protocol's 4096-byte limit;
//   - the framing: see control_stream.h.
#include <cstddef>
#include <cstdint>

#include "common/control/Protocol.h"
#include "tests/fuzz/control_stream.h"

using namespace tierfs;

namespace {

void checkStrings(const std::vector<std::string>& v) {
  for (const std::string& s : v) FUZZ_CHECK(s.size() <= 4096, "path over 4096 bytes");
}

void decodeOne(std::string_view payload) {
  auto r = control::decodeRequest(payload);
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
  if (const auto* w = std::get_if<control::WarmRequest>(&*r)) checkStrings(w->paths);
  if (const auto* e = std::get_if<control::EvictRequest>(&*r)) checkStrings(e->paths);
  if (const auto* h = std::get_if<control::HintRequest>(&*r)) checkStrings(h->paths);
  const std::string again = control::encodeRequest(*r);
  FUZZ_CHECK(again == payload, "decoded, but re-encodes to other bytes");
  auto back = control::decodeRequest(again);
  FUZZ_CHECK(back.has_value() && *back == *r, "decode(encode(x)) != x");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::runControlInput(data, size, decodeOne);
}
