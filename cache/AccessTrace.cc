#include "cache/AccessTrace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>

namespace tierfs::cache {
namespace {

bool needsEscape(unsigned char c) { return c <= 0x20 || c == '%' || c >= 0x7f; }

std::string encodeDataset(std::string_view name) {
  if (name.empty()) return "/";
  std::string out;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (needsEscape(c)) {
      out += fmt::format("%{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

Result<std::string> decodeDataset(std::string_view field) {
  if (field == "/") return std::string();
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] != '%') {
      out += field[i];
      continue;
    }
    unsigned value = 0;
    const char* begin = field.data() + i + 1;
    if (i + 2 >= field.size() || std::from_chars(begin, begin + 2, value, 16).ptr != begin + 2) {
      return failure(Status::invalidArgument(
          fmt::format("dataset {:?}: '%' not followed by two hex digits", field)));
    }
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

template <typename T>
Result<T> parseNumber(std::string_view field, int base, std::string_view what) {
  T value{};
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value, base);
  if (ec != std::errc() || end != field.data() + field.size() || field.empty()) {
    return failure(Status::invalidArgument(fmt::format("{} {:?} is not a number", what, field)));
  }
  return value;
}

}  // namespace

std::string formatTraceLine(std::uint64_t keyHash, std::uint64_t bytes, std::string_view dataset) {
  return fmt::format("{:016x} {} {}\n", keyHash, bytes, encodeDataset(dataset));
}

Result<TraceRecord> parseTraceLine(std::string_view line) {
  const std::size_t first = line.find(' ');
  const std::size_t second = first == line.npos ? line.npos : line.find(' ', first + 1);
  if (second == line.npos || line.find(' ', second + 1) != line.npos) {
    return failure(Status::invalidArgument(
        fmt::format("{:?} is not three fields KEYHASH SIZE DATASET", line)));
  }
  TraceRecord r;
  TIERFS_ASSIGN_OR_RETURN(r.keyHash,
                          parseNumber<std::uint64_t>(line.substr(0, first), 16, "key hash"));
  TIERFS_ASSIGN_OR_RETURN(
      r.bytes, parseNumber<std::uint64_t>(line.substr(first + 1, second - first - 1), 10, "size"));
  TIERFS_ASSIGN_OR_RETURN(r.dataset, decodeDataset(line.substr(second + 1)));
  return r;
}

Status replayTrace(const std::string& path, const std::function<void(const TraceRecord&)>& fn) {
  std::ifstream in(path);
  if (!in) return Status::fromErrno(errno, "trace " + path);
  std::string line;
  for (std::uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    auto record = parseTraceLine(line);
    if (!record) {
      return Status::invalidArgument(
          fmt::format("{}:{}: {}", path, number, record.error().message()));
    }
    fn(*record);
  }
  if (in.bad()) return Status::ioError(fmt::format("trace {}: read failed", path));
  return Status::ok();
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return failure(Status::fromErrno(errno, "advisor trace " + path));
  return std::unique_ptr<TraceWriter>(new TraceWriter(fd, path));
}

TraceWriter::TraceWriter(int fd, std::string path)
    : fd_(fd), path_(std::move(path)), writer_([this] { run(); }) {}

TraceWriter::~TraceWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
  ::close(fd_);
  if (dropped_ > 0) spdlog::warn("advisor trace {}: {} lines dropped", path_, dropped_);
}

void TraceWriter::append(std::uint64_t keyHash, std::uint64_t bytes, std::string_view dataset) {
  const std::string line = formatTraceLine(keyHash, bytes, dataset);
  std::lock_guard lock(mu_);
  if (buffer_.size() + line.size() > kMaxBuffered) {
    ++dropped_;
    return;
  }
  buffer_ += line;
}

std::uint64_t TraceWriter::droppedLines() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void TraceWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; });
    std::string data = std::move(buffer_);
    buffer_.clear();
    const bool last = stopping_;
    lock.unlock();
    writeOut(data);
    lock.lock();
    if (last && buffer_.empty()) return;
  }
}

void TraceWriter::writeOut(const std::string& data) {
  std::string_view rest = data;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      spdlog::warn("advisor trace {}: {}; {} bytes lost", path_, std::strerror(errno), rest.size());
      return;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace tierfs::cache
