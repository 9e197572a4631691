#include "server/ledger/ledger.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/test_store.h"

namespace tir::ledger {
namespace {

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::FreshTestStore();
    ASSERT_NE(store_, nullptr);
    ledger_ = std::make_unique<Ledger>(store_, &writer_);
  }
  std::shared_ptr<store::KernelStore> store_;
  common::StoreWriter writer_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(LedgerTest, RoundsComeBackByKernelAndRoundAndGoWithTheirJob) {
  tir::v1::CompileRequest job;
  job.mutable_options()->set_target_arch("host");
  ASSERT_TRUE(ledger_->PutJob("k1", job, true).ok());
  tir::v1::ReportResultRequest r;
  r.set_name("workers/a");
  ledger_->PutRound("k1", 0, 0, r);
  r.set_name("workers/b");
  ledger_->PutRound("k1", 12, 3, r);
  ledger_->PutRound("k10", 1, 1, r);  // a key with k1 as its prefix is another job
  writer_.Flush();
  absl::StatusOr<Rounds> rounds = ledger_->RoundsOf("k1");
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ASSERT_EQ(rounds->size(), 2u);
  EXPECT_EQ(rounds->at({0, 0}).name(), "workers/a");
  EXPECT_EQ(rounds->at({12, 3}).name(), "workers/b");
  ASSERT_EQ(ledger_->Jobs()->size(), 1u);
  EXPECT_EQ(ledger_->Jobs()->at(0).options().target_arch(), "host");

  ledger_->DropJob("k1");
  writer_.Flush();
  EXPECT_TRUE(ledger_->Jobs()->empty());
  EXPECT_TRUE(ledger_->RoundsOf("k1")->empty());
  EXPECT_EQ(ledger_->RoundsOf("k10")->size(), 1u) << "another job's rounds stay";
}

TEST_F(LedgerTest, OperationRecordsAreTypedAndReadTheirOlderTextForm) {
  tir::v1::OperationRecord rec;
  rec.set_key("abc");
  rec.set_shape("0=8x512 1=7");
  ledger_->PutOperation("operations/0000000000000001", rec);
  // Records a coordinator stored before they were typed: "<key>[\n<shape>]".
  ASSERT_TRUE(store_->Put(store::Family::kJobs, "op/operations/0000000000000002", "def\n0=4", true).ok());
  ASSERT_TRUE(store_->Put(store::Family::kJobs, "op/operations/0000000000000003",
                          "f6a1c0c4b8e2d3f5a7b9c1d3e5f7a9b1c3d5e7f9a1b3c5d7e9f1a3b5c7d9e1f3", true)
                  .ok());
  absl::StatusOr<tir::v1::OperationRecord> got = ledger_->GetOperation("operations/0000000000000001");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->key(), "abc");
  EXPECT_EQ(got->shape(), "0=8x512 1=7");
  EXPECT_EQ(ledger_->GetOperation("operations/0000000000000002")->key(), "def");
  EXPECT_EQ(ledger_->GetOperation("operations/0000000000000002")->shape(), "0=4");
  EXPECT_EQ(ledger_->GetOperation("operations/0000000000000003")->key(),
            "f6a1c0c4b8e2d3f5a7b9c1d3e5f7a9b1c3d5e7f9a1b3c5d7e9f1a3b5c7d9e1f3");
  EXPECT_TRUE(ledger_->GetOperation("operations/0000000000000003")->shape().empty());
  EXPECT_TRUE(absl::IsNotFound(ledger_->GetOperation("operations/0000000000000009").status()));

  auto all = ledger_->Operations();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(all->at(0).first, "operations/0000000000000001");
  ledger_->DropOperations({"operations/0000000000000001", "operations/0000000000000002"});
  writer_.Flush();
  ASSERT_EQ(ledger_->Operations()->size(), 1u);
}

TEST_F(LedgerTest, ShapeRecordsAreKeptPerBundleKey) {
  tir::v1::ShapeVerification v;
  v.set_passed(true);
  ledger_->PutShape("k", "0=8", v);
  ledger_->PutShape("k", "0=16", v);
  ledger_->PutShape("kk", "0=8", v);
  writer_.Flush();
  auto got = ledger_->GetShape("k", "0=8");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE((*got)->passed());
  EXPECT_FALSE(ledger_->GetShape("k", "0=32")->has_value());
  ledger_->DropShapes("k");
  EXPECT_FALSE(ledger_->GetShape("k", "0=8")->has_value());
  EXPECT_FALSE(ledger_->GetShape("k", "0=16")->has_value());
  EXPECT_TRUE(ledger_->GetShape("kk", "0=8")->has_value());
}

TEST_F(LedgerTest, TrialsAreNamedByJobKernelCandidateRoundAndLease) {
  tir::v1::CandidateResult t;
  t.set_candidate_index(7);
  ledger_->PutTrial("job", 2, 1, "leases/9", t);
  writer_.Flush();
  std::vector<std::string> ids;
  ASSERT_TRUE(ledger_->ScanTrials([&](const std::string &id, const tir::v1::CandidateResult &r) {
                       ids.push_back(id);
                       EXPECT_EQ(r.candidate_index(), 7u);
                     }).ok());
  EXPECT_THAT(ids, ::testing::ElementsAre("job/2/7/1/leases/9"));
}

}  // namespace
}  // namespace tir::ledger
