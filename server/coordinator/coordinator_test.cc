// The coordinator's scheduling without processes: workers are played by the
// test through the worker API, so leases, losses, priorities and reports are
// deterministic.

#include "server/coordinator/coordinator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/reference/DynamicShapes.h"
#include "client/bundle_signature.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/rocksdb_kernel_store.h"

namespace tir::coordinator {
namespace {

using ::testing::HasSubstr;

std::string Graph(const std::string &name, int rows) {
  return absl::StrCat("tir.graph @", name, "(%x: tensor<", rows, "x64xf32>) -> tensor<", rows, "x64xf32> {\n",
                      "  %y = exp %x : tensor<", rows, "x64xf32>\n  results %y : tensor<", rows, "x64xf32>\n}\n");
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    auto store = store::RocksDbKernelStore::Open(absl::StrCat(std::getenv("TEST_TMPDIR"), "/db", ++n));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    options_.heartbeat_interval = absl::Milliseconds(50);
    options_.lost_after = absl::Milliseconds(300);
    options_.tuner.width = 3;
    // These tests follow the rounds; the cap on the space measured has its
    // own test (kernel_tuner_test).
    options_.tuner.max_space_fraction = 1.0;
    options_.work_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/work", n);
  }
  void Start() {
    c_ = std::make_unique<Coordinator>(options_, store_, nullptr);
    ASSERT_TRUE(c_->Start().ok());
  }
  std::string Register(const std::string &arch = "host") {
    tir::v1::RegisterWorkerRequest r;
    r.mutable_capabilities()->set_backend(arch == "host" ? "host" : "cuda");
    r.mutable_capabilities()->set_arch(arch);
    auto out = c_->RegisterWorker(r);
    EXPECT_TRUE(out.ok()) << out.status();
    return out->name();
  }
  absl::StatusOr<tir::v1::Operation> Compile(const std::string &text, int priority = 0,
                                             tir::v1::CompileMode mode = tir::v1::COMPILE_MODE_WAIT) {
    tir::v1::CompileRequest r;
    r.mutable_graph()->set_mlir_text(text);
    r.mutable_options()->set_target_arch("host");
    r.mutable_options()->set_priority(priority);
    r.mutable_options()->set_mode(mode);
    return c_->Compile(r, client_);
  }
  std::vector<tir::v1::WorkItem> Lease(const std::string &worker, int max = 1, absl::Duration wait = absl::Milliseconds(200)) {
    tir::v1::LeaseWorkRequest r;
    r.set_name(worker);
    r.set_max_items(max);
    r.mutable_wait()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(wait)));
    auto out = c_->LeaseWork(r, absl::Now() + absl::Seconds(5));
    EXPECT_TRUE(out.ok()) << out.status();
    return {out->items().begin(), out->items().end()};
  }
  // Every candidate passes; time grows with the candidate's rank except
  // `fastest`, which wins.
  absl::StatusOr<tir::v1::ReportResultResponse> Report(const std::string &worker, const tir::v1::WorkItem &item,
                                                       uint32_t fastest = 1) {
    tir::v1::ReportResultRequest r;
    r.set_name(worker);
    r.set_lease_id(item.lease_id());
    for (const auto &c : item.candidates()) {
      tir::v1::CandidateResult *x = r.add_results();
      x->set_candidate_index(c.candidate_index());
      x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
      x->mutable_measurement()->set_samples(5);
      x->mutable_measurement()->set_median_seconds(c.candidate_index() == fastest ? 1e-6 : 1e-3 * (1 + c.candidate_index()));
      x->set_binary("\x7f" "ELF-candidate-" + std::to_string(c.candidate_index()));
      x->set_format(tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
    }
    return c_->ReportResult(r);
  }
  void Heartbeat(const std::string &worker) {
    tir::v1::HeartbeatRequest h;
    h.set_name(worker);
    ASSERT_TRUE(c_->Heartbeat(h).ok());
  }
  // Plays `worker` until operation `name` is done.
  tir::v1::Operation Serve(const std::string &worker, const std::string &name) {
    for (int i = 0; i < 100; ++i) {
      auto op = c_->GetOperation(name);
      if (op.ok() && op->done()) return *op;
      for (const auto &item : Lease(worker)) EXPECT_TRUE(Report(worker, item).ok());
    }
    ADD_FAILURE() << name << " did not finish";
    return {};
  }

  // Every candidate of `item` faults (a sick device).
  absl::StatusOr<tir::v1::ReportResultResponse> ReportFaults(const std::string &worker, const tir::v1::WorkItem &item) {
    tir::v1::ReportResultRequest r;
    r.set_name(worker);
    r.set_lease_id(item.lease_id());
    for (const auto &c : item.candidates()) {
      tir::v1::CandidateResult *x = r.add_results();
      x->set_candidate_index(c.candidate_index());
      x->mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
      x->mutable_verification()->set_detail("CUDA_ERROR_ILLEGAL_ADDRESS");
    }
    return c_->ReportResult(r);
  }
  // Heartbeats `workers` for `d`.
  void KeepAlive(const std::vector<std::string> &workers, absl::Duration d) {
    for (const absl::Time end = absl::Now() + d; absl::Now() < end;) {
      for (const std::string &w : workers) Heartbeat(w);
      absl::SleepFor(absl::Milliseconds(40));
    }
  }
  std::string StateOf(const std::string &worker) {
    const tir::v1::ListWorkersResponse list = c_->ListWorkers("");
    for (const auto &w : list.workers()) {
      if (w.name() == worker) return w.state();
    }
    return "(not listed)";
  }

  CoordinatorOptions options_;
  std::string client_;
  std::shared_ptr<store::KernelStore> store_;
  std::unique_ptr<Coordinator> c_;
};

