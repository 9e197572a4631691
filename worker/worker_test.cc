// tir-worker against an in-process test coordinator, with real runner child
// processes and the host backend: registration and heartbeats, a lease of
// several candidates measured and reported, candidates that crash, hang or
// compute the wrong thing, a report whose answer was lost, a coordinator
// that is not there yet, and SIGTERM draining a real tir-worker process.

#include "worker/worker.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/net.h"
#include "server/tuning/work_items.h"
#include "worker/host/host_backend.h"
#include "worker/testing/test_coordinator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

extern char **environ;

namespace tir::worker {
namespace {

using ::testing::AllOf;
using ::testing::Ge;
using ::testing::HasSubstr;
using testing::TestCoordinator;

std::string Runfile(const std::string &path) {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"), "/", path);
}

std::string TempDir() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

constexpr char kSoftmax[] = R"mlir(
tir.graph @softmax(%x: tensor<32x200xf32>) -> tensor<32x200xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<32x200xf32> -> tensor<32x1xf32>
  %s = sub %x, %m : (tensor<32x200xf32>, tensor<32x1xf32>) -> tensor<32x200xf32>
  %e = exp %s : tensor<32x200xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<32x200xf32> -> tensor<32x1xf32>
  %y = div %e, %z : (tensor<32x200xf32>, tensor<32x1xf32>) -> tensor<32x200xf32>
  results %y : tensor<32x200xf32>
})mlir";

constexpr char kBiasGelu[] = R"mlir(
tir.graph @bias_gelu(%x: tensor<64x96xf32>, %b: tensor<1x96xf32>) -> tensor<64x96xf32> {
  %y = add %x, %b : (tensor<64x96xf32>, tensor<1x96xf32>) -> tensor<64x96xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<64x96xf32>
  results %g : tensor<64x96xf32>
})mlir";

tir::v1::MeasurementPolicy Policy() {
  tir::v1::MeasurementPolicy p;
  p.set_min_runs(5);
  p.mutable_time_budget()->set_nanos(5'000'000);
  p.set_seed(7);
  p.set_verify(true);
  p.mutable_min_deadline()->set_seconds(3);
  return p;
}

// The work items of `text` for the host, `per_kernel` candidates each.
std::vector<tir::v1::WorkItem> Items(const char *text, size_t per_kernel) {
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(text, ctx.get());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  auto built = tuning::BuildWorkItems(loaded->graph, *target::LookupArch("host"), per_kernel, Policy());
  EXPECT_TRUE(built.ok()) << built.status();
  std::vector<tir::v1::WorkItem> out;
  for (auto &w : *built) out.push_back(w.item);
  return out;
}

// A copy of `c` whose kernel body starts with `statement`.
tir::v1::CandidateWork Sabotaged(tir::v1::CandidateWork c, const std::string &statement) {
  const std::string head = " tir_kernel(tir_args a) {\n";
  EXPECT_THAT(c.source(), HasSubstr(head));
  c.set_source(absl::StrReplaceAll(c.source(), {{head, head + "  " + statement + "\n"}}));
  return c;
}

// Writes an executable shell script at `path` (atomically).
void WriteScript(const std::string &path, const std::string &body) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "#!/bin/sh\n" << body << "\n";
  }
  chmod(tmp.c_str(), 0755);
  ASSERT_EQ(rename(tmp.c_str(), path.c_str()), 0);
}

