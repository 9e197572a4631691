// The coordinator's dynamic shapes: one tuning per bucket, a check per new
// shape; workers played by the test (coordinator_test_fixture.h).

#include "server/coordinator/coordinator_test_fixture.h"

namespace tir::coordinator {
namespace {

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
  // With `until_done` false it plays until it has reported `check_verdict`
  // for a check and is then leased nothing (the operation left waiting).
  tir::v1::Operation ServeCounting(const std::string &worker, const std::string &name, int *tunes, int *checks,
                                   tir::v1::Verdict check_verdict = tir::v1::VERDICT_PASSED, bool until_done = true) {
    bool reported = false;
    for (int i = 0; i < 100; ++i) {
      const size_t before = checked_shapes_.size();
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
          reported = true;
        } else {
          EXPECT_TRUE(Report(worker, item).ok());
        }
      }
      if (!until_done && reported && checked_shapes_.size() == before) return *c_->GetOperation(name);
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

// One worker's WRONG is not a verdict: the kernel is checked again by
// another worker while the operation waits, checking. A second WRONG makes
// the refusal, kept for good.
TEST_F(DynamicShapesTest, AShapeTwoWorkersFindWrongIsRefused) {
  options_.lost_after = absl::Seconds(30);  // one worker waits while the other plays
  Start();
  const std::string w = Register(), w2 = Register();
  int tunes = 0, checks = 0;
  auto op = CompileAt(kDynamicExp, {"0=300x64"});
  ASSERT_TRUE(op.ok()) << op.status();
  tir::v1::Operation pending = ServeCounting(w, op->name(), &tunes, &checks, tir::v1::VERDICT_WRONG, false);
  EXPECT_FALSE(pending.done()) << "one worker's WRONG is not a verdict: " << pending.error().message();
  EXPECT_EQ(pending.metadata().progress().stage(), tir::v1::STAGE_CHECKING_SHAPE);
  EXPECT_EQ(checks, 1);
  EXPECT_TRUE(Lease(w, 1, absl::Milliseconds(20)).empty()) << "the dissenter does not check again";
  tir::v1::Operation done = ServeCounting(w2, op->name(), &tunes, &checks, tir::v1::VERDICT_WRONG);
  EXPECT_FALSE(done.has_response());
  EXPECT_EQ(done.error().reason(), "WRONG_AT_SHAPE") << done.error().message();
  EXPECT_THAT(done.error().message(), HasSubstr(absl::StrCat(w, ", confirmed by ", w2)));
  EXPECT_THAT(done.error().message(), ::testing::Not(HasSubstr("relative L2 error 0.5 over the bound")))
      << "a worker's words stay in the log";
  // The record keeps the refusal: no third check.
  auto again = CompileAt(kDynamicExp, {"0=300x64"});
  EXPECT_EQ(ReasonOf(again.status()), "WRONG_AT_SHAPE");
  EXPECT_EQ(checks, 2);
  EXPECT_TRUE(Lease(w2, 1, absl::Milliseconds(20)).empty()) << "no check queued";
  // Another shape of the bucket is checked on its own.
  auto other = CompileAt(kDynamicExp, {"0=320x64"});
  ASSERT_TRUE(other.ok()) << other.status();
  tir::v1::Operation d = ServeCounting(w2, other->name(), &tunes, &checks);
  EXPECT_TRUE(d.has_response()) << d.error().message();
}

// A lone WRONG that another worker contradicts: the shape is served and the
// dissenter distrusted.
TEST_F(DynamicShapesTest, ALoneWrongContradictedServesTheShapeAndDistrustsItsWorker) {
  options_.lost_after = absl::Seconds(30);  // one worker waits while the other plays
  Start();
  const std::string w = Register(), liar = Register();
  int tunes = 0, checks = 0;
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket(w, &tunes, &checks));
  auto op = CompileAt(kDynamicExp, {"0=280x64"});
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_FALSE(ServeCounting(liar, op->name(), &tunes, &checks, tir::v1::VERDICT_WRONG, false).done());
  tir::v1::Operation d = ServeCounting(w, op->name(), &tunes, &checks);
  ASSERT_TRUE(d.has_response()) << d.error().message();
  EXPECT_TRUE(d.metadata().shape_checked());
  EXPECT_EQ(StateOf(liar), "distrusted");
  auto again = CompileAt(kDynamicExp, {"0=280x64"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->has_response()) << "served from the record";
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
  auto cancelled = c_->CancelOperation(pending->name(), "", false);
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

TEST_F(DynamicShapesTest, AKernelThatReadsNoTensorIsServedAtAnotherShape) {
  Start();
  const std::string w = Register();
  // The constant result is a kernel of its own that takes no input (as the
  // -inf fill of a causal mask is); serving the bucket at another shape
  // sizes every kernel, that one included.
  const std::string text = R"(tir.graph @withConstant(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<4x8xf32>) {
  %e = exp %x : tensor<?x8xf32>
  %c = constant dense<1.5> : tensor<4x8xf32>
  results %e, %c : tensor<?x8xf32>, tensor<4x8xf32>
}
)";
  int tunes = 0, checks = 0;
  auto op = CompileAt(text, {"0=300x8"});
  ASSERT_TRUE(op.ok()) << op.status();
  tir::v1::Operation done = ServeCounting(w, op->name(), &tunes, &checks);
  ASSERT_TRUE(done.has_response()) << done.error().message();
  auto again = CompileAt(text, {"0=280x8"});
  ASSERT_TRUE(again.ok()) << again.status();
  tir::v1::Operation served = ServeCounting(w, again->name(), &tunes, &checks);
  ASSERT_TRUE(served.has_response()) << served.error().reason() << ": " << served.error().message();
  EXPECT_EQ(served.response().outputs(0).shape(0), 280);
  EXPECT_EQ(served.response().outputs(1).shape(0), 4);
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
