#include "common/control/Protocol.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cerrno>

#include "common/Encoding.h"

namespace tierfs::control {
namespace {

enum MessageType : std::uint8_t {
  kStatusRequest = 1,
  kWarmRequest = 2,
  kEvictRequest = 3,
  kHintRequest = 4,
  kAdviseRequest = 5,
  kStatusReply = 64,
  kWarmProgress = 65,
  kEvictReply = 66,
  kHintReply = 67,
  kAdviseReply = 68,
  kErrorReply = 127,
};

// Lists no longer than this; paths no longer than PATH_MAX.
constexpr std::size_t kMaxItems = 1 << 20;
constexpr std::size_t kMaxString = 4096;

Encoder start(MessageType type) {
  Encoder e;
  e.putU8(kProtocolVersion);
  e.putU8(type);
  return e;
}

void putStrings(Encoder& e, const std::vector<std::string>& v) {
  e.putVarint(v.size());
  for (const auto& s : v) e.putString(s);
}

void putCounts(Encoder& e, const TreeCounts& c) {
  e.putVarint(c.files);
  e.putVarint(c.bytes);
  e.putVarint(c.cachedFiles);
  e.putVarint(c.cachedBytes);
}

Result<std::string> getString(Decoder& d, std::string_view field) {
  TIERFS_ASSIGN_OR_RETURN(std::string_view s, d.string(field, kMaxString));
  return std::string(s);
}

Result<std::vector<std::string>> getStrings(Decoder& d, std::string_view field) {
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint(field));
  if (n > kMaxItems || n > d.remaining()) {
    return failure(d.error(field, fmt::format("{} items cannot be in this message", n)));
  }
  std::vector<std::string> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    TIERFS_ASSIGN_OR_RETURN(auto s, getString(d, field));
    out.push_back(std::move(s));
  }
  return out;
}

Result<TreeCounts> getCounts(Decoder& d) {
  TreeCounts c;
  TIERFS_ASSIGN_OR_RETURN(c.files, d.varint("files"));
  TIERFS_ASSIGN_OR_RETURN(c.bytes, d.varint("bytes"));
  TIERFS_ASSIGN_OR_RETURN(c.cachedFiles, d.varint("cached files"));
  TIERFS_ASSIGN_OR_RETURN(c.cachedBytes, d.varint("cached bytes"));
  return c;
}

// The version and type that begin every payload.
Result<std::uint8_t> header(Decoder& d) {
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t version, d.u8("version"));
  if (version != kProtocolVersion) {
    return failure(Status::notSupported(
        fmt::format("control protocol version {} is not spoken here (this side speaks {})", version,
                    kProtocolVersion)));
  }
  return d.u8("type");
}

void putDaemon(Encoder& e, const DaemonStatus& s) {
  e.putString(s.mountpoint);
  e.putString(s.backend);
  for (std::uint64_t v : {s.capacityBytes, s.usedBytes, s.entries, s.hits, s.misses,
                          s.bytesFromCache, s.bytesFromBackend, s.evictedRegions, s.corruptions,
                          s.warmJobs, s.prefetched, s.prefetchUsed}) {
    e.putVarint(v);
  }
}

Result<DaemonStatus> getDaemon(Decoder& d) {
  DaemonStatus s;
  TIERFS_ASSIGN_OR_RETURN(s.mountpoint, getString(d, "mountpoint"));
  TIERFS_ASSIGN_OR_RETURN(s.backend, getString(d, "backend"));
  for (std::uint64_t* v : {&s.capacityBytes, &s.usedBytes, &s.entries, &s.hits, &s.misses,
                           &s.bytesFromCache, &s.bytesFromBackend, &s.evictedRegions,
                           &s.corruptions, &s.warmJobs, &s.prefetched, &s.prefetchUsed}) {
    TIERFS_ASSIGN_OR_RETURN(*v, d.varint("daemon counter"));
  }
  return s;
}

void putAdviseRequest(Encoder& e, const AdviseRequest& r) {
  e.putVarint(r.sizes.size());
  for (std::uint64_t size : r.sizes) e.putVarint(size);
  e.putString(r.dataset);
  e.putVarint(r.targetPpm);
}

