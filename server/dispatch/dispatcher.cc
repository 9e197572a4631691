#include "server/dispatch/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "google/protobuf/util/time_util.h"
#include "server/api/rpc_status.h"

namespace tir::dispatch {

using google::protobuf::util::TimeUtil;

struct Dispatcher::Metrics {
  explicit Metrics(prometheus::Registry &r)
      : queue_depth(prometheus::BuildGauge().Name("tir_queue_depth").Help("Work items waiting for a worker, by arch").Register(r)),
        leases(prometheus::BuildGauge().Name("tir_leases_outstanding").Help("Work items leased to workers").Register(r).Add({})),
        workers(prometheus::BuildGauge().Name("tir_workers").Help("Registered workers by arch and state").Register(r)),
        queue_wait_seconds(prometheus::BuildHistogram()
                               .Name("tir_queue_wait_seconds")
                               .Help("Time a work item waited before a worker leased it")
                               .Register(r)
                               .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.1, 0.5, 1, 5, 10, 60, 300})),
        measure_seconds(prometheus::BuildHistogram()
                            .Name("tir_measure_seconds")
                            .Help("Lease to report of one work item (compile and measure on a worker)")
                            .Register(r)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300})),
        quarantines(prometheus::BuildCounter()
                        .Name("tir_worker_quarantines_total")
                        .Help("Workers quarantined after their candidates faulted or timed out on several kernels in a row")
                        .Register(r)
                        .Add({})),
        leases_expired(prometheus::BuildCounter()
                           .Name("tir_leases_expired_total")
                           .Help("Leases re-queued because they passed their deadline unreported")
                           .Register(r)
                           .Add({})),
        distrusted(prometheus::BuildCounter()
                       .Name("tir_workers_distrusted_total")
                       .Help("Workers distrusted: a binary not the coordinator's build, a time below the kernel's "
                             "physical floor, a WRONG verdict another worker contradicted, or unconfirmable winners")
                       .Register(r)
                       .Add({})) {}
  prometheus::Family<prometheus::Gauge> &queue_depth;
  prometheus::Gauge &leases;
  prometheus::Family<prometheus::Gauge> &workers;
  prometheus::Histogram &queue_wait_seconds, &measure_seconds;
  prometheus::Counter &quarantines, &leases_expired, &distrusted;
};

Dispatcher::Dispatcher(DispatchOptions options, prometheus::Registry &registry, common::LimitCounter &limits)
    : options_(options),
      limits_(limits),
      metrics_(std::make_unique<Metrics>(registry)),
      workers_(WorkerRegistry::Options{options.quarantine_after, options.quarantine_probe}) {}

Dispatcher::~Dispatcher() { Stop(); }

void Dispatcher::Start() {
  absl::MutexLock l(&mu_);
  if (!reaper_.joinable() && !stopping_) reaper_ = std::thread([this] { Reap(); });
}

void Dispatcher::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  if (reaper_.joinable()) reaper_.join();
}

void Dispatcher::Touch() {
  std::map<std::string, int> byArch;
  for (const std::string &arch : gauge_arches_) byArch[arch] = 0;
  for (const auto &[name, w] : workers_.all()) byArch[w.capabilities.arch()] += 0;
  for (const auto &[arch, n] : queue_.QueuedByArch()) byArch[arch] += n;
  for (const auto &[arch, n] : byArch) {
    gauge_arches_.insert(arch);
    metrics_->queue_depth.Add({{"arch", arch}}).Set(n);
  }
  metrics_->leases.Set(static_cast<double>(queue_.leased()));
  changed_.SignalAll();
}

void Dispatcher::Deliver(std::vector<Delivery> deliveries) {
  for (Delivery &d : deliveries) {
    WorkOwner *owner = d.work.owner;
    if (owner != nullptr) owner->OnResults(std::move(d.work), std::move(d.results), d.worker);
  }
}

