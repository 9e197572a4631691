// The live coordinator the attack suites play against: a coordinator with
// client, read and worker tokens, credentials of their own for four clients,
// a viewer, an admin (ops) and three workers, a bundle key and its
// dashboard, over loopback; and the moves of a rogue worker, an honest one
// and a client. Each suite (one test file) gets its own coordinator.

#ifndef TIR_TESTS_SECURITY_ATTACK_FIXTURE_H_
#define TIR_TESTS_SECURITY_ATTACK_FIXTURE_H_

#include <signal.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "compiler/codegen/KernelBuild.h"
#include "gmock/gmock.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/net.h"
#include "tests/testing/process.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::security_testing {

using tir::testing::Alive;
using tir::testing::Runfile;
using tir::testing::Spawn;
using tir::testing::Stop;
using tir::testing::TempDir;


// A chain of `n` matmuls, each followed by an exp: `n` kernels (a matmul
// result is the next matmul's operand).
inline std::string MatmulChain(int n) {
  std::string s = "tir.graph @chain(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {\n";
  std::string prev = "%x";
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&s, "  %m", i, " = matmul(", prev,
                    ", %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>\n  %e", i, " = exp %m", i,
                    " : tensor<64x64xf32>\n");
    prev = absl::StrCat("%e", i);
  }
  return absl::StrCat(s, "  results ", prev, " : tensor<64x64xf32>\n}\n");
}

// A chain of `n` exps: one kernel of `n` ops.
inline std::string ExpChain(int n) {
  std::string s = "tir.graph @exps(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {\n";
  std::string prev = "%x";
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&s, "  %v", i, " = exp ", prev, " : tensor<64x64xf32>\n");
    prev = absl::StrCat("%v", i);
  }
  return absl::StrCat(s, "  results ", prev, " : tensor<64x64xf32>\n}\n");
}

inline std::string Graph(const std::string &name, int rows) {
  return absl::StrCat("tir.graph @", name, "(%x: tensor<", rows, "x64xf32>) -> tensor<", rows, "x64xf32> {\n",
                      "  %y = exp %x : tensor<", rows, "x64xf32>\n  results %y : tensor<", rows, "x64xf32>\n}\n");
}

// A graph whose module carries an attribute nested `depth` deep (20 KB at
// 10,000: what crashed a coordinator before its input was bounded).
inline std::string DeepGraph(int depth) {
  return absl::StrCat("module attributes {test.deep = ", std::string(depth, '['), "1", std::string(depth, ']'),
                      "} {\n", Graph("deep", 4), "}\n");
}

