#include "worker/worker.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "llvm/Support/ThreadPool.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/grpcpp.h"

namespace tir::worker {

using google::protobuf::util::TimeUtil;

struct Worker::Metrics {
  Metrics(prometheus::Registry &r, const std::map<std::string, std::string> &labels)
      : compiled(prometheus::BuildCounter()
                     .Name("tir_worker_candidates_compiled_total")
                     .Help("Candidates compiled (cache hits included)")
                     .Register(r)
                     .Add(labels)),
        measured(prometheus::BuildCounter()
                     .Name("tir_worker_candidates_measured_total")
                     .Help("Candidates verified and timed")
                     .Register(r)
                     .Add(labels)),
        failed(prometheus::BuildCounter()
                   .Name("tir_worker_candidates_failed_total")
                   .Help("Candidates that did not pass, by reason")
                   .Register(r)),
        compile_seconds(prometheus::BuildHistogram()
                            .Name("tir_worker_compile_seconds")
                            .Help("Wall time of one candidate's compile")
                            .Register(r)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30})),
        measure_seconds(prometheus::BuildHistogram()
                            .Name("tir_worker_measure_seconds")
                            .Help("Wall time of verifying and timing one candidate in the runner")
                            .Register(r)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30})),
        leases(prometheus::BuildCounter().Name("tir_worker_leases_total").Help("Work items leased").Register(r).Add(labels)),
        restarts(prometheus::BuildCounter()
                     .Name("tir_worker_runner_restarts_total")
                     .Help("Runner child processes started to replace one that faulted or hung")
                     .Register(r)
                     .Add(labels)),
        labels(labels) {}
  prometheus::Counter &compiled, &measured;
  prometheus::Family<prometheus::Counter> &failed;
  prometheus::Histogram &compile_seconds, &measure_seconds;
  prometheus::Counter &leases, &restarts;
  // The worker's own labels (its coordinator, when it leases from several).
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> With(const std::string &name, const std::string &value) const {
    std::map<std::string, std::string> l = labels;
    l[name] = value;
    return l;
  }
};

namespace {

const char *FailureLabel(tir::v1::Verdict v) {
  switch (v) {
    case tir::v1::VERDICT_WRONG: return "wrong";
    case tir::v1::VERDICT_FAULT: return "fault";
    case tir::v1::VERDICT_TIMEOUT: return "timeout";
    case tir::v1::VERDICT_COMPILE_FAILED: return "compile_failed";
    default: return nullptr;
  }
}

double Seconds(const google::protobuf::Duration &d) { return d.seconds() + d.nanos() * 1e-9; }

}  // namespace

Worker::Worker(WorkerOptions options, std::unique_ptr<Backend> backend, std::shared_ptr<grpc::Channel> channel,
               std::shared_ptr<prometheus::Registry> registry)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      stub_(tir::v1::WorkerService::NewStub(channel)),
      registry_(registry ? registry : std::make_shared<prometheus::Registry>()),
      metrics_([this] {
        auto m = std::make_unique<Metrics>(*registry_, options_.metric_labels);
        // Every reason exists from the start, so rates and alerts see zeros.
        for (const char *reason : {"wrong", "fault", "timeout", "compile_failed"}) m->failed.Add(m->With("reason", reason));
        return m;
      }()),
      runner_([&] {
        std::vector<std::string> argv = {options_.runner_path};
        for (const std::string &f : backend_->RunnerFlags()) argv.push_back(f);
        if (!options_.reference_dir.empty()) argv.push_back("--reference_dir=" + options_.reference_dir);
        return argv;
      }()) {}

Worker::~Worker() {
  Stop();
  done_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
}

std::string Worker::name() const {
  absl::MutexLock l(&mu_);
  return name_;
}

void Worker::Stop() { stopping_ = true; }

template <typename Req, typename Resp, typename Fn>
grpc::Status Worker::Call(Fn fn, const Req &req, Resp *resp, absl::Duration deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
  if (!options_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.token);
  {
    absl::MutexLock l(&mu_);
    if (!session_.empty()) ctx.AddMetadata("tir-worker-session", session_);
  }
  return (stub_.get()->*fn)(&ctx, req, resp);
}

absl::Duration BackoffDelay(int attempt, absl::Duration min, absl::Duration max, double jitter) {
  absl::Duration d = min;
  for (int i = 0; i < attempt && d < max; ++i) d *= 2;
  return std::min(d, max) * std::clamp(jitter, 0.5, 1.0);
}

void Worker::SleepBackoff(int attempt, bool until_stop) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const double jitter = std::uniform_real_distribution<double>(0.5, 1.0)(rng);
  const absl::Time end = absl::Now() + BackoffDelay(attempt, options_.backoff_min, options_.backoff_max, jitter);
  while (absl::Now() < end && !done_ && !(until_stop && stopping_)) absl::SleepFor(std::min(absl::Milliseconds(50), end - absl::Now()));
}

