#include "server/operations/operations.h"

#include <filesystem>
#include <thread>

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/test_store.h"

namespace tir::operations {
namespace {

class OperationsTest : public ::testing::Test {
 protected:
  OperationsTest() : limits_(registry_) {}
  void SetUp() override {
    std::shared_ptr<store::KernelStore> s = store::FreshTestStore();
    ASSERT_NE(s, nullptr);
    ledger_ = std::make_unique<ledger::Ledger>(s, nullptr);
    ops_ = std::make_unique<Operations>(2, limits_, *ledger_);
  }
  prometheus::Registry registry_;
  common::LimitCounter limits_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::unique_ptr<Operations> ops_;
};

TEST_F(OperationsTest, AWaitEndsWhenTheOperationIsDoneFromAnotherThread) {
  auto op = ops_->New(
      "host", "k", "k", "req", [](tir::v1::Operation &o) { o.mutable_metadata()->add_notes("n"); }, "");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(ops_->JobOf(op->name()), "k");
  EXPECT_EQ(ops_->ByRequest("req")->name(), op->name());
  EXPECT_EQ(op->metadata().notes(0), "n");
  std::thread finisher([&] {
    tir::v1::KernelBundle b;
    b.set_key("k");
    ops_->Finish({op->name()}, b);
  });
  int64_t version = -1;
  // No deadline to speak of: only the finish ends the wait.
  std::optional<tir::v1::Operation> done = ops_->Wait(op->name(), absl::InfiniteFuture(), &version);
  finisher.join();
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(done->done());
  EXPECT_EQ(done->response().key(), "k");
  EXPECT_EQ(ops_->JobOf(op->name()), "") << "done: it waits for nothing";
}

TEST_F(OperationsTest, AWaitWithAVersionEndsOnProgress) {
  auto op = ops_->New("host", "k", "k", "", nullptr, "");
  ASSERT_TRUE(op.ok());
  int64_t version = -1;
  ASSERT_TRUE(ops_->Wait(op->name(), absl::Now(), &version).has_value());  // reads the version
  std::thread progress([&] {
    tir::v1::CompileProgress p;
    p.set_candidates_measured(3);
    ops_->SetProgress({op->name()}, p);
  });
  std::optional<tir::v1::Operation> moved = ops_->Wait(op->name(), absl::InfiniteFuture(), &version);
  progress.join();
  ASSERT_TRUE(moved.has_value());
  EXPECT_FALSE(moved->done());
  EXPECT_EQ(moved->metadata().progress().candidates_measured(), 3u);
  EXPECT_FALSE(ops_->Wait("operations/unknown", absl::Now(), nullptr).has_value());
}

TEST_F(OperationsTest, AFullTableRefusesWithTheLimitAndStopWakesWaiters) {
  auto a = ops_->New("host", "a", "a", "", nullptr, "");
  auto b = ops_->New("host", "b", "b", "", nullptr, "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(ReasonOf(ops_->New("host", "c", "c", "", nullptr, "").status()), "LIMIT_EXCEEDED");
  std::thread stopper([&] { ops_->Stop(); });
  std::optional<tir::v1::Operation> woken = ops_->Wait(a->name(), absl::InfiniteFuture(), nullptr);
  stopper.join();
  ASSERT_TRUE(woken.has_value());
  EXPECT_FALSE(woken->done());
}

TEST_F(OperationsTest, PersistedOperationsAreInTheLedgerUntilForgotten) {
  ops_->Persist("operations/00000000000000aa", "key", "0=8");
  auto r = ledger_->GetOperation("operations/00000000000000aa");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->key(), "key");
  EXPECT_EQ(r->shape(), "0=8");
  ops_->Forget({"operations/00000000000000aa"});
  EXPECT_TRUE(absl::IsNotFound(ledger_->GetOperation("operations/00000000000000aa").status()));
}

// An operation is cancelled by its owner or an admin only; its owner is in
// its record (a restart restores it from there).
TEST_F(OperationsTest, OnlyTheOwnerOrAnAdminCancelsAndTheOwnerIsPersisted) {
  auto op = ops_->New("host", "k", "k", "", nullptr, "team-a");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_TRUE(ops_->CanCancel(op->name(), "team-a", false).ok());
  EXPECT_TRUE(ops_->CanCancel(op->name(), "root", true).ok());
  for (const std::string who : {"team-b", ""}) {
    const absl::Status refused = ops_->CanCancel(op->name(), who, false);
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << who;
    EXPECT_EQ(ReasonOf(refused), "NOT_OWNER") << who;
  }
  EXPECT_EQ(ReasonOf(ops_->CanCancel("operations/unknown", "team-a", false)), "NOT_FOUND");
  ops_->Persist(op->name(), "k", "");
  auto r = ledger_->GetOperation(op->name());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->owner(), "team-a");
  // Restored (as after a restart) with its record's owner: never anonymous.
  Operations again(2, limits_, *ledger_);
  ASSERT_TRUE(again.Restore(op->name(), "host", "k", "k", r->owner()));
  EXPECT_EQ(ReasonOf(again.CanCancel(op->name(), "", false)), "NOT_OWNER");
  EXPECT_EQ(ReasonOf(again.CanCancel(op->name(), "team-b", false)), "NOT_OWNER");
  EXPECT_TRUE(again.CanCancel(op->name(), "team-a", false).ok());
}

TEST_F(OperationsTest, CachedNamesCarryTheKeyAndTheShape) {
  tir::v1::KernelBundle b;
  b.set_key("abc");
  tir::v1::Operation op = CachedOperation(b);
  EXPECT_EQ(op.name(), "operations/cached.abc");
  EXPECT_TRUE(op.done());
  EXPECT_TRUE(op.metadata().cache_hit());
  auto parsed = ParseCachedName(op.name());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, "abc");
  EXPECT_EQ(parsed->second, "");
  EXPECT_EQ(ParseCachedName("operations/cached.abc@0=8;1=7")->second, "0=8;1=7");
  EXPECT_FALSE(ParseCachedName("operations/0123456789abcdef").has_value());
}

}  // namespace
}  // namespace tir::operations
