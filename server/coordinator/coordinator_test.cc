// The coordinator's scheduling without processes: workers are played by the
// test through the worker API, so leases, losses, priorities and reports are
// deterministic.

#include "server/coordinator/coordinator_test_fixture.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/support/digest.h"

namespace tir::coordinator {
namespace {

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
  // Served: the coordinator's own build of the winner, not the worker's.
  EXPECT_EQ(b.kernels(0).binary().substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(b.kernels(0).binary_sha256(), Sha256Hex(b.kernels(0).binary()));
  EXPECT_EQ(b.provenance().builder(), "coordinator");
  EXPECT_EQ(b.provenance().builder_toolchain(), codegen::ToolchainOf("host"));
  EXPECT_TRUE(b.provenance().measured_binary_checked()) << "what the winner's worker ran is checked";
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
  auto cancelled = c_->CancelOperation(op->name(), "", false);
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

// An operation answered at once with the untuned default is persisted like
// the others: after a restart its name is found, and it answers with the
// tuned bundle once its resumed job stores one.
TEST_F(CoordinatorTest, AnOperationAnsweredAtOnceIsFoundAfterARestart) {
  options_.lost_after = absl::Seconds(30);
  Start();
  auto op = Compile(Graph("now", 8), 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->done());
  EXPECT_FALSE(op->response().tuning().tuned());
  c_.reset();
  Start();
  auto again = c_->GetOperation(op->name());
  ASSERT_TRUE(again.ok()) << again.status();
  const std::string w = Register();
  const tir::v1::Operation done = Serve(w, op->name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_TRUE(done.response().tuning().tuned());
}

// A request answered at once stores its job (its whole request) only
// within the bounds: past them the job tunes while the process lives and
// a restart does not resume it; a request that waits is stored anyway.
TEST_F(CoordinatorTest, AJobBehindAnAnswerGivenNowIsStoredWithinItsBounds) {
  options_.lost_after = absl::Seconds(30);
  options_.answered_job_record_bytes = 4096;
  Start();
  const std::string big = "// " + std::string(8192, 'x') + "\n" + Graph("bignow", 8);
  auto op = Compile(big, 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->done());
  EXPECT_EQ(c_->jobs_in_flight(), 1) << "tuned behind the answer";
  auto small = Compile(Graph("smallnow", 16), 0, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(c_->jobs_in_flight(), 2);
  c_.reset();
  Start();
  EXPECT_EQ(c_->jobs_in_flight(), 1) << "only the small request's job is resumed";
  EXPECT_EQ(ReasonOf(c_->GetOperation(op->name()).status()), "NOT_FOUND");
  EXPECT_TRUE(c_->GetOperation(small->name()).ok());
  c_.reset();
  options_.answered_job_record_bytes = size_t{1} << 20;
  options_.answered_jobs_store_bytes = 1;
  Start();
  const std::string w = Register();  // a request that waits is stored past the bound
  auto waits = Compile(big);
  ASSERT_TRUE(waits.ok()) << waits.status();
  EXPECT_FALSE(waits->done());
  c_.reset();
  Start();
  EXPECT_TRUE(c_->GetOperation(waits->name()).ok());
  EXPECT_EQ(c_->jobs_in_flight(), 2) << "the waiting job and the small one are resumed";
}

TEST_F(CoordinatorTest, ARequestIdIsItsClientsAndReusedForAnotherGraphIsRefused) {
  Start();
  Register();
  tir::v1::CompileRequest a;
  a.set_request_id("r1");
  a.mutable_graph()->set_mlir_text(Graph("ra", 8));
  a.mutable_options()->set_target_arch("host");
  auto first = c_->Compile(a, "alice");
  ASSERT_TRUE(first.ok()) << first.status();
  tir::v1::CompileRequest b = a;
  b.mutable_graph()->set_mlir_text(Graph("rb", 24));
  auto reused = c_->Compile(b, "alice");
  ASSERT_FALSE(reused.ok());
  EXPECT_EQ(ReasonOf(reused.status()), "REQUEST_ID_REUSED");
  auto same = c_->Compile(a, "alice");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->name(), first->name());
  auto other = c_->Compile(b, "bob");
  ASSERT_TRUE(other.ok()) << "another client's id is its own";
  EXPECT_NE(other->name(), first->name());
}

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
  EXPECT_EQ(done.response().kernels(0).candidate().rank(), 1u) << "the winner came back with the round";
  EXPECT_EQ(done.response().kernels(0).binary_sha256(), Sha256Hex(done.response().kernels(0).binary()));
  EXPECT_EQ(done.response().tuning().candidates_measured(), 3u);
}

// What a worker with the coordinator's toolchain ran is checked against the
// coordinator's build: the right hash marks the bundle checked; another
// distrusts the worker (it takes no more work) and has the job measured
// again by the others, and a job whose winners are lied about three times
// is refused (BINARY_MISMATCH).
TEST_F(CoordinatorTest, MeasuredBinariesAreCheckedAgainstTheCoordinatorsBuild) {
  options_.lost_after = absl::Seconds(30);  // the played worker compiles between its calls
  Start();
  const std::string toolchain = codegen::ToolchainOf("host");
  ASSERT_FALSE(toolchain.empty());
  nvrtc::CompileCache unused;
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/worker_builds");
  auto real = [&](const tir::v1::CandidateWork &c) {
    absl::StatusOr<codegen::KernelBinary> k = codegen::BuildKernel(c.source(), "host", {}, unused, dir);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? k->sha256 : std::string();
  };
  const std::string honest = Register("host", toolchain);
  auto op = Compile(Graph("checked", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  for (int i = 0; i < 20 && c_->jobs_in_flight() > 0; ++i) {
    for (const auto &item : Lease(honest)) {
      const auto reported = Report(honest, item, 1, real);
      ASSERT_TRUE(reported.ok()) << reported.status();
    }
  }
  const tir::v1::Operation done = Serve(honest, op->name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_TRUE(done.response().provenance().measured_binary_checked());
  EXPECT_EQ(done.response().provenance().worker_toolchain(), toolchain);

  // A rogue (reporting made-up hashes) plays until it is distrusted.
  auto playRogue = [&](const std::string &rogue) {
    for (int i = 0; i < 40; ++i) {
      tir::v1::LeaseWorkRequest r;
      r.set_name(rogue);
      r.mutable_wait()->set_nanos(200000000);
      auto leased = c_->LeaseWork(r, absl::Now() + absl::Seconds(5));
      if (!leased.ok()) {
        EXPECT_EQ(ReasonOf(leased.status()), "WORKER_DISTRUSTED");
        return;
      }
      for (const auto &item : leased->items()) {
        ASSERT_TRUE(Report(rogue, item, 1, [](const auto &c) { return "made-up-" + c.source_hash().substr(0, 16); }).ok());
      }
    }
    ADD_FAILURE() << rogue << " was never distrusted";
  };
  auto stateOf = [&](const std::string &name) {
    const tir::v1::ListWorkersResponse all = c_->ListWorkers("");
    for (const auto &w : all.workers()) {
      if (w.name() == name) return w.state();
    }
    return std::string();
  };
  auto waitDone = [&](const std::string &name) {
    tir::v1::Operation op;
    for (int i = 0; i < 100 && !op.done(); ++i) {
      auto got = c_->GetOperation(name);
      EXPECT_TRUE(got.ok());
      if (got.ok()) op = *got;
      if (!op.done()) absl::SleepFor(absl::Milliseconds(50));
    }
    return op;
  };
  const std::string rogue = Register("host", toolchain);
  auto other = Compile(Graph("rogue", 16));
  ASSERT_TRUE(other.ok()) << other.status();
  playRogue(rogue);
  EXPECT_EQ(stateOf(rogue), "distrusted") << "the rogue worker takes no more work";
  auto again = c_->GetOperation(other->name());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->done()) << "the job is measured again, not failed";
  // The honest worker measures it again: the answer is the coordinator's
  // build, checked against what the honest worker ran.
  for (int i = 0; i < 20 && !c_->GetOperation(other->name())->done(); ++i) {
    for (const auto &item : Lease(honest)) ASSERT_TRUE(Report(honest, item, 1, real).ok());
  }
  const tir::v1::Operation remeasured = waitDone(other->name());
  ASSERT_TRUE(remeasured.has_response()) << remeasured.error().message();
  EXPECT_TRUE(remeasured.response().provenance().measured_binary_checked());
  // Lied about three times (the first and two measurements again): refused.
  auto liedAbout = Compile(Graph("lied_about", 24));
  ASSERT_TRUE(liedAbout.ok());
  for (int r = 0; r < 3; ++r) playRogue(Register("host", toolchain));
  const tir::v1::Operation refused = waitDone(liedAbout->name());
  ASSERT_TRUE(refused.done());
  ASSERT_TRUE(refused.has_error());
  EXPECT_EQ(refused.error().reason(), "BINARY_MISMATCH");
  auto third = Compile(Graph("after", 32));
  ASSERT_TRUE(third.ok());
  tir::v1::LeaseWorkRequest lease;
  lease.set_name(rogue);
  EXPECT_EQ(ReasonOf(c_->LeaseWork(lease, absl::Now() + absl::Seconds(1)).status()), "WORKER_DISTRUSTED");
}

// Results are matched by candidate_index, not order: a report in reverse
// order picks the same winner; one naming a candidate the item lacks is
// refused.
TEST_F(CoordinatorTest, ResultsAreMatchedByCandidateIndex) {
  Start();
  const std::string w = Register();
  auto op = Compile(Graph("order", 8));
  ASSERT_TRUE(op.ok()) << op.status();
  std::vector<tir::v1::WorkItem> items = Lease(w);
  ASSERT_EQ(items.size(), 1u);
  tir::v1::ReportResultRequest bad;
  bad.set_name(w);
  bad.set_lease_id(items[0].lease_id());
  bad.add_results()->set_candidate_index(999999);
  auto refused = c_->ReportResult(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ReasonOf(refused.status()), "INVALID_REPORT");
  // Reversed, the fastest (index 1) still wins.
  tir::v1::WorkItem reversed = items[0];
  std::reverse(reversed.mutable_candidates()->begin(), reversed.mutable_candidates()->end());
  ASSERT_TRUE(Report(w, reversed).ok());
  const tir::v1::Operation done = Serve(w, op->name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_EQ(done.response().kernels(0).candidate().rank(), 1u);
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

}  // namespace
}  // namespace tir::coordinator
