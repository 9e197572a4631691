#include "server/tuning/tuning_jobs.h"

#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/test_store.h"
#include "server/tuning/successive_halving.h"

namespace tir::tuning {
namespace {

constexpr char kExp[] = R"(tir.graph @g(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %y = exp %x : tensor<64x64xf32>
  results %y : tensor<64x64xf32>
})";

// The tuning jobs over the real dispatcher, operations and ledger, with the
// worker played by the test: it leases what the job queues and reports made
// up times (no run), so the rounds are followed exactly; it names the
// coordinator's toolchain and the hash of its build (else its winners could
// not be confirmed).
class TuningJobsTest : public ::testing::Test {
 protected:
  TuningJobsTest()
      : limits_(registry_),
        dispatcher_(dispatch::DispatchOptions(), registry_, limits_),
        signer_(""),
        builder_(absl::StrCat(std::getenv("TEST_TMPDIR"), "/builds"), registry_),
        pool_(1, 16) {}
  void SetUp() override {
    store_ = store::FreshTestStore();
    ASSERT_NE(store_, nullptr);
    ledger_ = std::make_unique<ledger::Ledger>(store_, &writer_);
    ops_ = std::make_unique<operations::Operations>(100, limits_, *ledger_);
    sizer_ = std::make_unique<bundles::ShapeSizer>(*ledger_, signer_);
    checks_ = std::make_unique<ShapeChecks>(dispatcher_, *ops_, *sizer_, limits_, 8, registry_);
    common::Limits limits;
    limits.max_jobs = 2;
    TunerConfig config;
    config.width = 3;
    config.max_space_fraction = 1.0;
    jobs_ = std::make_unique<TuningJobs>(
        TuningJobs::Parts{dispatcher_, *ops_, *checks_, *ledger_, *store_, signer_, builder_, pool_, writer_, limits_,
                          registry_},
        SuccessiveHalvingFactory(config), limits, [this](const std::string &key) { stored_.push_back(key); },
        [this](int n) { trials_ += n; });
    worker_ = Register(codegen::ToolchainOf("host"));
  }
  std::string Register(const std::string &toolchain) {
    tir::v1::RegisterWorkerRequest r;
    r.mutable_capabilities()->set_backend("host");
    r.mutable_capabilities()->set_arch("host");
    r.mutable_capabilities()->set_host_compiler(toolchain);
    return dispatcher_.Register(r)->name();
  }
  // The coordinator's build's hash of `c`, kept by source.
  static std::string RealHash(const tir::v1::CandidateWork &c) {
    static auto *hashes = new std::map<std::string, std::string>;
    if (auto it = hashes->find(c.source()); it != hashes->end()) return it->second;
    nvrtc::CompileCache unused;
    absl::StatusOr<codegen::KernelBinary> k =
        codegen::BuildKernel(c.source(), "host", {}, unused, absl::StrCat(std::getenv("TEST_TMPDIR"), "/worker"));
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? ((*hashes)[c.source()] = k->sha256) : "";
  }
  std::vector<KernelWork> Plan() {
    auto ctx = makeTirContext();
    auto loaded = LoadGraphText(kExp, ctx.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    auto items = BuildWorkItems(loaded->graph, *target::LookupArch("host"), 3, tir::v1::MeasurementPolicy(), nullptr,
                                nullptr, 1.0);
    EXPECT_TRUE(items.ok()) << items.status();
    return *std::move(items);
  }
  JobSpec Spec(const std::string &key, const std::string &client = "c") {
    JobSpec s;
    s.identity.key = key;
    s.identity.arch = "host";
    s.request.mutable_options()->set_target_arch("host");
    s.request.set_request_id("not kept");
    s.client = client;
    return s;
  }
  // Leases every queued item and reports each candidate passing, the
  // earlier candidates faster; returns how many items were measured.
  int MeasureAll(int batches = 1000, const std::string &worker = "") {
    const std::string &w = worker.empty() ? worker_ : worker;
    int items = 0;
    for (int batch = 0; batch < batches; ++batch) {
      tir::v1::LeaseWorkRequest lease;
      lease.set_name(w);
      lease.set_max_items(8);
      auto got = dispatcher_.Lease(lease, absl::Now());
      if (!got.ok() || got->items_size() == 0) return items;
      for (const tir::v1::WorkItem &item : got->items()) {
        ++items;
        tir::v1::ReportResultRequest report;
        report.set_name(w);
        report.set_lease_id(item.lease_id());
        for (const tir::v1::CandidateWork &c : item.candidates()) {
          tir::v1::CandidateResult *r = report.add_results();
          r->set_candidate_index(c.candidate_index());
          r->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
          r->mutable_measurement()->set_samples(5);
          r->mutable_measurement()->set_median_seconds(1e-3 * (1 + c.candidate_index()));
          r->set_binary_sha256(RealHash(c));
        }
        const auto reported = dispatcher_.Report(report);
        EXPECT_TRUE(reported.ok()) << reported.status();
      }
    }
    return items;
  }
  prometheus::Registry registry_;
  common::LimitCounter limits_;
  dispatch::Dispatcher dispatcher_;
  bundles::BundleSigner signer_;
  bundles::BinaryBuilder builder_;
  std::shared_ptr<store::KernelStore> store_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::unique_ptr<operations::Operations> ops_;
  std::unique_ptr<bundles::ShapeSizer> sizer_;
  std::unique_ptr<ShapeChecks> checks_;
  std::unique_ptr<TuningJobs> jobs_;
  std::vector<std::string> stored_;
  int trials_ = 0;
  std::string worker_;
  // Last: they run what they hold before the parts above go.
  common::WorkPool pool_;
  common::StoreWriter writer_;
};

TEST_F(TuningJobsTest, AJobTunesRoundByRoundAndAnswersEveryWaiterWithTheStoredBundle) {
  auto first = jobs_->Open(Spec("k"), Plan(), std::nullopt, Waiter{}, false, {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->done());
  EXPECT_EQ(jobs_->size(), 1u);
  writer_.Flush();
  ASSERT_EQ(ledger_->Jobs()->size(), 1u) << "persisted, to resume";
  EXPECT_TRUE(ledger_->Jobs()->at(0).request_id().empty());
  auto second = jobs_->Join("k", "host", 5, Waiter{});
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_FALSE(jobs_->Join("k", "sm_90a", 0, Waiter{})->has_value()) << "another arch's job";

  EXPECT_GE(MeasureAll(), 2) << "round 0 and the confirming round at least";
  pool_.Drain();    // the winner built
  writer_.Flush();  // the bundle stored, the job ended
  writer_.Flush();  // the records the end posted
  EXPECT_EQ(jobs_->size(), 0u);
  EXPECT_THAT(stored_, ::testing::ElementsAre("k"));
  for (const std::string &name : {first->name(), (*second)->name()}) {
    std::optional<tir::v1::Operation> op = ops_->Get(name);
    ASSERT_TRUE(op && op->done()) << name;
    ASSERT_TRUE(op->has_response()) << op->error().message();
    EXPECT_TRUE(op->response().tuning().tuned());
    ASSERT_EQ(op->response().kernels_size(), 1);
    EXPECT_THAT(op->response().kernels(0).binary(), ::testing::StartsWith("\x7f" "ELF")) << "built here";
    EXPECT_EQ(op->response().provenance().builder(), "coordinator");
  }
  EXPECT_TRUE(store_->GetKernel("k").ok());
  EXPECT_TRUE(ledger_->Jobs()->empty()) << "a finished job's record goes";
  EXPECT_TRUE(ledger_->RoundsOf("k")->empty());
  EXPECT_GT(trials_, 0);
  std::vector<tir::v1::JobStatus> running, recent;
  jobs_->Snapshot(&running, &recent);
  EXPECT_TRUE(running.empty());
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].state(), "done");
}