TEST_F(CoordinatorTest, TunesRoundByRoundAndStoresTheWinner) {
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_FALSE(op->done());
  const tir::v1::Operation done = Serve(w, op->name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  const tir::v1::KernelBundle &b = done.response();
  EXPECT_TRUE(b.tuning().tuned());
  ASSERT_EQ(b.kernels_size(), 1);
  EXPECT_EQ(b.kernels(0).candidate().rank(), 1u) << "the fastest measured candidate wins";
  EXPECT_EQ(b.kernels(0).binary(), "\x7f" "ELF-candidate-1");
  EXPECT_EQ(b.provenance().worker(), w);
  EXPECT_GT(b.tuning().default_seconds(), b.tuning().best_seconds());
  EXPECT_EQ(c_->jobs_in_flight(), 0);
  auto again = Compile(Graph("g", 8));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->done());
  EXPECT_TRUE(again->metadata().cache_hit());
  auto get = c_->GetOperation(again->name());
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->response().key(), b.key());
}

TEST_F(CoordinatorTest, OperationsKeepTheirNamesAndJobsAcrossRestarts) {
  Start();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  // No worker yet: a waiting job (default_without_worker answers at once otherwise).
  const std::string w = Register();
  auto queued = Compile(Graph("q", 16));
  ASSERT_TRUE(queued.ok()) << queued.status();
  ASSERT_FALSE(queued->done());
  EXPECT_THAT(queued->name(), ::testing::MatchesRegex("operations/[0-9a-f]{16}"));
  const std::string key = queued->metadata().key();
  // The coordinator restarts (same store): the operation answers for the same job.
  c_.reset();
  Start();
  auto again = c_->GetOperation(queued->name());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->done());
  EXPECT_EQ(again->metadata().key(), key);
  // New operations never reuse a name from before.
  const std::string w2 = Register();
  auto other = Compile(Graph("r", 24));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->name(), queued->name());
  const tir::v1::Operation done = Serve(w2, queued->name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_EQ(done.response().key(), key);
  // Finished before a restart: answered from the stored bundle, same name.
  c_.reset();
  Start();
  auto after = c_->GetOperation(queued->name());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->done());
  EXPECT_EQ(after->name(), queued->name());
  EXPECT_EQ(after->response().key(), key);
  auto waited = c_->WaitOperation(queued->name(), absl::Milliseconds(10), nullptr);
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_TRUE(waited->done());
  EXPECT_EQ(ReasonOf(c_->GetOperation("operations/0123456789abcdef").status()), "NOT_FOUND");
}

TEST_F(CoordinatorTest, IdenticalRequestsShareOneJobAndOperationsAreIdempotentByRequestId) {
  Start();
  const std::string w = Register();
  tir::v1::CompileRequest r;
  r.set_request_id("client-1");
  r.mutable_graph()->set_mlir_text(Graph("g", 16));
  r.mutable_options()->set_target_arch("host");
  auto a = c_->Compile(r);
  auto b = c_->Compile(r);
  r.clear_request_id();
  auto c = c_->Compile(r);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->name(), b->name());
  EXPECT_NE(a->name(), c->name());
  EXPECT_EQ(c_->jobs_in_flight(), 1);
  Serve(w, a->name());
  auto cd = c_->WaitOperation(c->name(), absl::Seconds(5));
  ASSERT_TRUE(cd.ok());
  EXPECT_TRUE(cd->done());
  EXPECT_EQ(cd->response().key(), a->metadata().key());
}

TEST_F(CoordinatorTest, LeasesGoToTheMatchingArchHighestPriorityFirst) {
  Start();
  const std::string host = Register();
  const std::string gpu = Register("sm_90a");
  ASSERT_TRUE(Compile(Graph("low", 8), 0).ok());
  ASSERT_TRUE(Compile(Graph("high", 16), 5).ok());
  EXPECT_TRUE(Lease(gpu, 1, absl::Milliseconds(50)).empty()) << "no sm_90a work";
  // The same graph (renamed) at a higher priority joins the job and lifts it.
  ASSERT_TRUE(Compile(Graph("low_again", 8), 9).ok());
  auto lifted = Lease(host);
  ASSERT_EQ(lifted.size(), 1u);
  EXPECT_THAT(lifted[0].kernel_mlir(), HasSubstr("@low_k0"));
  auto items = Lease(host);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_THAT(items[0].kernel_mlir(), HasSubstr("@high_k0"));
}

TEST_F(CoordinatorTest, AReportIsAcceptedOnceAndOnlyFromTheLeaseHolder) {
  Start();
  const std::string w = Register(), other = Register();
  ASSERT_TRUE(Compile(Graph("g", 8)).ok());
  auto items = Lease(w);
  ASSERT_EQ(items.size(), 1u);
  auto wrong = Report(other, items[0]);
  EXPECT_EQ(ReasonOf(wrong.status()), "LEASE_EXPIRED");
  auto first = Report(w, items[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->accepted());
  auto second = Report(w, items[0]);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->duplicate());
  EXPECT_FALSE(second->accepted());
  tir::v1::WorkItem unknown;
  unknown.set_lease_id("leases/999999");
  EXPECT_EQ(ReasonOf(Report(w, unknown).status()), "LEASE_EXPIRED");
}

TEST_F(CoordinatorTest, ALostWorkersLeaseIsRequeuedAndGivenUpAfterMaxAttempts) {
  options_.max_attempts = 2;
  Start();
  const std::string a = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok());
  auto first = Lease(a);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].attempt(), 1u);
  // `a` stops heartbeating; `b` keeps going and gets the item again.
  const std::string b = Register();
  std::vector<tir::v1::WorkItem> again;
  for (int i = 0; i < 40 && again.empty(); ++i) {
    Heartbeat(b);
    again = Lease(b, 1, absl::Milliseconds(50));
  }
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt(), 2u);
  EXPECT_EQ(again[0].candidates_size(), first[0].candidates_size());
  // The late report of the lost lease is refused; the new holder's counts.
  EXPECT_EQ(ReasonOf(Report(a, first[0]).status()), "LEASE_EXPIRED");
  // `b` is lost too: that is max_attempts, so the candidates fail.
  for (int i = 0; i < 40; ++i) {
    auto o = c_->GetOperation(op->name());
    if (o.ok() && o->done()) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  auto o = c_->GetOperation(op->name());
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(o->done());
  EXPECT_EQ(o->error().reason(), "NO_CORRECT_CANDIDATE");
}

