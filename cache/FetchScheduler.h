#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/ObjectStore.h"
#include "common/TimerQueue.h"

// The one place where the chunk cache's back-end reads wait their turn (DESIGN: "one fetch
// scheduler with priorities"): a reader's own reads before read-ahead, read-ahead before dataset
// sweeps, sweeps before warm-ups. A global limit on reads and bytes in flight keeps the back end
// from drowning; background work (sweeps, warm-ups) may take only part of it, so a demand read
// finds a free slot at once, and a bandwidth cap keeps a warm-up from starving a running job.
namespace tierfs::cache {

enum class Priority : std::uint8_t {
  kDemand = 0,  // a reader waits for it
  kReadAhead,   // a sequential stream's next chunks
  kSweep,       // the rest of a dataset being read in random order
  kWarm,        // `tierfs warm`
};
inline constexpr std::size_t kPriorities = 4;
inline bool isBackground(Priority p) { return p >= Priority::kSweep; }

struct FetchSchedulerOptions {
  // Back-end reads at once: fewer than the RADOS store's own limit (64), so that the order is
  // decided here and metadata calls still find room there.
  unsigned maxInFlight = 48;
  std::uint64_t maxInFlightBytes = 256 << 20;  // bytes they are expected to bring
  unsigned backgroundPercent = 50;             // of maxInFlight that sweeps and warm-ups may use
  std::uint64_t backgroundBytesPerSecond = 0;  // their bandwidth cap (0: none)
};

struct FetchSchedulerStats {
  std::array<std::uint64_t, kPriorities> started{};  // reads started, by priority
  std::array<std::uint64_t, kPriorities> queued{};   // waiting now
  std::uint64_t inFlight = 0;
  std::uint64_t raised = 0;  // queued reads moved up by a more urgent asker of the same object
};

// Thread-safe. Reads start on the caller's thread or on the thread of a read that completed;
// `done` runs on the store's thread.
class FetchScheduler {
 public:
  FetchScheduler(backends::ObjectStore& store, FetchSchedulerOptions options);
  ~FetchScheduler();

  // Reads the whole object when its turn comes. `expectedBytes` counts against the bytes limit
  // and the bandwidth cap (the chunk size is a fair guess).
  void read(const std::string& oid, Priority priority, std::uint64_t expectedBytes,
            backends::Callback<Bytes> done);
  // A more urgent reader wants `oid`: a queued read of it moves up to `priority`.
  void raise(const std::string& oid, Priority priority);

  FetchSchedulerStats stats() const;

 private:
  struct Request {
    std::string oid;
    Priority priority;
    std::uint64_t bytes;
    backends::Callback<Bytes> done;
  };
  using Queue = std::list<Request>;

  // Starts what may start now. One thread at a time runs the loop; a call while it runs (from a
  // read that completed at once, inside the loop) only asks it to look again, so the stack does
  // not grow with the queue.
  void pump();
  // Takes the requests that may start now off the queues.
  std::vector<Request> takeStartableLocked(Clock::time_point now);
  void issue(Request request);
  void finished(Priority priority, std::uint64_t bytes);
  void refillLocked(Clock::time_point now);
  void wakeLaterLocked(Clock::time_point now, std::uint64_t need);

  backends::ObjectStore& store_;
  const FetchSchedulerOptions options_;
  mutable std::mutex mu_;  // guards everything below; never held while calling the store
  std::array<Queue, kPriorities> queues_;
  std::unordered_multimap<std::string, Queue::iterator> queuedByOid_;
  unsigned inFlight_ = 0, backgroundInFlight_ = 0;
  std::uint64_t bytesInFlight_ = 0;
  double tokens_ = 0;  // bytes background reads may still take (the bandwidth cap's bucket)
  Clock::time_point refilledAt_;
  bool wakeScheduled_ = false;
  bool pumping_ = false, repump_ = false;
  unsigned running_ = 0;          // reads whose completion has not finished with this object
  std::condition_variable idle_;  // running_ reached 0 (the destructor waits for it)
  FetchSchedulerStats stats_;
  TimerQueue timers_;  // last: stopped first, before the state its callbacks use
};

}  // namespace tierfs::cache