// A winner measured by a worker whose toolchain is not the coordinator's
// cannot be confirmed: it is not served, the job is measured again by the
// others (never by it), and its second such winner distrusts it.
TEST_F(TuningJobsTest, AWinnerThatCannotBeConfirmedIsNotServed) {
  const std::string other = Register("another-cc 1.0");
  for (const std::string key : {"a", "b"}) {
    auto op = jobs_->Open(Spec(key), Plan(), std::nullopt, Waiter{}, false, {});
    ASSERT_TRUE(op.ok()) << op.status();
    EXPECT_GE(MeasureAll(1000, other), 2);
    pool_.Drain();
    writer_.Flush();
    EXPECT_FALSE(ops_->Get(op->name())->done()) << "its winner was served";
    EXPECT_EQ(jobs_->size(), 1u) << "measured again";
    EXPECT_EQ(MeasureAll(1000, other), 0) << "not by it";
    EXPECT_GE(MeasureAll(), 2) << "by the worker with the coordinator's toolchain";
    pool_.Drain();
    writer_.Flush();
    writer_.Flush();
    const std::optional<tir::v1::Operation> done = ops_->Get(op->name());
    ASSERT_TRUE(done && done->has_response()) << (done ? done->error().message() : "gone");
    EXPECT_EQ(done->response().provenance().worker(), worker_);
    EXPECT_TRUE(done->response().provenance().measured_binary_checked());
  }
  tir::v1::LeaseWorkRequest lease;
  lease.set_name(other);
  EXPECT_EQ(ReasonOf(dispatcher_.Lease(lease, absl::Now()).status()), "WORKER_DISTRUSTED");
}

