// The coordinator tests' fixture: a coordinator over a fresh RocksDB store
// whose workers the test plays through the worker API, so leases, losses,
// priorities and reports are deterministic.

#ifndef TIR_SERVER_COORDINATOR_COORDINATOR_TEST_FIXTURE_H_
#define TIR_SERVER_COORDINATOR_COORDINATOR_TEST_FIXTURE_H_

#include "server/coordinator/coordinator.h"

#include <future>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/reference/DynamicShapes.h"
#include "client/bundle_signature.h"
#include "compiler/codegen/KernelBuild.h"
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
    // own test (successive_halving_test).
    options_.tuner.max_space_fraction = 1.0;
    options_.work_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/work", n);
  }
  void Start() {
    c_ = std::make_unique<Coordinator>(options_, store_, nullptr);
    ASSERT_TRUE(c_->Start().ok());
  }
  // `toolchain`: the host compiler it says it builds with (by default the
  // coordinator's: a worker with another cannot be confirmed, and its
  // winners are not served).
  std::string Register(const std::string &arch = "host", const std::string &toolchain = codegen::ToolchainOf("host")) {
    tir::v1::RegisterWorkerRequest r;
    r.mutable_capabilities()->set_backend(arch == "host" ? "host" : "cuda");
    r.mutable_capabilities()->set_arch(arch);
    r.mutable_capabilities()->set_host_compiler(toolchain);
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
  // `fastest`, which wins. Each names what it ran by `hash`; by default the
  // item's winner names its real build's (only a winner's hash is checked:
  // see RealHash) and the others a made-up one.
  absl::StatusOr<tir::v1::ReportResultResponse> Report(
      const std::string &worker, const tir::v1::WorkItem &item, uint32_t fastest = 1,
      const std::function<std::string(const tir::v1::CandidateWork &)> &hash = nullptr) {
    tir::v1::ReportResultRequest r;
    r.set_name(worker);
    r.set_lease_id(item.lease_id());
    // The winner by the times below: `fastest`, else the lowest index.
    uint32_t winner = std::numeric_limits<uint32_t>::max();
    for (const auto &c : item.candidates()) winner = std::min(winner, c.candidate_index());
    for (const auto &c : item.candidates()) winner = c.candidate_index() == fastest ? fastest : winner;
    for (const auto &c : item.candidates()) {
      tir::v1::CandidateResult *x = r.add_results();
      x->set_candidate_index(c.candidate_index());
      x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
      x->mutable_measurement()->set_samples(5);
      x->mutable_measurement()->set_median_seconds(c.candidate_index() == fastest ? 1e-6 : 1e-3 * (1 + c.candidate_index()));
      x->set_binary_sha256(hash                             ? hash(c)
                           : c.candidate_index() == winner ? RealHash(worker, c)
                                                           : "made-up-" + std::to_string(c.candidate_index()));
      x->set_format(tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
    }
    return c_->ReportResult(r);
  }
  // The SHA-256 of `c` as the coordinator builds it (builds are
  // deterministic), kept by source; `worker` heartbeats while it builds.
  std::string RealHash(const std::string &worker, const tir::v1::CandidateWork &c) {
    static auto *hashes = new std::map<std::string, std::string>;
    const std::string id = absl::StrCat(c.source(), "\n", absl::StrJoin(c.compile_options(), " "));
    if (auto it = hashes->find(id); it != hashes->end()) return it->second;
    auto built = std::async(std::launch::async, [&] {
      nvrtc::CompileCache unused;
      return codegen::BuildKernel(c.source(), "host", {c.compile_options().begin(), c.compile_options().end()},
                                  unused, absl::StrCat(std::getenv("TEST_TMPDIR"), "/worker_builds"));
    });
    while (built.wait_for(std::chrono::milliseconds(40)) != std::future_status::ready) Heartbeat(worker);
    absl::StatusOr<codegen::KernelBinary> k = built.get();
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? ((*hashes)[id] = k->sha256) : "";
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
      for (const auto &item : Lease(worker)) {
        const auto reported = Report(worker, item);
        EXPECT_TRUE(reported.ok()) << reported.status();
      }
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


}  // namespace
}  // namespace tir::coordinator

#endif  // TIR_SERVER_COORDINATOR_COORDINATOR_TEST_FIXTURE_H_
