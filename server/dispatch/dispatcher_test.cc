#include "server/dispatch/dispatcher.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::dispatch {
namespace {

using ::testing::HasSubstr;

// An owner that records what it is told and, like the real owners, queues
// more work from inside its callback (which would deadlock were the
// dispatcher's lock held while it calls out).
class FakeOwner : public WorkOwner {
 public:
  explicit FakeOwner(Dispatcher *d) : d_(d) {}
  void OnResults(QueuedWork work, std::vector<tir::v1::CandidateResult> results, const std::string &worker) override {
    absl::MutexLock l(&mu_);
    reports.push_back({work.job, work.round, worker, results});
    if (requeue_next) {
      requeue_next = false;
      work.round += 1;
      d_->Push(std::move(work));
    }
  }
  void OnLeased(const std::string &job) override {
    absl::MutexLock l(&mu_);
    leased.push_back(job);
  }
  struct Report {
    std::string job;
    int round;
    std::string worker;
    std::vector<tir::v1::CandidateResult> results;
  };
  absl::Mutex mu_;
  std::vector<Report> reports;
  std::vector<std::string> leased;
  bool requeue_next = false;

 private:
  Dispatcher *d_;
};

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() : limits_(registry_), d_(Options(), registry_, limits_), owner_(&d_) {}
  static DispatchOptions Options() {
    DispatchOptions o;
    o.max_attempts = 2;
    o.max_queue_items = 3;
    o.quarantine_after = 0;
    return o;
  }
  std::string Register() {
    tir::v1::RegisterWorkerRequest r;
    r.mutable_capabilities()->set_backend("host");
    r.mutable_capabilities()->set_arch("host");
    auto out = d_.Register(r);
    EXPECT_TRUE(out.ok()) << out.status();
    return out->name();
  }
  QueuedWork Item(const std::string &job, int candidates = 1) {
    QueuedWork q;
    q.job = job;
    q.owner = &owner_;
    q.item.set_arch("host");
    for (int c = 0; c < candidates; ++c) q.item.add_candidates()->set_candidate_index(c);
    q.queued_at = absl::Now();
    return q;
  }
  tir::v1::LeaseWorkResponse Lease(const std::string &worker) {
    tir::v1::LeaseWorkRequest r;
    r.set_name(worker);
    auto out = d_.Lease(r, absl::Now());
    EXPECT_TRUE(out.ok()) << out.status();
    return *out;
  }
  static tir::v1::CandidateResult Result(tir::v1::Verdict v) {
    tir::v1::CandidateResult r;
    r.mutable_verification()->set_verdict(v);
    return r;
  }
  prometheus::Registry registry_;
  common::LimitCounter limits_;
  Dispatcher d_;
  FakeOwner owner_;
};

TEST_F(DispatcherTest, AReportReachesItsOwnerWhoMayQueueTheNextRoundFromItsCallback) {
  const std::string w = Register();
  d_.Push(Item("job"));
  auto leased = Lease(w);
  ASSERT_EQ(leased.items_size(), 1);
  EXPECT_TRUE(d_.Leased("job"));
  EXPECT_THAT(owner_.leased, ::testing::ElementsAre("job"));

  owner_.requeue_next = true;
  tir::v1::ReportResultRequest report;
  report.set_name(w);
  report.set_lease_id(leased.items(0).lease_id());
  *report.add_results() = Result(tir::v1::VERDICT_PASSED);
  auto out = d_.Report(report);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->accepted());
  ASSERT_EQ(owner_.reports.size(), 1u);
  EXPECT_EQ(owner_.reports[0].worker, w);
  EXPECT_EQ(d_.queued(), 1u) << "the owner's next round";

  auto again = d_.Report(report);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate());
  EXPECT_EQ(owner_.reports.size(), 1u) << "a repeated report is not delivered twice";
}

