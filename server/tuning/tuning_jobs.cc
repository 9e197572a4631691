#include "server/tuning/tuning_jobs.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/time_util.h"
#include "server/tuning/time_floor.h"

namespace tir::tuning {

using google::protobuf::util::TimeUtil;

TuningJobs::TuningJobs(Parts parts, StrategyFactory strategies, common::Limits limits,
                       std::function<void(const std::string &key)> stored, std::function<void(int)> trials)
    : parts_(parts),
      strategies_(std::move(strategies)),
      limits_(limits),
      stored_(std::move(stored)),
      trials_(std::move(trials)),
      measured_counter_(prometheus::BuildCounter()
                            .Name("tir_candidates_measured_total")
                            .Help("Candidate measurements reported by workers")
                            .Register(parts.registry)
                            .Add({})),
      tune_seconds_(prometheus::BuildHistogram()
                        .Name("tir_tune_seconds")
                        .Help("Wall time of a tuning job, from planning to the stored bundle")
                        .Register(parts.registry)
                        .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600})),
      speedup_(prometheus::BuildHistogram()
                   .Name("tir_tuned_speedup")
                   .Help("Default candidates' time over the tuned bundle's, per tuned bundle")
                   .Register(parts.registry)
                   .Add({}, prometheus::Histogram::BucketBoundaries{1, 1.05, 1.1, 1.25, 1.5, 2, 3, 5, 10})) {}

size_t TuningJobs::size() const {
  absl::MutexLock l(&mu_);
  return jobs_.size();
}

bool TuningJobs::Tuning(const std::string &key) const {
  absl::MutexLock l(&mu_);
  return jobs_.count(key) > 0;
}

absl::Status TuningJobs::Fits(const std::string &client, size_t kernels) const {
  if (jobs_.size() >= limits_.max_jobs) {
    return parts_.limits.Exceeded("maxJobs", limits_.max_jobs, absl::StrCat(jobs_.size(), " tuning jobs are in flight"));
  }
  size_t mine = 0;
  for (const auto &[key, job] : jobs_) mine += job.spec.client == client;
  if (mine >= limits_.max_jobs_per_client) {
    return parts_.limits.Exceeded("maxJobsPerClient", limits_.max_jobs_per_client,
                                  absl::StrCat("client ", client.empty() ? "(unnamed)" : client, " has ", mine,
                                               " tuning jobs in flight"));
  }
  return parts_.dispatcher.Room(kernels, "this job");
}

absl::StatusOr<tir::v1::Operation> TuningJobs::Attach(Job &job, const Waiter &waiter) {
  const std::string &key = job.spec.identity.key;
  TIR_ASSIGN_OR_RETURN(tir::v1::Operation op, parts_.operations.New(job.spec.identity.arch, key, key,
                                                                    waiter.request_id, waiter.describe, waiter.owner));
  job.operations.push_back(op.name());
  if (waiter.shape) job.shapes[op.name()] = *waiter.shape;
  return op;
}

absl::StatusOr<std::optional<tir::v1::Operation>> TuningJobs::Join(const std::string &key, const std::string &arch,
                                                                   int priority, const Waiter &waiter) {
  std::optional<tir::v1::Operation> joined;
  {
    absl::MutexLock l(&mu_);
    auto it = jobs_.find(key);
    if (it == jobs_.end() || it->second.cancelled || it->second.spec.identity.arch != arch) return std::nullopt;
    Job &job = it->second;
    TIR_ASSIGN_OR_RETURN(joined, Attach(job, waiter));
    job.spec.priority = std::max(job.spec.priority, priority);
    parts_.dispatcher.Reprioritize(key, job.spec.priority);
    Progress(job);
    joined = parts_.operations.Get(joined->name()).value_or(*joined);
  }
  // Durable before the client learns the name (outside mu_).
  parts_.operations.Persist(joined->name(), key, waiter.shape ? waiter.shape->text : "");
  return joined;
}

