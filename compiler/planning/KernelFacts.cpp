#include "compiler/planning/KernelFacts.h"

#include <algorithm>
#include <set>

#include "compiler/ir/OnlineSoftmax.h"
#include "compiler/ir/StrideAttr.h"
#include "llvm/ADT/DenseSet.h"
#include "compiler/ir/TirDialect.h"

namespace tir::planning {
namespace {

int64_t Fixed(int64_t d) { return d < 0 ? kAssumedDynamicExtent : d; }

// The extent of dim `d` of `v`: static, else from `shapes`, else assumed.
int64_t ExtentOf(mlir::Value v, size_t d, const ValueShapeMap *shapes) {
  auto r = v.getType().dyn_cast<mlir::RankedTensorType>();
  if (!r || d >= static_cast<size_t>(r.getRank())) return 1;
  if (!r.isDynamicDim(d)) return r.getDimSize(d);
  if (shapes != nullptr) {
    auto it = shapes->find(v);
    if (it != shapes->end() && d < it->second.size() && it->second[d] >= 0) return it->second[d];
  }
  return kAssumedDynamicExtent;
}

double Bytes(mlir::Value v, const ValueShapeMap *shapes) {
  auto r = v.getType().dyn_cast<mlir::RankedTensorType>();
  if (!r) return 0;
  double n = 1;
  for (int64_t d = 0; d < r.getRank(); ++d) n *= static_cast<double>(ExtentOf(v, d, shapes));
  const unsigned bits = r.getElementType().getIntOrFloatBitWidth();
  return n * std::max(1u, bits / 8);
}

// The bytes a kernel reads of its input `v`: all of it, except that a value
// read only as the data of gathers moves the rows they pick, the gathers'
// result elements (at most the whole value): an embedding lookup of 37 ids
// reads 37 rows of its table.
double InputBytes(const Kernel &kernel, mlir::Value v, const ValueShapeMap *shapes) {
  const double whole = Bytes(v, shapes);
  double gathered = 0;
  for (mlir::OpOperand &use : v.getUses()) {
    auto gather = llvm::dyn_cast<GatherOp>(use.getOwner());
    if (std::find(kernel.ops.begin(), kernel.ops.end(), use.getOwner()) == kernel.ops.end()) continue;
    if (!gather || use.getOperandNumber() != 0) return whole;
    gathered += Bytes(gather.getOutput(), shapes);
  }
  return gathered > 0 ? std::min(whole, gathered) : whole;
}

// The iteration space's dynamic extents at `shapes`: from the value the
// space is the shape of.
void SizeSpace(const Kernel &kernel, const ValueShapeMap &shapes, IterationSpace &space) {
  auto fill = [&](std::vector<int64_t> &dims, mlir::Value v) {
    auto r = v.getType().dyn_cast<mlir::RankedTensorType>();
    if (!r || r.getRank() != static_cast<int64_t>(dims.size())) return;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0) dims[d] = ExtentOf(v, d, &shapes);
    }
  };
  for (mlir::Operation *op : kernel.ops) {
    if (space.kind == KernelKind::kMatmul) {
      if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
        auto a = mm.getA().getType().cast<mlir::RankedTensorType>();
        const size_t rank = a.getRank();
        if (space.m < 0) space.m = ExtentOf(mm.getA(), rank - 2, &shapes);
        if (space.k < 0) space.k = ExtentOf(mm.getA(), rank - 1, &shapes);
        if (space.n < 0) space.n = ExtentOf(mm.getB(), rank - 1, &shapes);
        for (size_t d = 0; d < space.batch.size(); ++d) {
          if (space.batch[d] < 0) space.batch[d] = ExtentOf(mm.getC(), d, &shapes);
        }
        fill(space.shape, mm.getC());
        return;
      }
    } else if (space.kind == KernelKind::kReduction) {
      if (auto rd = llvm::dyn_cast<ReduceOp>(op)) {
        fill(space.shape, rd.getInput());
        return;
      }
      if (auto ud = llvm::dyn_cast<ReduceUdOp>(op)) {
        if (!ud.getInputs().empty()) fill(space.shape, ud.getInputs()[0]);
        return;
      }
    }
  }
  for (mlir::Value v : kernel.outputs) fill(space.shape, v);
}

}  // namespace

