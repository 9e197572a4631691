// The emitter of one kernel graph for one candidate (Emitter.h's EmitKernel),
// one class whose parts live in files of their own:
//   EmitTypes.cpp       C types of dtypes, literals
//   EmitArguments.cpp   argument layout and candidate parameters
//   EmitScalars.cpp     scalar lowering: index maps, reads, ops, constants, stores
//   EmitPointwise.cpp   pointwise kernels
//   EmitReduction.cpp   reduction kernels
//   EmitMatmul.cpp      matmul kernels (mma.sync tiles and the loop form)
//   EmitLaunch.cpp      launch rules
//   EmitSource.cpp      the translation unit and its host shims
// The GPU pieces they instantiate are in the tile library
// (runtime/tir_tiles.h); this code writes the glue.

#ifndef TIR_COMPILER_CODEGEN_KERNELEMITTER_H_
#define TIR_COMPILER_CODEGEN_KERNELEMITTER_H_

#include <functional>
#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/EmitTypes.h"
#include "compiler/ir/OnlineSoftmax.h"
#include "compiler/planning/AccessMaps.h"
#include "llvm/ADT/DenseMap.h"

namespace tir::codegen::detail {

class KernelEmitter {
 public:
  KernelEmitter(GraphOp kernel, const std::map<std::string, int64_t> &params) : kernel_(kernel), params_(params) {}
  // The names of tir_args' fields, in order (what Run's DeclareArgs gives).
  absl::StatusOr<std::vector<std::string>> FieldNames();
  absl::StatusOr<EmittedKernel> Run();
 private:
  int64_t Param(const char *name, int64_t fallback) const;
  void Field(const std::string &decl, const std::string &name);
  absl::Status DeclareArgs();
  // C expression of an affine expression over the domain index variables.
  std::string Expr(mlir::AffineExpr e);
  // Offset of element `map(idx)` in a buffer with the given stride array.
  std::string Offset(mlir::AffineMap map, const std::string &strides);
  // Whether `vec` elements of `type` make one access tir_chunk provides.
  static bool RunFits(mlir::Type type, int64_t vec);
  // The result of `map` that is exactly domain dim `d` when no other result
  // depends on d (a run along d then walks that dim alone); else -1.
  int RunDim(mlir::AffineMap map, int d);
  // Whether the graph's declarations prove that a run of `vec` elements of a
  // tensor with attributes `attrs` read at `map` (run dim `j`) is one aligned
  // access: unit stride along the run, every other stride a multiple of vec
  // (static, or a `?{div=N}` hint), and the base pointer's declared alignment
  // a multiple of the run's bytes. Then no run-time check is emitted; the
  // launcher checks the declarations instead (a launch that breaks them is
  // refused: LAYOUT_CONTRACT_VIOLATED).
  static bool ProvenRun(mlir::DictionaryAttr attrs, mlir::Type type, mlir::AffineMap map, int j, int64_t vec);
  // Whether a map reads any of the domain's reduced dims.
  bool UsesReduced(mlir::AffineMap map);
  // The operand value of `use` as a compute-typed expression.
  absl::StatusOr<std::string> Operand(mlir::OpOperand &use, std::string &code, const std::string &indent);
  // A reshape with run-time extents reads its input through the row-major
  // linear index of the output element, worked out in the kernel: output
  // extents are static or the reshape's dynamic_dims, input extents static or
  // the input's sizes. Only kernel inputs can be read this way (a computed
  // value has no storage to index).
  absl::Status DynamicReshape(ReshapeOp rs, std::string &code, const std::string &indent);
  // Picks the input of a concatenation whose range holds `at`: input k ends
  // (exclusively) at ends[k]; only the chosen input is read.
  static std::string ConcatSelect(const std::string &at, const std::vector<std::string> &inputs, const std::vector<std::string> &ends);
  // A concatenation along a dimension with run-time extents: each input's
  // offset is the sum of the extents before it, read from the inputs' sizes.
  // The access maps carry only the static part of an offset, so the dynamic
  // part is subtracted here; inputs must be kernel inputs (the partitioner
  // makes them so).
  absl::Status DynamicConcat(ConcatenateOp cat, std::string &code, const std::string &indent);
  // A gather reads its data (a kernel input: the partitioner makes it one)
  // at the element its index picks: the result's indices outside the
  // indices' dims, the index checked against the data's extent along the
  // axis (tir_gather_index), the data's strides.
  absl::Status Gather(GatherOp gather, std::string &code, const std::string &indent);
  // Emits `op` (pointwise-like) as `const T vN = ...;` into `code`.
  absl::Status EmitOp(mlir::Operation *op, std::string &code, const std::string &indent);
  absl::StatusOr<std::string> Value(mlir::Operation *op, const std::vector<std::string> &in, const TypeInfo &out);
  absl::StatusOr<std::string> ConstantValue(ConstantOp c);
  // Stores every kernel output whose producer is in `domain` (`rowDomain`:
  // maps that use reduced dims) into `code`.
  absl::Status StoreOutputs(std::string &code, const std::string &indent, int filter);
  // Output `i` declares a stride of 0 on a dim of extent above 1: that dim
  // holds one element, and only the value at index 0 of it is stored
  // ("if (...) "), so no two threads write one address. (A stride given at
  // launch is never 0: the launcher refuses that.)
  std::string StoreGuard(unsigned i, mlir::AffineMap map);
  std::string Delinearize(const std::string &lin, const std::vector<int> &dims, const std::string &indent);
  absl::StatusOr<std::string> Pointwise();
  // The grid extent multiplies in every domain extent (the launcher evaluates
  // them from the actual shapes; tir.iteration_domain records which).
  void AddDomainDims(tir::v1::LaunchExtent *g, bool onlyParallel = false);
  absl::StatusOr<std::string> Reduction();
  std::vector<mlir::Operation *> Ordered(const std::set<mlir::Operation *> &ops);
  // The reduced indices i<d> of row element `var`.
  std::string InnerIndices(const std::vector<int> &red, const std::string &var, const std::string &indent);
  // The accumulator type of a reduction of `t` (element type `e`).
  static std::string AccType(const TypeInfo &t, mlir::Type e);
  // Kernel inputs read along the row (by `rowOps` and reductions) whose
  // runs of vector_width tir_load_run can move.
  std::vector<mlir::OpOperand *> RowReads(const std::set<mlir::Operation *> &rowOps);
  // row_resident: this lane's row elements read once into registers.
  absl::Status CacheRow(const std::set<mlir::Operation *> &rowOps, std::string &code);
  // One loop over this lane's elements of the row with `body(code, indent)`
  // emitted inside.
  absl::Status RowLoop(std::string &code, const std::function<absl::Status(std::string &, const std::string &)> &body);
  // One pass over each row computing reduction `r`.
  absl::Status ReductionPass(ReduceOp r, const std::set<mlir::Operation *> &rowOps, const std::vector<int> &red, std::string &code);
  // One pass over each row computing an online max and sum together
  // (compiler/ir/OnlineSoftmax.h): m's input `a` per element, a running
  // reference max r and s = sum exp(a - r), rescaled by exp(r - a) when an
  // element exceeds r; lanes, warps and chunks combine (r, s) pairs.
  absl::Status OnlinePass(OnlineSoftmax o, const std::set<mlir::Operation *> &rowOps, std::string &code);
  // The row-domain ops `roots` depend on, in graph order.
  std::vector<mlir::Operation *> Slice(mlir::ValueRange roots, const std::set<mlir::Operation *> &rowOps);
  // A reduce_ud: the region's scalar ops (compiler/ir/ReduceBody.h) run once
  // per element, in order, on typed scalars: integers as tir_u64 bit patterns
  // of their width, floats in their compute type rounded after every op, as
  // the reference interpreter evaluates them.
  absl::Status UserReductionPass(ReduceUdOp ud, const std::set<mlir::Operation *> &rowOps, const std::vector<int> &red, std::string &code);
  // The C type of a body scalar of type `t`.
  absl::StatusOr<std::string> BodyCType(mlir::Type t);
  // The C expression of body op `op` on `a` (its operands' expressions).
  absl::StatusOr<std::string> BodyOpExpr(mlir::Operation &op, const std::vector<std::string> &a);
  // Whether `m` reads domain dims (r, c) as its last two results and nothing
  // else of the matmul's dims b, b+1, b+2 (an operand read as it is).
  static bool ReadsTail(mlir::AffineMap m, int r, int c, int b);
  // Prologue ops of a matmul kernel (maps that read K), in graph order.
  std::set<mlir::Operation *> MatmulPrologue();
  bool ReadsReduced(mlir::Operation *op);
  // The tensor-core form for bf16/f16 operands. Each K step stages a
  // block_m x block_k tile of A and a block_k x block_n tile of B in shared
  // memory (prologue ops applied, out-of-range elements zero), then:
  //  - on a GPU, each warp owns a (block_m / warps_m) x (block_n / warps_n)
  //    sub-tile and issues mma.sync.m16n8k16 (f32 accumulate) on fragments read
  //    from shared memory;
  //  - on the host, the one thread multiplies the same shared tiles in loops.
  // The epilogue runs per output element on the f32 accumulator.
  absl::StatusOr<std::string> MatmulTiled(MatmulOp mm, int64_t bm, int64_t bn, int64_t bk, int64_t warpsM, int64_t warpsN, const std::string &mmaType);
  // The output tile (tm, tn) of this block. With group_m > 1, consecutive
  // blocks walk a column of group_m tile rows before moving to the next
  // column, so the B tiles they share are still in L2 (a bijection over the
  // grid; the last group may be shorter).
  std::string TileCoords();
  // grid = (ceil(N / block_n), ceil(M / block_m), batch), block = threads.
  void AddMatmulLaunch(int64_t bm, int64_t bn, int64_t threads, int b);
  absl::StatusOr<std::string> Matmul();
  // The per-element epilogue of a matmul kernel (accumulator `accv`).
  absl::StatusOr<std::string> MatmulEpilogue(MatmulOp mm, const std::set<mlir::Operation *> &prologue,
                                             const std::string &acct, const std::string &guard);
  // The CUDA-core form: shared tiles, tm x tn register tiles per thread;
  // with warps_m > 0 the tf32 tensor-core form over the same staged tiles.
  absl::StatusOr<std::string> MatmulFfma(MatmulOp mm, int64_t bm, int64_t bn, int64_t bk, int64_t threads, int64_t tm,
                                         int64_t tn, int64_t warpsM, int64_t warpsN);
  // The Hopper form's operands: whether A and B are kernel inputs read as
  // they are (rank 2, A (m, k), B (k, n) or (n, k): `b_k_major`), so TMA can
  // load them; their argument numbers.
  struct HopperOperands {
    bool tma = false, b_k_major = false;
    int arg_a = -1, arg_b = -1;
  };
  HopperOperands HopperPlan(MatmulOp mm);
  // The TMA boxes of A and B ({inner, outer} elements). Under the 128-byte
  // swizzle a box row is 64 elements of K (or N): A is one block_m x 64
  // box, a K-major B one block_n x 64 box (an outer extent up to 256); an
  // N-major B takes block_n / 64 boxes of 64 x 64, one per 64 columns.
  // With a 2-CTA cluster each CTA also loads half the shared operand's box
  // (`half`, of input `shared_arg`) and multicasts it to both.
  struct HopperBoxes {
    int64_t a[2] = {64, 64}, b[2] = {64, 64};
    // A 2-CTA cluster multicasts one operand: B in a 2x1 cluster (share_b),
    // A in a 1x2 (share_a); shared_arg is its argument, -1 without a cluster.
    bool share_a = false, share_b = false;
    int shared_arg = -1;
    int64_t half[2] = {0, 0};
  };
  HopperBoxes HopperBoxesOf(const HopperOperands &h);
  // The one output a Hopper kernel may store by TMA (a rank-2 row-major
  // bf16/f16/f32 tensor of the tile's shape); output -1 when none.
  struct HopperOutput {
    int output = -1;
    int elem_bytes = 0;
  };
  HopperOutput HopperStorePlan();
  // The sm_90a form for bf16/f16 operands (EmitHopper.cpp).
  absl::StatusOr<std::string> MatmulHopper(MatmulOp mm, const std::string &type);
  static std::string WgmmaDeviceFunction(int64_t n, const std::string &type, bool trans_b);
  // The kernel's parameter is __grid_constant__ (TMA reads tensor maps in
  // it); a minimum of blocks per SM for __launch_bounds__ (0: none).
  bool grid_constant_ = false;
  int min_blocks_ = 0;
  // The thread-block cluster the kernel is launched in (x, y, z; all 1:
  // none): the emulated form runs a cluster's CTAs together.
  std::array<unsigned, 3> cluster_ = {1, 1, 1};
  GraphOp kernel_;
  std::map<std::string, int64_t> params_;
  planning::AccessMaps maps_;
  std::string kind_;
  int rank_ = 0;
  std::set<int64_t> reduced_;
  std::vector<std::string> fields_, field_names_;
  std::map<const void *, std::string> values_;
  // SSA value -> C expression or variable
  std::string constants_;
  int constants_count_ = 0;
  // Inside a pointwise run: operands read from a preloaded run array, and
  // outputs written to one (by result number).
  llvm::DenseMap<mlir::OpOperand *, std::string> run_reads_;
  std::map<unsigned, std::string> run_writes_;
  // Array name of each dense constant already written to constants_.
  llvm::DenseMap<mlir::Operation *, std::string> constant_names_;
  int next_ = 0;
  tir::v1::LaunchRule launch_;
  // Threads per block of the launch (for TIR_BOUNDS).
  int64_t threads_ = 0;
  // The reduction being emitted: its tile and the row cache.
  struct ReductionLayout {
    bool column = false, cache = false;
    int64_t strategy = 1, tpr = 1, rpb = 1, vec = 1, split = 1;
    int64_t cache_gpu = 0, cache_host = 0;  // row-cache runs per lane
    std::vector<int> red;
    std::map<mlir::OpOperand *, std::string> cached;
  } rs_;
  std::set<mlir::Operation *> rowOps_;
  // ---- index width, per-row reciprocals, kept row values, row stores ----
  // A point count up to this delinearizes in 32-bit arithmetic.
  static constexpr int64_t kNarrowLimit = 4294967295;
  // Domain extent d as a C expression: its value when static, else a.dim[d].
  std::string DimExpr(int d);
  // Whether the extents of `dims` are static with a product that fits in 32 bits.
  bool NarrowDims(const std::vector<int> &dims);
  // Delinearize in 32-bit (narrow) or 64-bit arithmetic.
  std::string DelinearizeWidth(const std::string &lin, const std::vector<int> &dims, const std::string &indent,
                               bool narrow);
  // Float divisions of row elements by a per-row value, multiplied by the
  // reciprocal instead: op -> the variable computed once per row.
  std::map<mlir::Operation *, std::string> reciprocals_;
  // Emits, into `code` (per-row scope), the reciprocals of `ops`' per-row divisors.
  absl::Status RowReciprocals(const std::vector<mlir::Operation *> &ops, std::string &code);
  // Row values a row-resident kernel computed in one pass and keeps in
  // registers for the later ones: op -> its array [rc_n][vec].
  std::map<mlir::Operation *, std::string> kept_;
  // RowLoop stores row outputs as runs of vector_width (the final pass).
  bool row_store_runs_ = false;
};

}  // namespace tir::codegen::detail

#endif  // TIR_COMPILER_CODEGEN_KERNELEMITTER_H_