absl::StatusOr<tir::v1::Operation> TuningJobs::Open(JobSpec spec, std::vector<KernelWork> plan,
                                                    std::optional<absl::StatusOr<tir::v1::KernelBundle>> untuned,
                                                    const Waiter &waiter, bool resume, ledger::Rounds rounds) {
  const std::string key = spec.identity.key;
  const std::string arch = spec.identity.arch;
  std::string name;
  tir::v1::CompileRequest jobRecord;
  bool persistJob = false, persistOp = false;
  {
    absl::MutexLock l(&mu_);
    auto it = jobs_.find(key);
    const bool fresh = it == jobs_.end() || it->second.cancelled;
    if (fresh) {
      const absl::Status fits = resume ? absl::OkStatus() : Fits(spec.client, plan.size());
      // Past a job limit an untuned answer still goes out, without a job
      // queued to tune it later; a request that waits for tuning is refused.
      if (!fits.ok() && !untuned) return fits;
      if (!fits.ok()) {
        TIR_ASSIGN_OR_RETURN(tir::v1::Operation op,
                             parts_.operations.New(arch, key, "", waiter.request_id, waiter.describe, waiter.owner));
        parts_.operations.Finish({op.name()}, *untuned);
        return parts_.operations.Get(op.name()).value_or(op);
      }
      Job &job = jobs_[key];
      job = Job();
      job.spec = std::move(spec);
      job.epoch = ++epochs_;
      job.spec.request.clear_request_id();
      job.start = absl::Now();
      job.stored_rounds = std::move(rounds);
      for (KernelWork &w : plan) {
        KernelJob k;
        k.strategy = strategies_(w.item.candidates_size(), w.default_position, static_cast<int>(w.space_size),
                                 job.spec.width);
        k.work = std::move(w);
        job.kernels.push_back(std::move(k));
      }
      it = jobs_.find(key);
      persistJob = !resume && job.spec.persist;
    }
    Job &job = it->second;
    absl::StatusOr<tir::v1::Operation> op =
        untuned ? parts_.operations.New(arch, key, "", waiter.request_id, waiter.describe, waiter.owner)
                : Attach(job, waiter);
    if (!op.ok()) {
      // No operation (maxOperations): a job just made for it goes too.
      if (fresh) jobs_.erase(it);
      return op.status();
    }
    name = op->name();
    if (untuned) parts_.operations.Finish({name}, *untuned);
    // Persisted either way: an operation answered at once with the untuned
    // default is found again after a restart, waiting for (or answered
    // with) the tuned bundle of its job.
    persistOp = !resume;
    if (persistJob) jobRecord = job.spec.request;
    Progress(job);
    Advance(key);
  }
  // Durable before the client learns the name (outside mu_; the operation's
  // synced write makes the job's before it durable too). A job that ended
  // meanwhile and finds its record again is answered from the cache when it
  // resumes.
  if (persistJob) {
    IgnoreError(parts_.ledger.PutJob(key, jobRecord, !persistOp), "a job not persisted is not resumed after a restart");
  }
  if (persistOp) parts_.operations.Persist(name, key, waiter.shape ? waiter.shape->text : "");
  std::optional<tir::v1::Operation> answer = parts_.operations.Get(name);
  if (!answer) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "operation " + name + " was dropped");
  return *answer;
}