// A passing time below the kernel's floor is made up: the report is
// refused, its owner told nothing, the item measured by another worker and
// the liar distrusted (it leases nothing more). A failed candidate's time,
// and work without floors (a shape check), are not held to it.
TEST_F(DispatcherTest, ATimeBelowTheFloorDistrustsItsWorker) {
  const std::string liar = Register(), honest = Register();
  QueuedWork q = Item("job", 2);
  q.floor_seconds = {1e-6, 1e-6};
  d_.Push(std::move(q));
  auto leased = Lease(liar);
  ASSERT_EQ(leased.items_size(), 1);
  tir::v1::ReportResultRequest report;
  report.set_name(liar);
  report.set_lease_id(leased.items(0).lease_id());
  for (int c = 0; c < 2; ++c) {
    tir::v1::CandidateResult *r = report.add_results();
    *r = Result(c == 0 ? tir::v1::VERDICT_WRONG : tir::v1::VERDICT_PASSED);
    r->set_candidate_index(c);
    r->mutable_measurement()->set_median_seconds(1e-9);
  }
  auto refused = d_.Report(report);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("physical floor"));
  EXPECT_EQ(ReasonOf(refused.status()), "INVALID_REPORT");
  EXPECT_TRUE(owner_.reports.empty()) << "nothing of the report reaches its owner";
  tir::v1::LeaseWorkRequest again;
  again.set_name(liar);
  auto denied = d_.Lease(again, absl::Now());
  EXPECT_EQ(ReasonOf(denied.status()), "WORKER_DISTRUSTED");
  EXPECT_THAT(std::string(denied.status().message()), HasSubstr("physical floor"));
  // The item waits for the honest worker, whose times are real.
  auto remeasured = Lease(honest);
  ASSERT_EQ(remeasured.items_size(), 1);
  report.set_name(honest);
  report.set_lease_id(remeasured.items(0).lease_id());
  report.mutable_results(1)->mutable_measurement()->set_median_seconds(3e-6);
  ASSERT_TRUE(d_.Report(report).ok());
  ASSERT_EQ(owner_.reports.size(), 1u);
  EXPECT_EQ(owner_.reports[0].worker, honest);

  // Without floors (a shape check's times are not used) nothing is refused.
  d_.Push(Item("check"));
  auto check = Lease(honest);
  ASSERT_EQ(check.items_size(), 1);
  tir::v1::ReportResultRequest checked;
  checked.set_name(honest);
  checked.set_lease_id(check.items(0).lease_id());
  *checked.add_results() = Result(tir::v1::VERDICT_PASSED);
  checked.mutable_results(0)->mutable_measurement()->set_median_seconds(1e-9);
  EXPECT_TRUE(d_.Report(checked).ok());
}

// An item kept from a worker (not_for) goes to another.
TEST_F(DispatcherTest, AnItemKeptFromAWorkerGoesToAnother) {
  const std::string dissenter = Register(), second = Register();
  QueuedWork q = Item("recheck");
  q.not_for = {dissenter};
  d_.Push(std::move(q));
  EXPECT_EQ(Lease(dissenter).items_size(), 0);
  EXPECT_EQ(Lease(second).items_size(), 1);
}

// Winners a worker's word cannot confirm: the second distrusts it.
TEST_F(DispatcherTest, RepeatedUnconfirmableWinnersDistrustTheirWorker) {
  const std::string w = Register();
  d_.Unconfirmed(w, "it builds with another toolchain");
  EXPECT_EQ(Lease(w).items_size(), 0);  // still trusted: it may lease
  d_.Unconfirmed(w, "it builds with another toolchain");
  tir::v1::LeaseWorkRequest r;
  r.set_name(w);
  EXPECT_EQ(ReasonOf(d_.Lease(r, absl::Now()).status()), "WORKER_DISTRUSTED");
}

TEST_F(DispatcherTest, AllFaultsAreMeasuredAgainBeforeTheyCount) {
  const std::string w = Register();
  d_.Push(Item("job"));
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto leased = Lease(w);
    ASSERT_EQ(leased.items_size(), 1) << attempt;
    tir::v1::ReportResultRequest report;
    report.set_name(w);
    report.set_lease_id(leased.items(0).lease_id());
    *report.add_results() = Result(tir::v1::VERDICT_FAULT);
    ASSERT_TRUE(d_.Report(report).ok());
  }
  // max_attempts = 2: the first all-fault report re-queues, the second counts.
  ASSERT_EQ(owner_.reports.size(), 1u);
  EXPECT_EQ(owner_.reports[0].results[0].verification().verdict(), tir::v1::VERDICT_FAULT);
  EXPECT_EQ(d_.queued(), 0u);
}

