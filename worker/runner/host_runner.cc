#include "worker/runner/host_runner.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "worker/measure/stats.h"
#include "worker/measure/thread_cpu_clock.h"

namespace tir::runner {

int64_t HostLastLevelCacheBytes() {
  int64_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in(absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/size"));
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    int64_t scale = 1;
    if (text.back() == 'K') scale = 1024;
    if (text.back() == 'M') scale = 1024 * 1024;
    if (scale != 1) text.pop_back();
    int64_t v = 0;
    if (absl::SimpleAtoi(text, &v)) best = std::max(best, v * scale);
  }
  return best > 0 ? best : int64_t{32} << 20;
}

HostRunner::HostRunner(int64_t cache_bytes) : cache_bytes_(cache_bytes > 0 ? cache_bytes : HostLastLevelCacheBytes()) {}

absl::Status HostRunner::Prepare(const tir::v1::WorkItem &item) {
  launch_.reset();
  loaded_.clear();
  prepared_.reset();
  TIR_ASSIGN_OR_RETURN(prepared_, PrepareItem(item));
  if (item.candidates().empty()) return absl::OkStatus();
  // Argument sets rotated by the timed runs: together at least twice the
  // last-level cache (at most 64 sets and 1 GiB), so no run finds its data
  // left in the cache by the previous one.
  TIR_ASSIGN_OR_RETURN(launch_, codegen::HostLaunch::Prepare(prepared_->loaded.graph, prepared_->field_names,
                                                             item.candidates(0).launch(), prepared_->inputs, 1));
  const int64_t per = std::max<int64_t>(1, launch_->bytes_per_set());
  const int64_t copies = std::clamp<int64_t>((2 * cache_bytes_ + per - 1) / per, 1, std::min<int64_t>(64, (int64_t{1} << 30) / per));
  if (copies > 1) {
    TIR_ASSIGN_OR_RETURN(launch_, codegen::HostLaunch::Prepare(prepared_->loaded.graph, prepared_->field_names,
                                                               item.candidates(0).launch(), prepared_->inputs,
                                                               static_cast<int>(copies)));
  }
  return absl::OkStatus();
}

absl::StatusOr<tir::v1::CandidateResult> HostRunner::Measure(uint32_t candidate, const std::string &binary_path) {
  TIR_ASSIGN_OR_RETURN(const tir::v1::CandidateWork *at, CandidateAt(launch_ ? prepared_.get() : nullptr, candidate));
  const tir::v1::CandidateWork &work = *at;
  const tir::v1::WorkItem &item = prepared_->item;
  tir::v1::CandidateResult result;
  result.set_candidate_index(work.candidate_index());
  auto &slot = loaded_[binary_path];
  if (!slot) {
    TIR_ASSIGN_OR_RETURN(slot, codegen::LoadHostKernel(binary_path));
  }
  TIR_RETURN_IF_ERROR(launch_->SetLaunch(work.launch()));
  // The verification run is also the untimed warm-up; an emulated kernel
  // runs under several schedules there, once in the timed runs.
  launch_->SetSchedules(codegen::LaneSchedules{});
  launch_->Poison(0);
  TIR_RETURN_IF_ERROR(launch_->Run(*slot, 0));
  codegen::LaneSchedules once;
  once.schedules = 1;
  launch_->SetSchedules(once);
  if (item.policy().verify()) {
    *result.mutable_verification() = Verify(launch_->Outputs(0), prepared_->expected, prepared_->rounding,
                                                codegen::ReductionLength(prepared_->loaded.graph, launch_->domain()),
                                                work.candidate().params().count("tf32") > 0);
    if (result.verification().verdict() == tir::v1::VERDICT_WRONG) return result;
  } else {
    result.mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
    result.mutable_verification()->set_detail("not compared with the reference (policy.verify is off)");
  }
  // Each run is timed with this thread's CPU clock, not the wall clock: the
  // kernel runs on this one thread, so its CPU time is what the kernel costs,
  // while wall time adds whatever the machine ran meanwhile (on a busy machine
  // more than the gap between candidates, which reordered them). The budget
  // is spent in CPU time too, so every candidate gets as much of its own work
  // measured however busy the machine is (the deadline is wall time, and
  // generous).
  const TimedRuns runs = TimedRunsOf(item.policy(), 5);
  std::vector<double> samples;
  double spent = 0;
  for (int r = 0; runs.More(r, spent); ++r) {
    const int s = r % launch_->copies();
    TIR_ASSIGN_OR_RETURN(const double start, measure::ThreadCpuSeconds());
    TIR_RETURN_IF_ERROR(launch_->Run(*slot, s));
    TIR_ASSIGN_OR_RETURN(const double end, measure::ThreadCpuSeconds());
    const double t = end - start;
    samples.push_back(t);
    spent += t;
  }
  tir::v1::Measurement *m = result.mutable_measurement();
  measure::Summarize(std::move(samples), m);
  m->set_source(tir::v1::TIMING_SOURCE_THREAD_CPU_TIME);
  return result;
}

}  // namespace tir::runner