class WorkerTest : public ::testing::Test {
 protected:
  void Start(WorkerOptions options = {}) {
    if (options.runner_path.empty()) options.runner_path = Runfile("worker/runner/tir-worker-runner");
    options.lease_wait = absl::Milliseconds(200);
    options.backoff_min = absl::Milliseconds(50);
    options.backoff_max = absl::Milliseconds(400);
    registry_ = std::make_shared<prometheus::Registry>();
    worker_ = std::make_unique<Worker>(options, std::make_unique<HostBackend>(TempDir() + "/host"),
                                       grpc::CreateChannel(coordinator_.address(), grpc::InsecureChannelCredentials()),
                                       registry_);
    thread_ = std::thread([this] { worker_->Run(); });
  }
  void TearDown() override {
    if (worker_) {
      worker_->Stop();
      thread_.join();
    }
  }
  const tir::v1::ReportResultRequest &WaitForReport(size_t n) {
    EXPECT_TRUE(coordinator_.WaitFor([&](const TestCoordinator::State &s) { return s.reports.size() >= n; },
                                     absl::Seconds(120)));
    state_ = coordinator_.state();
    return std::prev(state_.reports.end())->second;
  }
  double Counter(const std::string &name, const std::string &label = "") {
    for (const auto &family : registry_->Collect()) {
      if (family.name != name) continue;
      double v = 0;
      for (const auto &m : family.metric) {
        if (label.empty() || (!m.label.empty() && m.label[0].value == label)) v += m.counter.value;
      }
      return v;
    }
    return -1;
  }

  TestCoordinator coordinator_;
  TestCoordinator::State state_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Worker> worker_;
  std::thread thread_;
};

TEST_F(WorkerTest, RegistersWithItsCapabilitiesAndHeartbeats) {
  Start();
  ASSERT_TRUE(coordinator_.WaitFor([](const auto &s) { return !s.registrations.empty() && s.heartbeats >= 3; },
                                   absl::Seconds(20)));
  const tir::v1::WorkerCapabilities caps = coordinator_.state().registrations[0].capabilities();
  EXPECT_EQ(caps.backend(), "host");
  EXPECT_EQ(caps.arch(), "host");
  EXPECT_FALSE(caps.device_name().empty());
  EXPECT_FALSE(caps.host_compiler().empty());
  EXPECT_GE(caps.sm_count(), 1u);
  EXPECT_GT(caps.memory_bytes(), 0u);
  EXPECT_FALSE(caps.tir_version().empty());
  EXPECT_EQ(worker_->name(), "workers/1");
}