absl::Status Dispatcher::CheckSession(const std::string &name, const std::string &session,
                                      const std::string &identity) const {
  absl::MutexLock l(&mu_);
  if (const WorkerEntry *w = workers_.Find(name); w != nullptr && w->identity != identity) {
    return MakeError(
        absl::StatusCode::kPermissionDenied, "WORKER_IDENTITY_MISMATCH",
        absl::StrCat(name, " is ",
                     w->identity.empty() ? "a worker without credentials of its own" : "worker identity " + w->identity,
                     "; this call presents ",
                     identity.empty() ? "no worker credential of its own" : "identity " + identity));
  }
  if (workers_.SessionMatches(name, session)) return absl::OkStatus();
  return MakeError(absl::StatusCode::kPermissionDenied, "WORKER_SESSION_MISMATCH",
                   absl::StrCat("this call does not present the session of ", name,
                                " (metadata tir-worker-session, from its RegisterWorker answer)"));
}

absl::StatusOr<tir::v1::RegisterWorkerResponse> Dispatcher::Register(const tir::v1::RegisterWorkerRequest &request,
                                                                     const std::string &session,
                                                                     const std::string &identity) {
  const tir::v1::WorkerCapabilities &caps = request.capabilities();
  if (caps.backend() != "cuda" && caps.backend() != "host") {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", "backend must be cuda or host");
  }
  TIR_RETURN_IF_ERROR(target::LookupArch(caps.arch()).status());
  // Every string a worker registers with is shown and kept: bounded.
  for (const auto &[field, value] :
       {std::pair<const char *, const std::string *>{"name", &request.name()}, {"device_name", &caps.device_name()},
        {"hostname", &caps.hostname()}, {"driver_version", &caps.driver_version()},
        {"nvrtc_version", &caps.nvrtc_version()}, {"host_compiler", &caps.host_compiler()},
        {"tir_version", &caps.tir_version()}}) {
    if (value->size() > kMaxWorkerField) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                       absl::StrCat("capabilities field ", field, " has ", value->size(), " bytes; at most ",
                                    kMaxWorkerField, " are kept"));
    }
    // Shown in logs, the dashboard and ListWorkers: printable ASCII only (a
    // newline or an escape sequence would forge log lines or a terminal).
    for (unsigned char ch : *value) {
      if (ch < 0x20 || ch > 0x7e) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                         absl::StrCat("capabilities field ", field, " holds byte 0x", absl::Hex(ch, absl::kZeroPad2),
                                      "; worker names and capabilities are printable ASCII"));
      }
    }
  }
  std::vector<Delivery> given_up;
  tir::v1::RegisterWorkerResponse out;
  {
    absl::MutexLock l(&mu_);
    if (!identity.empty()) {
      // Per identity: its name, its health and its distrust outlive its
      // registrations (it cannot shed them by registering again).
      const std::string name = WorkerRegistry::NameOf(identity);
      if (const WorkerEntry *w = workers_.Find(name); w != nullptr && w->distrusted) {
        return MakeError(absl::StatusCode::kPermissionDenied, "WORKER_DISTRUSTED",
                         absl::StrCat("worker identity ", identity, " is distrusted (", w->distrust_reason,
                                      "); it takes no work"));
      }
      bool replaced = false;
      out.set_name(workers_.RegisterIdentity(identity, caps, absl::Now(), session, &replaced));
      if (replaced) {
        // The registration before (a process that restarted, or one that
        // shares the credential) loses its leases, re-queued at no cost.
        for (dispatch::Lease &lease : queue_.TakeHeldBy(name)) Requeue(std::move(lease), false, &given_up);
      }
    } else {
      if (workers_.Anonymous() >= kMaxWorkers && workers_.Mints(request.name(), session)) {
        return limits_.Exceeded("maxWorkers", kMaxWorkers,
                                "workers registered without credentials of their own (lost ones are forgotten after 10 "
                                "minutes)");
      }
      out.set_name(workers_.Register(request.name(), caps, absl::Now(), session));
    }
    out.set_session(workers_.Find(out.name())->session);
    *out.mutable_heartbeat_interval() =
        TimeUtil::MillisecondsToDuration(absl::ToInt64Milliseconds(options_.heartbeat_interval));
    *out.mutable_lost_after() = TimeUtil::MillisecondsToDuration(absl::ToInt64Milliseconds(options_.lost_after));
    Touch();
  }
  Deliver(std::move(given_up));
  return out;
}

tir::v1::HeartbeatResponse Dispatcher::Heartbeat(const tir::v1::HeartbeatRequest &request) {
  absl::MutexLock l(&mu_);
  tir::v1::HeartbeatResponse out;
  if (!workers_.Heartbeat(request.name(), request.state(), request.candidates_measured(), absl::Now())) {
    out.set_reregister(true);
    return out;
  }
  for (const std::string &id : request.lease_ids()) {
    if (!queue_.Holds(id, request.name())) out.add_cancelled_lease_ids(id);
  }
  return out;
}