KernelFacts ComputeFacts(const Kernel &kernel, const ValueShapeMap *shapes) {
  KernelFacts f;
  f.space = kernel.space;
  if (shapes != nullptr) SizeSpace(kernel, *shapes, f.space);
  for (int64_t &d : f.space.shape) d = Fixed(d);
  for (int64_t &d : f.space.batch) d = Fixed(d);
  f.space.m = Fixed(f.space.m);
  f.space.n = Fixed(f.space.n);
  f.space.k = Fixed(f.space.k);
  for (mlir::Value v : kernel.inputs) f.bytes_in += InputBytes(kernel, v, shapes);
  for (mlir::Value v : kernel.outputs) f.bytes_out += Bytes(v, shapes);
  f.points = 1;
  for (int64_t d : f.space.shape) f.points *= d;
  f.innermost = f.space.shape.empty() ? 1 : f.space.shape.back();
  int ops = 0;
  // The widest element the kernel's ops produce (bf16-only kernels: 2 bytes,
  // so 16-byte runs are 8 elements); 4 when no op says.
  f.element_bytes = 0;
  for (mlir::Operation *op : kernel.ops) {
    if (llvm::isa<BroadcastOp, ReshapeOp, TransposeOp, SliceOp, ConstantOp, DimOp>(op)) continue;
    ++ops;
    if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
      // bf16/f16 operands run on tensor cores (mma.sync, f32 accumulate),
      // also when they are converted to f32 first (the products are exact in
      // f32, so it is the same computation). f32 stays exact f32 on CUDA
      // cores: tf32 would round the operands to 10 mantissa bits.
      const MmaOperand a = MmaOperandOf(mm.getA()), b = MmaOperandOf(mm.getB());
      mlir::Type e = a.element;
      f.operand_bytes = std::max(1u, e.getIntOrFloatBitWidth() / 8);
      f.tensor_core = a.element == b.element && (e.isBF16() || e.isF16());
      f.tf32 = false;
      auto isInput = [&](mlir::Value v) { return std::find(kernel.inputs.begin(), kernel.inputs.end(), v) != kernel.inputs.end(); };
      f.matmul_pipelined = isInput(a.source) && isInput(b.source);
      f.matmul_f32 = a.element.isF32() && b.element.isF32();
      mlir::Type ea = mm.getA().getType().cast<mlir::ShapedType>().getElementType();
      f.matmul_acc_bytes = ea.isa<mlir::FloatType>() && !ea.isF64() ? 4 : 8;
    }
    for (mlir::Type t : op->getResultTypes()) {
      if (auto r = t.dyn_cast<mlir::RankedTensorType>()) {
        f.element_bytes = std::max<int>(f.element_bytes, r.getElementType().getIntOrFloatBitWidth() / 8);
      }
    }
  }
  if (f.space.kind == KernelKind::kReduction) {
    const std::vector<int64_t> &shape = kernel.space.shape;  // dynamic extents as they are
    std::set<int> reduced(f.space.reduced_dims.begin(), f.space.reduced_dims.end());
    for (int d : f.space.reduced_dims) f.static_row &= shape[d] >= 0;
    f.column = !reduced.empty() && !shape.empty() && !reduced.count(static_cast<int>(shape.size()) - 1) &&
               reduced.size() < shape.size();
    f.innermost_reduced = reduced.empty() ? 1 : f.space.shape[*reduced.rbegin()];
    std::set<mlir::Operation *> inKernel(kernel.ops.begin(), kernel.ops.end());
    for (mlir::Operation *op : kernel.ops) {
      f.reductions += llvm::isa<ReduceOp>(op);
      f.ordered_reduction |= llvm::isa<ReduceUdOp>(op);
      if (auto max = llvm::dyn_cast<ReduceOp>(op); max && !f.column) {
        f.online += MatchOnlineSoftmax(max, [&](mlir::Operation *o) { return inKernel.count(o) > 0; }).has_value();
      }
    }
    auto rowShaped = [&](mlir::Type t) {
      auto r = t.dyn_cast<mlir::RankedTensorType>();
      if (!r || r.getRank() != static_cast<int64_t>(shape.size())) return false;
      for (int64_t d = 0; d < r.getRank(); ++d) {
        if ((r.isDynamicDim(d) ? -1 : r.getDimSize(d)) != (shape[d] < 0 ? -1 : shape[d])) return false;
      }
      return true;
    };
    for (mlir::Value v : kernel.outputs) {
      mlir::Operation *def = v.getDefiningOp();
      if (def && !llvm::isa<ReduceOp, ReduceUdOp>(def) && rowShaped(v.getType())) f.row_outputs = true;
    }
    for (mlir::Value v : kernel.inputs) f.row_inputs += v.getType().isa<mlir::RankedTensorType>();
    bool anyReducedAboveOne = false;
    for (int d : f.space.reduced_dims) anyReducedAboveOne |= f.space.shape[d] != 1;
    if (!anyReducedAboveOne) f.row_outputs = false;
  }
  if (f.space.kind == KernelKind::kMatmul && f.space.batch.empty() && kernel.outputs.size() == 1) {
    // The output is the matmul's result through ops that keep its (M, N)
    // indexing: nothing after the matmul moves elements.
    llvm::DenseSet<mlir::Value> after;
    bool moved = false;
    for (mlir::Operation *op : kernel.ops) {
      bool downstream = llvm::isa<MatmulOp>(op);
      for (mlir::Value v : op->getOperands()) downstream = downstream || after.count(v);
      if (!downstream) continue;
      moved = moved || llvm::isa<BroadcastOp, ReshapeOp, TransposeOp, SliceOp>(op);
      for (mlir::Value r : op->getResults()) after.insert(r);
    }
    mlir::Value out = kernel.outputs[0];
    auto r = out.getType().dyn_cast<mlir::RankedTensorType>();
    // A graph result declaring a stride of 0 on a dim stores one element of
    // it (zeroStrideDims): no whole tile can be copied out by TMA, and the
    // emitter refuses tma_store (HopperStorePlan).
    bool storesOnce = false;
    for (mlir::OpOperand &use : out.getUses()) {
      auto graph = llvm::dyn_cast_or_null<GraphOp>(use.getOwner()->getParentOp());
      if (!graph || use.getOwner() != graph.getBodyBlock().getTerminator() || !r) continue;
      auto str = graph.getResultAttrOfType<mlir::StringAttr>(use.getOperandNumber(), TirDialect::kStrideAttr);
      std::optional<StrideSpec> spec = str ? parseStrideSpec(str.getValue(), nullptr) : std::nullopt;
      storesOnce = storesOnce || (spec && !zeroStrideDims(*spec, r.getShape()).empty());
    }
    if (!moved && after.count(out) && r && r.getRank() == 2 && !storesOnce) {
      mlir::Type e = r.getElementType();
      f.tma_store_bytes = e.isF32() ? 4 : e.isBF16() || e.isF16() ? 2 : 0;
    }
  }
  if (f.element_bytes == 0) f.element_bytes = 4;
  f.flops_per_point = std::max(1, ops);
  f.live_values = std::max(1, std::min(ops, 16));
  // What moves in runs: every input/output whose innermost dim is not a
  // broadcast one (its element type, not the arithmetic's: a bf16 tensor
  // converted to f32 still moves 2-byte elements).
  f.io_bytes = 0;
  auto moves = [&](mlir::Type t) {
    auto r = t.dyn_cast<mlir::RankedTensorType>();
    if (!r || r.getRank() == 0 || r.getShape().back() == 1) return;
    f.io_bytes = std::max<int>(f.io_bytes, std::max(1u, r.getElementType().getIntOrFloatBitWidth() / 8));
  };
  for (mlir::Value v : kernel.inputs) moves(v.getType());
  for (mlir::Value v : kernel.outputs) moves(v.getType());
  if (f.io_bytes == 0) f.io_bytes = f.element_bytes;
  // Vector width: 16 bytes of the widest element that moves, and the
  // innermost extent of every input/output must be a multiple (static
  // extents; run-time ones are tested by the kernel).
  int vec = 16 / f.io_bytes;
  auto limit = [&](mlir::Type t) {
    auto r = t.dyn_cast<mlir::RankedTensorType>();
    if (!r || r.getRank() == 0) return;
    const int64_t inner = r.getShape().back();
    if (inner == 1) return;  // broadcast along the innermost dim: read once per row
    // A run-time extent: kernels test it at launch and fall back to the
    // element loop when runs do not fit.
    if (mlir::ShapedType::isDynamic(inner)) return;
    while (vec > 1 && inner % vec != 0) vec /= 2;
  };
  for (mlir::Value v : kernel.inputs) limit(v.getType());
  for (mlir::Value v : kernel.outputs) limit(v.getType());
  f.max_vector = std::max(1, vec);
  return f;
}

}  // namespace tir::planning