TEST_F(DispatcherTest, LeasesLostWithTheirWorkerAreGivenUpAfterMaxAttempts) {
  d_.Push(Item("job", 2));
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string w = Register();
    ASSERT_EQ(Lease(w).items_size(), 1) << attempt;
    tir::v1::DrainRequest drain;
    drain.set_name(w);  // leaves holding it: an attempt lost
    d_.Drain(drain);
  }
  ASSERT_EQ(owner_.reports.size(), 1u);
  EXPECT_EQ(owner_.reports[0].worker, "") << "given up, not reported";
  ASSERT_EQ(owner_.reports[0].results.size(), 2u);
  for (const auto &r : owner_.reports[0].results) {
    EXPECT_EQ(r.verification().verdict(), tir::v1::VERDICT_FAULT);
    EXPECT_THAT(r.verification().detail(), ::testing::HasSubstr("lost with its worker 2 times"));
  }
}

TEST_F(DispatcherTest, ADroppedJobsLateReportIsADuplicateAndTheQueueIsBounded) {
  const std::string w = Register();
  d_.Push(Item("job"));
  auto leased = Lease(w);
  ASSERT_EQ(leased.items_size(), 1);
  d_.DropJob("job");
  tir::v1::ReportResultRequest report;
  report.set_name(w);
  report.set_lease_id(leased.items(0).lease_id());
  auto late = d_.Report(report);
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late->duplicate());
  EXPECT_TRUE(owner_.reports.empty());

  EXPECT_TRUE(d_.Room(3, "this job").ok());
  EXPECT_EQ(ReasonOf(d_.Room(4, "this job")), "LIMIT_EXCEEDED");
}

TEST_F(DispatcherTest, TheSnapshotShowsWorkersAndTheQueue) {
  const std::string w = Register();
  d_.Push(Item("a"));
  d_.Push(Item("b"));
  ASSERT_EQ(Lease(w).items_size(), 1);
  DispatchSnapshot s = d_.Snapshot(absl::Now(), true);
  ASSERT_EQ(s.workers.size(), 1u);
  EXPECT_EQ(s.workers[0].name(), w);
  EXPECT_EQ(s.workers[0].leases_size(), 1);
  EXPECT_EQ(s.queued, 1u);
  EXPECT_EQ(s.alive, 1u);
  EXPECT_TRUE(d_.HasHealthy("host"));
  EXPECT_FALSE(d_.HasHealthy("sm_90a"));
}

}  // namespace
}  // namespace tir::dispatch

namespace tir::dispatch {
namespace {

TEST_F(DispatcherTest, RegistrationsAndLeasesAreBounded) {
  tir::v1::RegisterWorkerRequest big;
  big.mutable_capabilities()->set_backend("host");
  big.mutable_capabilities()->set_arch("host");
  big.mutable_capabilities()->set_device_name(std::string(60000, 'x'));
  auto refused = d_.Register(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ReasonOf(refused.status()), "INVALID_ARGUMENT");
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("device_name"));

  // A name that would forge a log line (a newline, an escape) is refused.
  tir::v1::RegisterWorkerRequest forged;
  forged.set_name("gpu0\ntir-coordinator: worker gpu1 lost");
  forged.mutable_capabilities()->set_backend("host");
  forged.mutable_capabilities()->set_arch("host");
  auto refusedName = d_.Register(forged);
  ASSERT_FALSE(refusedName.ok());
  EXPECT_THAT(std::string(refusedName.status().message()), ::testing::HasSubstr("printable ASCII"));
  forged.set_name("gpu0");
  forged.mutable_capabilities()->set_device_name("NVIDIA \x1b[2JH200");
  EXPECT_FALSE(d_.Register(forged).ok());

  // max_items is capped whatever the worker asks.
  const std::string w = Register();
  for (int i = 0; i < 3; ++i) d_.Push(Item("job" + std::to_string(i)));
  tir::v1::LeaseWorkRequest r;
  r.set_name(w);
  r.set_max_items(1u << 30);
  auto leased = d_.Lease(r, absl::Now());
  ASSERT_TRUE(leased.ok());
  EXPECT_LE(static_cast<uint32_t>(leased->items_size()), kMaxLeaseItems);
  EXPECT_EQ(leased->items_size(), 3);

