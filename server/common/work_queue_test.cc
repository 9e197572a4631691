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

// Clients are served in turn: one that queued ten tasks delays another's
// by one of them, and none may hold more than an eighth of the queue.
TEST(WorkPoolTest, ClientsAreServedInTurnAndEachHoldsAnEighth) {
  WorkPool pool(1, 16);
  absl::Notification release;
  std::atomic<bool> started{false};
  ASSERT_TRUE(pool.Submit([&] {
                started = true;
                release.WaitForNotification();
              }, "q").ok());
  for (int i = 0; i < 1000 && !started; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_TRUE(started);
  absl::Mutex mu;
  std::vector<std::string> order;
  auto task = [&](const std::string &who) {
    return [&, who] {
      absl::MutexLock l(&mu);
      order.push_back(who);
    };
  };
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(pool.Submit(task("a"), "q", "a").ok());
  absl::Status third = pool.Submit(task("a"), "q", "a");
  EXPECT_EQ(ReasonOf(third), "LIMIT_EXCEEDED") << "16 / 8 = 2 per client";
  EXPECT_NE(third.message().find("for this client"), std::string::npos) << third.message();
  ASSERT_TRUE(pool.Submit(task("b"), "q", "b").ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool.Submit(task("own"), "q").ok()) << "the coordinator's own work is not capped";
  ASSERT_TRUE(pool.Submit(task("c"), "q", "c").ok());
  release.Notify();
  pool.Drain();
  // ("own" had just run the first task: its turn comes after c's.)
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "own", "a", "own", "own", "own", "own"}));
}

// One client's tasks take at most half the threads: its second heavy task
// waits while another client's runs on the other thread.
TEST(WorkPoolTest, OneClientTakesAtMostHalfTheThreads) {
  WorkPool pool(2, 64);
  absl::Notification release;
  std::atomic<int> a_running{0}, b_ran{0};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pool.Submit([&] {
                  ++a_running;
                  release.WaitForNotification();
                }, "q", "a").ok());
  }
  for (int i = 0; i < 1000 && a_running == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_TRUE(pool.Submit([&] { ++b_ran; }, "q", "b").ok());
  for (int i = 0; i < 1000 && b_ran == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(b_ran, 1) << "b ran while a's first task held a thread";
  EXPECT_EQ(a_running, 1) << "a's second task waits for its first";
  EXPECT_EQ(pool.queued(), 1u);
  release.Notify();
  pool.Drain();
  EXPECT_EQ(a_running, 2);
}

// A client with nothing running goes before clients with tasks running,
// whatever the turns say: with both threads held by two busy clients, a
// newcomer's task runs on the first thread to free.
TEST(WorkPoolTest, AClientWithNothingRunningGoesFirst) {
  WorkPool pool(2, 64);
  absl::Notification release_a, release_b;
  std::atomic<int> started{0};
  absl::Mutex mu;
  std::vector<std::string> order;
  auto heavy = [&](absl::Notification *gate, const std::string &who) {
    return [&, gate, who] {
      {
        absl::MutexLock l(&mu);
        order.push_back(who);
      }
      ++started;
      gate->WaitForNotification();
    };
  };
  ASSERT_TRUE(pool.Submit(heavy(&release_a, "a"), "q", "a").ok());
  ASSERT_TRUE(pool.Submit(heavy(&release_b, "b"), "q", "b").ok());
  for (int i = 0; i < 1000 && started < 2; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(started, 2);
  ASSERT_TRUE(pool.Submit(heavy(&release_a, "a2"), "q", "a").ok());
  ASSERT_TRUE(pool.Submit(heavy(&release_b, "b2"), "q", "b").ok());
  ASSERT_TRUE(pool.Submit(heavy(&release_a, "c"), "q", "c").ok());
  release_a.Notify();  // a's thread frees (and a2 and c then pass their gates at once)
  for (int i = 0; i < 1000 && started < 3; ++i) absl::SleepFor(absl::Milliseconds(5));
  {
    absl::MutexLock l(&mu);
    ASSERT_GE(order.size(), 3u);
    EXPECT_EQ(order[2], "c") << "the newcomer before a's and b's next tasks";
  }
  release_b.Notify();
  pool.Drain();
}

// Two clients at their shares (half the threads each) would hold every
// thread; a client's second task waits while it would take the last free
// one, so a third client's short task runs while both keep theirs.
TEST(WorkPoolTest, TwoBusyClientsLeaveAThreadForAThird) {
  WorkPool pool(4, 64);
  absl::Notification release;
  std::atomic<int> running{0}, c_ran{0};
  for (const char *who : {"a", "b"}) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(pool.Submit([&] {
                    ++running;
                    release.WaitForNotification();
                  }, "q", who).ok());
    }
  }
  for (int i = 0; i < 1000 && running < 3; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(running, 3);
  EXPECT_EQ(pool.running(), 3) << "a fourth busy task took the last thread";
  ASSERT_TRUE(pool.Submit([&] { ++c_ran; }, "q", "c").ok());
  for (int i = 0; i < 1000 && c_ran == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(c_ran, 1) << "c waited for a or b";
  release.Notify();
  pool.Drain();
  EXPECT_EQ(running, 6);
}

}  // namespace
}  // namespace tir::common
