#include "fs/ReadAhead.h"

#include <algorithm>

namespace tierfs::fs {
namespace {

std::uint64_t roundUp(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

ReadAheadOptions fitReadAheadToMemory(ReadAheadOptions options, std::uint64_t memoryBytes) {
  options.maxWindow = std::min(options.maxWindow, memoryBytes / 4);
  options.budget = std::min(options.budget, memoryBytes / 2);
  return options;
}

ByteRange ReadAheadStream::onRead(std::uint64_t offset, std::uint64_t length, std::uint64_t size,
                                  const ReadAheadOptions& o) {
  std::lock_guard lock(mu_);
  const std::uint64_t end = offset + length;
  // How far from the expected position a read may land and still continue the stream: once it
  // is one, the reads in flight (up to the window) may be answered in any order; a reader may
  // skip forward a little. A read before the expected position is not a stream yet (a random
  // reader reading one place twice).
  const std::uint64_t behind = window_;
  const std::uint64_t skip = std::max(window_, o.chunkSize / 4);
  const bool continues = started_ && offset + behind >= next_ && offset <= next_ + skip;
  if (continues) {
    window_ = std::min(std::max(window_ * 2, o.chunkSize), o.maxWindow);
    next_ = std::max(next_, end);
  } else {
    // A stream starts at the beginning of a file; a read elsewhere (a seek) ends one.
    window_ = offset == 0 ? std::min(o.chunkSize, o.maxWindow) : 0;
    fetchedUntil_ = 0;
    next_ = end;
  }
  started_ = true;
  if (window_ == 0) return {};
  ByteRange ahead{std::max(fetchedUntil_, roundUp(next_, o.chunkSize)),
                  std::min(roundUp(next_ + window_, o.chunkSize), size)};
  if (ahead.empty()) return {};
  fetchedUntil_ = ahead.end;
  return ahead;
}

void ReadAheadStream::notFetched(const ByteRange& range) {
  std::lock_guard lock(mu_);
  if (fetchedUntil_ == range.end) fetchedUntil_ = range.begin;
}

ReadAhead::~ReadAhead() {
  std::unique_lock lock(state_->mu);
  state_->idle.wait(lock, [this] { return state_->inFlight == 0; });
}

bool ReadAhead::reserve(std::uint64_t bytes) {
  std::lock_guard lock(state_->mu);
  if (state_->inFlight + bytes > options_.budget) {
    state_->counters.bytesOverBudget += bytes;
    return false;
  }
  state_->inFlight += bytes;
  return true;
}

void ReadAhead::onRead(ReadAheadStream& stream, Ino ino, const std::vector<Extent>& extents,
                       std::uint64_t size, std::uint64_t offset, std::uint64_t length) {
  if (options_.maxWindow == 0) return;
  const ByteRange ahead = stream.onRead(offset, length, size, options_);
  if (ahead.empty()) return;
  const std::uint64_t bytes = ahead.end - ahead.begin;
  if (!reserve(bytes)) return stream.notFetched(ahead);
  std::size_t started = reader_.prefetch(ino, extents, ahead.begin, bytes, [state = state_, bytes] {
    std::lock_guard lock(state->mu);
    state->inFlight -= bytes;
    if (state->inFlight == 0) state->idle.notify_all();
  });
  std::lock_guard lock(state_->mu);
  state_->counters.chunksFetched += started;
}

ReadAhead::Counters ReadAhead::counters() const {
  std::lock_guard lock(state_->mu);
  return state_->counters;
}

}  // namespace tierfs::fs