TEST_F(CoordinatorTest, ALeasePastItsDeadlineIsRequeuedWhateverTheHeartbeats) {
  options_.lease_timeout = absl::Milliseconds(400);
  options_.max_attempts = 2;
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  auto first = Lease(w);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].attempt(), 1u);
  // The worker stays alive (heartbeats) but never reports: the lease expires.
  std::vector<tir::v1::WorkItem> second;
  for (int i = 0; i < 30 && second.empty(); ++i) {
    Heartbeat(w);
    second = Lease(w, 1, absl::Milliseconds(100));
  }
  ASSERT_EQ(second.size(), 1u) << "the expired lease was not re-queued";
  EXPECT_EQ(second[0].attempt(), 2u);
  EXPECT_NE(second[0].lease_id(), first[0].lease_id());
  // A late report for the expired lease is refused; the live one is taken.
  EXPECT_FALSE(Report(w, first[0]).ok());
  EXPECT_TRUE(Report(w, second[0]).ok());
}

TEST_F(CoordinatorTest, AReturnedLeaseIsRequeuedWithoutAnAttemptAndAnUnavailableWorkerDoesNotCount) {
  options_.max_attempts = 1;  // a counted attempt would fail the item at once
  options_.lost_after = absl::Seconds(30);  // compiling defaults below takes a while
  Start();
  const std::string a = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok());
  auto first = Lease(a);
  ASSERT_EQ(first.size(), 1u);
  // `a`'s runner does not start: it gives the lease back and says so.
  tir::v1::ReturnWorkRequest back;
  back.set_name(a);
  back.add_lease_ids(first[0].lease_id());
  back.add_lease_ids("leases/unknown");
  back.set_reason("the runner did not start");
  auto returned = c_->ReturnWork(back);
  ASSERT_TRUE(returned.ok()) << returned.status();
  EXPECT_EQ(returned->requeued(), 1u);
  tir::v1::HeartbeatRequest h;
  h.set_name(a);
  h.set_state(tir::v1::WORKER_STATE_UNAVAILABLE);
  ASSERT_TRUE(c_->Heartbeat(h).ok());
  EXPECT_EQ(c_->ListWorkers("host").workers(0).state(), "unavailable");
  // With no other worker the job waits (not failed), and a heuristic-now
  // request is answered with defaults: the unavailable worker does not count.
  auto o = c_->GetOperation(op->name());
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->done());
  auto now = Compile(Graph("h", 8), 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_TRUE(now->done());
  // Once `a` is back, the same item comes again as attempt 1 and finishes.
  h.set_state(tir::v1::WORKER_STATE_READY);
  ASSERT_TRUE(c_->Heartbeat(h).ok());
  auto again = Lease(a);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt(), 1u);
  EXPECT_EQ(again[0].candidates_size(), first[0].candidates_size());
  ASSERT_TRUE(Report(a, again[0]).ok());
  tir::v1::Operation done = Serve(a, op->name());
  EXPECT_FALSE(done.has_error()) << done.error().message();
  // A worker the coordinator does not know is told to register again.
  back.set_name("workers/999");
  EXPECT_EQ(ReasonOf(c_->ReturnWork(back).status()), "UNKNOWN_WORKER");
}

TEST_F(CoordinatorTest, HeuristicNowAnswersWithTheDefaultAtOnceAndTunesBehind) {
  options_.lost_after = absl::Seconds(30);  // the worker does not heartbeat while defaults compile
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("g", 8), 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->done());
  EXPECT_FALSE(op->response().tuning().tuned());
  EXPECT_TRUE(op->response().kernels(0).candidate().is_default());
  EXPECT_EQ(op->response().kernels(0).binary().substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(c_->jobs_in_flight(), 1);
  for (int i = 0; i < 20 && c_->jobs_in_flight() > 0; ++i) {
    for (const auto &item : Lease(w)) ASSERT_TRUE(Report(w, item).ok());
  }
  tir::v1::LookupKernelRequest l;
  l.mutable_graph()->set_mlir_text(Graph("g", 8));
  l.mutable_options()->set_target_arch("host");
  auto found = c_->LookupKernel(l);
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(found->found());
  EXPECT_TRUE(found->bundle().tuning().tuned());
}

TEST_F(CoordinatorTest, WithoutAWorkerTheDefaultOrNoWorkerForArch) {
  Start();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_TRUE(op->done());
  EXPECT_FALSE(op->response().tuning().tuned());
  EXPECT_EQ(c_->queue_depth(), 1) << "the job waits for a worker";
  c_.reset();
  options_.default_without_worker = false;
  Start();  // the persisted job is resumed as well
  auto refused = Compile(Graph("other", 8));
  EXPECT_EQ(ReasonOf(refused.status()), "NO_WORKER_FOR_ARCH");
  EXPECT_EQ(c_->jobs_in_flight(), 1);
}

TEST_F(CoordinatorTest, CancellingTheLastWaiterEndsTheJobAndItsLeases) {
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok());
  auto items = Lease(w);
  ASSERT_EQ(items.size(), 1u);
  auto cancelled = c_->CancelOperation(op->name());
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->error().reason(), "CANCELLED");
  EXPECT_EQ(c_->jobs_in_flight(), 0);
  tir::v1::HeartbeatRequest h;
  h.set_name(w);
  h.add_lease_ids(items[0].lease_id());
  auto hb = c_->Heartbeat(h);
  ASSERT_TRUE(hb.ok());
  ASSERT_EQ(hb->cancelled_lease_ids_size(), 1);
  auto late = Report(w, items[0]);
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late->duplicate());
}

