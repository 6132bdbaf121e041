#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/Result.h"
#include "common/Status.h"

// The chunk access trace of the sizing advisor (docs/ADVISOR.md): one text line an access,
//   KEYHASH SIZE DATASET
// KEYHASH is the chunk key's 64-bit hash in 16 hex digits, SIZE its bytes in decimal, DATASET
// the top-level directory the file lives under, percent-encoded (bytes <= 0x20, '%' and >= 0x7f
// as %XX), or "/" for a file directly in the root. Lines starting with '#' and blank lines are
// ignored.
namespace tierfs::cache {

struct TraceRecord {
  std::uint64_t keyHash = 0;
  std::uint64_t bytes = 0;
  std::string dataset;  // "" for none
  friend bool operator==(const TraceRecord&, const TraceRecord&) = default;
};

std::string formatTraceLine(std::uint64_t keyHash, std::uint64_t bytes, std::string_view dataset);
// One line without its newline. InvalidArgument says which field is wrong.
Result<TraceRecord> parseTraceLine(std::string_view line);
// Hands each record of the trace file to `fn`, in order. Errors name file:line.
Status replayTrace(const std::string& path, const std::function<void(const TraceRecord&)>& fn);

// Appends trace lines to a file without making the recording thread wait for the disk: lines
// are buffered in memory and written by a thread of its own every ~100 ms. When the disk falls
// more than kMaxBuffered bytes behind, lines are dropped (and counted) rather than block.
//
// Thread-safe.
class TraceWriter {
 public:
  // Opens (creating, appending) `path`. IoError names the path.
  static Result<std::unique_ptr<TraceWriter>> open(const std::string& path);
  ~TraceWriter();  // writes what is buffered

  void append(std::uint64_t keyHash, std::uint64_t bytes, std::string_view dataset);
  std::uint64_t droppedLines() const;

  static constexpr std::size_t kMaxBuffered = 16 << 20;

 private:
  TraceWriter(int fd, std::string path);
  void run();
  void writeOut(const std::string& data);

  const int fd_;
  const std::string path_;
  mutable std::mutex mu_;  // guards the four below; never held while writing to the file
  std::condition_variable wake_;
  std::string buffer_;
  bool stopping_ = false;
  std::uint64_t dropped_ = 0;
  std::thread writer_;  // last: started once the rest is ready
};

}  // namespace tierfs::cache