TEST_F(WorkerTest, MeasuresEveryCandidateOfALeaseWithStatistics) {
  std::vector<tir::v1::WorkItem> items = Items(kSoftmax, 4);
  ASSERT_FALSE(items.empty());
  for (const auto &item : items) coordinator_.Enqueue(item);
  Start();
  WaitForReport(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    const auto &report = state_.reports.at(state_.leased[k]);
    EXPECT_EQ(report.name(), "workers/1");
    ASSERT_EQ(report.results_size(), items[k].candidates_size());
    EXPECT_GE(report.results_size(), 2) << "several candidates per kernel, not only the default";
    for (int i = 0; i < report.results_size(); ++i) {
      const tir::v1::CandidateResult &r = report.results(i);
      SCOPED_TRACE(absl::StrCat("kernel ", k, " candidate ", r.candidate_index()));
      EXPECT_EQ(r.candidate_index(), items[k].candidates(i).candidate_index());
      EXPECT_EQ(r.verification().verdict(), tir::v1::VERDICT_PASSED) << r.verification().detail();
      EXPECT_LE(r.verification().relative_l2_error(), r.verification().tolerance());
      EXPECT_GT(r.verification().tolerance(), 0);
      EXPECT_GE(r.measurement().samples(), 5u);
      EXPECT_GT(r.measurement().median_seconds(), 0);
      EXPECT_GE(r.measurement().median_seconds(), r.measurement().min_seconds());
      EXPECT_GE(r.measurement().iqr_seconds(), 0);
      EXPECT_EQ(r.measurement().source(), tir::v1::TIMING_SOURCE_THREAD_CPU_TIME);
      EXPECT_EQ(r.format(), tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
      EXPECT_EQ(r.binary_sha256().size(), 64u) << "names what it ran";
    }
  }
  EXPECT_EQ(Counter("tir_worker_leases_total"), static_cast<double>(items.size()));
  EXPECT_GE(Counter("tir_worker_candidates_measured_total"), 4.0);
}

TEST_F(WorkerTest, CrashingHangingAndWrongCandidatesAreRecordedAndTheWorkerKeepsServing) {
  std::vector<tir::v1::WorkItem> items = Items(kBiasGelu, 1);
  ASSERT_EQ(items.size(), 1u);
  tir::v1::WorkItem item = items[0];
  const tir::v1::CandidateWork good = item.candidates(0);
  item.clear_candidates();
  *item.add_candidates() = good;
  // Writes through a null pointer: SIGSEGV in the runner.
  *item.add_candidates() = Sabotaged(good, "*(volatile int *)0 = 1;");
  // Never returns.
  *item.add_candidates() = Sabotaged(good, "for (;;) { __asm__ volatile(\"\"); }");
  // Launches half the blocks: the other half of the output stays poisoned.
  tir::v1::CandidateWork half = good;
  half.mutable_launch()->mutable_grid(0)->set_divisor(std::max<int64_t>(2, 2 * half.launch().grid(0).divisor()));
  *item.add_candidates() = half;
  // Calls abort.
  *item.add_candidates() = Sabotaged(good, "abort();");
  // Does not compile.
  *item.add_candidates() = Sabotaged(good, "this is not C++;");
  *item.add_candidates() = good;
  for (int i = 0; i < item.candidates_size(); ++i) item.mutable_candidates(i)->set_candidate_index(100 + i);
  item.mutable_policy()->mutable_min_deadline()->set_seconds(1);
  coordinator_.Enqueue(item);
  coordinator_.Enqueue(items[0]);  // served after the faults
  Start();
  WaitForReport(2);
  const auto &r = state_.reports.at(state_.leased[0]);
  ASSERT_EQ(r.results_size(), 7);
  auto verdict = [&](int i) { return r.results(i).verification().verdict(); };
  EXPECT_EQ(verdict(0), tir::v1::VERDICT_PASSED) << r.results(0).verification().detail();
  EXPECT_EQ(verdict(1), tir::v1::VERDICT_FAULT);
  EXPECT_THAT(r.results(1).verification().detail(), HasSubstr("signal 11"));
  EXPECT_EQ(verdict(2), tir::v1::VERDICT_TIMEOUT);
  EXPECT_EQ(verdict(3), tir::v1::VERDICT_WRONG);
  EXPECT_THAT(r.results(3).verification().detail(), HasSubstr("over the bound"));
  EXPECT_FALSE(r.results(3).has_measurement());
  EXPECT_TRUE(r.results(3).binary_sha256().empty()) << "a wrong candidate is never offered";
  EXPECT_EQ(verdict(4), tir::v1::VERDICT_FAULT);
  EXPECT_THAT(r.results(4).verification().detail(), HasSubstr("signal 6"));
  EXPECT_EQ(verdict(5), tir::v1::VERDICT_COMPILE_FAILED);
  EXPECT_THAT(r.results(5).verification().detail(), HasSubstr("HOST_COMPILE_FAILED"));
  EXPECT_EQ(verdict(6), tir::v1::VERDICT_PASSED) << r.results(6).verification().detail();
  for (int i = 0; i < 7; ++i) EXPECT_EQ(r.results(i).candidate_index(), 100u + i);
  // The next lease is served normally.
  const auto &next = state_.reports.at(state_.leased[1]);
  EXPECT_EQ(next.results(0).verification().verdict(), tir::v1::VERDICT_PASSED);
  EXPECT_EQ(worker_->runner_restarts(), 3);
  EXPECT_EQ(Counter("tir_worker_runner_restarts_total"), 3);
  EXPECT_EQ(Counter("tir_worker_candidates_failed_total", "fault"), 2);
  EXPECT_EQ(Counter("tir_worker_candidates_failed_total", "timeout"), 1);
  EXPECT_EQ(Counter("tir_worker_candidates_failed_total", "wrong"), 1);
  EXPECT_EQ(Counter("tir_worker_candidates_failed_total", "compile_failed"), 1);
}

TEST_F(WorkerTest, AReportWhoseAnswerWasLostIsRetriedAndRecordedOnce) {
  coordinator_.LoseFirstReportAnswer(true);
  std::vector<tir::v1::WorkItem> items = Items(kBiasGelu, 1);
  coordinator_.Enqueue(items[0]);
  Start();
  WaitForReport(1);
  ASSERT_TRUE(coordinator_.WaitFor([](const auto &s) { return s.duplicate_reports >= 1; }, absl::Seconds(20)));
  state_ = coordinator_.state();
  EXPECT_EQ(state_.reports.size(), 1u);
  EXPECT_EQ(state_.report_calls, 2);
  // The worker goes on leasing after the duplicate acknowledgement.
  coordinator_.Enqueue(items[0]);
  WaitForReport(2);
}

TEST_F(WorkerTest, ARunnerThatDoesNotStartIsTheWorkersFaultNotTheCandidates) {
  // The runner exits before saying hello (as a missing shared library or a
  // wrong binary would), then is mended while the worker waits.
  const std::string runner = TempDir() + "/flaky-runner";
  WriteScript(runner, "echo 'cannot load libsomething.so' >&2; exit 3");
  std::vector<tir::v1::WorkItem> items = Items(kBiasGelu, 2);
  coordinator_.Enqueue(items[0]);
  WorkerOptions options;
  options.runner_path = runner;
  Start(options);
  ASSERT_TRUE(coordinator_.WaitFor([](const auto &s) { return !s.returns.empty(); }, absl::Seconds(30)));
  state_ = coordinator_.state();
  ASSERT_EQ(state_.returns.size(), 1u);
  EXPECT_EQ(state_.returns[0].lease_ids(0), state_.leased[0]) << "the lease is given back";
  EXPECT_THAT(state_.returns[0].reason(), HasSubstr("exited with code 3 before it said hello"));
  EXPECT_TRUE(state_.reports.empty()) << "no verdict is recorded against a candidate";
  EXPECT_EQ(Counter("tir_worker_candidates_failed_total", "fault"), 0);
  // It stops leasing and says why in its heartbeats.
  ASSERT_TRUE(coordinator_.WaitFor(
      [](const auto &s) {
        return std::count(s.heartbeat_states.begin(), s.heartbeat_states.end(), tir::v1::WORKER_STATE_UNAVAILABLE) >= 2;
      },
      absl::Seconds(20)));
  EXPECT_EQ(coordinator_.state().leased.size(), 1u) << "no work is taken while the runner is down";
  // Once a runner starts again, the returned item is measured and reported.
  WriteScript(runner, "exec '" + Runfile("worker/runner/tir-worker-runner") + "' \"$@\"");
  WaitForReport(1);
  const auto &report = state_.reports.begin()->second;
  ASSERT_EQ(report.results_size(), items[0].candidates_size());
  for (const auto &r : report.results()) EXPECT_EQ(r.verification().verdict(), tir::v1::VERDICT_PASSED);
  EXPECT_EQ(state_.leased.size(), 2u) << "the same item, leased again";
}

TEST(WorkerStartTest, StartRunnerNamesTheRunnerAndWhyItDidNotStart) {
  TestCoordinator coordinator;
  auto make = [&](const std::string &runner) {
    WorkerOptions o;
    o.runner_path = runner;
    return std::make_unique<Worker>(o, std::make_unique<HostBackend>(TempDir() + "/host"),
                                    grpc::CreateChannel(coordinator.address(), grpc::InsecureChannelCredentials()),
                                    nullptr);
  };
  absl::Status missing = make("/no/such/tir-worker-runner")->StartRunner();
  EXPECT_EQ(ReasonOf(missing), "RUNNER_UNAVAILABLE");
  EXPECT_THAT(missing.message(), HasSubstr("/no/such/tir-worker-runner did not start"));
  absl::Status silent = make("/bin/true")->StartRunner();
  EXPECT_THAT(silent.message(), HasSubstr("/bin/true did not start: the runner exited with code 0 before it said hello"));
  const std::string chatty = TempDir() + "/chatty-runner";
  WriteScript(chatty, "echo hello >&4; sleep 5");
  absl::Status wrong = make(chatty)->StartRunner();
  EXPECT_THAT(wrong.message(), HasSubstr("did not start"));
  EXPECT_TRUE(make(Runfile("worker/runner/tir-worker-runner"))->StartRunner().ok());
  EXPECT_TRUE(coordinator.state().registrations.empty()) << "starting the runner registers nothing";
}

TEST_F(WorkerTest, RetriesRegistrationWithBackoffWhileTheCoordinatorRefuses) {
  coordinator_.FailRegistrations(4);
  Start();
  ASSERT_TRUE(coordinator_.WaitFor([](const auto &s) { return !s.registrations.empty(); }, absl::Seconds(30)));
  const auto attempts = coordinator_.state().registration_attempts;
  ASSERT_EQ(attempts.size(), 5u);
  // The delays between them: BackoffDelay's (its own test).
}

TEST(BackoffDelayTest, DoublesFromTheMinimumUpToTheMaximumJitteredToAtLeastHalf) {
  const absl::Duration min = absl::Milliseconds(50), max = absl::Milliseconds(400);
  EXPECT_EQ(BackoffDelay(0, min, max, 1.0), absl::Milliseconds(50));
  EXPECT_EQ(BackoffDelay(1, min, max, 1.0), absl::Milliseconds(100));
  EXPECT_EQ(BackoffDelay(3, min, max, 1.0), absl::Milliseconds(400));
  EXPECT_EQ(BackoffDelay(30, min, max, 1.0), absl::Milliseconds(400)) << "capped, no overflow";
  EXPECT_EQ(BackoffDelay(2, min, max, 0.5), absl::Milliseconds(100));
  EXPECT_EQ(BackoffDelay(2, min, max, 0.0), absl::Milliseconds(100)) << "never below half: never a busy loop";
}



TEST(WorkerProcessTest, SigtermFinishesTheLeaseInHandThenGivesBackTheRestAndDeregisters) {
  TestCoordinator coordinator;
  std::vector<tir::v1::WorkItem> items = Items(kSoftmax, 3);
  ASSERT_EQ(items.size(), 1u);
  // Two leases in one call (--max-items=2): one runs, the other is still
  // unstarted at SIGTERM.
  items[0].mutable_policy()->mutable_time_budget()->set_seconds(1);  // slow enough to signal mid-item
  coordinator.Enqueue(items[0]);
  coordinator.Enqueue(items[0]);
  const std::string bin = Runfile("worker/tir-worker");
  std::vector<std::string> argv = {bin, "--coordinator=" + coordinator.address(), "--backend=host",
                                    "--work-dir=" + TempDir() + "/proc", "--compile-threads=2", "--max-items=2",
                                    "--runner=" + Runfile("worker/runner/tir-worker-runner")};
  const int metricsPort = tir::testing::FreePort();
  argv.push_back(absl::StrCat("--metrics-port=", metricsPort));
  std::vector<char *> args;
  for (auto &a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, bin.c_str(), nullptr, nullptr, args.data(), environ), 0);
  ASSERT_TRUE(coordinator.WaitFor([](const auto &s) { return !s.leased.empty(); }, absl::Seconds(60)));
  absl::SleepFor(absl::Milliseconds(300));
  const std::string metrics = tir::testing::HttpGet(metricsPort, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("tir_worker_leases_total 2"));
  EXPECT_THAT(metrics, HasSubstr("tir_worker_compile_seconds_count"));
  EXPECT_THAT(metrics, HasSubstr("tir_worker_runner_restarts_total 0"));
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const TestCoordinator::State s = coordinator.state();
  ASSERT_EQ(s.drains.size(), 1u);
  // Every lease was either reported or given back; none is lost.
  for (const std::string &lease : s.leased) {
    EXPECT_TRUE(s.reports.count(lease) + s.requeued.count(lease) == 1) << lease;
  }
  ASSERT_EQ(s.leased.size(), 2u);
  EXPECT_EQ(s.reports.count(s.leased[0]), 1u) << "the lease in hand is finished";
  EXPECT_EQ(s.requeued.count(s.leased[1]), 1u) << "the unstarted lease is given back";
  EXPECT_EQ(s.drains[0].name(), "workers/1");
}

}  // namespace
}  // namespace tir::worker
