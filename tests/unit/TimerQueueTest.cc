#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/TimerQueue.h"

namespace tierfs {
namespace {

using std::chrono::milliseconds;

TEST(TimerQueueTest, RunsCallbacksInTimeOrderNotBefore) {
  TimerQueue timers;
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> last;
  auto start = Clock::now();
  timers.schedule(start + milliseconds(60), [&] {
    std::lock_guard l(mu);
    order.push_back(3);
    last.set_value();
  });
  timers.schedule(start + milliseconds(20), [&] {
    std::lock_guard l(mu);
    order.push_back(1);
  });
  timers.schedule(start + milliseconds(40), [&] {
    std::lock_guard l(mu);
    order.push_back(2);
  });
  last.get_future().wait();
  EXPECT_GE(Clock::now() - start, milliseconds(60));
  std::lock_guard l(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(TimerQueueTest, AnEarlierCallbackWakesTheSleepingThread) {
  TimerQueue timers;
  timers.schedule(Clock::now() + std::chrono::seconds(5), [] {});
  std::this_thread::sleep_for(milliseconds(20));  // let the thread go to sleep until +5 s
  std::promise<Clock::time_point> ran;
  auto start = Clock::now();
  timers.schedule(start + milliseconds(50), [&] { ran.set_value(Clock::now()); });
  auto when = ran.get_future().get();
  EXPECT_GE(when - start, milliseconds(50));
  EXPECT_LT(when - start, std::chrono::seconds(4)) << "it waited for the later callback";
}

TEST(TimerQueueTest, CancelledCallbacksNeverRun) {
  TimerQueue timers;
  std::atomic<int> ran{0};
  auto id = timers.schedule(Clock::now() + milliseconds(30), [&] { ++ran; });
  EXPECT_TRUE(timers.cancel(id));
  EXPECT_FALSE(timers.cancel(id));
  std::promise<void> done;
  timers.schedule(Clock::now() + milliseconds(60), [&] { done.set_value(); });
  done.get_future().wait();
  EXPECT_EQ(ran.load(), 0);
}

TEST(TimerQueueTest, DestructionDropsCallbacksNotYetDue) {
  std::atomic<int> ran{0};
  {
    TimerQueue timers;
    timers.schedule(Clock::now() + std::chrono::hours(1), [&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
}  // namespace tierfs