class Security : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { StartCoordinator(""); }
  // Starts the suite's coordinator; `extra` is more of its config (JSON
  // members, each with a leading comma: `, "httpThreads": 8`).
  static void StartCoordinator(const std::string &extra) {
    dir_ = new std::string(TempDir() + "/security");
    port_ = tir::testing::FreePort();
    dashboard_ = tir::testing::FreePort();
    std::ofstream(*dir_ + ".client") << "client-token\n";
    std::ofstream(*dir_ + ".read") << "read-token\n";
    std::ofstream(*dir_ + ".worker") << "worker-token\n";
    std::ofstream(*dir_ + ".key") << "bundle-key\n";
    std::ofstream(*dir_ + ".credentials") << "# role identity token\n"
                                             "client team-a team-a-token-0123456789\n"
                                             "client team-b team-b-token-0123456789\n"
                                             "client team-c team-c-token-0123456789\n"
                                             "client team-d team-d-token-0123456789\n"
                                             "read viewer viewer-token-0123456789\n"
                                             "admin ops admin-token-0123456789\n"
                                             "worker gpu-a gpu-a-token-0123456789\n"
                                             "worker gpu-b gpu-b-token-0123456789\n"
                                             "worker gpu-c gpu-c-token-0123456789\n";
    const std::string config = *dir_ + ".json";
    std::ofstream(config) << "{\"listen\": \"127.0.0.1:" << port_ << "\", \"db\": \"" << *dir_
                          << "\", \"workDir\": \"" << *dir_ << "-work\", \"dashboardPort\": " << dashboard_
                          << ", \"clientTokenFile\": \"" << *dir_ << ".client\", \"readTokenFile\": \"" << *dir_
                          << ".read\", \"workerTokenFile\": \"" << *dir_ << ".worker\", \"bundleKeyFile\": \"" << *dir_
                          << ".key\", \"credentialsFile\": \"" << *dir_
                          << ".credentials\", \"maxJobsPerClient\": 4, \"tuningWidth\": 2, \"lostAfterMs\": 30000"
                          << extra << "}";
    pid_ = Spawn({Runfile("server/tir-coordinator"), "--config=" + config});
    auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
    clients_ = tir::v1::CompilerService::NewStub(channel).release();
    workers_ = tir::v1::WorkerService::NewStub(channel).release();
    for (int i = 0; i < 300; ++i) {
      if (ListWorkers().ok()) return;
      absl::SleepFor(absl::Milliseconds(50));
    }
    FAIL() << "the coordinator did not start";
  }
  static void TearDownTestSuite() { Stop(pid_, SIGKILL); }
  void TearDown() override {
    EXPECT_TRUE(Alive(pid_)) << "the coordinator died";
    EXPECT_TRUE(ListWorkers().ok()) << "the coordinator stopped answering";
  }

  static void Token(grpc::ClientContext &ctx, const std::string &token) {
    ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  }
  static grpc::Status ListWorkers(tir::v1::ListWorkersResponse *out = nullptr) {
    grpc::ClientContext ctx;
    Token(ctx, "read-token");
    tir::v1::ListWorkersResponse ignored;
    return clients_->ListWorkers(&ctx, {}, out ? out : &ignored);
  }
  static std::string StateOf(const std::string &worker) {
    tir::v1::ListWorkersResponse w;
    if (!ListWorkers(&w).ok()) return "";
    for (const auto &x : w.workers()) {
      if (x.name() == worker) return x.state();
    }
    return "";
  }
  struct Registered {
    std::string name, session, token;
  };
  static Registered Register(const std::string &toolchain = "", const std::string &name = "",
                             const std::string &session = "", const std::string &token = "worker-token",
                             grpc::Status *status = nullptr) {
    grpc::ClientContext ctx;
    Token(ctx, token);
    if (!session.empty()) ctx.AddMetadata("tir-worker-session", session);
    tir::v1::RegisterWorkerRequest r;
    r.set_name(name);
    r.mutable_capabilities()->set_backend("host");
    r.mutable_capabilities()->set_arch("host");
    r.mutable_capabilities()->set_host_compiler(toolchain);
    tir::v1::RegisterWorkerResponse out;
    const grpc::Status s = workers_->RegisterWorker(&ctx, r, &out);
    if (status != nullptr) {
      *status = s;
    } else {
      EXPECT_TRUE(s.ok()) << s.error_message();
    }
    return {out.name(), out.session(), token};
  }
  // A worker call under `w` (its token and the session given).
  template <typename Req, typename Resp>
  static grpc::Status Call(grpc::Status (tir::v1::WorkerService::Stub::*method)(grpc::ClientContext *, const Req &,
                                                                                  Resp *),
                           const std::string &token, const std::string &session, const Req &req, Resp *resp) {
    grpc::ClientContext ctx;
    Token(ctx, token);
    ctx.AddMetadata("tir-worker-session", session);
    return (workers_->*method)(&ctx, req, resp);
  }
  static grpc::Status Compile(const std::string &text, tir::v1::Operation *op, const std::string &request_id = "",
                              const std::string &token = "client-token") {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::CompileRequest r;
    r.set_request_id(request_id);
    r.mutable_graph()->set_mlir_text(text);
    r.mutable_options()->set_target_arch("host");
    return clients_->Compile(&ctx, r, op);
  }
  static tir::v1::Operation Get(const std::string &name) {
    tir::v1::Operation op;
    grpc::ClientContext ctx;
    Token(ctx, "read-token");
    tir::v1::GetOperationRequest r;
    r.set_name(name);
    EXPECT_TRUE(clients_->GetOperation(&ctx, r, &op).ok());
    return op;
  }
  static tir::v1::Operation Wait(const std::string &name) {
    tir::v1::Operation op;
    for (int i = 0; i < 600 && !op.done(); ++i) {
      op = Get(name);
      if (!op.done()) absl::SleepFor(absl::Milliseconds(100));
    }
    return op;
  }
  // Plays a rogue worker until `op` is done: every candidate reported
  // PASSED and fastest, with a made-up hash and a binary of its own planted
  // where the old protocol carried one (field 5).
  static tir::v1::Operation PlayRogue(const Registered &w, const std::string &op) {
    for (int i = 0; i < 50; ++i) {
      if (tir::v1::Operation now = Get(op); now.done()) return now;
      grpc::ClientContext ctx;
      Token(ctx, w.token);
      ctx.AddMetadata("tir-worker-session", w.session);
      tir::v1::LeaseWorkRequest r;
      r.set_name(w.name);
      r.set_max_items(4);
      r.mutable_wait()->set_nanos(300000000);
      tir::v1::LeaseWorkResponse leased;
      if (!workers_->LeaseWork(&ctx, r, &leased).ok()) return Get(op);  // refused: distrusted
      for (const auto &item : leased.items()) {
        grpc::ClientContext rctx;
        Token(rctx, w.token);
        rctx.AddMetadata("tir-worker-session", w.session);
        tir::v1::ReportResultRequest report;
        report.set_name(w.name);
        report.set_lease_id(item.lease_id());
        for (const auto &c : item.candidates()) {
          tir::v1::CandidateResult *x = report.add_results();
          x->set_candidate_index(c.candidate_index());
          x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
          x->mutable_measurement()->set_samples(5);
          x->mutable_measurement()->set_median_seconds(1e-9);
          x->set_binary_sha256(std::string(64, 'a'));
          x->GetReflection()->MutableUnknownFields(x)->AddLengthDelimited(5, "\x7f" "ELF rogue payload");
          // And where the coordinator copies what a worker says: unknown
          // fields of the verdict and the measurement, and its free text.
          for (google::protobuf::Message *m : {static_cast<google::protobuf::Message *>(x->mutable_verification()),
                                               static_cast<google::protobuf::Message *>(x->mutable_measurement())}) {
            m->GetReflection()->MutableUnknownFields(m)->AddLengthDelimited(77, "\x7f" "ELF rogue payload");
          }
          x->mutable_verification()->set_detail(std::string(200000, 'D') + "rogue detail");
        }
        tir::v1::ReportResultResponse ack;
        (void)workers_->ReportResult(&rctx, report, &ack);
      }
    }
    return Wait(op);
  }
  // Plays an honest worker with the coordinator's toolchain until `op` is
  // done: each candidate built as the coordinator builds it, its real hash
  // reported.
  static tir::v1::Operation PlayHonest(const std::string &op) {
    const Registered w = Register(tir::codegen::ToolchainOf("host"));
    tir::nvrtc::CompileCache unused;
    for (int i = 0; i < 100; ++i) {
      if (tir::v1::Operation now = Get(op); now.done()) return now;
      grpc::ClientContext ctx;
      Token(ctx, w.token);
      ctx.AddMetadata("tir-worker-session", w.session);
      tir::v1::LeaseWorkRequest r;
      r.set_name(w.name);
      r.set_max_items(4);
      r.mutable_wait()->set_nanos(300000000);
      tir::v1::LeaseWorkResponse leased;
      if (!workers_->LeaseWork(&ctx, r, &leased).ok()) break;
      for (const auto &item : leased.items()) {
        tir::v1::ReportResultRequest report;
        report.set_name(w.name);
        report.set_lease_id(item.lease_id());
        for (const auto &c : item.candidates()) {
          absl::StatusOr<tir::codegen::KernelBinary> built =
              tir::codegen::BuildKernel(c.source(), "host", {c.compile_options().begin(), c.compile_options().end()},
                                        unused, *dir_ + "-honest");
          EXPECT_TRUE(built.ok()) << built.status();
          tir::v1::CandidateResult *x = report.add_results();
          x->set_candidate_index(c.candidate_index());
          x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
          x->mutable_measurement()->set_samples(5);
          x->mutable_measurement()->set_median_seconds(1e-6 * (1 + c.candidate_index()));
          x->set_binary_sha256(built.ok() ? built->sha256 : "");
        }
        grpc::ClientContext rctx;
        Token(rctx, w.token);
        rctx.AddMetadata("tir-worker-session", w.session);
        tir::v1::ReportResultResponse ack;
        EXPECT_TRUE(workers_->ReportResult(&rctx, report, &ack).ok());
      }
    }
    return Wait(op);
  }

  static inline std::string *dir_;
  static inline int port_, dashboard_;
  static inline pid_t pid_;
  static inline tir::v1::CompilerService::Stub *clients_;
  static inline tir::v1::WorkerService::Stub *workers_;
};


}  // namespace tir::security_testing

#endif  // TIR_TESTS_SECURITY_ATTACK_FIXTURE_H_