bool Worker::Register() {
  tir::v1::RegisterWorkerRequest req;
  {
    absl::MutexLock l(&mu_);
    req.set_name(name_);
  }
  *req.mutable_capabilities() = backend_->Capabilities();
  req.mutable_capabilities()->set_tir_version(kTirVersion);
  req.mutable_capabilities()->set_max_concurrent_compiles(options_.compile_threads);
  for (int attempt = 0; !stopping_; ++attempt) {
    tir::v1::RegisterWorkerResponse resp;
    grpc::Status s = Call(&tir::v1::WorkerService::Stub::RegisterWorker, req, &resp, absl::Seconds(10));
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      name_ = resp.name();
      session_ = resp.session();
      reregister_ = false;
      if (resp.has_heartbeat_interval() && Seconds(resp.heartbeat_interval()) > 0) {
        heartbeat_interval_ = absl::Seconds(Seconds(resp.heartbeat_interval()));
      }
      return true;
    }
    std::fprintf(stderr, "tir-worker: register with the coordinator failed (%s), retrying\n", s.error_message().c_str());
    SleepBackoff(attempt, true);
  }
  return false;
}

void Worker::HeartbeatLoop() {
  int failures = 0;
  while (!done_) {
    absl::Duration interval;
    tir::v1::HeartbeatRequest req;
    {
      absl::MutexLock l(&mu_);
      interval = heartbeat_interval_;
      req.set_name(name_);
      for (const std::string &lease : leases_) req.add_lease_ids(lease);
      req.set_state(stopping_      ? tir::v1::WORKER_STATE_DRAINING
                    : runner_down_ ? tir::v1::WORKER_STATE_UNAVAILABLE
                    : leases_.empty() ? tir::v1::WORKER_STATE_READY
                                      : tir::v1::WORKER_STATE_BUSY);
    }
    req.set_candidates_measured(measured_.load());
    tir::v1::HeartbeatResponse resp;
    grpc::Status s = Call(&tir::v1::WorkerService::Stub::Heartbeat, req, &resp, absl::Seconds(5));
    if (s.ok()) {
      failures = 0;
      absl::MutexLock l(&mu_);
      for (const std::string &c : resp.cancelled_lease_ids()) cancelled_.insert(c);
      if (resp.reregister()) reregister_ = true;
    } else {
      ++failures;
    }
    // On failure, back off instead of hammering a coordinator that is down.
    const absl::Time end = absl::Now() + (failures > 0 ? std::min(interval * (1 << std::min(failures, 4)), options_.backoff_max) : interval);
    while (!done_ && absl::Now() < end) absl::SleepFor(std::min(absl::Milliseconds(20), end - absl::Now()));
  }
}

bool Worker::Cancelled(const std::string &lease) const {
  absl::MutexLock l(&mu_);
  return cancelled_.count(lease) > 0;
}

bool Worker::Report(const tir::v1::ReportResultRequest &report) {
  // Idempotent by lease id: a retry after a lost answer is acknowledged as a
  // duplicate. Gives up only when the lease was cancelled meanwhile.
  for (int attempt = 0;; ++attempt) {
    tir::v1::ReportResultResponse resp;
    grpc::Status s = Call(&tir::v1::WorkerService::Stub::ReportResult, report, &resp, absl::Seconds(30));
    if (s.ok()) return resp.accepted() || resp.duplicate();
    if (s.error_code() == grpc::StatusCode::NOT_FOUND || s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        s.error_code() == grpc::StatusCode::INVALID_ARGUMENT || s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        Cancelled(report.lease_id())) {
      std::fprintf(stderr, "tir-worker: report of %s refused: %s\n", report.lease_id().c_str(), s.error_message().c_str());
      return false;
    }
    // Draining: the lease expires and is re-queued by the coordinator.
    if (done_ || (stopping_ && attempt >= 5)) return false;
    SleepBackoff(attempt, false);
  }
}

absl::Status Worker::StartRunner() { return runner_.EnsureStarted(); }