TEST_F(TuningJobsTest, PastTheJobLimitARequestThatWaitsIsRefusedAndAnUntunedOneAnswered) {
  ASSERT_TRUE(jobs_->Open(Spec("a"), Plan(), std::nullopt, Waiter{}, false, {}).ok());
  ASSERT_TRUE(jobs_->Open(Spec("b"), Plan(), std::nullopt, Waiter{}, false, {}).ok());
  EXPECT_EQ(ReasonOf(jobs_->Open(Spec("c"), Plan(), std::nullopt, Waiter{}, false, {}).status()), "LIMIT_EXCEEDED");
  tir::v1::KernelBundle untuned;
  untuned.set_key("c");
  auto answered = jobs_->Open(Spec("c"), Plan(), absl::StatusOr<tir::v1::KernelBundle>(untuned), Waiter{}, false, {});
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_TRUE(answered->done());
  EXPECT_EQ(answered->response().key(), "c");
  EXPECT_EQ(jobs_->size(), 2u) << "no job for it past the limit";
}

TEST_F(TuningJobsTest, CancellingTheLastWaiterEndsTheJobAndItsWork) {
  auto op = jobs_->Open(Spec("k"), Plan(), std::nullopt, Waiter{}, false, {});
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(dispatcher_.queued(), 1u);
  // The coordinator answers the operation; the job learns it waits for it no more.
  jobs_->Cancel(op->name(), "k");
  EXPECT_EQ(jobs_->size(), 0u);
  EXPECT_EQ(dispatcher_.queued(), 0u);
  std::vector<tir::v1::JobStatus> running, recent;
  jobs_->Snapshot(&running, &recent);
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0].state(), "cancelled");
  writer_.Flush();
  EXPECT_TRUE(ledger_->Jobs()->empty());
}

TEST_F(TuningJobsTest, AResumedJobReplaysItsStoredRoundsInsteadOfMeasuringThem) {
  // Tune once, keeping the rounds as the ledger held them mid-job.
  auto op = jobs_->Open(Spec("k"), Plan(), std::nullopt, Waiter{}, false, {});
  ASSERT_TRUE(op.ok());
  ledger::Rounds rounds;
  for (int i = 0; i < 10 && jobs_->size() > 0; ++i) {
    ASSERT_EQ(MeasureAll(1), 1) << "one round at a time";
    pool_.Drain();
    writer_.Flush();
    if (jobs_->size() == 0) break;  // the last round ended it (its records are going)
    absl::StatusOr<ledger::Rounds> stored = ledger_->RoundsOf("k");
    ASSERT_TRUE(stored.ok());
    for (auto &[at, r] : *stored) rounds[at] = r;
  }
  writer_.Flush();
  writer_.Flush();
  ASSERT_EQ(jobs_->size(), 0u);
  ASSERT_FALSE(rounds.empty());
  ASSERT_TRUE(store_->DeleteKernel("k").ok());
  // The same job after a "restart" with every round but the last stored:
  // they replay, and only the last is measured again.
  auto resumed = jobs_->Open(Spec("k"), Plan(), std::nullopt, Waiter{}, true, rounds);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(MeasureAll(), 1) << "only the round not stored";
  pool_.Drain();
  writer_.Flush();
  EXPECT_EQ(jobs_->size(), 0u);
  EXPECT_TRUE(store_->GetKernel("k").ok());
}

}  // namespace
}  // namespace tir::tuning
