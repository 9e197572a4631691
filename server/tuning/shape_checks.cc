#include "server/tuning/shape_checks.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/time_util.h"
#include "server/api/rpc_status.h"
#include "server/bundles/assembly.h"
#include "server/tuning/bundle_shapes.h"

namespace tir::tuning {

using google::protobuf::util::TimeUtil;

ShapeChecks::ShapeChecks(dispatch::Dispatcher &dispatcher, operations::Operations &ops, bundles::ShapeSizer &sizer,
                         common::LimitCounter &limits, uint32_t max_checks, prometheus::Registry &registry)
    : dispatcher_(dispatcher),
      ops_(ops),
      sizer_(sizer),
      limits_(limits),
      max_checks_(max_checks),
      checked_(prometheus::BuildCounter()
                   .Name("tir_shape_checks_total")
                   .Help("Dynamic bundles checked at a shape of their bucket asked for the first time, by result")
                   .Register(registry)),
      seconds_(prometheus::BuildHistogram()
                   .Name("tir_shape_check_seconds")
                   .Help("Queue to result of a dynamic bundle's check at a new shape")
                   .Register(registry)
                   .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30})) {
  for (const char *result : {"passed", "wrong", "failed"}) checked_.Add({{"result", result}});
}

size_t ShapeChecks::size() const {
  absl::MutexLock l(&mu_);
  return checks_.size();
}

void ShapeChecks::Check(const tir::v1::KernelBundle &stored, const common::Shape &shape,
                        std::vector<std::string> ops, int priority) {
  // The id names the bundle: a retuned bundle's check is its own.
  const std::string id = absl::StrCat("check/", stored.key(), "/",
                                      TimeUtil::TimestampToNanoseconds(stored.create_time()), "/", shape.text);
  {
    absl::MutexLock l(&mu_);
    auto it = checks_.find(id);
    if (it != checks_.end()) {
      ops_.SetJob(ops, id);
      it->second.operations.insert(it->second.operations.end(), ops.begin(), ops.end());
      dispatcher_.Reprioritize(id, priority);
      Progress(it->second);
      return;
    }
  }
  // Sized outside mu_ (it parses the kernel graphs).
  absl::StatusOr<BundleAtShape> sized = SizeBundle(stored, shape.hints);
  if (!sized.ok()) {
    ops_.Finish(ops, sized.status());
    ops_.Forget(ops);
    return;
  }
  absl::MutexLock l(&mu_);
  if (!checks_.count(id)) {
    // A check takes room as a job does: at most maxJobs checks in flight,
    // and its items in the queue's bound.
    absl::Status fits =
        checks_.size() >= max_checks_
            ? limits_.Exceeded("maxJobs", max_checks_, absl::StrCat(checks_.size(), " shape checks are in flight"))
            : dispatcher_.Room(sized->checks.size(), "this check");
    if (!fits.ok()) {
      ops_.Finish(ops, fits);
      return;
    }
  }
  auto [it, fresh] = checks_.try_emplace(id);
  Check_ &c = it->second;
  ops_.SetJob(ops, id);
  c.operations.insert(c.operations.end(), ops.begin(), ops.end());
  if (fresh) {
    c.id = id;
    c.key = stored.key();
    c.shape = shape;
    c.sized = std::move(sized->bundle);
    c.results.resize(sized->checks.size());
    c.start = absl::Now();
    for (size_t k = 0; k < sized->checks.size(); ++k) {
      dispatch::QueuedWork q;
      q.job = id;
      q.owner = this;
      q.kernel = static_cast<int>(k);
      q.round = 0;
      q.priority = priority;
      q.queued_at = absl::Now();
      q.item = std::move(sized->checks[k]);
      dispatcher_.Push(std::move(q));
    }
  }
  Progress(c);
  if (c.results.empty()) Complete(it);  // no kernel to check
}

void ShapeChecks::AnswerAtShape(const tir::v1::KernelBundle &stored, const common::Shape &shape,
                                std::vector<std::string> ops, int priority) {
  absl::StatusOr<std::optional<tir::v1::KernelBundle>> at = sizer_.AtShape(stored, shape);
  if (at.ok() && !*at) {
    Check(stored, shape, std::move(ops), priority);
    return;
  }
  ops_.Finish(ops, at.ok() ? absl::StatusOr<tir::v1::KernelBundle>(**at) : at.status());
}

void ShapeChecks::Cancel(const std::string &op, const std::string &id) {
  absl::MutexLock l(&mu_);
  if (auto check = checks_.find(id); check != checks_.end()) {
    auto &ops = check->second.operations;
    ops.erase(std::remove(ops.begin(), ops.end(), op), ops.end());
  }
}

void ShapeChecks::Progress(const Check_ &c) {
  tir::v1::CompileProgress p;
  p.set_stage(tir::v1::STAGE_CHECKING_SHAPE);
  p.set_partitions(static_cast<uint32_t>(c.results.size()));
  p.set_candidates_total(static_cast<uint32_t>(c.results.size()));
  uint32_t measured = 0, failed = 0;
  for (const auto &r : c.results) {
    measured += r.has_value();
    failed += r.has_value() && r->verdict() != tir::v1::VERDICT_PASSED;
  }
  p.set_candidates_measured(measured);
  p.set_candidates_failed(failed);
  ops_.SetProgress(c.operations, p);
}

