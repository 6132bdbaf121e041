#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "common/Deadline.h"

namespace tierfs {

// One thread that runs callbacks at given times: how operations enforce their deadlines.
// Thread-safe. Callbacks run on the timer thread, one at a time, without the queue's lock held:
// they must be short and must not block. Destruction drops callbacks not yet due.
class TimerQueue {
 public:
  using TimerId = std::uint64_t;

  TimerQueue();
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  TimerId schedule(Clock::time_point when, std::function<void()> fn);
  // True when the callback was removed before it ran.
  bool cancel(TimerId id);

 private:
  void run();

  std::mutex mu_;  // guards everything below; never held while a callback runs
  std::condition_variable wake_;
  std::map<std::pair<Clock::time_point, TimerId>, std::function<void()>> due_;
  std::map<TimerId, Clock::time_point> whenById_;
  TimerId nextId_ = 1;
  // When the timer thread will next wake by itself: schedule() wakes it only for an earlier
  // callback, so the common case (a later deadline per call) costs no context switch.
  Clock::time_point wakeAt_ = Clock::time_point::max();
  bool stopping_ = false;
  std::thread thread_;  // last: started after the state above exists
};

}  // namespace tierfs