  // A report naming a candidate the lease does not hold is refused and the
  // lease stays held.
  tir::v1::ReportResultRequest report;
  report.set_name(w);
  report.set_lease_id(leased->items(0).lease_id());
  tir::v1::CandidateResult stray = Result(tir::v1::VERDICT_PASSED);
  stray.set_candidate_index(7);
  *report.add_results() = stray;
  auto bad = d_.Report(report);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ReasonOf(bad.status()), "INVALID_REPORT");
  EXPECT_TRUE(owner_.reports.empty());
  report.clear_results();
  *report.add_results() = Result(tir::v1::VERDICT_PASSED);
  ASSERT_TRUE(d_.Report(report).ok());
  EXPECT_EQ(owner_.reports.size(), 1u);

  // A distrusted worker's leases go back to the queue and it leases nothing.
  d_.Distrust(w, "test");
  EXPECT_EQ(d_.queued(), 2u);
  tir::v1::LeaseWorkRequest again;
  again.set_name(w);
  auto none = d_.Lease(again, absl::Now());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(ReasonOf(none.status()), "WORKER_DISTRUSTED");
}

// The worker bound holds whatever name a registration asks for: a known
// name without its session (or an identity's) makes a new entry, and counts.
TEST_F(DispatcherTest, RegistrationsUnderKnownNamesCountAgainstTheBound) {
  const std::string first = Register();
  for (size_t i = 1; i < kMaxWorkers; ++i) ASSERT_FALSE(Register().empty());
  tir::v1::RegisterWorkerRequest r;
  r.mutable_capabilities()->set_backend("host");
  r.mutable_capabilities()->set_arch("host");
  r.set_name(first);
  auto over = d_.Register(r, "not its session");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(ReasonOf(over.status()), "LIMIT_EXCEEDED");
  r.set_name("workers/id-gpu-0");
  EXPECT_EQ(ReasonOf(d_.Register(r, "").status()), "LIMIT_EXCEEDED");
  // A worker with a credential of its own always has its place.
  auto own = d_.Register(r, "", "gpu-0");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->name(), "workers/id-gpu-0");
}

}  // namespace
// What a worker's result carries on is the coordinator's to choose: known
// fields, bounded text, a hash that is one and times that are times.
TEST(TakenFromWorker, KeepsKnownBoundedFieldsOnly) {
  tir::v1::CandidateResult r;
  r.set_candidate_index(3);
  r.mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
  r.mutable_verification()->set_detail(std::string(100000, 'd'));
  r.mutable_measurement()->set_median_seconds(1e-6);
  r.mutable_measurement()->set_samples(5);
  r.set_binary_sha256(std::string(64, 'c'));
  r.set_source_hash("worker-chosen");
  r.set_arch("sm_90a");
  r.mutable_verification()->GetReflection()->MutableUnknownFields(r.mutable_verification())->AddLengthDelimited(
      99, "payload");
  r.GetReflection()->MutableUnknownFields(&r)->AddLengthDelimited(5, "payload");
  absl::StatusOr<tir::v1::CandidateResult> taken = TakenFromWorker(r);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(taken->candidate_index(), 3u);
  EXPECT_EQ(taken->binary_sha256(), std::string(64, 'c'));
  EXPECT_DOUBLE_EQ(taken->measurement().median_seconds(), 1e-6);
  EXPECT_LE(taken->verification().detail().size(), 1100u);
  EXPECT_TRUE(taken->source_hash().empty());
  EXPECT_TRUE(taken->arch().empty());
  EXPECT_EQ(taken->SerializeAsString().find("payload"), std::string::npos);

  tir::v1::CandidateResult forged = r;
  forged.set_binary_sha256(std::string(64, 'c') + "\x7f" "ELF payload");
  EXPECT_EQ(ReasonOf(TakenFromWorker(forged).status()), "INVALID_REPORT");
  for (double t : {std::nan(""), -1.0, std::numeric_limits<double>::infinity()}) {
    tir::v1::CandidateResult timed = r;
    timed.mutable_measurement()->set_median_seconds(t);
    EXPECT_EQ(ReasonOf(TakenFromWorker(timed).status()), "INVALID_REPORT") << t;
    // A candidate that did not pass has no time to trust: it is dropped.
    timed.mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
    absl::StatusOr<tir::v1::CandidateResult> fault = TakenFromWorker(timed);
    ASSERT_TRUE(fault.ok()) << t;
    EXPECT_FALSE(fault->has_measurement());
  }
}

}  // namespace tir::dispatch
