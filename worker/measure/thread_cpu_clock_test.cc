#include "worker/measure/thread_cpu_clock.h"

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::measure {
namespace {

using ::testing::Gt;
using ::testing::Lt;

double Now() {
  absl::StatusOr<double> t = ThreadCpuSeconds();
  EXPECT_TRUE(t.ok()) << t.status();
  return t.value_or(0);
}

// Spins on the calling thread until it has used `seconds` of CPU time.
void SpinFor(double seconds) {
  const double start = Now();
  volatile double sink = 0;
  while (Now() - start < seconds) {
    for (int i = 0; i < 1000; ++i) sink = sink + i;
  }
}

TEST(ThreadCpuSeconds, ASleepingThreadUsesAlmostNoCpuTime) {
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double cpu = Now() - cpu0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  ASSERT_THAT(wall, Gt(0.049)) << "sleep_for returned early";
  // The steady clock counts the sleep; the thread's CPU clock does not.
  EXPECT_THAT(cpu, Lt(wall / 10)) << "cpu " << cpu << " s, wall " << wall << " s";
}

TEST(ThreadCpuSeconds, CountsTheCallingThreadsWorkOnly) {
  // The main thread waits while another thread works: the work is in the
  // worker's CPU time and not in the main thread's (as the host runner's
  // clock leaves out the machine's other work).
  const double main0 = Now();
  double worked = 0;
  std::thread worker([&] {
    const double t0 = Now();
    SpinFor(0.03);
    worked = Now() - t0;
  });
  worker.join();
  const double waited = Now() - main0;
  EXPECT_THAT(worked, Gt(0.029));
  EXPECT_THAT(waited, Lt(worked / 10)) << "main thread " << waited << " s, worker " << worked << " s";
}

TEST(ThreadCpuSeconds, NeverGoesBackwards) {
  double last = Now();
  for (int i = 0; i < 1000; ++i) {
    const double t = Now();
    EXPECT_THAT(t, ::testing::Ge(last));
    last = t;
  }
}

}  // namespace
}  // namespace tir::measure