bool TuningJobs::Restore(const std::string &name, const std::string &key, const std::string &shape,
                         const std::string &owner) {
  absl::MutexLock l(&mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return false;
  Job &job = it->second;
  if (!parts_.operations.Restore(name, job.spec.identity.arch, key, key, owner)) return false;
  job.operations.push_back(name);
  if (!shape.empty()) job.shapes[name] = common::ParseShapeText(shape);
  Progress(job);
  return true;
}

void TuningJobs::Cancel(const std::string &op, const std::string &key) {
  absl::MutexLock l(&mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  // The job stops once no operation waits for it.
  auto &ops = it->second.operations;
  ops.erase(std::remove(ops.begin(), ops.end(), op), ops.end());
  if (ops.empty()) {
    it->second.cancelled = true;
    End(key, MakeError(absl::StatusCode::kCancelled, "CANCELLED", "cancelled by the client"));
  }
}

void TuningJobs::OnLeased(const std::string &key) {
  absl::MutexLock l(&mu_);
  if (auto it = jobs_.find(key); it != jobs_.end()) Progress(it->second);
}

void TuningJobs::OnResults(dispatch::QueuedWork work, std::vector<tir::v1::CandidateResult> results,
                           const std::string &worker) {
  absl::MutexLock l(&mu_);
  auto it = jobs_.find(work.job);
  // A late result for a job that ended (and was opened again since) is not this one's.
  if (it == jobs_.end() || it->second.epoch != work.epoch) return;
  Record(it->second, work, results, worker, false);
  Advance(work.job);
}

void TuningJobs::Advance(const std::string &key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second.storing) return;
  Job &job = it->second;
  bool allDone = true;
  for (size_t k = 0; k < job.kernels.size(); ++k) {
    KernelJob &kj = job.kernels[k];
    // The next round of the kernel (none while one is in flight); a round
    // stored before a restart is replayed instead of measured again.
    for (std::optional<SearchStrategy::Round> round = kj.strategy->done() ? std::nullopt : kj.strategy->Next(); round;) {
      dispatch::QueuedWork q;
      q.job = key;
      q.epoch = job.epoch;
      q.owner = this;
      q.kernel = static_cast<int>(k);
      q.round = round->number;
      q.priority = job.spec.priority;
      q.queued_at = absl::Now();
      q.item = kj.work.item;
      q.item.clear_candidates();
      for (int p : round->positions) {
        tir::v1::CandidateWork *c = q.item.add_candidates();
        *c = kj.work.item.candidates(p);
        // The run deadline follows what the candidate took before (the cost
        // model's prediction can be far off, on the host above all).
        c->set_expected_seconds(kj.strategy->Median(p));
        // A passing time below this is made up (time_floor.h).
        q.floor_seconds.push_back(TimeFloorSeconds(c->candidate(), q.item.arch()));
      }
      q.not_for = job.excluded;
      *q.item.mutable_policy() = round->policy;
      auto stored = job.stored_rounds.find({static_cast<int>(k), round->number});
      if (stored != job.stored_rounds.end()) {
        tir::v1::ReportResultRequest r = std::move(stored->second);
        job.stored_rounds.erase(stored);
        bool same = r.results_size() == q.item.candidates_size() && !job.excluded.count(r.name());
        for (int i = 0; same && i < r.results_size(); ++i) {
          same = r.results(i).candidate_index() == q.item.candidates(i).candidate_index();
        }
        // A stored round is held to the floor as a report is.
        same = same && !dispatch::BelowFloor(q, {r.results().begin(), r.results().end()});
        if (same) {
          Record(job, q, {r.results().begin(), r.results().end()}, r.name(), true);
          round = kj.strategy->done() ? std::nullopt : kj.strategy->Next();
          continue;
        }
      }
      parts_.dispatcher.Push(std::move(q));
      break;
    }
    if (kj.strategy->done()) {
      if (!kj.strategy->outcome().ok()) {
        const absl::Status failed = Annotate(kj.strategy->outcome(), absl::StrCat("kernel ", k));
        // No candidate passed. When every WRONG came from one worker, that
        // is one party's word: the job is measured again without it, and
        // fails only when another worker agrees.
        std::set<std::string> parties;
        for (const auto &[position, workers] : kj.wrong_by) parties.insert(workers.begin(), workers.end());
        if (ReasonOf(failed) == "NO_CORRECT_CANDIDATE" && parties.size() == 1 && !parties.begin()->empty()) {
          const std::string lone = *parties.begin();
          std::set<uint32_t> &claims = job.wrong_claims[{static_cast<int>(k), lone}];
          for (const auto &[position, workers] : kj.wrong_by) {
            claims.insert(kj.work.item.candidates(position).candidate_index());
          }
          // Measured again only by another worker (with none, the lone word
          // ends the job: waiting for a second party that does not exist
          // would hold it open for ever).
          std::set<std::string> besides = job.excluded;
          besides.insert(lone);
          if (parts_.dispatcher.HasHealthyOtherThan(job.spec.identity.arch, besides)) {
            job.excluded.insert(lone);
            if (Remeasure(key, failed)) return;
          }
        }
        End(key, failed);
        return;
      }
      continue;
    }
    allDone = false;
  }
  if (!allDone) {
    Progress(job);
    return;
  }
  // Assemble; build the winners and store (synced, by the writer), outside
  // mu_; answer once stored.
  std::vector<Measured> measured;
  tir::v1::KernelBundle b = Assemble(job, &measured);
  // Workers whose lone WRONG the winners contradict (distrusted once the
  // bundle is confirmed).
  std::vector<std::pair<std::string, std::string>> contradicted;
  for (const auto &[at, claims] : job.wrong_claims) {
    const uint32_t winner = b.kernels(at.first).candidate().rank();
    if (claims.count(winner)) {
      contradicted.emplace_back(at.second, absl::StrCat("reported every candidate of kernel ", at.first, " of ",
                                                        key.substr(0, 16), " WRONG; ", measured[at.first].worker,
                                                        " found candidate ", winner, " correct"));
    }
  }
  const tir::v1::TuningSummary &t = b.tuning();
  if (t.default_seconds() > 0 && t.best_seconds() > 0) speedup_.Observe(t.default_seconds() / t.best_seconds());
  tune_seconds_.Observe(absl::ToDoubleSeconds(absl::Now() - job.start));
  job.storing = true;
  // The job that ends is this opening of the key (a job cancelled and
  // opened again meanwhile is another).
  auto build = [this, key, epoch = job.epoch, b = std::move(b), measured = std::move(measured),
                contradicted = std::move(contradicted)]() mutable {
    auto ours = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = jobs_.find(key);
      return it != jobs_.end() && it->second.epoch == epoch;
    };
    std::string blame;
    if (absl::Status built = Build(b, measured, &blame); !built.ok()) {
      const bool unconfirmed = ReasonOf(built) == "UNCONFIRMED_WINNER";
      if (unconfirmed) parts_.dispatcher.Unconfirmed(blame, std::string(built.message()));
      absl::MutexLock l(&mu_);
      // A lying worker, or one whose word cannot be checked, costs the job a
      // new measurement (by the other workers), not its answer.
      if (!ours()) return;
      // Its worker not registered now: measured again, by whichever workers
      // come (the job waits for them as any job does).
      if (ReasonOf(built) == "WINNER_WORKER_UNKNOWN" && Remeasure(key, built)) return;
      if (unconfirmed || ReasonOf(built) == "BINARY_MISMATCH") {
        Job &job = jobs_.at(key);
        std::set<std::string> besides = job.excluded;
        if (!blame.empty()) besides.insert(blame);
        // Measured again only where another worker can (else the job ends
        // with the reason, rather than wait for one).
        if (parts_.dispatcher.HasHealthyOtherThan(job.spec.identity.arch, besides)) {
          job.excluded = std::move(besides);
          if (Remeasure(key, built)) return;
        }
      }
      End(key, built);
      return;
    }
    for (const auto &[worker, why] : contradicted) parts_.dispatcher.Distrust(worker, why);
    parts_.writer.Post([this, key, epoch, b = std::move(b)] {
      const absl::Status stored = parts_.store.PutKernel(b);
      if (stored.ok() && stored_) stored_(key);
      absl::MutexLock l(&mu_);
      auto it = jobs_.find(key);
      if (it == jobs_.end() || it->second.epoch != epoch) return;
      if (stored.ok()) {
        End(key, b);
      } else {
        End(key, stored);
      }
    });
  };
  // On the pool, else (the pool full) on the writer: outside mu_ either way.
  if (!parts_.pool.Submit(build, "maxPlanningQueue").ok()) parts_.writer.Post(build);
}