TEST_F(CoordinatorTest, BadRequestsHaveTheirReasons) {
  Start();
  tir::v1::CompileRequest r;
  r.mutable_graph()->set_mlir_text(Graph("g", 8));
  EXPECT_EQ(ReasonOf(c_->Compile(r).status()), "UNKNOWN_ARCH");
  r.mutable_options()->set_target_arch("sm_42");
  EXPECT_EQ(ReasonOf(c_->Compile(r).status()), "UNKNOWN_ARCH");
  r.mutable_options()->set_target_arch("host");
  r.mutable_graph()->set_mlir_text("tir.graph @g(");
  EXPECT_EQ(ReasonOf(c_->Compile(r).status()), "INVALID_GRAPH");
  r.mutable_graph()->set_mlir_text("tir.graph @g(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n  %y = exp %x : tensor<?x4xf32>\n  results %y : tensor<?x4xf32>\n}\n");
  EXPECT_EQ(ReasonOf(c_->Compile(r).status()), "SHAPE_HINT_MISSING");
  EXPECT_EQ(ReasonOf(c_->GetOperation("operations/nope").status()), "NOT_FOUND");
  EXPECT_EQ(ReasonOf(c_->GetKernel("kernels/nope", false).status()), "NOT_FOUND");
}

}  // namespace
}  // namespace tir::coordinator

namespace tir::coordinator {
namespace {

TEST_F(CoordinatorTest, AResumedJobGoesOnFromItsStoredRounds) {
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  std::vector<tir::v1::WorkItem> r0 = Lease(w);
  ASSERT_EQ(r0.size(), 1u);
  ASSERT_EQ(r0[0].candidates_size(), 3);
  ASSERT_TRUE(Report(w, r0[0]).ok());
  std::vector<tir::v1::WorkItem> r1 = Lease(w);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1[0].policy().min_runs(), 2 * r0[0].policy().min_runs());
  for (const auto &c : r1[0].candidates()) EXPECT_GT(c.expected_seconds(), 0) << "measured in round 0";
  // The coordinator dies with round 1 leased: after the restart round 0 is
  // replayed from the store and round 1 is what is queued.
  c_.reset();
  Start();
  const std::string w2 = Register();
  std::vector<tir::v1::WorkItem> again = Lease(w2);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].policy().min_runs(), r1[0].policy().min_runs()) << "not round 0 again";
  ASSERT_EQ(again[0].candidates_size(), r1[0].candidates_size());
  for (int i = 0; i < again[0].candidates_size(); ++i) {
    EXPECT_EQ(again[0].candidates(i).candidate_index(), r1[0].candidates(i).candidate_index());
  }
  ASSERT_TRUE(Report(w2, again[0]).ok());
  const tir::v1::Operation done = Serve(w2, op->name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_EQ(done.response().kernels(0).binary(), "\x7f" "ELF-candidate-1") << "the binary came back with the round";
  EXPECT_EQ(done.response().tuning().candidates_measured(), 3u);
}

TEST_F(CoordinatorTest, AWorkerFaultingOnSeveralKernelsIsQuarantinedUntilAProbePasses) {
  options_.quarantine_after = 2;
  options_.quarantine_probe = absl::Milliseconds(300);
  options_.max_attempts = 10;
  Start();
  const std::string sick = Register();
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(Compile(Graph(absl::StrCat("g", k), 8 * (k + 1))).ok());
  // Faults on one kernel, twice, are one kernel: no quarantine yet.
  std::vector<tir::v1::WorkItem> a = Lease(sick);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_TRUE(ReportFaults(sick, a[0]).ok());
  EXPECT_EQ(StateOf(sick), "ready");
  std::vector<tir::v1::WorkItem> b = Lease(sick);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_TRUE(ReportFaults(sick, b[0]).ok());
  EXPECT_EQ(StateOf(sick), "quarantined");
  // Quarantined: nothing leased before the probe time, whatever is queued.
  EXPECT_TRUE(Lease(sick, 4, absl::Milliseconds(100)).empty());
  const std::string healthy = Register();
  std::vector<tir::v1::WorkItem> h = Lease(healthy);
  ASSERT_EQ(h.size(), 1u) << "the queued work goes to the healthy worker";
  // The probe: one item, however many are asked for.
  KeepAlive({sick, healthy}, absl::Milliseconds(350));
  auto t = Compile(Graph("probe", 40));
  ASSERT_TRUE(t.ok());
  std::vector<tir::v1::WorkItem> probe = Lease(sick, 4, absl::Milliseconds(100));
  ASSERT_EQ(probe.size(), 1u);
  ASSERT_TRUE(ReportFaults(sick, probe[0]).ok());
  EXPECT_EQ(StateOf(sick), "quarantined") << "a failed probe keeps it out";
  KeepAlive({sick, healthy}, absl::Milliseconds(350));
  ASSERT_TRUE(Compile(Graph("probe2", 48)).ok());
  probe = Lease(sick, 4, absl::Milliseconds(100));
  ASSERT_EQ(probe.size(), 1u);
  ASSERT_TRUE(Report(sick, probe[0]).ok());
  EXPECT_EQ(StateOf(sick), "ready") << "a passing probe lets it back";
  EXPECT_EQ(c_->Status().workers_size(), 2);
}

