#include "server/common/work_queue.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "compiler/support/status.h"
#include "gtest/gtest.h"

namespace tir::common {
namespace {

TEST(StoreWriterTest, RunsTasksInOrderOffTheCallersThreadAndFlushWaitsForThem) {
  StoreWriter w;
  std::vector<int> order;
  std::atomic<bool> onCaller{false};
  const std::thread::id caller = std::this_thread::get_id();
  for (int k = 0; k < 100; ++k) {
    w.Post([&, k] {
      order.push_back(k);
      if (std::this_thread::get_id() == caller) onCaller = true;
    });
  }
  w.Flush();
  ASSERT_EQ(order.size(), 100u);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(order[k], k);
  EXPECT_FALSE(onCaller);
  EXPECT_EQ(w.pending(), 0u);
}

TEST(StoreWriterTest, ATaskMayPostAnotherAndTheDestructorRunsEverything) {
  std::atomic<int> ran{0};
  {
    StoreWriter w;
    w.Post([&] {
      ++ran;
      w.Post([&] { ++ran; });
    });
    w.Post([&] { absl::SleepFor(absl::Milliseconds(50)); ++ran; });
  }
  EXPECT_EQ(ran, 3);
}

TEST(WorkPoolTest, BoundsConcurrencyAndRefusesPastItsQueue) {
  WorkPool pool(2, 3);
  absl::Notification release;
  std::atomic<int> inside{0}, most{0};
  auto slow = [&] {
    const int now = ++inside;
    for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {
    }
    release.WaitForNotification();
    --inside;
  };
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  auto call = [&] {
    callers.emplace_back([&] {
      if (pool.Run(slow).ok()) ++ok;
    });
  };
  auto waitFor = [&](int running, size_t queued) {
    for (int i = 0; i < 3000 && (pool.running() != running || pool.queued() != queued); ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return pool.running() == running && pool.queued() == queued;
  };
  // Two run (the pool's threads), then three wait: a sixth is refused with
  // the limit's name.
  call();
  call();
  const bool running = waitFor(2, 0);
  EXPECT_TRUE(running);
  for (int k = 0; k < 3; ++k) call();
  const bool full = running && waitFor(2, 3);
  EXPECT_TRUE(full);
  if (full) {
    const absl::Status refused = pool.Run([] {}, "maxPlanningQueue");
    EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(ReasonOf(refused), "LIMIT_EXCEEDED");
    EXPECT_NE(refused.message().find("maxPlanningQueue=3"), std::string::npos) << refused.message();
  }
  release.Notify();
  for (std::thread &t : callers) t.join();
  EXPECT_EQ(ok, 5);
  EXPECT_EQ(most, 2) << "never more than the pool's threads at once";
}

TEST(WorkPoolTest, SubmitReturnsAtOnceAndRunsTheTask) {
  absl::Notification ran;
  {
    WorkPool pool(1, 4);
    ASSERT_TRUE(pool.Submit([&] { ran.Notify(); }, "q").ok());
    EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
}

}  // namespace
}  // namespace tir::common
