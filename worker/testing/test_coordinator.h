// A small in-process implementation of the worker service for tests and
// benches of tir-worker: a FIFO of work items, leases with ids, results
// accepted once per lease, and a record of what every worker did.

#ifndef TIR_WORKER_TESTING_TEST_COORDINATOR_H_
#define TIR_WORKER_TESTING_TEST_COORDINATOR_H_

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::worker::testing {

class TestCoordinator final : public tir::v1::WorkerService::Service {
 public:
  // Starts a gRPC server on a free loopback port.
  TestCoordinator();
  ~TestCoordinator() override;

  std::string address() const { return address_; }

  // Queues a work item (its lease id is assigned when leased).
  void Enqueue(tir::v1::WorkItem item);
  // Heartbeat interval handed to workers.
  void set_heartbeat_interval(absl::Duration d) { heartbeat_interval_ = d; }
  // The first `n` RegisterWorker calls fail with UNAVAILABLE.
  void FailRegistrations(int n);
  // The first ReportResult of each lease is recorded but answered with
  // UNAVAILABLE, as if the answer was lost, so the worker retries it.
  void LoseFirstReportAnswer(bool lose);

  // Waits until `pred` holds over the recorded state (or `timeout`).
  struct State {
    std::vector<tir::v1::RegisterWorkerRequest> registrations;
    std::vector<absl::Time> registration_attempts;
    int heartbeats = 0;
    std::vector<std::string> leased;                              // lease ids in order
    std::map<std::string, tir::v1::ReportResultRequest> reports;  // accepted, by lease id
    int report_calls = 0;
    int duplicate_reports = 0;
    std::vector<tir::v1::DrainRequest> drains;
    std::map<std::string, tir::v1::WorkItem> requeued;  // returned at drain, by lease id
    std::vector<tir::v1::ReturnWorkRequest> returns;    // ReturnWork calls
    std::vector<tir::v1::WorkerState> heartbeat_states;  // reported, in order
  };
  bool WaitFor(const std::function<bool(const State &)> &pred, absl::Duration timeout);
  State state() const;

  grpc::Status RegisterWorker(grpc::ServerContext *, const tir::v1::RegisterWorkerRequest *,
                              tir::v1::RegisterWorkerResponse *) override;
  grpc::Status Heartbeat(grpc::ServerContext *, const tir::v1::HeartbeatRequest *, tir::v1::HeartbeatResponse *) override;
  grpc::Status LeaseWork(grpc::ServerContext *, const tir::v1::LeaseWorkRequest *, tir::v1::LeaseWorkResponse *) override;
  grpc::Status ReportResult(grpc::ServerContext *, const tir::v1::ReportResultRequest *,
                            tir::v1::ReportResultResponse *) override;
  grpc::Status Drain(grpc::ServerContext *, const tir::v1::DrainRequest *, tir::v1::DrainResponse *) override;
  grpc::Status ReturnWork(grpc::ServerContext *, const tir::v1::ReturnWorkRequest *,
                          tir::v1::ReturnWorkResponse *) override;

 private:
  // Puts outstanding `leases` back at the queue's front; `record`: in
  // State::requeued (drains). Returns how many.
  uint32_t Requeue(const google::protobuf::RepeatedPtrField<std::string> &leases, bool record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_);
  std::deque<tir::v1::WorkItem> queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, tir::v1::WorkItem> outstanding_ ABSL_GUARDED_BY(mu_);
  int fail_registrations_ ABSL_GUARDED_BY(mu_) = 0;
  bool lose_first_answer_ ABSL_GUARDED_BY(mu_) = false;
  int next_worker_ ABSL_GUARDED_BY(mu_) = 0;
  int next_lease_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration heartbeat_interval_ = absl::Milliseconds(100);
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace tir::worker::testing

#endif  // TIR_WORKER_TESTING_TEST_COORDINATOR_H_