bool TuningJobs::Remeasure(const std::string &key, const absl::Status &why) {
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second.remeasured >= kMaxRemeasures) return false;
  Job &job = it->second;
  ++job.remeasured;
  std::fprintf(stderr, "tir-coordinator: job %s measured again from round 0 (%d of %d): %s\n", key.substr(0, 16).c_str(),
               job.remeasured, kMaxRemeasures, std::string(why.message()).c_str());
  for (KernelJob &k : job.kernels) {
    k.strategy = strategies_(k.work.item.candidates_size(), k.work.default_position,
                             static_cast<int>(k.work.space_size), job.spec.width);
    k.hashes.clear();
    k.best.clear();
    k.workers.clear();
    k.wrong_by.clear();
  }
  job.stored_rounds.clear();
  job.storing = false;
  job.epoch = ++epochs_;  // anything of the last measurement is not this one's
  parts_.ledger.DropRounds(key);
  Advance(key);
  return true;
}

absl::Status TuningJobs::Build(tir::v1::KernelBundle &b, const std::vector<Measured> &measured, std::string *blame) {
  bool checked = !measured.empty();
  const std::string ours = bundles::BinaryBuilder::Toolchain(b.arch());
  for (int k = 0; k < b.kernels_size(); ++k) {
    const Measured &m = measured.at(k);
    // The winner's worker is not registered (gone, or not back yet after a
    // restart of this coordinator): its toolchain is unknown, which is no
    // verdict against it. The kernel is measured again.
    if (!m.known) {
      return MakeError(absl::StatusCode::kUnavailable, "WINNER_WORKER_UNKNOWN",
                       absl::StrCat("the winner of kernel ", k, " was measured by ",
                                    m.worker.empty() ? "a worker gone" : m.worker,
                                    ", which is not registered now: its toolchain cannot be checked"));
    }
    // A winner is served only when what its worker measured is checked
    // against the coordinator's build: a worker whose toolchain is not the
    // coordinator's (or that named no hash) cannot be confirmed, so its
    // measurements do not choose what clients get.
    if (m.toolchain != ours || m.sha256.empty() || ours.empty()) {
      *blame = m.worker;
      return MakeError(
          absl::StatusCode::kFailedPrecondition, "UNCONFIRMED_WINNER",
          absl::StrCat("the winner of kernel ", k, " was measured by ", m.worker.empty() ? "a worker gone" : m.worker,
                       m.sha256.empty() ? ", which named no hash of what it ran"
                                        : absl::StrCat(", which builds with '", m.toolchain, "'"),
                       "; the coordinator builds ", b.arch(), " with '", ours,
                       "' and serves only winners whose binary it checked (a worker needs the coordinator's toolchain)"));
    }
  }
  for (int k = 0; k < b.kernels_size(); ++k) {
    tir::v1::KernelEntry *e = b.mutable_kernels(k);
    const Measured &m = measured.at(k);
    TIR_RETURN_IF_ERROR(Annotate(parts_.builder.Build(b.arch(), m.options, e), absl::StrCat("kernel ", k)));
    if (m.sha256 != e->binary_sha256()) {
      *blame = m.worker;
      parts_.dispatcher.Distrust(m.worker, absl::StrCat("reported binary sha256 ", m.sha256, " for kernel ", k, " of ",
                                                        b.key(), "; the coordinator's build is ", e->binary_sha256()));
      return MakeError(absl::StatusCode::kAborted, "BINARY_MISMATCH",
                       absl::StrCat("worker ", m.worker, " measured a binary for kernel ", k, " (sha256 ", m.sha256,
                                    ") that is not the coordinator's build of its source with the same toolchain (",
                                    e->binary_sha256(), "); its results are refused and it takes no more work"));
    }
  }
  bundles::MarkBuilt(b);
  tir::v1::Provenance *p = b.mutable_provenance();
  if (checked) p->set_worker_toolchain(ours);  // the coordinator's words, which the worker's matched
  p->set_measured_binary_checked(checked);
  parts_.signer.Sign(b);
  return bundles::CheckServable(b, limits_.max_message_bytes);
}