TEST_F(CoordinatorTest, LimitsRefuseWithTheirNames) {
  options_.limits.max_jobs = 3;
  options_.limits.max_jobs_per_client = 2;
  options_.limits.max_ops_per_graph = 3;
  Start();
  Register();
  client_ = "alice";
  ASSERT_TRUE(Compile(Graph("a1", 8)).ok());
  ASSERT_TRUE(Compile(Graph("a2", 16)).ok());
  auto third = Compile(Graph("a3", 24));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReasonOf(third.status()), "LIMIT_EXCEEDED");
  EXPECT_THAT(third.status().message(), HasSubstr("maxJobsPerClient=2"));
  EXPECT_THAT(third.status().message(), HasSubstr("alice"));
  // Joining a job in flight is no new job.
  EXPECT_TRUE(Compile(Graph("a1", 8)).ok());
  client_ = "bob";
  ASSERT_TRUE(Compile(Graph("b1", 32)).ok());
  auto over = Compile(Graph("b2", 40));
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.status().message(), HasSubstr("maxJobs=3"));
  // Past the job limit an answer-now request still gets its untuned bundle.
  auto now = Compile(Graph("b3", 48), 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_TRUE(now->done());
  EXPECT_FALSE(now->response().tuning().tuned());
  EXPECT_EQ(c_->jobs_in_flight(), 3);
  // A graph over the operation limit.
  const std::string big =
      "tir.graph @big(%x: tensor<8xf32>) -> tensor<8xf32> {\n  %a = exp %x : tensor<8xf32>\n"
      "  %b = exp %a : tensor<8xf32>\n  %c = exp %b : tensor<8xf32>\n  %d = exp %c : tensor<8xf32>\n"
      "  results %d : tensor<8xf32>\n}\n";
  auto tooBig = Compile(big);
  ASSERT_FALSE(tooBig.ok());
  EXPECT_EQ(ReasonOf(tooBig.status()), "LIMIT_EXCEEDED");
  EXPECT_THAT(tooBig.status().message(), HasSubstr("maxOpsPerGraph=3"));
}

TEST_F(CoordinatorTest, OperationsKeptAreBoundedFinishedOnesGoFirst) {
  options_.limits.max_operations = 4;
  Start();
  std::vector<std::string> names;
  // No worker: each answers at once with its default (done operations).
  for (int k = 0; k < 4; ++k) {
    auto op = Compile(Graph(absl::StrCat("d", k), 8 * (k + 1)));
    ASSERT_TRUE(op.ok()) << op.status();
    ASSERT_TRUE(op->done());
    names.push_back(op->name());
  }
  auto fifth = Compile(Graph("d4", 40));
  ASSERT_TRUE(fifth.ok()) << fifth.status() << ": room is made from finished operations";
  EXPECT_TRUE(c_->GetOperation(fifth->name()).ok());
}

TEST_F(CoordinatorTest, EveryBundleServedIsSignedWithTheKey) {
  options_.bundle_key = "k-1";
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("g", 8));
  ASSERT_TRUE(op.ok());
  const tir::v1::Operation done = Serve(w, op->name());
  ASSERT_TRUE(done.has_response());
  EXPECT_TRUE(CheckBundleSignature(done.response(), "k-1").ok());
  auto hit = Compile(Graph("g", 8));
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(CheckBundleSignature(hit->response(), "k-1").ok());
  auto meta = c_->GetKernel(done.response().name(), true);
  ASSERT_TRUE(meta.ok());
  EXPECT_TRUE(meta->kernels(0).binary().empty());
  EXPECT_TRUE(CheckBundleSignature(*meta, "k-1").ok()) << "the metadata view is signed as served";
  tir::v1::ListKernelsRequest list;
  auto page = c_->ListKernels(list);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->kernels_size(), 1);
  EXPECT_TRUE(CheckBundleSignature(page->kernels(0), "k-1").ok());
  // Untuned defaults too.
  auto now = Compile(Graph("n", 16), 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(CheckBundleSignature(now->response(), "k-1").ok());
  // A key rotation: stored bundles are signed with the new key as served.
  c_.reset();
  options_.bundle_key = "k-2";
  Start();
  auto rotated = Compile(Graph("g", 8));
  ASSERT_TRUE(rotated.ok());
  EXPECT_TRUE(rotated->done());
  EXPECT_TRUE(CheckBundleSignature(rotated->response(), "k-2").ok());
  EXPECT_EQ(ReasonOf(CheckBundleSignature(rotated->response(), "k-1")), "BUNDLE_KEY_MISMATCH");
}


// Dynamic shapes: one tuning per bucket, a check per new shape.

const char kDynamicExp[] = R"(tir.graph @rows(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = exp %x : tensor<?x64xf32>
  results %y : tensor<?x64xf32>
}
)";

class DynamicShapesTest : public CoordinatorTest {
 protected:
  absl::StatusOr<tir::v1::Operation> CompileAt(const std::string &text, const std::vector<std::string> &shapes,
                                               tir::v1::CompileMode mode = tir::v1::COMPILE_MODE_WAIT) {
    tir::v1::CompileRequest r;
    r.mutable_graph()->set_mlir_text(text);
    r.mutable_options()->set_target_arch("host");
    r.mutable_options()->set_mode(mode);
    for (const std::string &s : shapes) {
      absl::StatusOr<tir::v1::ShapeHint> h = reference::ParseShapeHint(s);
      EXPECT_TRUE(h.ok()) << h.status();
      *r.mutable_options()->add_shape_hints() = *h;
    }
    return c_->Compile(r, client_);
  }
  // Plays `worker` until `name` is done, counting the tuning items and the
  // shape checks (one candidate, verify only) it was leased.
  tir::v1::Operation ServeCounting(const std::string &worker, const std::string &name, int *tunes, int *checks,
                                   tir::v1::Verdict check_verdict = tir::v1::VERDICT_PASSED) {
    for (int i = 0; i < 100; ++i) {
      auto op = c_->GetOperation(name);
      if (op.ok() && op->done()) return *op;
      for (const auto &item : Lease(worker)) {
        const bool check = item.candidates_size() == 1 && item.policy().min_runs() == 1;
        ++*(check ? checks : tunes);
        checked_shapes_.push_back(item.shapes_size() ? absl::StrJoin(item.shapes(0).shape(), "x") : "");
        if (check && check_verdict != tir::v1::VERDICT_PASSED) {
          tir::v1::ReportResultRequest r;
          r.set_name(worker);
          r.set_lease_id(item.lease_id());
          tir::v1::CandidateResult *x = r.add_results();
          x->set_candidate_index(item.candidates(0).candidate_index());
          x->mutable_verification()->set_verdict(check_verdict);
          x->mutable_verification()->set_detail("relative L2 error 0.5 over the bound 1e-5");
          EXPECT_TRUE(c_->ReportResult(r).ok());
        } else {
          EXPECT_TRUE(Report(worker, item).ok());
        }
      }
    }
    ADD_FAILURE() << name << " did not finish";
    return {};
  }
  // Tunes kDynamicExp's bucket 257..512 (asked at 300, so checked there too).
  void TuneTheBucket(const std::string &worker, int *tunes, int *checks) {
    auto op = CompileAt(kDynamicExp, {"0=300x64"});
    ASSERT_TRUE(op.ok()) << op.status();
    ASSERT_TRUE(ServeCounting(worker, op->name(), tunes, checks).has_response());
  }
  std::vector<std::string> checked_shapes_;
};