Result<AdviseRequest> getAdviseRequest(Decoder& d) {
  AdviseRequest r;
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint("sizes"));
  if (n > kMaxItems || n > d.remaining()) {
    return failure(d.error("sizes", fmt::format("{} sizes cannot be in this message", n)));
  }
  r.sizes.resize(n);
  for (std::uint64_t& size : r.sizes) {
    TIERFS_ASSIGN_OR_RETURN(size, d.varint("size"));
  }
  TIERFS_ASSIGN_OR_RETURN(r.dataset, getString(d, "dataset"));
  TIERFS_ASSIGN_OR_RETURN(r.targetPpm, d.varint32("target"));
  return r;
}

void putAdviseCurve(Encoder& e, const AdviseCurve& c) {
  e.putString(c.dataset);
  for (std::uint64_t v : {c.workingSetBytes, c.samples, c.sampledAccesses}) e.putVarint(v);
  e.putVarint(c.sampleRatePpm);
  e.putVarint(c.points.size());
  for (const CurvePoint& p : c.points) {
    e.putVarint(p.cacheBytes);
    e.putVarint(p.hitPpm);
  }
  e.putU8(c.targetBytes ? 1 : 0);
  if (c.targetBytes) e.putVarint(*c.targetBytes);
}

Result<AdviseCurve> getAdviseCurve(Decoder& d) {
  AdviseCurve c;
  TIERFS_ASSIGN_OR_RETURN(c.dataset, getString(d, "dataset"));
  for (std::uint64_t* v : {&c.workingSetBytes, &c.samples, &c.sampledAccesses}) {
    TIERFS_ASSIGN_OR_RETURN(*v, d.varint("curve counter"));
  }
  TIERFS_ASSIGN_OR_RETURN(c.sampleRatePpm, d.varint32("sample rate"));
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint("points"));
  if (n > kMaxItems || n > d.remaining()) {
    return failure(d.error("points", fmt::format("{} points cannot be in this message", n)));
  }
  c.points.resize(n);
  for (CurvePoint& p : c.points) {
    TIERFS_ASSIGN_OR_RETURN(p.cacheBytes, d.varint("point size"));
    TIERFS_ASSIGN_OR_RETURN(p.hitPpm, d.varint32("point hit ratio"));
  }
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t hasTarget, d.u8("has target size"));
  if (hasTarget > 1) return failure(d.error("has target size", "not 0 or 1"));
  if (hasTarget) {
    TIERFS_ASSIGN_OR_RETURN(c.targetBytes, d.varint("target size"));
  }
  return c;
}

void putAdviseReply(Encoder& e, const AdviseReply& r) {
  e.putVarint(r.configuredBytes);
  e.putVarint(r.targetPpm);
  e.putVarint(r.curves.size());
  for (const AdviseCurve& c : r.curves) putAdviseCurve(e, c);
}

Result<AdviseReply> getAdviseReply(Decoder& d) {
  AdviseReply r;
  TIERFS_ASSIGN_OR_RETURN(r.configuredBytes, d.varint("configured bytes"));
  TIERFS_ASSIGN_OR_RETURN(r.targetPpm, d.varint32("target"));
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint("curves"));
  if (n > kMaxItems || n > d.remaining()) {
    return failure(d.error("curves", fmt::format("{} curves cannot be in this message", n)));
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    TIERFS_ASSIGN_OR_RETURN(AdviseCurve c, getAdviseCurve(d));
    r.curves.push_back(std::move(c));
  }
  return r;
}

}  // namespace

std::string encodeRequest(const Request& request) {
  if (const auto* r = std::get_if<StatusRequest>(&request)) {
    Encoder e = start(kStatusRequest);
    e.putString(r->path);
    return e.take();
  }
  if (const auto* r = std::get_if<WarmRequest>(&request)) {
    Encoder e = start(kWarmRequest);
    putStrings(e, r->paths);
    e.putVarint(r->parallel);
    return e.take();
  }
  if (const auto* r = std::get_if<HintRequest>(&request)) {
    Encoder e = start(kHintRequest);
    putStrings(e, r->paths);
    e.putVarint(r->distance);
    return e.take();
  }
  if (const auto* r = std::get_if<AdviseRequest>(&request)) {
    Encoder e = start(kAdviseRequest);
    putAdviseRequest(e, *r);
    return e.take();
  }
  Encoder e = start(kEvictRequest);
  putStrings(e, std::get<EvictRequest>(request).paths);
  return e.take();
}