namespace {

bool RunnerUnavailable(const absl::Status &s) { return ReasonOf(s) == "RUNNER_UNAVAILABLE"; }

// The first line of a verdict's detail (a compile log or a signal).
std::string FirstLine(const std::string &text) {
  const size_t nl = text.find('\n');
  return text.substr(0, std::min<size_t>(nl == std::string::npos ? text.size() : nl, 300));
}

// The kernel's graph name ("softmax_k0"), from its MLIR text.
std::string KernelName(const tir::v1::WorkItem &item) {
  if (!item.kernel_graph().name().empty()) return item.kernel_graph().name();
  const std::string &text = item.kernel_mlir();
  const size_t at = text.find("tir.graph @");
  if (at == std::string::npos) return "?";
  const size_t begin = at + sizeof("tir.graph @") - 1;
  const size_t end = text.find_first_of("( \n", begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

void Worker::RecordFailure(const tir::v1::WorkItem &item, const tir::v1::CandidateResult &r) {
  const char *label = FailureLabel(r.verification().verdict());
  if (label == nullptr) return;
  metrics_->failed.Add(metrics_->With("reason", label)).Increment();
  std::fprintf(stderr, "tir-worker: kernel %s candidate %u: %s: %s\n", KernelName(item).c_str(), r.candidate_index(),
               tir::v1::Verdict_Name(r.verification().verdict()).c_str() + sizeof("VERDICT_") - 1,
               FirstLine(r.verification().detail()).c_str());
}

void Worker::ReturnLease(const std::string &lease, const std::string &reason) {
  tir::v1::ReturnWorkRequest req;
  req.set_name(name());
  req.add_lease_ids(lease);
  req.set_reason(reason.substr(0, 2000));
  for (int attempt = 0; attempt < 5 && !done_; ++attempt) {
    tir::v1::ReturnWorkResponse resp;
    grpc::Status s = Call(&tir::v1::WorkerService::Stub::ReturnWork, req, &resp, absl::Seconds(10));
    if (s.ok()) return;
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      std::fprintf(stderr, "tir-worker: giving back %s failed: %s\n", lease.c_str(), s.error_message().c_str());
      return;
    }
    SleepBackoff(attempt, false);
  }
  // Unreturned, the lease expires on the coordinator and is re-queued there.
}

void Worker::RecoverRunner(const absl::Status &why) {
  runner_down_ = true;
  std::fprintf(stderr, "tir-worker: %s; taking no work until a runner starts\n", std::string(why.message()).c_str());
  for (int attempt = 0; !stopping_; ++attempt) {
    SleepBackoff(attempt, true);
    if (stopping_) break;
    absl::Status s = runner_.EnsureStarted();
    if (s.ok()) {
      std::fprintf(stderr, "tir-worker: the runner started again; taking work\n");
      break;
    }
    if (attempt % 10 == 9) std::fprintf(stderr, "tir-worker: still no runner: %s\n", std::string(s.message()).c_str());
  }
  runner_down_ = false;
}

absl::StatusOr<tir::v1::ReportResultRequest> Worker::Process(const tir::v1::WorkItem &item) {
  tir::v1::ReportResultRequest report;
  report.set_lease_id(item.lease_id());
  const int n = item.candidates_size();
  // 1. Compile in a pool.
  std::vector<std::optional<absl::StatusOr<CompiledCandidate>>> compiled(n);
  {
    llvm::ThreadPool pool(llvm::hardware_concurrency(static_cast<unsigned>(std::max(1, std::min(n, options_.compile_threads)))));
    for (int i = 0; i < n; ++i) {
      pool.async([this, &item, &compiled, i] {
        compiled[i] = backend_->Compile(item.candidates(i), item.arch());
        metrics_->compiled.Increment();
        if (compiled[i]->ok()) metrics_->compile_seconds.Observe((*compiled[i])->info.compile_seconds());
      });
    }
    pool.wait();
  }
  // 2. Make the item current in the runner.
  absl::Status prepared = absl::OkStatus();
  if (std::any_of(compiled.begin(), compiled.end(), [](const auto &c) { return c->ok(); })) {
    prepared = runner_.Prepare(item, options_.prepare_deadline);
    if (RunnerUnavailable(prepared)) return prepared;
  }
  // 3. Measure one at a time.
  const auto &policy = item.policy();
  const double floor = policy.has_min_deadline() ? Seconds(policy.min_deadline()) : absl::ToDoubleSeconds(options_.min_deadline);
  const double budget = policy.has_time_budget() ? Seconds(policy.time_budget()) : 0.05;
  const int restartsBefore = runner_.restarts();
  for (int i = 0; i < n; ++i) {
    const tir::v1::CandidateWork &work = item.candidates(i);
    tir::v1::CandidateResult *r = report.add_results();
    r->set_candidate_index(work.candidate_index());
    if (!compiled[i]->ok()) {
      r->mutable_verification()->set_verdict(tir::v1::VERDICT_COMPILE_FAILED);
      r->mutable_verification()->set_detail(
          absl::StrCat(ReasonOf(compiled[i]->status()), ": ", compiled[i]->status().message()).substr(0, 8000));
    } else if (!prepared.ok()) {
      r->mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
      r->mutable_verification()->set_detail(absl::StrCat("the work item could not be run (", ReasonOf(prepared), "): ",
                                                         prepared.message()));
    } else if (Cancelled(item.lease_id())) {
      break;
    } else {
      // A time measured in an earlier round beats the cost model's prediction.
      const double expected = work.expected_seconds() > 0 ? work.expected_seconds() : work.candidate().predicted_seconds();
      const double deadline = std::max(floor, 20 * expected * (policy.min_runs() + 1) + 4 * budget);
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<tir::v1::CandidateResult> m =
          runner_.Measure(static_cast<uint32_t>(i), (*compiled[i])->path, absl::Seconds(deadline));
      metrics_->measure_seconds.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!m.ok() && RunnerUnavailable(m.status())) return m.status();
      if (m.ok()) {
        *r = *std::move(m);
      } else {
        r->mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
        r->mutable_verification()->set_detail(absl::StrCat(ReasonOf(m.status()), ": ", m.status().message()));
      }
      r->set_candidate_index(work.candidate_index());
      if (r->verification().verdict() != tir::v1::VERDICT_FAULT &&
          r->verification().verdict() != tir::v1::VERDICT_TIMEOUT) {
        metrics_->measured.Increment();
        ++measured_;
      }
    }
    if (compiled[i]->ok()) {
      *r->mutable_compile_info() = (*compiled[i])->info;
      if (r->verification().verdict() == tir::v1::VERDICT_PASSED) {
        r->set_binary_sha256((*compiled[i])->sha256);
        r->set_format((*compiled[i])->format);
      }
    }
    RecordFailure(item, *r);
  }
  for (int k = restartsBefore; k < runner_.restarts(); ++k) metrics_->restarts.Increment();
  *report.mutable_finish_time() = TimeUtil::GetCurrentTime();
  return report;
}

void Worker::Run() {
  if (!Register()) {
    done_ = true;
    return;
  }
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  std::vector<std::string> returned;
  for (int attempt = 0; !stopping_;) {
    bool again;
    {
      absl::MutexLock l(&mu_);
      again = reregister_;
    }
    if (again && !Register()) break;
    tir::v1::LeaseWorkRequest req;
    req.set_name(name());
    req.set_max_items(options_.max_items);
    req.mutable_wait()->set_seconds(absl::ToInt64Seconds(options_.lease_wait));
    req.mutable_wait()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(options_.lease_wait) % 1000000000));
    tir::v1::LeaseWorkResponse resp;
    const absl::Time asked = absl::Now();
    grpc::Status s = Call(&tir::v1::WorkerService::Stub::LeaseWork, req, &resp, options_.lease_wait + absl::Seconds(10));
    if (!s.ok()) {
      SleepBackoff(attempt++, true);
      continue;
    }
    attempt = 0;
    if (resp.items_size() == 0) {
      // Nothing, at once: a busy coordinator did not hold the call open (its
      // waiting calls are bounded). The rest of the wait is spent here, not
      // in asking again at once.
      const absl::Time until = asked + options_.lease_wait;
      while (absl::Now() < until && !stopping_) absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
    }
    metrics_->leases.Increment(resp.items_size());
    for (const tir::v1::WorkItem &item : resp.items()) {
      if (stopping_) {  // leased but not started: given back at drain
        returned.push_back(item.lease_id());
        continue;
      }
      {
        absl::MutexLock l(&mu_);
        leases_.insert(item.lease_id());
      }
      absl::StatusOr<tir::v1::ReportResultRequest> report;
      if (options_.device_lock) {
        // Workers of several coordinators on one device measure one item
        // at a time, so none times its kernels beside another's.
        absl::MutexLock device(options_.device_lock.get());
        report = Process(item);
      } else {
        report = Process(item);
      }
      if (report.ok()) {
        report->set_name(name());
        if (!Cancelled(item.lease_id())) Report(*report);
      } else {
        // The worker's fault, not the candidates': give the lease back and
        // take no more work until a runner starts.
        ReturnLease(item.lease_id(), std::string(report.status().message()));
      }
      {
        absl::MutexLock l(&mu_);
        leases_.erase(item.lease_id());
        cancelled_.erase(item.lease_id());
      }
      if (!report.ok()) RecoverRunner(report.status());
    }
  }
  // Drain: the item in hand was finished above; give back the rest.
  tir::v1::DrainRequest drain;
  drain.set_name(name());
  for (const std::string &lease : returned) drain.add_returned_lease_ids(lease);
  for (int attempt = 0; attempt < 3; ++attempt) {
    tir::v1::DrainResponse resp;
    if (Call(&tir::v1::WorkerService::Stub::Drain, drain, &resp, absl::Seconds(5)).ok()) break;
    SleepBackoff(attempt, false);
  }
  done_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  runner_.Shutdown();
}

}  // namespace tir::worker