absl::StatusOr<tir::v1::LeaseWorkResponse> Dispatcher::Lease(const tir::v1::LeaseWorkRequest &request,
                                                             absl::Time deadline) {
  const absl::Duration wait = absl::Seconds(request.wait().seconds()) + absl::Nanoseconds(request.wait().nanos());
  const absl::Time end = std::min(deadline, absl::Now() + std::min(wait, absl::Seconds(30)));
  tir::v1::LeaseWorkResponse out;
  std::vector<std::pair<WorkOwner *, std::string>> leased;
  {
    absl::MutexLock l(&mu_);
    bool waiting = false;  // counted in lease_waits_
    absl::Status refused;
    for (;;) {
      WorkerEntry *w = workers_.FindLive(request.name());
      if (w == nullptr) {
        refused = MakeError(absl::StatusCode::kFailedPrecondition, "UNKNOWN_WORKER", "register again: " + request.name());
        break;
      }
      if (w->distrusted) {
        refused = MakeError(absl::StatusCode::kPermissionDenied, "WORKER_DISTRUSTED",
                            absl::StrCat(request.name(), " is distrusted (", w->distrust_reason, "); it takes no work"));
        break;
      }
      w->last_heartbeat = absl::Now();
      const std::string arch = w->capabilities.arch();
      // A quarantined worker gets one probe item per probe interval.
      const bool probe = w->quarantined;
      const uint32_t max =
          workers_.Allowance(*w, std::clamp(request.max_items(), 1u, kMaxLeaseItems), absl::Now());
      while (static_cast<uint32_t>(out.items_size()) < max) {
        dispatch::Lease *lease = queue_.LeaseNext(arch, request.name(), absl::Now() + options_.lease_timeout);
        if (lease == nullptr) break;
        metrics_->queue_wait_seconds.Observe(absl::ToDoubleSeconds(absl::Now() - lease->work.queued_at));
        lease->work.queued_at = absl::Now();
        *out.add_items() = lease->work.item;
        leased.emplace_back(lease->work.owner, lease->work.job);
        workers_.Leased(*w, absl::Now());
      }
      if (out.items_size() > 0 || absl::Now() >= end || stopping_) break;
      if (!waiting) {
        if (lease_waits_ >= options_.max_lease_waits) break;  // no thread to spare for one more wait
        waiting = true;
        ++lease_waits_;
      }
      changed_.WaitWithDeadline(&mu_, probe ? std::min(end, w->next_probe) : end);
    }
    if (waiting) --lease_waits_;
    if (!refused.ok()) return refused;
    Touch();
  }
  for (const auto &[owner, job] : leased) {
    if (owner != nullptr) owner->OnLeased(job);
  }
  return out;
}

void Dispatcher::NoteHealth(const std::string &worker, const std::string &job, int kernel,
                            const std::vector<tir::v1::CandidateResult> &results) {
  switch (workers_.NoteResults(worker, job, kernel, results, absl::Now())) {
    case WorkerRegistry::Health::kQuarantined:
      metrics_->quarantines.Increment();
      std::fprintf(stderr,
                   "tir-coordinator: %s quarantined: every candidate faulted or timed out on %d different kernels in a "
                   "row; a probe every %s\n",
                   worker.c_str(), options_.quarantine_after, absl::FormatDuration(options_.quarantine_probe).c_str());
      break;
    case WorkerRegistry::Health::kReleased:
      std::fprintf(stderr, "tir-coordinator: %s passed its probe; out of quarantine\n", worker.c_str());
      break;
    case WorkerRegistry::Health::kSame:
      break;
  }
}

void Dispatcher::Distrust(const std::string &worker, const std::string &why) {
  std::vector<Delivery> given_up;
  {
    absl::MutexLock l(&mu_);
    DistrustHeld(worker, why, &given_up);
  }
  Deliver(std::move(given_up));
}

