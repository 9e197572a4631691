// The instruction mix of a kernel's PTX, by the classes a performance
// engineer reads SASS for: FMA and other float math, MUFU (ex2, rcp, tanh,
// ...), conversions, integer math and division, global and shared accesses
// by width, tensor-core and shuffle instructions.
//
// Algorithm:
//  1. split the PTX into instructions (guards and labels stripped) and
//     labels; a backward branch to a label makes [label, branch] a loop;
//  2. pick the kernel's hot region by kind: a pointwise kernel's whole body
//     (each thread runs it once per elements_per_thread points); the
//     innermost loops that load from global memory for a reduction (the row
//     walk); for a matmul the epilogue: from the first main loop on,
//     what is outside every innermost loop that issues tensor-core or
//     shared-memory math or waits on a barrier (K loops, the producer's
//     copies, mbarrier spins), less a fallback path the kernel marks
//     (TIR_PTX_NOTE "fallback begin" / "fallback end": a TMA-store
//     epilogue's direct stores, taken only when the output's layout allows
//     no tensor map);
//  3. count the region's instructions by class, each weighted by the SASS
//     instructions it expands to (a 64-bit division is a ~70-instruction
//     subroutine, a mul.lo.s64 three IMADs, register moves mostly vanish);
//  4. divide by the elements the region handles: bytes stored (pointwise,
//     matmul) or loaded (reduction) over the bytes of one element.
// PTX is not SASS: the counts are estimates that rank and explain, and the
// classes (which instructions are there at all) are exact.

#ifndef TIR_COMPILER_PERF_PTXMIX_H_
#define TIR_COMPILER_PERF_PTXMIX_H_

#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace tir::perf {

// What a region does, by class. Widths are in bytes.
struct InstructionMix {
  std::map<std::string, double> classes;  // class -> SASS-weighted count
  std::map<int, double> global_loads;     // width -> instructions
  std::map<int, double> global_stores;
  double global_load_bytes = 0, global_store_bytes = 0;
  double shared_accesses = 0;
  int region_instructions = 0;            // PTX instructions in the region
  bool software_bf16_rounding = false;    // bf16 rounded by integer code (no cvt.rn.bf16)
  bool int64_division = false;            // div/rem on 64-bit integers in the region
  double Total() const;
};

enum class Region { kWholeKernel, kRowLoops, kMatmulEpilogue };

// The mix of `region` of `ptx`; also the whole kernel's for reference.
struct PtxAnalysis {
  InstructionMix region;
  InstructionMix whole;
  std::string region_name;  // "kernel", "row loop", "epilogue"
  int loops = 0;
  // The epilogue leaves out a fallback path the kernel marked
  // ("// tir: fallback begin" ... "// tir: fallback end").
  bool fallback_left_out = false;
  // Why the notes were not trusted (unpaired, or a branch from outside into
  // a span): then nothing is left out. Empty when they were, or were none.
  std::string fallback_problem;
};
PtxAnalysis AnalyzePtx(absl::string_view ptx, Region region);

// The class an opcode belongs to ("fma", "fp", "mufu", "cvt", "int",
// "int_div", "ld_global", "st_global", "shared", "tensor", "shuffle",
// "barrier", "move", "control", "other"), for tests and the report.
std::string ClassOf(absl::string_view opcode);

}  // namespace tir::perf

#endif  // TIR_COMPILER_PERF_PTXMIX_H_
