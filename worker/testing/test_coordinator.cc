#include "worker/testing/test_coordinator.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"

namespace tir::worker::testing {

using google::protobuf::util::TimeUtil;

TestCoordinator::TestCoordinator() {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  address_ = absl::StrCat("127.0.0.1:", port);
}

TestCoordinator::~TestCoordinator() { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2)); }

void TestCoordinator::Enqueue(tir::v1::WorkItem item) {
  absl::MutexLock l(&mu_);
  queue_.push_back(std::move(item));
}

void TestCoordinator::FailRegistrations(int n) {
  absl::MutexLock l(&mu_);
  fail_registrations_ = n;
}

void TestCoordinator::LoseFirstReportAnswer(bool lose) {
  absl::MutexLock l(&mu_);
  lose_first_answer_ = lose;
}

bool TestCoordinator::WaitFor(const std::function<bool(const State &)> &pred, absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  auto cond = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return pred(state_); };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

TestCoordinator::State TestCoordinator::state() const {
  absl::MutexLock l(&mu_);
  return state_;
}

grpc::Status TestCoordinator::RegisterWorker(grpc::ServerContext *, const tir::v1::RegisterWorkerRequest *req,
                                             tir::v1::RegisterWorkerResponse *resp) {
  absl::MutexLock l(&mu_);
  state_.registration_attempts.push_back(absl::Now());
  if (fail_registrations_ > 0) {
    --fail_registrations_;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "test coordinator: not ready");
  }
  state_.registrations.push_back(*req);
  resp->set_name(req->name().empty() ? absl::StrCat("workers/", ++next_worker_) : req->name());
  *resp->mutable_heartbeat_interval() = TimeUtil::MillisecondsToDuration(absl::ToInt64Milliseconds(heartbeat_interval_));
  *resp->mutable_lost_after() = TimeUtil::MillisecondsToDuration(10 * absl::ToInt64Milliseconds(heartbeat_interval_));
  return grpc::Status::OK;
}

grpc::Status TestCoordinator::Heartbeat(grpc::ServerContext *, const tir::v1::HeartbeatRequest *req,
                                        tir::v1::HeartbeatResponse *) {
  absl::MutexLock l(&mu_);
  ++state_.heartbeats;
  state_.heartbeat_states.push_back(req->state());
  return grpc::Status::OK;
}

grpc::Status TestCoordinator::LeaseWork(grpc::ServerContext *ctx, const tir::v1::LeaseWorkRequest *req,
                                        tir::v1::LeaseWorkResponse *resp) {
  const absl::Duration wait = absl::Seconds(req->wait().seconds()) + absl::Nanoseconds(req->wait().nanos());
  absl::MutexLock l(&mu_);
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !queue_.empty(); };
  mu_.AwaitWithTimeout(absl::Condition(&ready), std::min(wait, absl::Seconds(5)));
  const uint32_t max = std::max(1u, req->max_items());
  while (!queue_.empty() && static_cast<uint32_t>(resp->items_size()) < max && !ctx->IsCancelled()) {
    tir::v1::WorkItem item = std::move(queue_.front());
    queue_.pop_front();
    item.set_lease_id(absl::StrCat("leases/", ++next_lease_));
    item.set_attempt(item.attempt() + 1);
    *item.mutable_deadline() = TimeUtil::GetCurrentTime() + TimeUtil::SecondsToDuration(600);
    state_.leased.push_back(item.lease_id());
    outstanding_[item.lease_id()] = item;
    *resp->add_items() = std::move(item);
  }
  return grpc::Status::OK;
}

grpc::Status TestCoordinator::ReportResult(grpc::ServerContext *, const tir::v1::ReportResultRequest *req,
                                           tir::v1::ReportResultResponse *resp) {
  absl::MutexLock l(&mu_);
  ++state_.report_calls;
  if (state_.reports.count(req->lease_id())) {
    ++state_.duplicate_reports;
    resp->set_duplicate(true);
    return grpc::Status::OK;
  }
  if (!outstanding_.count(req->lease_id())) return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown lease");
  state_.reports[req->lease_id()] = *req;
  outstanding_.erase(req->lease_id());
  if (lose_first_answer_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "test coordinator: answer lost");
  resp->set_accepted(true);
  return grpc::Status::OK;
}

uint32_t TestCoordinator::Requeue(const google::protobuf::RepeatedPtrField<std::string> &leases, bool record) {
  uint32_t n = 0;
  for (const std::string &lease : leases) {
    auto it = outstanding_.find(lease);
    if (it == outstanding_.end()) continue;
    if (record) state_.requeued[lease] = it->second;
    queue_.push_front(it->second);
    outstanding_.erase(it);
    ++n;
  }
  return n;
}

grpc::Status TestCoordinator::Drain(grpc::ServerContext *, const tir::v1::DrainRequest *req,
                                    tir::v1::DrainResponse *resp) {
  absl::MutexLock l(&mu_);
  state_.drains.push_back(*req);
  resp->set_requeued(Requeue(req->returned_lease_ids(), true));
  return grpc::Status::OK;
}

grpc::Status TestCoordinator::ReturnWork(grpc::ServerContext *, const tir::v1::ReturnWorkRequest *req,
                                         tir::v1::ReturnWorkResponse *resp) {
  absl::MutexLock l(&mu_);
  state_.returns.push_back(*req);
  resp->set_requeued(Requeue(req->lease_ids(), false));
  return grpc::Status::OK;
}

}  // namespace tir::worker::testing
