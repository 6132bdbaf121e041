#include "common/ThreadPool.h"

#include <pthread.h>

namespace tierfs {

ThreadPool::ThreadPool(unsigned threads, std::string name) : name_(std::move(name)) {
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { work(); });
    // Linux limits thread names to 15 characters.
    pthread_setname_np(threads_.back().native_handle(), name_.substr(0, 15).c_str());
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::post(std::function<void()> task) {
  // Notify while holding the lock: once it is released the task may run, and a task may end the
  // pool's owner's life (it answers the last call a destructor waits for), so the poster must
  // not touch ready_ after that.
  std::lock_guard lock(mu_);
  tasks_.push_back(std::move(task));
  ready_.notify_one();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace tierfs