void ShapeChecks::OnResults(dispatch::QueuedWork work, std::vector<tir::v1::CandidateResult> results,
                            const std::string &worker) {
  std::vector<std::pair<std::string, std::string>> distrust;  // (worker, why), acted on outside mu_
  {
    absl::MutexLock l(&mu_);
    auto it = checks_.find(work.job);
    if (it == checks_.end() || work.kernel < 0 || work.kernel >= static_cast<int>(it->second.results.size())) return;
    Check_ &c = it->second;
    const int k = work.kernel;
    tir::v1::Verification v;
    if (results.empty()) {
      v.set_verdict(tir::v1::VERDICT_FAULT);
    } else {
      v = results[0].verification();
      if (v.verdict() == tir::v1::VERDICT_UNSPECIFIED) v.set_verdict(tir::v1::VERDICT_FAULT);
    }
    const std::string what = absl::StrCat("kernel ", k, " of bundle ", c.key.substr(0, 16), " at shape ", c.shape.text);
    if (v.verdict() != tir::v1::VERDICT_PASSED) {
      // The worker's words go to the log, never to a client or a record.
      std::fprintf(stderr, "tir-coordinator: %s reports %s %s: %s\n", worker.empty() ? "(given up)" : worker.c_str(),
                   what.c_str(), tir::v1::Verdict_Name(v.verdict()).c_str(), api::ShownMessage(v.detail()).c_str());
    }
    auto dissent = c.dissent.find(k);
    const bool second = !worker.empty() && dispatcher_.HasHealthyOtherThan(work.item.arch(), {worker});
    if (v.verdict() == tir::v1::VERDICT_WRONG && dissent == c.dissent.end() && !worker.empty() && !second) {
      // No other worker of the arch to check it: the requests waiting are
      // answered WRONG_AT_SHAPE, but the verdict is not kept (one party's
      // word); the next request checks the shape again.
      c.unconfirmed = true;
      c.results[k] = bundles::TakenVerification(
          v, absl::StrCat(worker, " (unconfirmed: no other worker of ", work.item.arch(), " to check it)"));
      c.worker = worker;
      Progress(c);
      bool all = true;
      for (const auto &r : c.results) all &= r.has_value();
      if (all) Complete(it);
      return;
    }
    if (v.verdict() == tir::v1::VERDICT_WRONG && dissent == c.dissent.end() && !worker.empty()) {
      // One worker's WRONG is not a verdict yet: another worker checks the
      // kernel again (the operations wait, checking), and its word decides.
      c.dissent[k] = worker;
      std::fprintf(stderr, "tir-coordinator: %s is checked again by another worker before it counts\n", what.c_str());
      work.not_for.insert(worker);
      work.attempts = 0;
      work.queued_at = absl::Now();
      dispatcher_.Push(std::move(work));
      Progress(c);
      return;
    }
    std::string where = worker;
    if (dissent != c.dissent.end()) {
      const std::string &first = dissent->second;
      if (v.verdict() == tir::v1::VERDICT_WRONG) {
        where = absl::StrCat(first, ", confirmed by ", worker);
      } else if (v.verdict() == tir::v1::VERDICT_PASSED) {
        // Contradicted: the lone dissenter's word was false.
        where = absl::StrCat(worker, "; ", first, " reported it WRONG and is distrusted");
        distrust.emplace_back(first, absl::StrCat("reported ", what, " WRONG; ", worker, " found it correct"));
      } else {
        where = absl::StrCat(worker, "; ", first, "'s WRONG unconfirmed");
      }
    }
    c.results[k] = bundles::TakenVerification(v, where);
    if (!worker.empty()) c.worker = worker;
    Progress(c);
    bool all = true;
    for (const auto &r : c.results) all &= r.has_value();
    if (all) Complete(it);
  }
  for (const auto &[w, why] : distrust) dispatcher_.Distrust(w, why);
}

void ShapeChecks::Complete(Checks::iterator it) {
  Check_ &c = it->second;
  tir::v1::ShapeVerification record;
  *record.mutable_shape() = {c.shape.hints.begin(), c.shape.hints.end()};
  bool passed = true, wrong = false;
  for (const auto &r : c.results) {
    *record.add_kernels() = *r;
    passed &= r->verdict() == tir::v1::VERDICT_PASSED;
    wrong |= r->verdict() == tir::v1::VERDICT_WRONG;
  }
  record.set_passed(passed);
  record.set_worker(c.worker);
  *record.mutable_verify_time() = bundles::NowTimestamp();
  *record.mutable_bundle_create_time() = c.sized.create_time();
  checked_.Add({{"result", passed ? "passed" : wrong ? "wrong" : "failed"}}).Increment();
  seconds_.Observe(absl::ToDoubleSeconds(absl::Now() - c.start));
  // Kept: a pass, and a wrong result two parties agree on (a refusal for
  // good). A check whose
  // kernels only faulted, timed out or did not compile (after the attempts
  // a sick worker gets) fails its requests and is made again next time.
  sizer_.Verified(c.key, c.shape, c.sized, record, passed || (wrong && !c.unconfirmed));
  absl::StatusOr<tir::v1::KernelBundle> answer;
  if (passed) {
    answer = sizer_.ServedCopy(c.sized, record);
  } else if (wrong) {
    answer = bundles::WrongAtShape(c.key, c.shape.text, record);
  } else {
    answer = MakeError(absl::StatusCode::kUnavailable, "SHAPE_CHECK_FAILED",
                       absl::StrCat("the check of bundle ", c.key, " at shape ", c.shape.text, " did not complete (",
                                    bundles::FirstFailure(record), "); asking again checks it again"));
  }
  ops_.Finish(c.operations, answer);
  if (!answer.ok()) ops_.Forget(c.operations);
  dispatcher_.DropJob(c.id);
  checks_.erase(it);
}

}  // namespace tir::tuning