TEST_F(DynamicShapesTest, OneTuningPerBucketAndACheckPerNewShape) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  // 300 rows: bucket 257..512, tuned at 512, then checked at 300.
  auto op = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->metadata().shape(), "0=300x64");
  EXPECT_EQ(op->metadata().shape_bucket(), "0:0=257..512");
  tir::v1::Operation done = ServeCounting(w, op->name(), &tunes, &checks);
  ASSERT_TRUE(done.has_response()) << done.error().message();
  const tir::v1::KernelBundle &b = done.response();
  EXPECT_GT(tunes, 0);
  EXPECT_EQ(checks, 1);
  EXPECT_EQ(b.inputs(0).shape(0), 300) << "served sized for the shape asked";
  EXPECT_EQ(b.outputs(0).shape(0), 300);
  EXPECT_TRUE(b.served_shape().passed());
  EXPECT_EQ(b.served_shape().kernels_size(), b.kernels_size());
  ASSERT_EQ(b.buckets_size(), 1);
  EXPECT_EQ(b.buckets(0).lower(), 257);
  EXPECT_EQ(b.buckets(0).upper(), 512);
  EXPECT_EQ(b.tuned_shape(0).shape(0), 512) << "tuned at the bucket's upper end";
  EXPECT_EQ(b.bucket_policy(), "pow2");
  for (const auto &k : b.kernels()) {
    for (int64_t d : k.iteration_domain()) EXPECT_GT(d, 0);
  }
  const int tuned = tunes;
  // Two more shapes of the bucket: no tuning, one check each.
  for (const char *shape : {"0=400x64", "0=257x64"}) {
    auto next = CompileAt(kDynamicExp, {shape});
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_FALSE(next->done()) << "a new shape is checked before it is served";
    EXPECT_EQ(next->metadata().key(), op->metadata().key());
    tir::v1::Operation d = ServeCounting(w, next->name(), &tunes, &checks);
    ASSERT_TRUE(d.has_response()) << d.error().message();
    EXPECT_EQ(absl::StrCat("0=", d.response().inputs(0).shape(0), "x64"), shape);
  }
  EXPECT_EQ(tunes, tuned) << "one tuning for the bucket";
  EXPECT_EQ(checks, 3);
  EXPECT_TRUE(Lease(w, 1, absl::Milliseconds(20)).empty()) << "nothing else queued";
  EXPECT_THAT(checked_shapes_, ::testing::IsSupersetOf({"300x64", "400x64", "257x64"}));
  // A shape seen before is a cache hit, sized for it.
  auto hit = CompileAt(kDynamicExp, {"0=400x64"});
  ASSERT_TRUE(hit.ok()) << hit.status();
  ASSERT_TRUE(hit->done());
  EXPECT_TRUE(hit->metadata().cache_hit());
  EXPECT_EQ(hit->response().inputs(0).shape(0), 400);
  auto again = c_->GetOperation(hit->name());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->response().inputs(0).shape(0), 400);
  // The tuned shape itself is served without a check.
  auto top = CompileAt(kDynamicExp, {"0=512x64"});
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_TRUE(top->done());
  EXPECT_TRUE(Lease(w, 1, absl::Milliseconds(20)).empty()) << "no check queued for the tuned shape";
  // Another bucket tunes again.
  auto other = CompileAt(kDynamicExp, {"0=600x64"});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->metadata().key(), op->metadata().key());
  EXPECT_EQ(other->metadata().shape_bucket(), "0:0=513..1024");
  tir::v1::Operation d = ServeCounting(w, other->name(), &tunes, &checks);
  ASSERT_TRUE(d.has_response()) << d.error().message();
  EXPECT_GT(tunes, tuned);
  EXPECT_EQ(checks, 4);
  // The dashboard counts the bucket's hits.
  const tir::v1::ServiceStatus status = c_->Status();
  ASSERT_GE(status.buckets_size(), 1);
  EXPECT_EQ(status.buckets(0).bucket(), "0:0=257..512");
  EXPECT_GE(status.buckets(0).hits(), 2u);
  EXPECT_EQ(status.buckets(0).shapes_verified(), 3u);
}

TEST_F(DynamicShapesTest, AShapeItsKernelsAreWrongAtIsRefused) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  auto op = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(op.ok()) << op.status();
  tir::v1::Operation done = ServeCounting(w, op->name(), &tunes, &checks, tir::v1::VERDICT_WRONG);
  EXPECT_FALSE(done.has_response());
  EXPECT_EQ(done.error().reason(), "WRONG_AT_SHAPE") << done.error().message();
  // The record keeps the refusal: no second check.
  auto again = CompileAt(kDynamicExp, {"0=300x64"});
  EXPECT_EQ(ReasonOf(again.status()), "WRONG_AT_SHAPE");
  EXPECT_EQ(checks, 1);
  EXPECT_TRUE(Lease(w, 1, absl::Milliseconds(20)).empty()) << "no second check queued";
  // Another shape of the bucket is checked on its own.
  auto other = CompileAt(kDynamicExp, {"0=320x64"});
  ASSERT_TRUE(other.ok()) << other.status();
  tir::v1::Operation d = ServeCounting(w, other->name(), &tunes, &checks);
  EXPECT_TRUE(d.has_response()) << d.error().message();
}

