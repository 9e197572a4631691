// Pointwise kernels: a tile of the domain per block, runs of vector_width
// elements per thread.
//
//  1. The index width: a domain of static extents whose point count fits in
//     32 bits delinearizes in 32-bit arithmetic by constants (no division
//     instruction at all); one of run-time extents checks its point count
//     once and takes a 32-bit copy of the loops when it fits, the 64-bit copy
//     otherwise, so the hot loops never divide in 64 bits.
//  2. The run loop (vector_width > 1): each thread takes runs of `vec`
//     consecutive elements of one row and delinearizes once per run. Every
//     kernel input read along the run is loaded once per run (two reads of
//     one input at one map share the load) as one wide access where
//     contiguous and aligned; outputs leave the same way.
//  3. The element loop: what the run loop cannot take (an innermost extent
//     that is not a multiple of vec, known only at run time), or everything
//     when vector_width is 1. With static extents a run loop that covers the
//     domain has no element loop behind it.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {

absl::StatusOr<std::string> KernelEmitter::Pointwise() {
  const int64_t threads = Param("threads", 256), ept = Param("elements_per_thread", 1);
  std::vector<int> dims;
  for (int d = 0; d < rank_; ++d) dims.push_back(d);
  const int64_t vec = Param("vector_width", 1);
  auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  bool staticDomain = true;
  int64_t points = 1;
  for (int64_t e : domain) {
    if (e < 0) staticDomain = false;
    else points *= e;
  }
  std::string code;
  if (staticDomain) {
    absl::StrAppend(&code, "  const tir_i64 total = ", points, ";\n");
  } else {
    absl::StrAppend(&code, "  tir_i64 total = 1;\n  for (int d = 0; d < ", rank_, "; ++d) total *= a.dim[d];\n");
  }
  absl::StrAppend(&code, "  const tir_i64 tile = ", threads * ept, ";\n  const tir_i64 base = (tir_i64)blockIdx.x * tile;\n");
  const bool vectorized = vec > 1 && rank_ >= 1 && ept % vec == 0;
  const int last = rank_ - 1;
  // Whether the innermost extent is a multiple of vec: 1 statically, 0 no
  // run loop, -1 tested at run time (also for a static extent that is not a
  // multiple: the planner may offer such a width, and the candidate must
  // stay a kernel of its own).
  const int runsFit = !vectorized ? 0 : domain[last] >= 0 && domain[last] % vec == 0 ? 1 : -1;

  // The run loop with 32-bit (narrow) or 64-bit index arithmetic.
  auto runLoop = [&](bool narrow) -> absl::StatusOr<std::string> {
    std::string out = absl::StrCat("    for (tir_i64 g = threadIdx.x; g < ", threads * ept / vec, "; g += blockDim.x) {\n",
                                   "      const tir_i64 run = base + g * ", vec, ";\n      if (run >= total) break;\n");
    absl::StrAppend(&out, DelinearizeWidth("run", dims, "      ", narrow));
    // Kernel inputs and outputs that walk the run along one of their dims
    // move as whole runs (tir_load_run / tir_store_run: one wide access
    // when contiguous and aligned). Concatenation inputs are left out: each
    // is read only where it lies.
    std::map<std::pair<unsigned, const void *>, std::string> loaded;  // (input, map) -> its run
    std::string stores;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      if (llvm::isa<ConcatenateOp, DimOp>(op)) continue;
      for (mlir::OpOperand &use : op.getOpOperands()) {
        auto arg = use.get().dyn_cast<mlir::BlockArgument>();
        auto map = maps_.operands.find(&use);
        if (!arg || map == maps_.operands.end() || !use.get().getType().isa<mlir::RankedTensorType>() ||
            !RunFits(use.get().getType(), vec)) {
          continue;
        }
        const int j = RunDim(map->second, last);
        if (j < 0) continue;
        auto [at, fresh] = loaded.emplace(std::make_pair(arg.getArgNumber(), map->second.getAsOpaquePointer()),
                                          absl::StrCat("in_run", loaded.size()));
        run_reads_[&use] = at->second;
        if (!fresh) continue;
        TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
        const std::string &name = at->second, input = absl::StrCat("a.in", arg.getArgNumber());
        absl::StrAppend(&out, "      ", t.storage, " ", name, "[", vec, "];\n");
        if (ProvenRun(kernel_.getArgAttrDict(arg.getArgNumber()), use.get().getType(), map->second, j, vec)) {
          absl::StrAppend(&out, "      tir_load_run_aligned<", vec, ">(", input, " + (",
                          Offset(map->second, input + "_stride"), "), ", name, ");\n");
        } else {
          absl::StrAppend(&out, "      tir_load_run<", vec, ">(", input, " + (", Offset(map->second, input + "_stride"),
                          "), ", input, "_stride[", j, "], ", name, ");\n");
        }
      }
    }
    auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
    for (mlir::OpOperand &use : results->getOpOperands()) {
      auto map = maps_.operands.find(&use);
      if (map == maps_.operands.end() || run_writes_.count(use.getOperandNumber()) || !RunFits(use.get().getType(), vec) ||
          !StoreGuard(use.getOperandNumber(), map->second).empty()) {
        continue;
      }
      const int j = RunDim(map->second, last);
      if (j < 0) continue;
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
      const unsigned i = use.getOperandNumber();
      const std::string name = absl::StrCat("out_run", i), output = absl::StrCat("a.out", i);
      absl::StrAppend(&out, "      ", t.storage, " ", name, "[", vec, "];\n");
      if (ProvenRun(kernel_.getResultAttrDict(i), use.get().getType(), map->second, j, vec)) {
        absl::StrAppend(&stores, "      tir_store_run_aligned<", vec, ">(", output, " + (",
                        Offset(map->second, output + "_stride"), "), ", name, ");\n");
      } else {
        absl::StrAppend(&stores, "      tir_store_run<", vec, ">(", output, " + (", Offset(map->second, output + "_stride"),
                        "), ", output, "_stride[", j, "], ", name, ");\n");
      }
      run_writes_[i] = name;
    }
    absl::StrAppend(&out, "      const tir_i64 run_i", last, " = i", last, ";\n", "#pragma unroll\n",
                    "      for (int v = 0; v < ", vec, "; ++v) {\n", "        const tir_i64 i", last, " = run_i", last,
                    " + v;\n");
    std::string body;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      TIR_RETURN_IF_ERROR(EmitOp(&op, body, "        "));
    }
    TIR_RETURN_IF_ERROR(StoreOutputs(body, "        ", -1));
    absl::StrAppend(&out, body, "      }\n", stores, "    }\n");
    // Values computed here are scoped to the run loop.
    values_.clear();
    run_reads_.clear();
    run_writes_.clear();
    return out;
  };
  auto elementLoop = [&](bool narrow) -> absl::StatusOr<std::string> {
    std::string out = absl::StrCat("  for (tir_i64 t = threadIdx.x; t < tile; t += blockDim.x) {\n",
                                   "    const tir_i64 lin = base + t;\n    if (lin >= total) break;\n");
    absl::StrAppend(&out, DelinearizeWidth("lin", dims, "    ", narrow));
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) TIR_RETURN_IF_ERROR(EmitOp(&op, out, "    "));
    TIR_RETURN_IF_ERROR(StoreOutputs(out, "    ", -1));
    absl::StrAppend(&out, "  }\n");
    values_.clear();
    return out;
  };
  // Both loops at one index width; `tail` ends the kernel after them.
  auto loops = [&](bool narrow, const std::string &tail) -> absl::StatusOr<std::string> {
    std::string out;
    if (runsFit != 0) {
      TIR_ASSIGN_OR_RETURN(std::string runs, runLoop(narrow));
      if (runsFit == 1) return absl::StrCat("  {\n", runs, "  }\n", tail);
      absl::StrAppend(&out, "  if (a.dim[", last, "] % ", vec, " == 0) {\n", runs, "    return;\n  }\n");
    }
    TIR_ASSIGN_OR_RETURN(std::string elements, elementLoop(narrow));
    return absl::StrCat(out, elements, tail);
  };
  if (staticDomain) {
    TIR_ASSIGN_OR_RETURN(std::string body, loops(points <= kNarrowLimit, ""));
    absl::StrAppend(&code, body);
  } else {
    TIR_ASSIGN_OR_RETURN(std::string narrow, loops(true, "  return;\n"));
    TIR_ASSIGN_OR_RETURN(std::string wide, loops(false, ""));
    absl::StrAppend(&code, "  // 32-bit index arithmetic when every point's index fits.\n  if (total <= ", kNarrowLimit,
                    ") {\n", narrow, "  }\n", wide);
  }
  auto *g = launch_.add_grid();
  g->set_constant(1);
  g->set_divisor(threads * ept);
  AddDomainDims(g);
  launch_.add_grid()->set_constant(1);
  launch_.add_grid()->set_constant(1);
  launch_.add_block(threads);
  launch_.add_block(1);
  launch_.add_block(1);
  return code;
}

}  // namespace tir::codegen::detail