void Dispatcher::DistrustHeld(const std::string &worker, const std::string &why, std::vector<Delivery> *given_up) {
  if (!workers_.Distrust(worker, why)) return;
  metrics_->distrusted.Increment();
  std::fprintf(stderr, "tir-coordinator: worker %s is distrusted and takes no more work: %s\n", worker.c_str(),
               why.c_str());
  for (dispatch::Lease &lease : queue_.TakeHeldBy(worker)) Requeue(std::move(lease), false, given_up);
  Touch();
}

void Dispatcher::Unconfirmed(const std::string &worker, const std::string &why) {
  std::vector<Delivery> given_up;
  {
    absl::MutexLock l(&mu_);
    std::fprintf(stderr, "tir-coordinator: a winner measured by %s cannot be confirmed and does not win: %s\n",
                 worker.c_str(), why.c_str());
    if (workers_.NoteUnconfirmed(worker, kUnconfirmedToDistrust)) {
      DistrustHeld(worker,
                   absl::StrCat("measured ", kUnconfirmedToDistrust,
                                " winners whose binaries the coordinator could not check (", why, ")"),
                   &given_up);
    }
  }
  Deliver(std::move(given_up));
}

absl::StatusOr<tir::v1::CandidateResult> TakenFromWorker(const tir::v1::CandidateResult &r) {
  auto invalid = [&](const std::string &what) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_REPORT",
                     absl::StrCat("the result for candidate ", r.candidate_index(), " ", what));
  };
  const std::string &hash = r.binary_sha256();
  if (hash.size() > 64) {
    // A hash (64 hex digits) is compared, never trusted: anything longer is a payload.
    return invalid(absl::StrCat("has a binary_sha256 of ", hash.size(), " bytes (a SHA-256 is 64 hex digits)"));
  }
  const tir::v1::Measurement &m = r.measurement();
  bool timed = true;
  for (double t : {m.median_seconds(), m.iqr_seconds(), m.min_seconds()}) timed &= std::isfinite(t) && t >= 0;
  if (!timed && r.verification().verdict() == tir::v1::VERDICT_PASSED) {
    return invalid(absl::StrCat("passed with a time of ", m.median_seconds(), " s (times are finite and >= 0)"));
  }
  tir::v1::CandidateResult out;
  out.set_candidate_index(r.candidate_index());
  *out.mutable_verification() = r.verification();
  if (timed) *out.mutable_measurement() = m;
  *out.mutable_compile_info() = r.compile_info();
  out.set_format(r.format());
  out.set_binary_sha256(hash);
  // Nothing a worker chose beyond the fields above, and no field of theirs
  // it did not know of (a payload riding in an unknown field), goes on.
  out.DiscardUnknownFields();
  out.mutable_verification()->set_detail(api::ShownMessage(r.verification().detail()));
  out.mutable_compile_info()->set_log(api::ShownMessage(r.compile_info().log()));
  return out;
}

absl::StatusOr<std::vector<tir::v1::CandidateResult>> InItemOrder(
    const tir::v1::WorkItem &item, const google::protobuf::RepeatedPtrField<tir::v1::CandidateResult> &reported) {
  std::vector<tir::v1::CandidateResult> results;
  results.reserve(reported.size());
  for (const tir::v1::CandidateResult &r : reported) {
    TIR_ASSIGN_OR_RETURN(tir::v1::CandidateResult taken, TakenFromWorker(r));
    results.push_back(std::move(taken));
  }
  // A round may hold a candidate more than once (a confirming round that
  // measures the default beside a winner that is the default): its results
  // fill its places in order.
  std::map<uint32_t, std::vector<int>> places;
  for (int i = item.candidates_size() - 1; i >= 0; --i) places[item.candidates(i).candidate_index()].push_back(i);
  std::vector<std::optional<tir::v1::CandidateResult>> slots(item.candidates_size());
  for (const tir::v1::CandidateResult &r : results) {
    auto p = places.find(r.candidate_index());
    if (p == places.end()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_REPORT",
                       absl::StrCat("a result for candidate ", r.candidate_index(), ", which work item ",
                                    item.lease_id(), " does not hold"));
    }
    if (p->second.empty()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_REPORT",
                       absl::StrCat("more results for candidate ", r.candidate_index(), " than the work item holds"));
    }
    slots[p->second.back()] = r;
    p->second.pop_back();
  }
  std::vector<tir::v1::CandidateResult> out;
  out.reserve(slots.size());
  for (int i = 0; i < item.candidates_size(); ++i) {
    if (slots[i]) {
      out.push_back(*std::move(slots[i]));
      continue;
    }
    tir::v1::CandidateResult missing;
    missing.set_candidate_index(item.candidates(i).candidate_index());
    missing.mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
    missing.mutable_verification()->set_detail("the worker's report has no result for this candidate");
    out.push_back(std::move(missing));
  }
  return out;
}

