#include "server/status/status_board.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/test_store.h"

namespace tir::status {
namespace {

// The board reads every part through its sources; here they are counters
// the test moves, so the rates and copies can be checked exactly.
TEST(StatusBoardTest, SamplesRatesAndRendersFromSnapshots) {
  std::shared_ptr<store::KernelStore> kernels = store::FreshTestStore();
  ASSERT_NE(kernels, nullptr);
  tir::v1::KernelBundle b;
  b.set_key("k");
  b.set_name("kernels/k");
  ASSERT_TRUE(kernels->PutKernel(b).ok());

  uint64_t measured = 0;
  int dispatchCalls = 0;
  StatusSources sources;
  sources.dispatch = [&](absl::Time, bool) {
    ++dispatchCalls;
    dispatch::DispatchSnapshot d;
    d.workers.emplace_back().set_name("workers/a");
    d.queued = 7;
    d.alive = 1;
    return d;
  };
  sources.jobs = [](std::vector<tir::v1::JobStatus> *running, std::vector<tir::v1::JobStatus> *recent) {
    running->emplace_back().set_key("running");
    recent->emplace_back().set_key("recent");
  };
  sources.buckets = [](size_t) { return std::vector<tir::v1::BucketStatus>(1); };
  sources.measured = [&] { return measured; };
  CacheCounts counts;
  prometheus::Registry registry;
  StatusBoard board(sources, counts, kernels, registry);

  const absl::Time t0 = absl::FromUnixSeconds(1000);
  board.Sample(t0);
  counts.requests += 20;
  counts.hits += 3;
  counts.misses += 1;
  measured += 8;
  board.Sample(t0 + absl::Seconds(2));
  tir::v1::ServiceStatus st = board.Render();
  ASSERT_EQ(st.series_size(), 2);
  EXPECT_DOUBLE_EQ(st.series(1).requests_per_second(), 10);
  EXPECT_DOUBLE_EQ(st.series(1).hit_rate(), 0.75);
  EXPECT_DOUBLE_EQ(st.series(1).candidates_per_second(), 4);
  EXPECT_EQ(st.series(1).queue_depth(), 7u);
  EXPECT_EQ(st.series(1).workers(), 1u);
  ASSERT_EQ(st.workers_size(), 1);
  EXPECT_EQ(st.workers(0).name(), "workers/a");
  EXPECT_EQ(st.running(0).key(), "running");
  EXPECT_EQ(st.recent(0).key(), "recent");
  EXPECT_EQ(st.cache_hits(), 3u);
  EXPECT_EQ(st.queue_depth(), 7u);
  EXPECT_EQ(st.buckets_size(), 1);
  EXPECT_EQ(dispatchCalls, 3);
}

}  // namespace
}  // namespace tir::status
