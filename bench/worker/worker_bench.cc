// Worker overheads on the host backend, with real runner processes:
//  - per-candidate overhead outside compile and kernel time: wall time of a
//    candidate's measurement round trip through the runner (request, load,
//    verification, timed runs, answer) minus its kernel time, plus the
//    compile-cache hit the daemon pays per candidate; the baseline, measured
//    in the same run, is the kernel's own time in-process;
//  - the cost of a faulting candidate: its own round trip (the runner dies)
//    plus the extra time the next candidate pays for the fresh runner and
//    re-preparing the item, against a normal candidate's round trip.
// Goals: overhead under 5 ms per candidate, a fault under 1 s.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "bench/timing/timing.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/target/ArchTable.h"
#include "server/tuning/work_items.h"
#include "worker/host/host_backend.h"
#include "worker/isolation/runner_process.h"

namespace {

using tir::bench::Median;
using tir::bench::MsSince;

constexpr char kGraph[] = R"mlir(
tir.graph @bias_gelu(%x: tensor<256x256xf32>, %b: tensor<1x256xf32>) -> tensor<256x256xf32> {
  %y = add %x, %b : (tensor<256x256xf32>, tensor<1x256xf32>) -> tensor<256x256xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<256x256xf32>
  results %g : tensor<256x256xf32>
})mlir";

double KernelMs(const tir::v1::CandidateResult &r) {
  // The verification run (untimed warm-up) plus the timed runs.
  return 1e3 * r.measurement().median_seconds() * (r.measurement().samples() + 1);
}

}  // namespace

int main(int argc, char **argv) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  std::string runner = (self.parent_path().parent_path().parent_path() / "worker/runner/tir-worker-runner").string();
  if (argc > 1) runner = argv[1];
  if (!std::filesystem::exists(runner)) {
    std::fprintf(stderr, "worker bench: no runner at %s (pass its path)\n", runner.c_str());
    return 1;
  }
  auto ctx = tir::makeTirContext();
  auto loaded = tir::LoadGraphText(kGraph, ctx.get());
  if (!loaded.ok()) return 1;
  tir::v1::MeasurementPolicy policy;
  policy.set_min_runs(3);  // a short timed phase: the overhead is what is left
  policy.set_seed(1);
  policy.set_verify(true);
  auto built = tir::tuning::BuildWorkItems(loaded->graph, *tir::target::LookupArch("host"), 1, policy);
  if (!built.ok() || built->empty()) {
    std::fprintf(stderr, "worker bench: %s\n", std::string(built.status().message()).c_str());
    return 1;
  }
  tir::v1::WorkItem item = (*built)[0].item;
  const tir::v1::CandidateWork good = item.candidates(0);
  tir::v1::CandidateWork crash = good;
  const std::string head = " tir_kernel(tir_args a) {\n";
  crash.set_source(absl::StrReplaceAll(good.source(), {{head, head + "  *(volatile int *)0 = 1;\n"}}));
  item.clear_candidates();
  *item.add_candidates() = good;
  *item.add_candidates() = crash;

  const std::string dir = (std::filesystem::temp_directory_path() / absl::StrCat("tir-worker-bench-", getpid())).string();
  tir::worker::HostBackend backend(dir);
  auto goodBin = backend.Compile(good, "host");
  auto crashBin = backend.Compile(crash, "host");
  if (!goodBin.ok() || !crashBin.ok()) return 1;
  std::vector<double> hitMs;
  for (int i = 0; i < 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    (void)backend.Compile(good, "host");
    hitMs.push_back(MsSince(t0));
  }

  tir::isolation::RunnerProcess proc({runner, "--backend=host"});
  auto t0 = std::chrono::steady_clock::now();
  if (!proc.Prepare(item, absl::Minutes(1)).ok()) return 1;
  const double prepareMs = MsSince(t0);
  std::vector<double> roundTrip, kernel, overhead, runs;
  for (int i = 0; i < 30; ++i) {
    t0 = std::chrono::steady_clock::now();
    auto r = proc.Measure(0, goodBin->path, absl::Seconds(30));
    const double ms = MsSince(t0);
    if (!r.ok() || r->verification().verdict() != tir::v1::VERDICT_PASSED) return 1;
    roundTrip.push_back(ms);
    kernel.push_back(KernelMs(*r));
    overhead.push_back(ms - KernelMs(*r));
    runs.push_back(r->measurement().samples() + 1);
  }
  // Faults: crash, then the next good candidate (fresh runner, item re-prepared).
  std::vector<double> faultMs, afterMs;
  for (int i = 0; i < 5; ++i) {
    t0 = std::chrono::steady_clock::now();
    auto f = proc.Measure(1, crashBin->path, absl::Seconds(30));
    faultMs.push_back(MsSince(t0));
    if (!f.ok() || f->verification().verdict() != tir::v1::VERDICT_FAULT) return 1;
    t0 = std::chrono::steady_clock::now();
    auto r = proc.Measure(0, goodBin->path, absl::Seconds(30));
    afterMs.push_back(MsSince(t0));
    if (!r.ok() || r->verification().verdict() != tir::v1::VERDICT_PASSED) return 1;
  }
  const double overheadMs = Median(overhead) + Median(hitMs);
  const double faultCostMs = Median(faultMs) + (Median(afterMs) - Median(roundTrip));
  std::printf("worker bench (host backend, kernel bias_gelu 256x256 f32, %.0f runs per candidate, median)\n",
              Median(runs));
  std::printf("  item prepare (parse, inputs, reference)   %8.2f ms\n", prepareMs);
  std::printf("  baseline: kernel time per candidate       %8.3f ms (median, in the runner)\n", Median(kernel));
  std::printf("  candidate round trip                      %8.3f ms (median of %zu)\n", Median(roundTrip), roundTrip.size());
  std::printf("  compile-cache hit                         %8.3f ms\n", Median(hitMs));
  std::printf("  overhead per candidate                    %8.3f ms  (x%.2f of the kernel time; goal < 5 ms: %s)\n",
              overheadMs, overheadMs / Median(kernel), overheadMs < 5 ? "met" : "NOT met");
  std::printf("  faulting candidate                        %8.2f ms\n", Median(faultMs));
  std::printf("  next candidate after a fault              %8.2f ms (restart + re-prepare)\n", Median(afterMs));
  std::printf("  cost of a fault                           %8.2f ms  (goal < 1000 ms: %s)\n", faultCostMs,
              faultCostMs < 1000 ? "met" : "NOT met");
  std::printf("  runner restarts                           %8d\n", proc.restarts());
  proc.Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