TEST_F(DynamicShapesTest, ACheckThatOnlyFaultedIsNotKeptAsARefusal) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  auto op = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(op.ok()) << op.status();
  tir::v1::Operation done = ServeCounting(w, op->name(), &tunes, &checks, tir::v1::VERDICT_FAULT);
  EXPECT_EQ(done.error().reason(), "SHAPE_CHECK_FAILED") << done.error().message();
  EXPECT_EQ(checks, options_.max_attempts) << "a faulting check is tried on every attempt";
  // Asked again, the shape is checked again (and passes this time).
  auto again = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->done());
  tir::v1::Operation d = ServeCounting(w, again->name(), &tunes, &checks);
  EXPECT_TRUE(d.has_response()) << d.error().message();
  EXPECT_TRUE(d.metadata().shape_checked());
}

TEST_F(DynamicShapesTest, ACheckOfTheBundleARetuneReplacedVouchesForNothing) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket(w, &tunes, &checks));
  // A check of the bundle at 280 is leased, not reported yet ...
  auto pending = CompileAt(kDynamicExp, {"0=280x64"});
  ASSERT_TRUE(pending.ok()) << pending.status();
  std::vector<tir::v1::WorkItem> old = Lease(w);
  ASSERT_EQ(old.size(), 1u);
  ASSERT_EQ(old[0].candidates_size(), 1);
  // ... when a retune replaces the bundle.
  tir::v1::CompileRequest r;
  r.mutable_graph()->set_mlir_text(kDynamicExp);
  r.mutable_options()->set_target_arch("host");
  r.mutable_options()->set_force_retune(true);
  *r.mutable_options()->add_shape_hints() = *reference::ParseShapeHint("0=300x64");
  auto retune = c_->Compile(r, client_);
  ASSERT_TRUE(retune.ok()) << retune.status();
  ASSERT_TRUE(ServeCounting(w, retune->name(), &tunes, &checks).has_response());
  // The old check passes: it answers the request that asked for it, and
  // says nothing of the new kernels at 280.
  ASSERT_TRUE(Report(w, old[0]).ok());
  auto answered = c_->GetOperation(pending->name());
  ASSERT_TRUE(answered.ok());
  EXPECT_TRUE(answered->done());
  auto again = CompileAt(kDynamicExp, {"0=280x64"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->done()) << "the new bundle is checked at 280 itself";
  EXPECT_TRUE(ServeCounting(w, again->name(), &tunes, &checks).has_response());
}

TEST_F(DynamicShapesTest, WithoutAWorkerANewShapeGetsTheDefaultsAndIsCheckedLater) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket(w, &tunes, &checks));
  tir::v1::DrainRequest drain;
  drain.set_name(w);
  ASSERT_TRUE(c_->Drain(drain).ok());
  auto now = CompileAt(kDynamicExp, {"0=290x64"});
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_TRUE(now->done()) << "not left waiting for a worker";
  ASSERT_TRUE(now->has_response()) << now->error().message();
  EXPECT_FALSE(now->response().tuning().tuned());
  EXPECT_EQ(now->response().inputs(0).shape(0), 290);
  // A worker comes: the queued check runs, and the shape is served tuned.
  const std::string w2 = Register();
  std::vector<tir::v1::WorkItem> items = Lease(w2);
  ASSERT_EQ(items.size(), 1u);
  ASSERT_TRUE(Report(w2, items[0]).ok());
  auto hit = CompileAt(kDynamicExp, {"0=290x64"});
  ASSERT_TRUE(hit.ok()) << hit.status();
  ASSERT_TRUE(hit->done());
  EXPECT_TRUE(hit->response().tuning().tuned());
}

TEST_F(DynamicShapesTest, ACancelledCheckOperationEndsTheCheckGoesOn) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket(w, &tunes, &checks));
  auto pending = CompileAt(kDynamicExp, {"0=270x64"});
  ASSERT_TRUE(pending.ok()) << pending.status();
  auto cancelled = c_->CancelOperation(pending->name());
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->error().reason(), "CANCELLED");
  std::vector<tir::v1::WorkItem> items = Lease(w);
  ASSERT_EQ(items.size(), 1u) << "the check goes on";
  ASSERT_TRUE(Report(w, items[0]).ok());
  auto hit = CompileAt(kDynamicExp, {"0=270x64"});
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->done());
  // After a restart the cancelled operation stays cancelled (or gone), and
  // no new check is queued for it.
  c_.reset();
  Start();
  const std::string w2 = Register();
  auto after = c_->GetOperation(pending->name());
  EXPECT_TRUE(!after.ok() || (after->done() && !after->has_response())) << after.status();
  EXPECT_TRUE(Lease(w2, 1, absl::Milliseconds(50)).empty());
}

TEST_F(DynamicShapesTest, ARetunedBundlesShapesAreCheckedAgain) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket(w, &tunes, &checks));
  ASSERT_EQ(checks, 1);
  tir::v1::CompileRequest r;
  r.mutable_graph()->set_mlir_text(kDynamicExp);
  r.mutable_options()->set_target_arch("host");
  r.mutable_options()->set_force_retune(true);
  *r.mutable_options()->add_shape_hints() = *reference::ParseShapeHint("0=300x64");
  auto retune = c_->Compile(r, client_);
  ASSERT_TRUE(retune.ok()) << retune.status();
  ASSERT_TRUE(ServeCounting(w, retune->name(), &tunes, &checks).has_response());
  EXPECT_EQ(checks, 2) << "the new kernels are checked at the shape";
  auto hit = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->done());
}