Result<Request> decodeRequest(std::string_view payload) {
  Decoder d(payload, "control request");
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t type, header(d));
  Request out;
  switch (type) {
    case kStatusRequest: {
      StatusRequest r;
      TIERFS_ASSIGN_OR_RETURN(r.path, getString(d, "path"));
      out = std::move(r);
      break;
    }
    case kWarmRequest: {
      WarmRequest r;
      TIERFS_ASSIGN_OR_RETURN(r.paths, getStrings(d, "paths"));
      TIERFS_ASSIGN_OR_RETURN(r.parallel, d.varint32("parallel"));
      out = std::move(r);
      break;
    }
    case kEvictRequest: {
      EvictRequest r;
      TIERFS_ASSIGN_OR_RETURN(r.paths, getStrings(d, "paths"));
      out = std::move(r);
      break;
    }
    case kHintRequest: {
      HintRequest r;
      TIERFS_ASSIGN_OR_RETURN(r.paths, getStrings(d, "paths"));
      TIERFS_ASSIGN_OR_RETURN(r.distance, d.varint32("distance"));
      out = std::move(r);
      break;
    }
    case kAdviseRequest: {
      TIERFS_ASSIGN_OR_RETURN(out, getAdviseRequest(d));
      break;
    }
    default:
      return failure(d.error("type", fmt::format("unknown request type {}", type)));
  }
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  return out;
}

std::string encodeReply(const Reply& reply) {
  if (const auto* r = std::get_if<StatusReply>(&reply)) {
    Encoder e = start(kStatusReply);
    putDaemon(e, r->daemon);
    e.putU8(r->tree ? 1 : 0);
    if (r->tree) putCounts(e, *r->tree);
    return e.take();
  }
  if (const auto* r = std::get_if<WarmProgress>(&reply)) {
    Encoder e = start(kWarmProgress);
    putCounts(e, r->total);
    putCounts(e, r->done);
    e.putVarint(r->fetchedBytes);
    e.putU8(r->finished ? 1 : 0);
    e.putVarint(r->failures.size());
    for (const auto& f : r->failures) {
      e.putString(f.path);
      e.putString(f.message);
    }
    return e.take();
  }
  if (const auto* r = std::get_if<EvictReply>(&reply)) {
    Encoder e = start(kEvictReply);
    putCounts(e, r->evicted);
    return e.take();
  }
  if (const auto* r = std::get_if<HintReply>(&reply)) {
    Encoder e = start(kHintReply);
    for (std::uint64_t v : {r->files, r->position, r->prefetched, r->bytes}) e.putVarint(v);
    e.putU8(r->finished ? 1 : 0);
    return e.take();
  }
  if (const auto* r = std::get_if<AdviseReply>(&reply)) {
    Encoder e = start(kAdviseReply);
    putAdviseReply(e, *r);
    return e.take();
  }
  const Status& error = std::get<ErrorReply>(reply).error;
  Encoder e = start(kErrorReply);
  e.putU8(static_cast<std::uint8_t>(error.code()));
  e.putString(error.message().substr(0, kMaxString));
  return e.take();
}

