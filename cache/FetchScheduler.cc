#include "cache/FetchScheduler.h"

#include <algorithm>

namespace tierfs::cache {
namespace {

// The bucket of the bandwidth cap holds a second's worth, and at least one large chunk.
double bucketSize(const FetchSchedulerOptions& o) {
  return std::max<double>(static_cast<double>(o.backgroundBytesPerSecond), 8 << 20);
}

}  // namespace

FetchScheduler::FetchScheduler(backends::ObjectStore& store, FetchSchedulerOptions options)
    : store_(store), options_(options), tokens_(bucketSize(options)), refilledAt_(Clock::now()) {}

FetchScheduler::~FetchScheduler() {
  std::vector<backends::Callback<Bytes>> dropped;
  std::unique_lock lock(mu_);
  for (Queue& q : queues_) {
    for (Request& r : q) dropped.push_back(std::move(r.done));
    q.clear();
  }
  queuedByOid_.clear();
  lock.unlock();
  for (auto& done : dropped) done(failure(Status::cancelled("the chunk cache is stopping")));
  lock.lock();
  idle_.wait(lock, [this] { return running_ == 0; });  // their callbacks use this object
}

void FetchScheduler::read(const std::string& oid, Priority priority, std::uint64_t expectedBytes,
                          backends::Callback<Bytes> done) {
  {
    std::lock_guard lock(mu_);
    Queue& q = queues_[static_cast<std::size_t>(priority)];
    q.push_back(Request{oid, priority, expectedBytes, std::move(done)});
    queuedByOid_.emplace(oid, std::prev(q.end()));
  }
  pump();
}

void FetchScheduler::raise(const std::string& oid, Priority priority) {
  {
    std::lock_guard lock(mu_);
    auto [begin, end] = queuedByOid_.equal_range(oid);
    for (auto it = begin; it != end; ++it) {
      Request& r = *it->second;
      if (r.priority <= priority) continue;
      Queue& from = queues_[static_cast<std::size_t>(r.priority)];
      Queue& to = queues_[static_cast<std::size_t>(priority)];
      r.priority = priority;
      to.splice(to.end(), from, it->second);  // the iterator stays valid, now into `to`
      ++stats_.raised;
    }
  }
  pump();
}

void FetchScheduler::pump() {
  std::unique_lock lock(mu_);
  if (pumping_) {
    repump_ = true;
    return;
  }
  pumping_ = true;
  for (;;) {
    repump_ = false;
    std::vector<Request> batch = takeStartableLocked(Clock::now());
    if (batch.empty() && !repump_) break;
    lock.unlock();
    for (Request& r : batch) issue(std::move(r));
    lock.lock();
  }
  pumping_ = false;
}

std::vector<FetchScheduler::Request> FetchScheduler::takeStartableLocked(Clock::time_point now) {
  refillLocked(now);
  const unsigned backgroundSlots =
      std::max(1u, options_.maxInFlight * options_.backgroundPercent / 100);
  std::vector<Request> out;
  for (std::size_t p = 0; p < kPriorities; ++p) {
    Queue& q = queues_[p];
    while (!q.empty()) {
      Request& r = q.front();
      if (inFlight_ >= options_.maxInFlight) return out;
      if (inFlight_ > 0 && bytesInFlight_ + r.bytes > options_.maxInFlightBytes) return out;
      if (isBackground(r.priority)) {  // and so is everything after it
        if (backgroundInFlight_ >= backgroundSlots) return out;
        if (options_.backgroundBytesPerSecond > 0) {
          if (tokens_ < static_cast<double>(r.bytes)) {
            wakeLaterLocked(now, r.bytes - static_cast<std::uint64_t>(std::max(0.0, tokens_)));
            return out;
          }
          tokens_ -= static_cast<double>(r.bytes);
        }
        ++backgroundInFlight_;
      }
      ++inFlight_;
      ++running_;
      bytesInFlight_ += r.bytes;
      ++stats_.started[p];
      auto [begin, end] = queuedByOid_.equal_range(r.oid);
      for (auto it = begin; it != end; ++it) {
        if (&*it->second == &r) {
          queuedByOid_.erase(it);
          break;
        }
      }
      out.push_back(std::move(r));
      q.pop_front();
    }
  }
  return out;
}

void FetchScheduler::issue(Request request) {
  store_.read(request.oid, 0, backends::kToEnd,
              [this, priority = request.priority, bytes = request.bytes,
               done = std::move(request.done)](Result<Bytes> result) {
                done(std::move(result));
                finished(priority, bytes);
              });
}

void FetchScheduler::finished(Priority priority, std::uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    --inFlight_;
    bytesInFlight_ -= bytes;
    if (isBackground(priority)) --backgroundInFlight_;
  }
  pump();
  std::lock_guard lock(mu_);  // the last touch of this object by the read
  if (--running_ == 0) idle_.notify_all();
}

void FetchScheduler::refillLocked(Clock::time_point now) {
  if (options_.backgroundBytesPerSecond == 0) return;
  const double seconds = std::chrono::duration<double>(now - refilledAt_).count();
  tokens_ = std::min(bucketSize(options_),
                     tokens_ + seconds * static_cast<double>(options_.backgroundBytesPerSecond));
  refilledAt_ = now;
}

void FetchScheduler::wakeLaterLocked(Clock::time_point now, std::uint64_t need) {
  if (wakeScheduled_) return;
  wakeScheduled_ = true;
  const auto wait = std::chrono::duration<double>(
      static_cast<double>(need) / static_cast<double>(options_.backgroundBytesPerSecond));
  timers_.schedule(now + std::chrono::duration_cast<Duration>(wait), [this] {
    {
      std::lock_guard lock(mu_);
      wakeScheduled_ = false;
    }
    pump();
  });
}

FetchSchedulerStats FetchScheduler::stats() const {
  std::lock_guard lock(mu_);
  FetchSchedulerStats s = stats_;
  for (std::size_t p = 0; p < kPriorities; ++p) s.queued[p] = queues_[p].size();
  s.inFlight = inFlight_;
  return s;
}

}  // namespace tierfs::cache