std::optional<std::string> BelowFloor(const QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results) {
  if (work.floor_seconds.size() != results.size()) return std::nullopt;
  for (size_t i = 0; i < results.size(); ++i) {
    const tir::v1::CandidateResult &r = results[i];
    if (r.verification().verdict() != tir::v1::VERDICT_PASSED) continue;
    const double floor = work.floor_seconds[i];
    if (r.measurement().median_seconds() < floor) {
      return absl::StrCat("a median of ", r.measurement().median_seconds(), " s for candidate ", r.candidate_index(),
                          " of ", work.item.arch(), ", below its kernel's physical floor of ", floor,
                          " s (bytes moved and flops at the fastest device's peak rates)");
    }
  }
  return std::nullopt;
}

absl::StatusOr<tir::v1::ReportResultResponse> Dispatcher::Report(const tir::v1::ReportResultRequest &request) {
  std::vector<Delivery> deliveries;
  tir::v1::ReportResultResponse out;
  absl::Status refused;
  {
    absl::MutexLock l(&mu_);
    // Results by candidate_index, in the item's order; one that names a
    // candidate the item lacks, or one twice, refuses the report (the lease
    // stays held until it expires); a candidate without one faulted.
    absl::StatusOr<std::vector<tir::v1::CandidateResult>> ordered;
    if (const dispatch::Lease *held = queue_.Find(request.lease_id()); held != nullptr && held->worker == request.name()) {
      ordered = InItemOrder(held->work.item, request.results());
      if (!ordered.ok()) return ordered.status();
    }
    dispatch::Lease lease;
    switch (queue_.TakeReported(request.lease_id(), request.name(), &lease)) {
      case LeaseQueue::Report::kDuplicate:
        out.set_duplicate(true);
        return out;
      case LeaseQueue::Report::kNotHeld:
        return MakeError(absl::StatusCode::kFailedPrecondition, "LEASE_EXPIRED",
                         absl::StrCat(request.lease_id(), " is not held (expired and re-queued, or unknown)"));
      case LeaseQueue::Report::kOtherWorker:
        return MakeError(absl::StatusCode::kPermissionDenied, "LEASE_EXPIRED",
                         absl::StrCat(request.lease_id(), " is held by another worker"));
      case LeaseQueue::Report::kTaken:
        break;
    }
    std::optional<std::string> lie;
    if (ordered.ok() && !lease.work.job.empty()) lie = BelowFloor(lease.work, *ordered);
    if (lie) {
      // No device runs the kernel faster than its physical floor: the
      // report is made up. Refused, and its worker takes no more work (the
      // item goes back to the queue for another).
      const std::string why = absl::StrCat("reported ", *lie);
      Requeue(std::move(lease), false, &deliveries);
      DistrustHeld(request.name(), why, &deliveries);
      refused = MakeError(absl::StatusCode::kInvalidArgument, "INVALID_REPORT",
                          absl::StrCat("the report of ", request.lease_id(), " ", why,
                                       "; it is refused and this worker takes no more work"));
    }
    if (!lie) {
      metrics_->measure_seconds.Observe(absl::ToDoubleSeconds(absl::Now() - lease.work.queued_at));
      out.set_accepted(true);
    }
    if (!lie && !lease.work.job.empty()) {
      std::vector<tir::v1::CandidateResult> results = *std::move(ordered);
      NoteHealth(request.name(), lease.work.job, lease.work.kernel, results);
      const bool allSick = !results.empty() && std::all_of(results.begin(), results.end(), [](const auto &r) {
        return r.verification().verdict() == tir::v1::VERDICT_FAULT ||
               r.verification().verdict() == tir::v1::VERDICT_TIMEOUT;
      });
      if (allSick && lease.work.attempts + 1 < options_.max_attempts) {
        // Every candidate faulted or timed out: the device may be to blame,
        // not the kernel (a sick GPU fails whatever it runs). The item is
        // measured again, on a healthy worker once this one is quarantined,
        // and counts only after max_attempts such reports.
        ++lease.work.attempts;
        lease.work.queued_at = absl::Now();
        queue_.Push(std::move(lease.work));
      } else {
        deliveries.push_back({std::move(lease.work), std::move(results), request.name()});
      }
    }
    Touch();
  }
  Deliver(std::move(deliveries));
  if (!refused.ok()) return refused;
  return out;
}

