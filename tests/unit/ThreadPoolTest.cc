#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "common/ThreadPool.h"

namespace tierfs {
namespace {

TEST(ThreadPoolTest, TheDestructorRunsEveryTaskPostedBeforeIt) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2, "test");
    for (int i = 0; i < 100; ++i) pool.post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(ThreadPoolTest, OneThreadRunsTasksInTheOrderPosted) {
  std::vector<int> order;
  {
    ThreadPool pool(1, "test");
    for (int i = 0; i < 20; ++i) pool.post([&order, i] { order.push_back(i); });
  }
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], i);
}

// What a store does: another thread posts the last call, the task answers it, and the waiting
// owner destroys the pool at once. The poster must be done with the pool by the time the task
// can run (ThreadSanitizer saw post() signal the condition variable after the task had ended
// the pool's life).
TEST(ThreadPoolTest, ATaskMayEndThePoolsLife) {
  for (int round = 0; round < 50; ++round) {
    auto pool = std::make_unique<ThreadPool>(1, "test");
    std::promise<void> answered;
    std::thread poster([&] { pool->post([&] { answered.set_value(); }); });
    answered.get_future().wait();
    pool.reset();
    poster.join();
  }
}

}  // namespace
}  // namespace tierfs
