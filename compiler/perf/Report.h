// A kernel candidate's performance report, from what can be known without a
// GPU: the plan (iteration space, tiles, launch), the device's figures and,
// when the kernel was compiled, its artifacts (ptxas' registers and spills,
// the PTX instruction mix). It says where the time goes the way an engineer
// reading SASS would:
//
//   memory   bytes moved / DRAM bandwidth; bytes in flight per SM against
//            bandwidth x latency / SMs (Little's law)
//   tensor   matmul flops / the tensor-core rate
//   fp       other arithmetic / the FP32 rate
//   issue    the hot path's instructions per element x elements, per pipe
//            (dispatch, FP32, integer, MUFU, conversions, LSU) over its rate
//   parallelism  the work units against the SMs: waves and their efficiency
//
// The bound is the largest of memory, tensor, fp and issue at the full
// machine; it is "parallelism" when the candidate keeps so few SMs busy
// that its predicted time is over 1.5x that roofline. The predicted time is
// the cost model's (AnalyticCostModel, which ranks from the same terms) or
// the issue time when that is larger (a matmul epilogue's issue time is
// added: it does not overlap the main loop); the report gives it as a fraction of
// the bound's roofline.

#ifndef TIR_COMPILER_PERF_REPORT_H_
#define TIR_COMPILER_PERF_REPORT_H_

#include <optional>
#include <string>

#include "compiler/perf/PtxMix.h"
#include "compiler/planning/CostModel.h"
#include "llvm/Support/JSON.h"

namespace tir::perf {

// What the compile reported (nvrtc::CompiledKernel's figures).
struct Artifact {
  int registers = -1;
  int spill_bytes = 0;
  int static_shared_bytes = 0;
  std::string ptx;
};

struct KernelReport {
  std::string kind, arch, device, part;
  std::string candidate;                // "block_m=64 ..."
  // Resources and occupancy.
  int threads = 0, registers = -1, spill_bytes = 0, shared_bytes = 0;
  int blocks_per_sm = 0;
  double occupancy = 0;                 // resident warps / the SM's maximum
  // Parallelism.
  int64_t ctas = 0, work_units = 0;
  int sms = 0;
  double waves = 0, wave_efficiency = 0, active_sm_fraction = 0;
  // Memory.
  double bytes = 0, dram_bytes_per_second = 0;
  double bytes_in_flight_per_sm = 0;    // what the candidate keeps in flight (0: not modelled)
  double bytes_in_flight_needed_per_sm = 0;  // bandwidth x latency / SMs
  // Math.
  double flops = 0;
  // wgmma: the operand bytes a second the SMs pull from L2 at the tensor
  // peak (the shared operand's half in a cluster), and the device's feed
  // (0: not modelled).
  double l2_feed_bytes_per_second = 0, l2_feed_limit = 0;
  // The hot path's instruction mix (with an artifact).
  std::optional<PtxAnalysis> mix;
  double elements = 0;                  // elements the region's instructions are divided by, per execution
  std::map<std::string, double> per_element;  // class -> SASS-weighted instructions per element
  std::map<std::string, double> pipe_seconds;  // dispatch, fp32, int, mufu, cvt, lsu
  // Times (seconds) and the verdict.
  double memory_seconds = 0, memory_roofline_seconds = 0, tensor_seconds = 0, fp_seconds = 0, issue_seconds = 0;
  double predicted_seconds = 0, roofline_seconds = 0, roofline_fraction = 0;
  std::string bound;                    // memory, tensor, fp, issue, parallelism
};

KernelReport BuildReport(const planning::KernelFacts &facts, const planning::TileCandidate &candidate,
                         const target::ArchInfo &device, const planning::Prediction &prediction,
                         const Artifact *artifact);

std::string ReportText(const KernelReport &r);
llvm::json::Value ReportJson(const KernelReport &r);

}  // namespace tir::perf

#endif  // TIR_COMPILER_PERF_REPORT_H_
