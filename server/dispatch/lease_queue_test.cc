#include "server/dispatch/lease_queue.h"

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::dispatch {
namespace {

using ::testing::ElementsAre;
using ::testing::MatchesRegex;
using ::testing::UnorderedElementsAre;

QueuedWork Work(const std::string &job, const std::string &arch, int priority = 0) {
  QueuedWork w;
  w.job = job;
  w.item.set_arch(arch);
  w.priority = priority;
  return w;
}

TEST(LeaseQueueTest, ServesTheArchHighestPriorityThenOldest) {
  LeaseQueue q;
  q.Push(Work("a", "host"));
  q.Push(Work("b", "sm_90a"));
  q.Push(Work("c", "host", 5));
  q.Push(Work("d", "host"));
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  EXPECT_EQ(q.LeaseNext("sm_100a", "w", deadline), nullptr);
  std::vector<std::string> order;
  while (const Lease *l = q.LeaseNext("host", "w", deadline)) order.push_back(l->work.job);
  EXPECT_THAT(order, ElementsAre("c", "a", "d"));
  q.Reprioritize("b", 9);
  const Lease *b = q.LeaseNext("sm_90a", "w2", deadline);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->work.priority, 9);
  EXPECT_THAT(b->work.item.lease_id(), MatchesRegex("leases/[0-9a-f]{32}"));
  EXPECT_EQ(b->work.item.attempt(), 1u);
  EXPECT_EQ(b->work.item.deadline().seconds(), absl::ToUnixSeconds(deadline));
  EXPECT_EQ(q.queued(), 0u);
  EXPECT_EQ(q.leased(), 4u);
}

// An item kept from a worker (a second opinion is another's) waits for
// another, while the worker takes what it may.
TEST(LeaseQueueTest, AnItemIsNotLeasedToTheWorkersItIsKeptFrom) {
  LeaseQueue q;
  QueuedWork recheck = Work("recheck", "host", 9);
  recheck.not_for = {"workers/dissenter"};
  q.Push(std::move(recheck));
  q.Push(Work("other", "host"));
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  const Lease *mine = q.LeaseNext("host", "workers/dissenter", deadline);
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine->work.job, "other");
  EXPECT_EQ(q.LeaseNext("host", "workers/dissenter", deadline), nullptr) << "the re-check waits for another worker";
  const Lease *second = q.LeaseNext("host", "workers/second", deadline);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->work.job, "recheck");
}

TEST(LeaseQueueTest, AReportIsTakenOnceAndOnlyFromTheHolder) {
  LeaseQueue q;
  q.Push(Work("a", "host"));
  const std::string id = q.LeaseNext("host", "w", absl::InfiniteFuture())->work.item.lease_id();
  EXPECT_TRUE(q.Holds(id, "w"));
  EXPECT_FALSE(q.Holds(id, "x"));
  Lease out;
  EXPECT_EQ(q.TakeReported(id, "x", &out), LeaseQueue::Report::kOtherWorker);
  EXPECT_EQ(q.TakeReported(id, "w", &out), LeaseQueue::Report::kTaken);
  EXPECT_EQ(out.work.job, "a");
  EXPECT_EQ(q.TakeReported(id, "w", &out), LeaseQueue::Report::kDuplicate);
  EXPECT_EQ(q.TakeReported("leases/0000000000000000", "w", &out), LeaseQueue::Report::kNotHeld);
}

TEST(LeaseQueueTest, ExpiredReturnedAndLostLeasesComeBackOut) {
  LeaseQueue q;
  const absl::Time now = absl::Now();
  for (const char *j : {"a", "b", "c", "d"}) q.Push(Work(j, "host"));
  const std::string a = q.LeaseNext("host", "w1", now + absl::Seconds(1))->work.item.lease_id();
  const std::string b = q.LeaseNext("host", "w1", now + absl::Minutes(5))->work.item.lease_id();
  const std::string c = q.LeaseNext("host", "w2", now + absl::Minutes(5))->work.item.lease_id();
  q.LeaseNext("host", "w2", now + absl::Minutes(5));
  std::vector<Lease> expired = q.TakeExpired(now + absl::Seconds(2));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].work.item.lease_id(), a);
  Lease out;
  EXPECT_EQ(q.TakeReported(a, "w1", &out), LeaseQueue::Report::kNotHeld) << "an expired lease's late report is refused";
  EXPECT_THAT(q.HeldBy("w1"), ElementsAre(b));
  std::vector<Lease> back = q.TakeReturned("w2", {c, b, "leases/nope"});
  ASSERT_EQ(back.size(), 1u) << "only what it holds";
  EXPECT_EQ(back[0].work.job, "c");
  EXPECT_EQ(q.TakeHeldBy("w2").size(), 1u);
  EXPECT_TRUE(q.Leased("b"));
  q.DropJob("b");
  EXPECT_FALSE(q.Leased("b"));
  EXPECT_EQ(q.TakeReported(b, "w1", &out), LeaseQueue::Report::kDuplicate) << "a dropped job's report is acknowledged";
  // A re-queued item keeps its attempts and is leased with the next number.
  expired[0].work.attempts = 1;
  q.Push(expired[0].work);
  EXPECT_EQ(q.QueuedByArch().at("host"), 1);
  const Lease *again = q.LeaseNext("host", "w3", absl::InfiniteFuture());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->work.item.attempt(), 2u);
  EXPECT_NE(again->work.item.lease_id(), a);
}

}  // namespace
}  // namespace tir::dispatch