Result<Reply> decodeReply(std::string_view payload) {
  Decoder d(payload, "control reply");
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t type, header(d));
  Reply out;
  switch (type) {
    case kStatusReply: {
      StatusReply r;
      TIERFS_ASSIGN_OR_RETURN(r.daemon, getDaemon(d));
      TIERFS_ASSIGN_OR_RETURN(std::uint8_t hasTree, d.u8("has tree"));
      if (hasTree > 1) return failure(d.error("has tree", "not 0 or 1"));
      if (hasTree) {
        TIERFS_ASSIGN_OR_RETURN(r.tree, getCounts(d));
      }
      out = std::move(r);
      break;
    }
    case kWarmProgress: {
      WarmProgress r;
      TIERFS_ASSIGN_OR_RETURN(r.total, getCounts(d));
      TIERFS_ASSIGN_OR_RETURN(r.done, getCounts(d));
      TIERFS_ASSIGN_OR_RETURN(r.fetchedBytes, d.varint("fetched bytes"));
      TIERFS_ASSIGN_OR_RETURN(std::uint8_t finished, d.u8("finished"));
      if (finished > 1) return failure(d.error("finished", "not 0 or 1"));
      r.finished = finished == 1;
      TIERFS_ASSIGN_OR_RETURN(std::uint64_t n, d.varint("failures"));
      if (n > kMaxItems || n > d.remaining()) {
        return failure(
            d.error("failures", fmt::format("{} failures cannot be in this message", n)));
      }
      for (std::uint64_t i = 0; i < n; ++i) {
        Failure f;
        TIERFS_ASSIGN_OR_RETURN(f.path, getString(d, "failed path"));
        TIERFS_ASSIGN_OR_RETURN(f.message, getString(d, "failure"));
        r.failures.push_back(std::move(f));
      }
      out = std::move(r);
      break;
    }
    case kEvictReply: {
      EvictReply r;
      TIERFS_ASSIGN_OR_RETURN(r.evicted, getCounts(d));
      out = std::move(r);
      break;
    }
    case kHintReply: {
      HintReply r;
      for (std::uint64_t* v : {&r.files, &r.position, &r.prefetched, &r.bytes}) {
        TIERFS_ASSIGN_OR_RETURN(*v, d.varint("hint counter"));
      }
      TIERFS_ASSIGN_OR_RETURN(std::uint8_t finished, d.u8("finished"));
      if (finished > 1) return failure(d.error("finished", "not 0 or 1"));
      r.finished = finished == 1;
      out = std::move(r);
      break;
    }
    case kAdviseReply: {
      TIERFS_ASSIGN_OR_RETURN(out, getAdviseReply(d));
      break;
    }
    case kErrorReply: {
      TIERFS_ASSIGN_OR_RETURN(std::uint8_t code, d.u8("code"));
      TIERFS_ASSIGN_OR_RETURN(std::string message, getString(d, "message"));
      if (code == 0 || code > static_cast<std::uint8_t>(StatusCode::kInternal)) {
        return failure(d.error("code", fmt::format("unknown status code {}", code)));
      }
      out = ErrorReply{Status::of(static_cast<StatusCode>(code), std::move(message))};
      break;
    }
    default:
      return failure(d.error("type", fmt::format("unknown reply type {}", type)));
  }
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  return out;
}

Status sendFrame(int fd, std::string_view payload) {
  if (payload.size() > kMaxFrame) {
    return Status::invalidArgument(fmt::format(
        "control message of {} bytes is over the limit of {}", payload.size(), kMaxFrame));
  }
  std::string frame;
  frame.reserve(4 + payload.size());
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>(payload.size() >> (8 * i)));
  frame.append(payload);
  std::string_view rest = frame;
  while (!rest.empty()) {
    ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == EPIPE || errno == ECONNRESET) {
        return Status::unavailable("control socket: the peer has gone");
      }
      return Status::fromErrno(errno, "control socket: send");
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::ok();
}

namespace {

// Reads exactly `n` bytes; false at end of stream before the first byte.
Result<bool> recvExactly(int fd, char* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, out + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      if (errno == ECONNRESET)
        return failure(Status::unavailable("control socket: the peer has gone"));
      return failure(Status::fromErrno(errno, "control socket: recv"));
    }
    if (r == 0) {
      if (got == 0) return false;
      return failure(Status::corruption(
          fmt::format("control socket: the stream ended {} bytes into a {}-byte read", got, n)));
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace

Result<std::optional<std::string>> recvFrame(int fd) {
  char header[4];
  TIERFS_ASSIGN_OR_RETURN(bool any, recvExactly(fd, header, sizeof header));
  if (!any) return std::optional<std::string>();
  std::uint32_t length = 0;
  for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<std::uint8_t>(header[i]);
  if (length > kMaxFrame) {
    return failure(Status::corruption(fmt::format(
        "control socket: a frame of {} bytes is over the limit of {}", length, kMaxFrame)));
  }
  std::string payload(length, '\0');
  TIERFS_ASSIGN_OR_RETURN(bool complete, recvExactly(fd, payload.data(), length));
  if (!complete && length > 0) {
    return failure(Status::corruption("control socket: the stream ended inside a frame"));
  }
  return std::optional<std::string>(std::move(payload));
}

}  // namespace tierfs::control