void Dispatcher::Requeue(dispatch::Lease lease, bool count_attempt, std::vector<Delivery> *given_up) {
  if (lease.work.job.empty()) return;
  if (count_attempt) ++lease.work.attempts;
  if (lease.work.attempts >= options_.max_attempts) {
    // Given up: the item's candidates fail as faults.
    std::vector<tir::v1::CandidateResult> results;
    for (const auto &c : lease.work.item.candidates()) {
      tir::v1::CandidateResult r;
      r.set_candidate_index(c.candidate_index());
      r.mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
      r.mutable_verification()->set_detail(absl::StrCat("lost with its worker ", lease.work.attempts, " times"));
      results.push_back(r);
    }
    given_up->push_back({std::move(lease.work), std::move(results), ""});
    return;
  }
  lease.work.queued_at = absl::Now();
  queue_.Push(std::move(lease.work));
}

uint32_t Dispatcher::RequeueReturned(const std::string &worker,
                                     const google::protobuf::RepeatedPtrField<std::string> &ids,
                                     std::vector<Delivery> *given_up) {
  uint32_t n = 0;
  for (dispatch::Lease &lease : queue_.TakeReturned(worker, {ids.begin(), ids.end()})) {
    Requeue(std::move(lease), false, given_up);
    ++n;
  }
  return n;
}

tir::v1::DrainResponse Dispatcher::Drain(const tir::v1::DrainRequest &request) {
  std::vector<Delivery> given_up;
  tir::v1::DrainResponse out;
  {
    absl::MutexLock l(&mu_);
    out.set_requeued(RequeueReturned(request.name(), request.returned_lease_ids(), &given_up));
    // Anything else it still held is lost with it.
    for (dispatch::Lease &lease : queue_.TakeHeldBy(request.name())) Requeue(std::move(lease), true, &given_up);
    workers_.Remove(request.name(), absl::Now());
    Touch();
  }
  Deliver(std::move(given_up));
  return out;
}

absl::StatusOr<tir::v1::ReturnWorkResponse> Dispatcher::Return(const tir::v1::ReturnWorkRequest &request) {
  std::vector<Delivery> given_up;
  tir::v1::ReturnWorkResponse out;
  {
    absl::MutexLock l(&mu_);
    if (workers_.Find(request.name()) == nullptr) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "UNKNOWN_WORKER", "register again: " + request.name());
    }
    out.set_requeued(RequeueReturned(request.name(), request.lease_ids(), &given_up));
    Touch();
  }
  if (out.requeued() > 0) {
    std::fprintf(stderr, "tir-coordinator: %s gave back %u lease(s): %s\n", request.name().c_str(), out.requeued(),
                 api::ShownMessage(request.reason()).c_str());
  }
  Deliver(std::move(given_up));
  return out;
}

tir::v1::ListWorkersResponse Dispatcher::ListWorkers(const std::string &arch) const {
  absl::MutexLock l(&mu_);
  tir::v1::ListWorkersResponse out;
  for (const auto &[name, w] : workers_.all()) {
    if (!arch.empty() && w.capabilities.arch() != arch) continue;
    tir::v1::WorkerInfo *i = out.add_workers();
    i->set_name(name);
    i->set_backend(w.capabilities.backend());
    i->set_arch(w.capabilities.arch());
    i->set_device_name(w.capabilities.device_name());
    i->set_state(w.shown());
    i->set_active_leases(static_cast<uint32_t>(queue_.HeldBy(name).size()));
    i->set_candidates_measured(w.measured);
    *i->mutable_last_heartbeat() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(w.last_heartbeat));
  }
  return out;
}

void Dispatcher::Push(QueuedWork work) {
  absl::MutexLock l(&mu_);
  queue_.Push(std::move(work));
  Touch();
}

void Dispatcher::Reprioritize(const std::string &job, int priority) {
  absl::MutexLock l(&mu_);
  queue_.Reprioritize(job, priority);
}

