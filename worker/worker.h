// tir-worker's daemon logic: register with the coordinator, heartbeat, lease
// work items, compile their candidates in a thread pool, verify and time them
// in the runner child process, report the results, drain on request.
//
// Algorithm of one work item:
//  1. compile every candidate (backend, compile_threads at once); a compile
//     error is the candidate's COMPILE_FAILED result;
//  2. make the item current in the runner (inputs, reference);
//  3. measure the compiled candidates one at a time, each with a deadline
//     (policy floor, stretched by the predicted time and the time budget);
//     a fault or timeout restarts the runner and the next candidate goes on;
//  4. report all results under the lease id, retrying until the coordinator
//     answers (a repeat of an answered report is acknowledged as duplicate).
// A lease the coordinator cancels (heartbeat answer) is abandoned unreported.
// A runner that does not start (RUNNER_UNAVAILABLE) is the worker's fault:
// the lease is given back unreported (ReturnWork), no candidate is charged,
// and the worker takes no more work (heartbeat state UNAVAILABLE) until a
// runner starts again, retrying with backoff.

#ifndef TIR_WORKER_WORKER_H_
#define TIR_WORKER_WORKER_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "tir/v1/worker_service.grpc.pb.h"
#include "worker/backend.h"
#include "worker/isolation/runner_process.h"

namespace tir::worker {

struct WorkerOptions {
  // Path of tir-worker-runner.
  std::string runner_path;
  // Where the runner keeps prepared references across its restarts (a
  // fault costs one restart, not a reference recompute); empty: none.
  std::string reference_dir;
  // Compiles at once.
  int compile_threads = 2;
  // Sent as "authorization: Bearer <token>" when not empty.
  std::string token;
  // Longest LeaseWork long-poll (also bounds how long a drain waits for it).
  absl::Duration lease_wait = absl::Seconds(2);
  // Work items per lease call.
  int max_items = 1;
  // Retry backoff after a failed call: doubles from min to max, with jitter.
  absl::Duration backoff_min = absl::Milliseconds(100);
  absl::Duration backoff_max = absl::Seconds(10);
  // Per-candidate deadline floor when the policy gives none.
  absl::Duration min_deadline = absl::Seconds(10);
  // Deadline of making an item current (reference evaluation included).
  absl::Duration prepare_deadline = absl::Minutes(5);
  // Held while an item is processed, when set: shared by the workers of one
  // device that lease from several coordinators (a sharded fleet).
  std::shared_ptr<absl::Mutex> device_lock;
  // Labels of this worker's metrics (its coordinator, beside others').
  std::map<std::string, std::string> metric_labels;
};

// The backoff before retry `attempt` (0 first): `min` doubled per attempt up
// to `max`, times `jitter` in [0.5, 1] (so workers that lost the coordinator
// together do not return in lockstep, and it is never a busy loop).
absl::Duration BackoffDelay(int attempt, absl::Duration min, absl::Duration max, double jitter);

class Worker {
 public:
  Worker(WorkerOptions options, std::unique_ptr<Backend> backend, std::shared_ptr<grpc::Channel> channel,
         std::shared_ptr<prometheus::Registry> registry);
  ~Worker();

  // Serves until Stop: registers, heartbeats, leases and processes work,
  // then drains (finishes the item in hand, gives back leased items not
  // started, deregisters). Returns once drained.
  void Run();
  // Asks Run to drain and return; safe from any thread.
  void Stop();

  // Starts the runner child and waits for its hello (done once before Run by
  // tir-worker, so a worker that cannot run kernels refuses to start).
  // Errors: RUNNER_UNAVAILABLE naming the runner and why.
  absl::Status StartRunner();

  // Compiles, verifies and times every candidate of `item` (steps 1-3).
  // Errors: RUNNER_UNAVAILABLE when no runner starts (nothing is reported).
  absl::StatusOr<tir::v1::ReportResultRequest> Process(const tir::v1::WorkItem &item);

  // Registered name ("" before registration).
  std::string name() const;
  int runner_restarts() const { return runner_.restarts(); }

 private:
  struct Metrics;
  template <typename Req, typename Resp, typename Fn>
  grpc::Status Call(Fn fn, const Req &req, Resp *resp, absl::Duration deadline);
  bool Register();
  void HeartbeatLoop();
  bool Report(const tir::v1::ReportResultRequest &report);
  // Gives `lease` back unfinished (the runner does not start).
  void ReturnLease(const std::string &lease, const std::string &reason);
  // Retries starting the runner with backoff until it starts or Stop.
  void RecoverRunner(const absl::Status &why);
  // Logs a candidate that did not pass, and counts it by reason.
  void RecordFailure(const tir::v1::WorkItem &item, const tir::v1::CandidateResult &r);
  // Sleeps the backoff of retry `attempt`; `until_stop`: wake up on Stop.
  void SleepBackoff(int attempt, bool until_stop);
  bool Cancelled(const std::string &lease) const;

  WorkerOptions options_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<tir::v1::WorkerService::Stub> stub_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> metrics_;
  isolation::RunnerProcess runner_;

  mutable absl::Mutex mu_;
  std::string name_ ABSL_GUARDED_BY(mu_);
  std::string session_ ABSL_GUARDED_BY(mu_);  // the name's secret, presented on every call
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(5);
  std::set<std::string> leases_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelled_ ABSL_GUARDED_BY(mu_);
  bool reregister_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> runner_down_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> measured_{0};
  std::thread heartbeat_;
};

}  // namespace tir::worker

#endif  // TIR_WORKER_WORKER_H_
