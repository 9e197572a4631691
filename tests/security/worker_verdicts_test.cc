// What a worker's report can change of what clients are served, replayed
// against a live coordinator over loopback: one worker's WRONG does not
// refuse a shape until a second party agrees; a time below the kernel's
// physical floor distrusts its worker; nothing a worker writes rides in a
// signed bundle; a winner measured with a toolchain the coordinator cannot
// check is not served, and repeated ones distrust its worker.

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/bundle_signature.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/support/digest.h"
#include "gmock/gmock.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/security/attack_fixture.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace tir::security_testing;  // NOLINT: the suite's fixture and moves

const char kDynamicExp[] = R"(tir.graph @rows(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = exp %x : tensor<?x64xf32>
  results %y : tensor<?x64xf32>
}
)";

class WorkerVerdicts : public Security {
 protected:
  // A worker registered with `token`, naming `toolchain` and `device`.
  static Registered RegisterWith(const std::string &token, const std::string &toolchain,
                                 const std::string &device = "") {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::RegisterWorkerRequest r;
    r.mutable_capabilities()->set_backend("host");
    r.mutable_capabilities()->set_arch("host");
    r.mutable_capabilities()->set_host_compiler(toolchain);
    r.mutable_capabilities()->set_device_name(device);
    r.mutable_capabilities()->set_driver_version(device);
    tir::v1::RegisterWorkerResponse out;
    const grpc::Status s = workers_->RegisterWorker(&ctx, r, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {out.name(), out.session(), token};
  }
  // kDynamicExp at rows x 64, for `token`.
  static grpc::Status CompileAt(int rows, tir::v1::Operation *op, const std::string &token = "client-token") {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::CompileRequest r;
    r.mutable_graph()->set_mlir_text(kDynamicExp);
    r.mutable_options()->set_target_arch("host");
    tir::v1::ShapeHint *h = r.mutable_options()->add_shape_hints();
    h->set_input(0);
    h->add_shape(rows);
    h->add_shape(64);
    return clients_->Compile(&ctx, r, op);
  }
  // Plays `w` until `op` is done or `w` is leased nothing (twice in a row,
  // once it has been leased anything),
  // each candidate's result filled by `fill`. Returns the operation.
  static tir::v1::Operation Play(const Registered &w, const std::string &op,
                                 const std::function<void(const tir::v1::CandidateWork &, tir::v1::CandidateResult *)> &fill) {
    // Until the first item comes the job may still be planning (slow on a
    // loaded machine): idle leases count only once work has come.
    int idle = 0;
    bool leasedAny = false;
    for (int i = 0; i < 100 && idle < (leasedAny ? 2 : 30); ++i) {
      if (tir::v1::Operation now = Get(op); now.done()) return now;
      grpc::ClientContext ctx;
      Token(ctx, w.token);
      ctx.AddMetadata("tir-worker-session", w.session);
      tir::v1::LeaseWorkRequest r;
      r.set_name(w.name);
      r.set_max_items(4);
      r.mutable_wait()->set_nanos(300000000);
      tir::v1::LeaseWorkResponse leased;
      if (!workers_->LeaseWork(&ctx, r, &leased).ok()) break;  // refused: distrusted
      idle = leased.items_size() == 0 ? idle + 1 : 0;
      leasedAny |= leased.items_size() > 0;
      for (const auto &item : leased.items()) {
        tir::v1::ReportResultRequest report;
        report.set_name(w.name);
        report.set_lease_id(item.lease_id());
        for (const auto &c : item.candidates()) {
          tir::v1::CandidateResult *x = report.add_results();
          x->set_candidate_index(c.candidate_index());
          fill(c, x);
        }
        grpc::ClientContext rctx;
        Token(rctx, w.token);
        rctx.AddMetadata("tir-worker-session", w.session);
        tir::v1::ReportResultResponse ack;
        (void)workers_->ReportResult(&rctx, report, &ack);
      }
    }
    return Get(op);
  }
  // The SHA-256 of the coordinator's build of `c` (what an honest worker
  // with its toolchain reports).
  static std::string RealHash(const tir::v1::CandidateWork &c) {
    tir::nvrtc::CompileCache unused;
    absl::StatusOr<tir::codegen::KernelBinary> built = tir::codegen::BuildKernel(
        c.source(), "host", {c.compile_options().begin(), c.compile_options().end()}, unused, *dir_ + "-verdicts");
    EXPECT_TRUE(built.ok()) << built.status();
    return built.ok() ? built->sha256 : "";
  }
  // Reports every candidate WRONG (a worker that would refuse a shape).
  static void SayWrong(const tir::v1::CandidateWork &, tir::v1::CandidateResult *x) {
    x->mutable_verification()->set_verdict(tir::v1::VERDICT_WRONG);
    x->mutable_verification()->set_detail("relative L2 error 0.9 over the bound 1e-5 (rogue says)");
  }
  // Reports every candidate passing, measured honestly (the hash of the
  // coordinator's build, a time a host takes).
  static void Honest(const tir::v1::CandidateWork &c, tir::v1::CandidateResult *x) {
    x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
    x->mutable_measurement()->set_samples(5);
    x->mutable_measurement()->set_median_seconds(1e-6 * (1 + c.candidate_index()));
    x->set_binary_sha256(RealHash(c));
  }
  // Tunes kDynamicExp's bucket 257..512 with an honest worker (registered
  // first: without a worker the coordinator answers with its defaults and
  // tunes later).
  static void TuneTheBucket() {
    const Registered honest = RegisterWith("worker-token", tir::codegen::ToolchainOf("host"));
    tir::v1::Operation tuned;
    ASSERT_TRUE(CompileAt(300, &tuned).ok());
    // Once the honest worker has measured everything, the coordinator builds
    // the winner and stores it: waited for, not assumed done.
    Play(honest, tuned.name(), Honest);
    const tir::v1::Operation done = Wait(tuned.name());
    ASSERT_TRUE(done.has_response()) << done.error().message();
    ASSERT_TRUE(done.response().tuning().tuned());
  }
  static bool IsShapeCheck(const tir::v1::Operation &op) {
    return op.metadata().progress().stage() == tir::v1::STAGE_CHECKING_SHAPE;
  }
  // Waits (bounded) until `worker` shows `state`.
  static std::string WaitState(const std::string &worker, const std::string &state) {
    std::string now;
    for (int i = 0; i < 200 && (now = StateOf(worker)) != state; ++i) absl::SleepFor(absl::Milliseconds(50));
    return now;
  }
};

// 3. One worker reporting the coordinator's own, correct kernel WRONG at a
// shape does not refuse that shape: the operations wait (checking) while
// another worker checks it again, whose pass serves the shape to everyone
// and distrusts the dissenter. The same identity, registering again, is not
// another party.
TEST_F(WorkerVerdicts, OneWorkersWrongDoesNotPoisonAShape) {
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket());