tir::v1::KernelBundle TuningJobs::Assemble(const Job &job, std::vector<Measured> *measured) const {
  tir::v1::KernelBundle b = bundles::NewBundle(job.spec.identity, true);
  tir::v1::TuningSummary *t = b.mutable_tuning();
  bool defaultsMeasured = true;
  for (size_t k = 0; k < job.kernels.size(); ++k) {
    const KernelJob &kj = job.kernels[k];
    const int w = kj.strategy->winner();
    tir::v1::KernelEntry *e = b.add_kernels();
    bundles::DescribeEntry(e, k, kj.work, w);
    const tir::v1::CandidateResult &r = kj.best.at(w);
    Measured m;
    m.worker = kj.workers.count(w) ? kj.workers.at(w) : "";
    const std::string measuredBy = m.worker;
    if (auto h = kj.hashes.find(w); h != kj.hashes.end()) m.sha256 = h->second;
    if (std::optional<tir::v1::WorkerCapabilities> caps = parts_.dispatcher.CapabilitiesOf(m.worker)) {
      m.toolchain = caps->backend() == "host" ? caps->host_compiler() : absl::StrCat("nvrtc ", caps->nvrtc_version());
      m.known = true;
    }
    const tir::v1::CandidateWork &cw = kj.work.item.candidates(w);
    m.options.assign(cw.compile_options().begin(), cw.compile_options().end());
    measured->push_back(std::move(m));
    // The round that chose the winner: its time there, and the default's
    // from the same round (the default wins a tie, so the tuned time is
    // never above the default's).
    // Of what workers wrote, only measured numbers go on (Taken*), in the
    // coordinator's words.
    *e->mutable_measurement() = bundles::TakenMeasurement(kj.strategy->FinalMeasurement());
    *e->mutable_verification() = bundles::TakenVerification(r.verification(), measuredBy);
    t->set_candidates_total(t->candidates_total() + static_cast<uint32_t>(kj.work.space_size));
    t->set_candidates_measured(t->candidates_measured() + kj.strategy->measured());
    t->set_candidates_failed(t->candidates_failed() + kj.strategy->failed());
    t->set_best_seconds(t->best_seconds() + kj.strategy->FinalSeconds(w));
    const double d = kj.strategy->FinalSeconds(kj.strategy->default_position());
    if (d <= 0) defaultsMeasured = false;
    t->set_default_seconds(t->default_seconds() + d);
    if (k == 0) {
      tir::v1::Provenance *p = b.mutable_provenance();
      const std::string worker = kj.workers.count(w) ? kj.workers.at(w) : "";
      p->set_worker(worker);
      if (std::optional<tir::v1::WorkerCapabilities> caps = parts_.dispatcher.CapabilitiesOf(worker)) {
        // From its registration (validated then), bounded and reduced to
        // the characters a device name has.
        p->set_device_name(bundles::ShownDeviceName(caps->device_name()));
        p->set_driver_version(bundles::ShownDeviceName(caps->driver_version()));
      }
      *p->mutable_measure_time() = TimeUtil::GetCurrentTime();
    }
  }
  if (!defaultsMeasured) t->set_default_seconds(0);
  *b.mutable_create_time() = bundles::NowTimestamp();
  return b;
}

