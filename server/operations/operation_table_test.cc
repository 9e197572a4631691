#include "server/operations/operation_table.h"

#include <set>

#include "absl/time/clock.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::operations {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(OperationTableTest, NamesAreRandomHexAndNeverRepeatWhileKept) {
  OperationTable t(100000);
  std::set<std::string> names;
  for (int k = 0; k < 1000; ++k) {
    auto n = t.New("host", "key");
    ASSERT_TRUE(n.ok());
    EXPECT_THAT(*n, MatchesRegex("operations/[0-9a-f]{16}"));
    EXPECT_TRUE(names.insert(*n).second);
  }
  // Another table (a restarted coordinator) draws other names.
  OperationTable again(100000);
  auto other = again.New("host", "key");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(names.count(*other));
}

TEST(OperationTableTest, FinishSetsTheAnswerOnceAndBumpsTheVersion) {
  OperationTable t(10);
  const std::string n = *t.New("sm_90a", "k");
  OperationTable::Entry *e = t.Find(n);
  ASSERT_NE(e, nullptr);
  e->job = "k";
  EXPECT_EQ(e->op.metadata().key(), "k");
  EXPECT_EQ(e->op.metadata().target_arch(), "sm_90a");
  tir::v1::CompileProgress p;
  p.set_stage(tir::v1::STAGE_TUNING);
  t.SetProgress(n, p);
  EXPECT_EQ(e->version, 1);
  EXPECT_EQ(e->op.metadata().progress().stage(), tir::v1::STAGE_TUNING);
  tir::v1::KernelBundle b;
  b.set_key("k");
  EXPECT_TRUE(t.Finish(n, b));
  EXPECT_FALSE(t.Finish(n, MakeError(absl::StatusCode::kCancelled, "CANCELLED", "late")));
  EXPECT_TRUE(e->op.done());
  EXPECT_EQ(e->op.response().key(), "k");
  EXPECT_TRUE(e->job.empty());
  EXPECT_EQ(e->version, 2);
  t.SetProgress(n, p);
  EXPECT_EQ(e->version, 2) << "a done operation's progress stays";
  const std::string failed = *t.New("host", "f");
  t.Finish(failed, MakeError(absl::StatusCode::kFailedPrecondition, "NO_CORRECT_CANDIDATE", "none passed"));
  EXPECT_EQ(t.Find(failed)->op.error().reason(), "NO_CORRECT_CANDIDATE");
}

TEST(OperationTableTest, FullTablesDropFinishedOperationsOldestFirstOrRefuse) {
  OperationTable t(3);
  const std::string a = *t.New("host", "a"), b = *t.New("host", "b"), c = *t.New("host", "c");
  auto refused = t.New("host", "d");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReasonOf(refused.status()), "LIMIT_EXCEEDED");
  EXPECT_THAT(refused.status().message(), HasSubstr("maxOperations=3"));
  t.Finish(b, tir::v1::KernelBundle());
  absl::SleepFor(absl::Milliseconds(2));  // end times a clock tick apart: b is the older
  t.Finish(a, tir::v1::KernelBundle());
  auto d = t.New("host", "d");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(t.Contains(b)) << "the oldest finished one made room";
  EXPECT_TRUE(t.Contains(a));
  EXPECT_TRUE(t.Contains(c)) << "one in flight is never dropped";
}

TEST(OperationTableTest, RequestIdsNameTheirOperationWhileItIsKept) {
  OperationTable t(10);
  const std::string n = *t.New("host", "k");
  t.RememberRequest("req-1", n);
  t.RememberRequest("", n);
  ASSERT_NE(t.ByRequest("req-1"), nullptr);
  EXPECT_EQ(t.ByRequest("req-1")->op.name(), n);
  EXPECT_EQ(t.ByRequest("req-2"), nullptr);
  EXPECT_EQ(t.ByRequest(""), nullptr);
  t.Finish(n, tir::v1::KernelBundle());
  t.Prune(absl::Now(), absl::Minutes(10));
  EXPECT_TRUE(t.Contains(n)) << "kept for ten minutes";
  t.Prune(absl::Now() + absl::Minutes(11), absl::Minutes(10));
  EXPECT_FALSE(t.Contains(n));
  EXPECT_EQ(t.ByRequest("req-1"), nullptr);
}

TEST(OperationTableTest, ARestoredOperationKeepsItsName) {
  OperationTable t(10);
  t.Restore("operations/00000000000000aa", "host", "k");
  t.Restore("operations/00000000000000aa", "sm_90a", "other");
  ASSERT_TRUE(t.Contains("operations/00000000000000aa"));
  EXPECT_EQ(t.Find("operations/00000000000000aa")->op.metadata().key(), "k") << "the first one stays";
  EXPECT_FALSE(t.Find("operations/00000000000000aa")->op.done());
}

}  // namespace
}  // namespace tir::operations