  const std::string token = "gpu-a-token-0123456789";
  const Registered rogue = RegisterWith(token, tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(CompileAt(320, &op).ok());
  ASSERT_FALSE(op.done());
  const tir::v1::Operation pending = Play(rogue, op.name(), SayWrong);
  EXPECT_FALSE(pending.done()) << "one worker's WRONG refused the shape: " << pending.error().message();
  EXPECT_TRUE(IsShapeCheck(pending));
  // Registering again under its credential is the same party: nothing to lease.
  const Registered again = RegisterWith(token, tir::codegen::ToolchainOf("host"));
  EXPECT_EQ(again.name, rogue.name);
  EXPECT_FALSE(Play(again, op.name(), SayWrong).done());
  // Another client asking for the shape meanwhile is not refused either.
  tir::v1::Operation other;
  ASSERT_TRUE(CompileAt(320, &other, "team-b-token-0123456789").ok());
  EXPECT_FALSE(other.done() && other.has_error()) << other.error().message();

  // An honest worker checks it again: the shape is served, to both.
  const tir::v1::Operation served = PlayHonest(op.name());
  ASSERT_TRUE(served.has_response()) << served.error().message();
  EXPECT_TRUE(served.metadata().shape_checked());
  const tir::v1::Operation otherServed = Wait(other.name());
  EXPECT_TRUE(otherServed.has_response()) << otherServed.error().message();
  EXPECT_EQ(WaitState(rogue.name, "distrusted"), "distrusted") << "contradicted by a second party";
  // And to every client after: from the record, at once.
  tir::v1::Operation later;
  ASSERT_TRUE(CompileAt(320, &later, "team-c-token-0123456789").ok());
  EXPECT_TRUE(later.done());
  EXPECT_TRUE(later.has_response()) << later.error().message();
  const std::string text = served.response().SerializeAsString();
  EXPECT_EQ(text.find("rogue says"), std::string::npos) << "a worker's words rode in the bundle";
  EXPECT_TRUE(tir::CheckBundleSignature(served.response(), "bundle-key").ok());
}

// 3b. Two parties agreeing make the refusal: WRONG from two identities
// refuses the shape (naming both), for good.
TEST_F(WorkerVerdicts, TwoIdentitiesFindingWrongRefuseTheShape) {
  ASSERT_NO_FATAL_FAILURE(TuneTheBucket());
  const Registered first = RegisterWith("gpu-b-token-0123456789", tir::codegen::ToolchainOf("host"));
  const Registered second = RegisterWith("gpu-c-token-0123456789", tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(CompileAt(340, &op).ok());
  EXPECT_FALSE(Play(first, op.name(), SayWrong).done());
  const tir::v1::Operation refused = Play(second, op.name(), SayWrong);
  ASSERT_TRUE(refused.done());
  EXPECT_EQ(refused.error().reason(), "WRONG_AT_SHAPE") << refused.error().message();
  EXPECT_THAT(refused.error().message(), HasSubstr(absl::StrCat(first.name, ", confirmed by ", second.name)));
  EXPECT_THAT(refused.error().message(), Not(HasSubstr("rogue says")));
  tir::v1::Operation later;
  grpc::Status s = CompileAt(340, &later);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("WRONG_AT_SHAPE"));
}

// 3c. In tuning too: one worker reporting every candidate WRONG does not
// fail the job for its clients; it is measured again by another worker,
// whose correct winner is served and contradicts (distrusts) the first.
TEST_F(WorkerVerdicts, OneWorkersWrongDoesNotFailATuningJob) {
  const Registered rogue = RegisterWith("worker-token", tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("all_wrong", 72), &op).ok());
  const tir::v1::Operation after = Play(rogue, op.name(), SayWrong);
  EXPECT_FALSE(after.done()) << "one worker's WRONG failed the job: " << after.error().message();
  const Registered honest = RegisterWith("worker-token", tir::codegen::ToolchainOf("host"));
  Play(honest, op.name(), Honest);
  const tir::v1::Operation done = Wait(op.name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_EQ(done.response().provenance().worker(), honest.name);
  EXPECT_EQ(WaitState(rogue.name, "distrusted"), "distrusted");
}

// 4a. A made-up time (1e-9 s, below any real kernel's floor) is refused and
// distrusts its worker; the honest measurement is what is served.
TEST_F(WorkerVerdicts, ATimeBelowTheFloorDistrustsItsWorker) {
  const Registered rogue = RegisterWith("worker-token", tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("floor", 40), &op).ok());
  EXPECT_FALSE(PlayRogue(rogue, op.name()).done());
  EXPECT_EQ(StateOf(rogue.name), "distrusted");
  grpc::ClientContext ctx;
  Token(ctx, rogue.token);
  ctx.AddMetadata("tir-worker-session", rogue.session);
  tir::v1::LeaseWorkRequest r;
  r.set_name(rogue.name);
  tir::v1::LeaseWorkResponse leased;
  const grpc::Status refused = workers_->LeaseWork(&ctx, r, &leased);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(refused.error_message(), HasSubstr("physical floor"));
  const tir::v1::Operation done = PlayHonest(op.name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  for (const auto &k : done.response().kernels()) EXPECT_GE(k.measurement().median_seconds(), 1e-6);
  EXPECT_NE(done.response().provenance().worker(), rogue.name);
}

// 4b. Nothing a worker writes rides in a signed bundle: a worker that wins
// honestly but writes its own verdict text (1 KB, control characters),
// compile log, unknown fields and a device name with markup gets its
// measured numbers served, and no words of its own.
TEST_F(WorkerVerdicts, NoWorkerTextRidesInASignedBundle) {
  const Registered writer =
      RegisterWith("worker-token", tir::codegen::ToolchainOf("host"), "Rogue GPU <img src=x onerror=alert(1)>");
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("words", 48), &op).ok());
  Play(writer, op.name(), [](const auto &c, tir::v1::CandidateResult *x) {
    x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
    x->mutable_verification()->set_relative_l2_error(1e-7);
    x->mutable_verification()->set_detail("\x1b[2J\x1b]0;rogue title\x07rogue detail " + std::string(1024, 'D'));
    x->mutable_measurement()->set_samples(5);
    x->mutable_measurement()->set_median_seconds(2e-6 * (1 + c.candidate_index()));
    x->mutable_compile_info()->set_log("rogue log");
    x->set_binary_sha256(RealHash(c));
    for (google::protobuf::Message *m : {static_cast<google::protobuf::Message *>(x->mutable_verification()),
                                         static_cast<google::protobuf::Message *>(x->mutable_measurement())}) {
      m->GetReflection()->MutableUnknownFields(m)->AddLengthDelimited(77, "rogue payload");
    }
  });
  const tir::v1::Operation done = Wait(op.name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  const tir::v1::KernelBundle &b = done.response();
  EXPECT_EQ(b.provenance().worker(), writer.name) << "its measurement won";
  EXPECT_TRUE(b.provenance().measured_binary_checked());
  const std::string text = b.SerializeAsString();
  for (const char *words : {"rogue title", "rogue detail", "rogue log", "rogue payload", "<img"}) {
    EXPECT_EQ(text.find(words), std::string::npos) << "the bundle carries the worker's \"" << words << "\"";
  }
  for (const auto &k : b.kernels()) {
    EXPECT_THAT(k.verification().detail(), HasSubstr("matched the reference"));
    EXPECT_EQ(k.verification().detail().find('\x1b'), std::string::npos);
    EXPECT_EQ(k.verification().relative_l2_error(), 1e-7) << "its measured numbers are kept";
    EXPECT_GE(k.measurement().median_seconds(), 2e-6);
  }
  EXPECT_EQ(b.provenance().device_name(), "Rogue GPU img srcx onerroralert(1)");
  EXPECT_LE(b.provenance().device_name().size(), 64u);
  EXPECT_TRUE(tir::CheckBundleSignature(b, "bundle-key").ok());
  EXPECT_TRUE(tir::CheckBinaryHashes(b).ok());
}