void TuningJobs::End(const std::string &key, const absl::StatusOr<tir::v1::KernelBundle> &result) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  Job &job = it->second;
  tir::v1::JobStatus done = StatusOf(job);
  done.set_state(result.ok() ? "done" : absl::IsCancelled(result.status()) ? "cancelled" : "failed");
  if (result.ok() && result->tuning().best_seconds() > 0 && result->tuning().default_seconds() > 0) {
    done.set_speedup(result->tuning().default_seconds() / result->tuning().best_seconds());
  }
  if (!result.ok()) done.set_error(absl::StrCat(ReasonOf(result.status()), ": ", result.status().message()));
  recent_.push_back(done);
  if (recent_.size() > 50) recent_.pop_front();
  // A dynamic graph's operations are answered at their shapes: sized (and
  // checked first where the shape is not the one tuned at), on the pool.
  std::vector<std::string> now;
  std::map<std::string, std::pair<common::Shape, std::vector<std::string>>> byShape;
  for (const std::string &op : job.operations) {
    auto shape = job.shapes.find(op);
    if (!result.ok() || shape == job.shapes.end()) {
      now.push_back(op);
      continue;
    }
    auto &group = byShape[shape->second.text];
    group.first = shape->second;
    group.second.push_back(op);
  }
  parts_.operations.Finish(now, result);
  for (auto &[text, group] : byShape) {
    auto answer = [checks = &parts_.checks, bundle = *result, shape = group.first, ops = group.second,
                   priority = job.spec.priority] { checks->AnswerAtShape(bundle, shape, ops, priority); };
    // On the pool, else (the pool full) on the writer: outside mu_ either way.
    if (!parts_.pool.Submit(answer, "maxPlanningQueue").ok()) parts_.writer.Post(answer);
  }
  // Its queued items and leases are dropped: heartbeats tell their workers
  // to stop, and a late report is acknowledged as a duplicate.
  parts_.dispatcher.DropJob(key);
  parts_.ledger.DropJob(key);
  jobs_.erase(it);
}

