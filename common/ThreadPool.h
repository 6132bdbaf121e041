#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tierfs {

// A fixed set of threads running posted tasks in FIFO order: where blocking work (file I/O,
// RocksDB, blocking library calls) runs so that asynchronous APIs stay asynchronous.
// Thread-safe. The destructor runs the tasks already posted, then joins.
class ThreadPool {
 public:
  ThreadPool(unsigned threads, std::string name);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void post(std::function<void()> task);

 private:
  void work();

  std::mutex mu_;  // guards tasks_ and stopping_; never held while a task runs
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::string name_;
  std::vector<std::thread> threads_;
};

}  // namespace tierfs
