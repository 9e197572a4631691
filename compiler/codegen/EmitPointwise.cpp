// Pointwise kernels: a tile of the domain per block, runs of vector_width
// elements per thread.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {

absl::StatusOr<std::string> KernelEmitter::Pointwise() {
  const int64_t threads = Param("threads", 256), ept = Param("elements_per_thread", 1);
  std::vector<int> dims;
  for (int d = 0; d < rank_; ++d) dims.push_back(d);
  const int64_t vec = Param("vector_width", 1);
  std::string code = absl::StrCat("  tir_i64 total = 1;\n  for (int d = 0; d < ", rank_,
                                  "; ++d) total *= a.dim[d];\n  const tir_i64 tile = ", threads * ept,
                                  ";\n  const tir_i64 base = (tir_i64)blockIdx.x * tile;\n");
  // With vector_width > 1 each thread takes runs of `vec` consecutive
  // elements of one row (consecutive threads take consecutive runs, so a
  // warp still reads contiguous memory) and delinearizes once per run. The
  // run must not cross a row, which holds when the innermost extent is a
  // multiple of vec; otherwise the element loop below runs.
  const bool vectorized = vec > 1 && rank_ >= 1 && ept % vec == 0;
  std::string indent = "    ";
  if (vectorized) {
    const int last = rank_ - 1;
    absl::StrAppend(&code, "  if (a.dim[", last, "] % ", vec, " == 0) {\n", "    for (tir_i64 g = threadIdx.x; g < ",
                    threads * ept / vec, "; g += blockDim.x) {\n", "      const tir_i64 run = base + g * ", vec,
                    ";\n      if (run >= total) break;\n");
    absl::StrAppend(&code, Delinearize("run", dims, "      "));
    // Kernel inputs and outputs that walk the run along one of their dims
    // move as whole runs (tir_load_run / tir_store_run: one wide access
    // when contiguous and aligned). Concatenation inputs are left out: each
    // is read only where it lies.
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
        TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
        const std::string name = absl::StrCat("in_run", run_reads_.size()), input = absl::StrCat("a.in", arg.getArgNumber());
        absl::StrAppend(&code, "      ", t.storage, " ", name, "[", vec, "];\n");
        if (ProvenRun(kernel_.getArgAttrDict(arg.getArgNumber()), use.get().getType(), map->second, j, vec)) {
          absl::StrAppend(&code, "      tir_load_run_aligned<", vec, ">(", input, " + (",
                          Offset(map->second, input + "_stride"), "), ", name, ");\n");
        } else {
          absl::StrAppend(&code, "      tir_load_run<", vec, ">(", input, " + (", Offset(map->second, input + "_stride"),
                          "), ", input, "_stride[", j, "], ", name, ");\n");
        }
        run_reads_[&use] = name;
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
      absl::StrAppend(&code, "      ", t.storage, " ", name, "[", vec, "];\n");
      if (ProvenRun(kernel_.getResultAttrDict(i), use.get().getType(), map->second, j, vec)) {
        absl::StrAppend(&stores, "      tir_store_run_aligned<", vec, ">(", output, " + (",
                        Offset(map->second, output + "_stride"), "), ", name, ");\n");
      } else {
        absl::StrAppend(&stores, "      tir_store_run<", vec, ">(", output, " + (", Offset(map->second, output + "_stride"),
                        "), ", output, "_stride[", j, "], ", name, ");\n");
      }
      run_writes_[i] = name;
    }
    absl::StrAppend(&code, "      const tir_i64 run_i", last, " = i", last, ";\n", "#pragma unroll\n",
                    "      for (int v = 0; v < ", vec, "; ++v) {\n", "        const tir_i64 i", last, " = run_i", last,
                    " + v;\n");
    std::string body;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      TIR_RETURN_IF_ERROR(EmitOp(&op, body, "        "));
    }
    TIR_RETURN_IF_ERROR(StoreOutputs(body, "        ", -1));
    absl::StrAppend(&code, body, "      }\n", stores, "    }\n    return;\n  }\n");
    // The element loop emits every op again: values computed above are
    // scoped to the run loop.
    values_.clear();
    run_reads_.clear();
    run_writes_.clear();
  }
  absl::StrAppend(&code, "  for (tir_i64 t = threadIdx.x; t < tile; t += blockDim.x) {\n",
                  "    const tir_i64 lin = base + t;\n    if (lin >= total) break;\n");
  absl::StrAppend(&code, Delinearize("lin", dims, indent));
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) TIR_RETURN_IF_ERROR(EmitOp(&op, code, indent));
  TIR_RETURN_IF_ERROR(StoreOutputs(code, indent, -1));
  absl::StrAppend(&code, "  }\n");
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