void TuningJobs::Record(Job &job, const dispatch::QueuedWork &work,
                        const std::vector<tir::v1::CandidateResult> &results, const std::string &worker,
                        bool replayed) {
  if (work.kernel < 0 || work.kernel >= static_cast<int>(job.kernels.size())) return;
  KernelJob &kj = job.kernels[work.kernel];
  // Map the item's candidates back to positions in the kernel's list.
  std::vector<int> positions;
  for (const tir::v1::CandidateWork &c : work.item.candidates()) {
    int pos = -1;
    for (int p = 0; p < kj.work.item.candidates_size(); ++p) {
      if (kj.work.item.candidates(p).candidate_index() == c.candidate_index()) pos = p;
    }
    positions.push_back(pos);
  }
  if (!replayed) {
    // The round as reported (what passing candidates ran, by hash), so a
    // restarted coordinator replays it rather than measuring it again.
    tir::v1::ReportResultRequest round;
    round.set_name(worker);
    round.set_lease_id(work.item.lease_id());
    for (const tir::v1::CandidateResult &r : results) *round.add_results() = r;
    parts_.ledger.PutRound(work.job, work.kernel, work.round, round);
  }
  for (size_t i = 0; i < results.size() && i < positions.size(); ++i) {
    const tir::v1::CandidateResult &r = results[i];
    tir::v1::CandidateResult trial = r;
    if (positions[i] >= 0) {
      const tir::v1::CandidateWork &cw = kj.work.item.candidates(positions[i]);
      trial.set_source_hash(cw.source_hash());
      *trial.mutable_merged_candidate_indices() = cw.merged_candidate_indices();
      *trial.mutable_candidate() = cw.candidate();
      trial.set_arch(kj.work.item.arch());
    }
    if (!replayed) {
      measured_counter_.Increment();
      ++measured_;
      parts_.ledger.PutTrial(work.job, work.kernel, work.round, work.item.lease_id(), trial);
    }
    if (r.verification().verdict() == tir::v1::VERDICT_WRONG && positions[i] >= 0) {
      kj.wrong_by[positions[i]].insert(worker);
    }
    if (r.verification().verdict() == tir::v1::VERDICT_PASSED && positions[i] >= 0) {
      kj.hashes[positions[i]] = r.binary_sha256();
      kj.best[positions[i]] = trial;
      kj.workers[positions[i]] = worker;
    }
  }
  kj.strategy->Record(work.round, results);
  if (!replayed && trials_) trials_(static_cast<int>(results.size()));
}

tir::v1::JobStatus TuningJobs::StatusOf(const Job &job) const {
  tir::v1::JobStatus j;
  j.set_key(job.spec.identity.key);
  j.set_arch(job.spec.identity.arch);
  j.set_graph(job.spec.graph_name);
  j.set_kernels(static_cast<uint32_t>(job.kernels.size()));
  for (const KernelJob &k : job.kernels) {
    j.set_candidates_measured(j.candidates_measured() + k.strategy->measured());
    j.set_candidates_failed(j.candidates_failed() + k.strategy->failed());
    j.set_candidates_planned(j.candidates_planned() + k.strategy->planned());
    j.set_measurements(j.measurements() + k.strategy->measurements());
    j.set_round(std::max<uint32_t>(j.round(), k.strategy->round()));
  }
  j.set_state(parts_.dispatcher.Leased(job.spec.identity.key) ? "tuning" : "queued");
  j.set_started(absl::ToUnixMicros(job.start) * 1e-6);
  j.set_seconds(absl::ToDoubleSeconds(absl::Now() - job.start));
  j.set_waiting(static_cast<uint32_t>(job.operations.size()));
  return j;
}

void TuningJobs::Progress(const Job &job) const {
  const tir::v1::JobStatus j = StatusOf(job);
  tir::v1::CompileProgress p;
  p.set_stage(j.state() == "tuning" ? tir::v1::STAGE_TUNING : tir::v1::STAGE_QUEUED);
  p.set_partitions(j.kernels());
  p.set_candidates_total(j.candidates_planned());
  p.set_candidates_measured(j.candidates_measured());
  p.set_candidates_failed(j.candidates_failed());
  parts_.operations.SetProgress(job.operations, p);
}

void TuningJobs::Snapshot(std::vector<tir::v1::JobStatus> *running, std::vector<tir::v1::JobStatus> *recent) const {
  absl::MutexLock l(&mu_);
  for (const auto &[key, job] : jobs_) running->push_back(StatusOf(job));
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) recent->push_back(*it);
}

}  // namespace tir::tuning