void Dispatcher::DropJob(const std::string &job) {
  absl::MutexLock l(&mu_);
  queue_.DropJob(job);
  Touch();
}

bool Dispatcher::Leased(const std::string &job) const {
  absl::MutexLock l(&mu_);
  return queue_.Leased(job);
}

size_t Dispatcher::queued() const {
  absl::MutexLock l(&mu_);
  return queue_.queued();
}

absl::Status Dispatcher::Room(size_t items, const std::string &what) const {
  size_t queued;
  {
    absl::MutexLock l(&mu_);
    queued = queue_.queued();
  }
  if (queued + items <= options_.max_queue_items) return absl::OkStatus();
  return limits_.Exceeded("maxQueueItems", options_.max_queue_items,
                          absl::StrCat(queued, " work items are queued and ", what, " adds ", items));
}

bool Dispatcher::HasHealthy(const std::string &arch) const {
  absl::MutexLock l(&mu_);
  return workers_.HasHealthy(arch);
}

bool Dispatcher::HasHealthyOtherThan(const std::string &arch, const std::set<std::string> &besides) const {
  absl::MutexLock l(&mu_);
  return workers_.HasHealthyOtherThan(arch, besides);
}

std::string Dispatcher::DeviceOf(const std::string &arch) const {
  absl::MutexLock l(&mu_);
  return workers_.DeviceOf(arch);
}

std::optional<tir::v1::WorkerCapabilities> Dispatcher::CapabilitiesOf(const std::string &worker) const {
  absl::MutexLock l(&mu_);
  auto it = workers_.all().find(worker);
  if (it == workers_.all().end()) return std::nullopt;
  return it->second.capabilities;
}

DispatchSnapshot Dispatcher::Snapshot(absl::Time now, bool sample) {
  absl::MutexLock l(&mu_);
  DispatchSnapshot out;
  const double dt = sample && last_sample_ != absl::Time() ? absl::ToDoubleSeconds(now - last_sample_) : 0;
  if (sample) last_sample_ = now;
  for (auto &[name, w] : workers_.all()) {
    if (sample) {
      if (dt > 0) w.rate = (w.measured - w.sampled_measured) / dt;
      w.sampled_measured = w.measured;
    }
    out.alive += w.state != "lost";
    tir::v1::WorkerStatus &s = out.workers.emplace_back();
    s.set_name(name);
    s.set_backend(w.capabilities.backend());
    s.set_arch(w.capabilities.arch());
    s.set_device(w.capabilities.device_name());
    s.set_state(w.shown());
    for (const std::string &id : queue_.HeldBy(name)) s.add_leases(id);
    s.set_candidates_measured(w.measured);
    s.set_candidates_per_second(w.rate);
    s.set_heartbeat_age_seconds(absl::ToDoubleSeconds(now - w.last_heartbeat));
  }
  out.queued = static_cast<uint32_t>(queue_.queued());
  return out;
}

void Dispatcher::Reap() {
  for (;;) {
    std::vector<Delivery> given_up;
    {
      absl::MutexLock l(&mu_);
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
      if (stopping_) return;
      const absl::Time now = absl::Now();
      // Leases past their deadline go back to the queue (an attempt counts);
      // a late report for one is refused as from a lease no longer held.
      for (dispatch::Lease &lease : queue_.TakeExpired(now)) {
        metrics_->leases_expired.Increment();
        Requeue(std::move(lease), true, &given_up);
        Touch();
      }
      for (const std::string &name : workers_.MarkLost(now, options_.lost_after)) {
        for (dispatch::Lease &lease : queue_.TakeHeldBy(name)) Requeue(std::move(lease), true, &given_up);
        Touch();
      }
      std::map<std::string, std::map<std::string, int>> byArch;
      for (const auto &[name, w] : workers_.all()) ++byArch[w.capabilities.arch()][w.shown()];
      for (const char *state : {"ready", "busy", "draining", "unavailable", "lost", "quarantined"}) {
        for (auto &[arch, states] : byArch) {
          metrics_->workers.Add({{"arch", arch}, {"state", state}}).Set(states.count(state) ? states[state] : 0);
        }
      }
    }
    Deliver(std::move(given_up));
  }
}

}  // namespace tir::dispatch
