#include "common/TimerQueue.h"

namespace tierfs {

TimerQueue::TimerQueue() : thread_([this] { run(); }) {}

TimerQueue::~TimerQueue() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

TimerQueue::TimerId TimerQueue::schedule(Clock::time_point when, std::function<void()> fn) {
  // Notify under the lock, as ThreadPool::post does: a callback due at once may end the
  // queue's owner's life as soon as the lock is released.
  std::lock_guard lock(mu_);
  const TimerId id = nextId_++;
  due_.emplace(std::make_pair(when, id), std::move(fn));
  whenById_.emplace(id, when);
  if (when < wakeAt_) {
    wakeAt_ = when;
    wake_.notify_one();
  }
  return id;
}

bool TimerQueue::cancel(TimerId id) {
  std::lock_guard lock(mu_);
  auto it = whenById_.find(id);
  if (it == whenById_.end()) return false;
  due_.erase({it->second, id});
  whenById_.erase(it);
  return true;
}

void TimerQueue::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (due_.empty()) {
      wakeAt_ = Clock::time_point::max();
      wake_.wait(lock);
      continue;
    }
    auto first = due_.begin();
    // A copy: the node may be cancelled (erased) while we wait without the lock.
    const Clock::time_point when = first->first.first;
    if (when > Clock::now()) {
      wakeAt_ = when;
      wake_.wait_until(lock, when);
      continue;
    }
    auto fn = std::move(first->second);
    whenById_.erase(first->first.second);
    due_.erase(first);
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace tierfs
