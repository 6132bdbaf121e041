#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/Result.h"
#include "common/Status.h"

// The daemon's control protocol (docs/CONTROL.md): the CLI's warm, status and evict commands
// send one request over the daemon's Unix socket and read replies until the last one. Each
// message is a frame: a 4-byte little-endian length, then the payload: the protocol version,
// the message type, and the fields (common/Encoding.h). A peer that speaks another version gets
// an ErrorReply naming both versions.
namespace tierfs::control {

inline constexpr std::uint8_t kProtocolVersion = 1;
inline constexpr std::uint32_t kMaxFrame = 16 << 20;

// Paths are relative to the mount's root ("" or "." is the root itself).
struct StatusRequest {
  std::string path;  // "": the daemon only
  friend bool operator==(const StatusRequest&, const StatusRequest&) = default;
};
struct WarmRequest {
  std::vector<std::string> paths;
  std::uint32_t parallel = 8;  // chunks fetched at once
  friend bool operator==(const WarmRequest&, const WarmRequest&) = default;
};
struct EvictRequest {
  std::vector<std::string> paths;
  friend bool operator==(const EvictRequest&, const EvictRequest&) = default;
};
// Hinted prefetch: the order in which the client's reader will open files (an epoch's sample
// order). The daemon fetches ahead in that order while the connection stays open.
struct HintRequest {
  std::vector<std::string> paths;
  std::uint32_t distance = 64;  // files fetched ahead of the reader
  friend bool operator==(const HintRequest&, const HintRequest&) = default;
};
// `tierfs advise`: the sizing advisor's miss-ratio curves (docs/ADVISOR.md). Ratios travel as
// millionths.
struct AdviseRequest {
  std::vector<std::uint64_t> sizes;   // cache sizes to answer for; empty: the daemon picks
  std::string dataset;                // a top-level directory; "": the volume and every dataset
  std::uint32_t targetPpm = 950'000;  // the hit ratio wanted
  friend bool operator==(const AdviseRequest&, const AdviseRequest&) = default;
};
using Request = std::variant<StatusRequest, WarmRequest, EvictRequest, HintRequest, AdviseRequest>;

// Files and bytes of a tree, and how much of them the cache holds on this node.
struct TreeCounts {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;        // logical (what stat shows)
  std::uint64_t cachedFiles = 0;  // files whose every chunk is cached
  std::uint64_t cachedBytes = 0;  // logical bytes of the chunks cached
  friend bool operator==(const TreeCounts&, const TreeCounts&) = default;
};

// The daemon's cache: what `tierfs status` shows.
struct DaemonStatus {
  std::string mountpoint;
  std::string backend;
  std::uint64_t capacityBytes = 0;  // of the cache devices (0: memory only)
  std::uint64_t usedBytes = 0;
  std::uint64_t entries = 0;
  std::uint64_t hits = 0;    // memory and device
  std::uint64_t misses = 0;  // reads from the back end
  std::uint64_t bytesFromCache = 0;
  std::uint64_t bytesFromBackend = 0;
  std::uint64_t evictedRegions = 0;
  std::uint64_t corruptions = 0;
  std::uint64_t warmJobs = 0;      // running now
  std::uint64_t prefetched = 0;    // chunks fetched ahead of readers
  std::uint64_t prefetchUsed = 0;  // of them, asked for by a reader afterwards
  friend bool operator==(const DaemonStatus&, const DaemonStatus&) = default;
};

struct StatusReply {
  DaemonStatus daemon;
  std::optional<TreeCounts> tree;  // when a path was asked about
  friend bool operator==(const StatusReply&, const StatusReply&) = default;
};

struct Failure {
  std::string path;
  std::string message;
  friend bool operator==(const Failure&, const Failure&) = default;
};

// Sent while a warm-up runs (every ~250 ms) and once at its end (`done`).
struct WarmProgress {
  TreeCounts total;  // of the trees named (files, bytes)
  TreeCounts done;   // files and bytes handled so far; cached* = already cached before
  std::uint64_t fetchedBytes = 0;  // stored bytes read from the back end
  bool finished = false;
  std::vector<Failure> failures;  // the files that could not be cached (in the last reply)
  friend bool operator==(const WarmProgress&, const WarmProgress&) = default;
};

struct EvictReply {
  TreeCounts evicted;  // files and bytes of the trees; cached* = what was dropped
  friend bool operator==(const EvictReply&, const EvictReply&) = default;
};

struct ErrorReply {
  Status error;
  friend bool operator==(const ErrorReply&, const ErrorReply&) = default;
};

// Sent when a hint is taken (files found), then when the reader has reached its end (finished).
struct HintReply {
  std::uint64_t files = 0;       // of the order, found in the volume
  std::uint64_t position = 0;    // of them, the reader has reached
  std::uint64_t prefetched = 0;  // files whose chunks were asked for
  std::uint64_t bytes = 0;       // of their chunks
  bool finished = false;
  friend bool operator==(const HintReply&, const HintReply&) = default;
};

struct CurvePoint {
  std::uint64_t cacheBytes = 0;
  std::uint32_t hitPpm = 0;  // the expected hit ratio of an LRU cache of that size
  friend bool operator==(const CurvePoint&, const CurvePoint&) = default;
};

// One miss-ratio curve: the volume's ("") or a top-level directory's.
struct AdviseCurve {
  std::string dataset;
  std::uint64_t workingSetBytes = 0;  // distinct bytes read so far (estimated)
  std::uint64_t samples = 0;          // keys sampled now
  std::uint64_t sampledAccesses = 0;  // accesses behind the curve
  std::uint32_t sampleRatePpm = 0;
  std::vector<CurvePoint> points;            // by size
  std::optional<std::uint64_t> targetBytes;  // the smallest size reaching the target
  friend bool operator==(const AdviseCurve&, const AdviseCurve&) = default;
};

struct AdviseReply {
  std::uint64_t configuredBytes = 0;  // the daemon's cache: memory and devices
  std::uint32_t targetPpm = 0;
  std::vector<AdviseCurve> curves;  // the volume's first
  friend bool operator==(const AdviseReply&, const AdviseReply&) = default;
};

using Reply =
    std::variant<StatusReply, WarmProgress, EvictReply, ErrorReply, HintReply, AdviseReply>;

std::string encodeRequest(const Request& request);
Result<Request> decodeRequest(std::string_view payload);
std::string encodeReply(const Reply& reply);
Result<Reply> decodeReply(std::string_view payload);

// One frame over a connected stream socket. sendFrame never raises SIGPIPE: a peer that is gone
// is an Unavailable status. recvFrame gives nullopt at a clean end of stream (no partial frame).
Status sendFrame(int fd, std::string_view payload);
Result<std::optional<std::string>> recvFrame(int fd);

}  // namespace tierfs::control
