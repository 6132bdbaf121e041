#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/control/Protocol.h"
#include "tests/fuzz/FuzzCheck.h"

// The control protocol's framing (control::recvFrame) over a real Unix stream socket: `bytes` are
// written into one end of a socketpair, the end is shut, and frames are read from the other until
// the stream ends or a frame is rejected. `onPayload` gets each payload. Checks that a stream read
// to its clean end is exactly the frames read (a 4-byte length, then that many bytes, each), and
// that a broken stream is Corruption.
namespace tierfs::fuzz {

// A copy of a frame stream in which a frame length beyond the bytes left (plus a few, so streams
// still end early) is folded under that: recvFrame allocates the length it reads (up to 16 MiB)
// before reading the payload, which is allowed but makes every such run slow.
inline std::string foldLengths(std::string_view in) {
  std::string out(in);
  std::size_t at = 0;
  while (at + 4 <= out.size()) {
    std::uint32_t length = 0;
    for (int i = 0; i < 4; ++i)
      length |= std::uint32_t{static_cast<std::uint8_t>(out[at + i])} << (8 * i);
    const std::size_t left = out.size() - at - 4;
    if (length > left + 8) {
      length = static_cast<std::uint32_t>(length % (left + 9));
      for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>(length >> (8 * i));
    }
    at += 4 + std::size_t{length};
  }
  return out;
}

template <typename OnPayload>
void readFrames(std::string_view bytes, OnPayload onPayload) {
  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, "socketpair");
  // The input is bounded by -max_len (tests/fuzz/run.sh), well under a socket's buffer: one
  // write and no reader thread.
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const ssize_t n = ::send(fds[0], rest.data(), rest.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;  // buffer full: the reader sees a truncated stream, which is fine too
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  const std::size_t sent = bytes.size() - rest.size();
  ::shutdown(fds[0], SHUT_WR);
  std::string reassembled;
  for (;;) {
    auto frame = control::recvFrame(fds[1]);
    if (!frame) {
      checkRejection(frame.error());
      break;
    }
    if (!frame->has_value()) {
      FUZZ_CHECK(reassembled == bytes.substr(0, sent), "frames read != the stream's bytes");
      break;
    }
    const std::string& payload = **frame;
    FUZZ_CHECK(payload.size() <= control::kMaxFrame, "frame over the limit");
    for (int i = 0; i < 4; ++i) reassembled.push_back(static_cast<char>(payload.size() >> (8 * i)));
    reassembled += payload;
    onPayload(payload);
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

// One fuzz input of a control message target: the first byte picks the way in. Bit 0 clear: the
// rest is one payload for `decodeOne`; set: a frame stream read off a socket, its lengths folded
// (bit 1 clear) or as given (bit 1 set).
template <typename DecodeOne>
int runControlInput(const std::uint8_t* data, std::size_t size, DecodeOne decodeOne) {
  if (size == 0) return 0;
  const std::string_view in = asView(data + 1, size - 1);
  if (data[0] & 1) {
    readFrames((data[0] & 2) ? std::string(in) : foldLengths(in), decodeOne);
  } else {
    decodeOne(in);
  }
  return 0;
}

}  // namespace tierfs::fuzz