// 4c. A worker naming a toolchain the coordinator does not build with
// cannot have its hashes checked: its winner is not served (the job is
// measured again by the others), and its second such winner distrusts it.
TEST_F(WorkerVerdicts, AnUncheckableToolchainNeverWinsAndIsDistrusted) {
  const Registered rogue = RegisterWith("worker-token", "rogue-cc 6.6.6");
  // It makes the last-ranked candidate win, with plausible times.
  auto pickLast = [](const tir::v1::CandidateWork &c, tir::v1::CandidateResult *x) {
    x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
    x->mutable_measurement()->set_samples(5);
    x->mutable_measurement()->set_median_seconds(1e-3 / (1 + c.candidate_index()));
    x->set_binary_sha256(std::string(64, 'c'));
  };
  tir::v1::Operation a, b;
  ASSERT_TRUE(Compile(Graph("toolchain_a", 56), &a).ok());
  EXPECT_FALSE(Play(rogue, a.name(), pickLast).done()) << "its winner was served";
  ASSERT_TRUE(Compile(Graph("toolchain_b", 64), &b).ok());
  EXPECT_FALSE(Play(rogue, b.name(), pickLast).done()) << "its winner was served";
  EXPECT_EQ(WaitState(rogue.name, "distrusted"), "distrusted");
  for (const tir::v1::Operation &op : {a, b}) {
    const tir::v1::Operation done = PlayHonest(op.name());
    ASSERT_TRUE(done.has_response()) << done.error().message();
    EXPECT_NE(done.response().provenance().worker(), rogue.name);
    EXPECT_TRUE(done.response().provenance().measured_binary_checked());
    EXPECT_EQ(done.response().provenance().worker_toolchain(), tir::codegen::ToolchainOf("host"));
  }
}

}  // namespace