TEST_F(DynamicShapesTest, HintsAreCheckedAgainstTheGraph) {
  Start();
  auto reason = [&](const std::string &text, const std::vector<std::string> &shapes) {
    absl::StatusOr<tir::v1::Operation> op = CompileAt(text, shapes);
    return op.ok() ? std::string("OK") : ReasonOf(op.status()) + ": " + std::string(op.status().message());
  };
  EXPECT_THAT(reason(kDynamicExp, {}), HasSubstr("SHAPE_HINT_MISSING: the graph has dynamic dims without sizes: input 0 dim 0"));
  EXPECT_THAT(reason(kDynamicExp, {"0=300x65"}), HasSubstr("INVALID_SHAPE_HINT: input 0 dim 1 is static (64"));
  EXPECT_THAT(reason(kDynamicExp, {"0=300"}), HasSubstr("INVALID_SHAPE_HINT: input 0 is tensor<?x64xf32> (rank 2)"));
  EXPECT_THAT(reason(kDynamicExp, {"1=300x64"}), HasSubstr("INVALID_SHAPE_HINT"));
  EXPECT_THAT(reason(kDynamicExp, {"0=0x64"}), HasSubstr("LIMIT_EXCEEDED: input 0 dim 0 is given as 0"));
  EXPECT_THAT(reason(kDynamicExp, {"0=2000000000000x64"}), HasSubstr("LIMIT_EXCEEDED"));
  // Legal sizes whose reference would not fit in memory: refused, not run.
  EXPECT_THAT(reason(kDynamicExp, {"0=1000000000x64"}), HasSubstr("LIMIT_EXCEEDED: verifying @rows on the host needs"));
  const std::string add = R"(tir.graph @add(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c = add %a, %b : tensor<?x4xf32>
  results %c : tensor<?x4xf32>
}
)";
  EXPECT_THAT(reason(add, {"0=8x4", "1=7x4"}), HasSubstr("INVALID_SHAPE_HINT: input 1 dim 0 = 7 contradicts the graph"));
  EXPECT_THAT(reason(add, {"0=8x4"}), HasSubstr("SHAPE_HINT_MISSING: the graph has dynamic dims without sizes: input 1 dim 0"));
  // A hint for a static graph is ignored, and said so.
  auto op = CompileAt(Graph("g", 8), {"0=8x64"}, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_EQ(op->metadata().notes_size(), 1);
  EXPECT_THAT(op->metadata().notes(0), HasSubstr("shape hints ignored"));
}

TEST_F(DynamicShapesTest, ABoundedDimIsBucketedUnderItsBoundAndRefusedPastIt) {
  Start();
  for (const char *spelling : {"\"[<=6,2]\"", "array<i64: 6, 2>"}) {
    SCOPED_TRACE(spelling);
    const std::string text = absl::StrCat("tir.graph @nz(%x: tensor<?x2xf32> {tir.bounds = ", spelling,
                                          "}) -> tensor<?x2xf32> {\n  %y = exp %x : tensor<?x2xf32>\n"
                                          "  results %y : tensor<?x2xf32>\n}\n");
    auto over = CompileAt(text, {"0=7x2"});
    EXPECT_EQ(ReasonOf(over.status()), "SHAPE_OVER_BOUND") << over.status();
    EXPECT_THAT(std::string(over.status().message()), HasSubstr("input 0 dim 0 is given as 7, over its bound 6"));
    auto op = CompileAt(text, {"0=5x2"}, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
    ASSERT_TRUE(op.ok()) << op.status();
    EXPECT_EQ(op->metadata().shape_bucket(), "0:0=5..6") << "pow2's 5..8 capped at the bound";
    ASSERT_TRUE(op->has_response()) << op->error().message();
    EXPECT_EQ(op->response().inputs(0).shape(0), 5);
    EXPECT_FALSE(op->response().tuning().tuned());
    EXPECT_FALSE(op->response().served_shape().passed()) << "heuristic-now: sized, not verified";
  }
}

TEST_F(DynamicShapesTest, ABoundPolicyGivesABoundedDimOneBucket) {
  options_.shape_buckets = "bound";
  Start();
  const std::string text = R"(tir.graph @nz(%x: tensor<?x2xf32> {tir.bounds = "[<=100,2]"}) -> tensor<?x2xf32> {
  %y = exp %x : tensor<?x2xf32>
  results %y : tensor<?x2xf32>
}
)";
  auto a = CompileAt(text, {"0=3x2"}, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  auto b = CompileAt(text, {"0=99x2"}, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->metadata().key(), b->metadata().key());
  EXPECT_EQ(a->metadata().shape_bucket(), "0:0=1..100");
}

TEST_F(DynamicShapesTest, AStaticGraphWithADynamicIntermediateIsSizedByInference) {
  Start();
  const std::string w = Register();
  // The reshape's extent is inferred from the element count: no hint.
  const std::string text = R"(tir.graph @regroup(%x: tensor<8x16xf32>, %n: index) -> tensor<?x4xf32> {
  %y = reshape %x dynamic_dims(%n) : tensor<8x16xf32> -> tensor<?x4xf32>
  %e = exp %y : tensor<?x4xf32>
  results %e : tensor<?x4xf32>
}
)";
  auto op = CompileAt(text, {});
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->metadata().shape(), "0=8x16 1=32");
  int tunes = 0, checks = 0;
  tir::v1::Operation done = ServeCounting(w, op->name(), &tunes, &checks);
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_EQ(checks, 0) << "tuned at the only shape the graph has";
  EXPECT_EQ(done.response().outputs(0).shape(0), 32);
  for (const std::string &s : checked_shapes_) EXPECT_NE(s, "") << "every item is sized";
  // A contradicting value is refused.
  auto bad = CompileAt(text, {"1=31"});
  EXPECT_EQ(ReasonOf(bad.status()), "INVALID_SHAPE_HINT") << bad.status();
}

TEST_F(DynamicShapesTest, ACheckInFlightSurvivesARestart) {
  Start();
  const std::string w = Register();
  int tunes = 0, checks = 0;
  auto op = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(op.ok());
  ASSERT_TRUE(ServeCounting(w, op->name(), &tunes, &checks).has_response());
  auto next = CompileAt(kDynamicExp, {"0=280x64"});
  ASSERT_TRUE(next.ok());
  ASSERT_FALSE(next->done());
  c_.reset();
  Start();
  const std::string w2 = Register();
  tir::v1::Operation d = ServeCounting(w2, next->name(), &tunes, &checks);
  ASSERT_TRUE(d.has_response()) << d.error().message();
  EXPECT_EQ(d.response().inputs(0).shape(0), 280);
  // And the verified shapes stay verified.
  auto hit = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->done());
}

}  // namespace
}  // namespace tir::coordinator
