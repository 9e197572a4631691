//===- AccessMaps.cpp - affine access maps of a kernel's values -----------===//
//
// 1. Seed: each kernel output is reached from the iteration domain by its
//    natural map (unit dims at 0; a reshaped output through its linear index).
// 2. Propagate from outputs to inputs, op by op in reverse: an op's result map
//    gives each operand's map through the op's index relation (broadcast,
//    transpose, slice, reshape, concatenate, reduce, matmul, a gather's
//    indices; a gather's data has none: it is read at run-time positions).
// 3. Resolve conflicts: a pointwise op whose result is needed under several
//    maps is cloned, one clone per map; arguments may be read under several
//    maps; anything else is an error (it needs a partition boundary).
// 4. Annotate ops with tir.access and single-map arguments with
//    tir.iter_space_map.

#include "compiler/planning/AccessMaps.h"

#include <limits>
#include <optional>

#include "absl/strings/str_join.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/IR/Builders.h"

namespace tir::planning {
namespace {

using mlir::AffineExpr;
using mlir::AffineMap;

bool IsPointwiseLikeOp(mlir::Operation *op) {
  return !llvm::isa<ReduceOp, ReduceUdOp, MatmulOp, LaunchOp, ResultsOp>(op);
}

std::vector<int64_t> Shape(mlir::Type t) {
  auto r = t.dyn_cast<mlir::RankedTensorType>();
  if (!r) return {};
  return {r.getShape().begin(), r.getShape().end()};
}

bool Static(const std::vector<int64_t> &s) {
  return llvm::none_of(s, [](int64_t d) { return mlir::ShapedType::isDynamic(d); });
}

bool DynamicDim(int64_t d) { return mlir::ShapedType::isDynamic(d) || d < 0; }  // iteration domains say -1

// Row-major strides of a shape whose dims are static but for the outermost
// (the strides are products of the inner dims); nullopt for any other shape,
// or strides past int64.
std::optional<std::vector<int64_t>> Strides(const std::vector<int64_t> &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) {
    if (DynamicDim(s[i + 1]) || s[i + 1] == 0 || st[i + 1] > std::numeric_limits<int64_t>::max() / s[i + 1]) {
      return std::nullopt;
    }
    st[i] = st[i + 1] * s[i + 1];
  }
  return st;
}

// Whether every floordiv, ceildiv and mod of `map` divides by a positive
// constant (what the kernel's index arithmetic can compute).
bool DivisorsInRange(AffineMap map) {
  bool ok = true;
  for (AffineExpr e : map.getResults()) {
    e.walk([&](AffineExpr sub) {
      auto bin = sub.dyn_cast<mlir::AffineBinaryOpExpr>();
      if (!bin || sub.getKind() == mlir::AffineExprKind::Add || sub.getKind() == mlir::AffineExprKind::Mul) return;
      auto c = bin.getRHS().dyn_cast<mlir::AffineConstantExpr>();
      if (!c || c.getValue() <= 0) ok = false;
    });
  }
  return ok;
}

class Builder {
 public:
  Builder(GraphOp graph) : graph_(graph), ctx_(graph.getContext()) {
    kind_ = graph->getAttrOfType<mlir::StringAttr>("tir.kernel_kind").getValue().str();
    auto domain = graph->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain");
    domain_.assign(domain.asArrayRef().begin(), domain.asArrayRef().end());  // -1: dynamic
    if (auto r = graph->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.reduced_dims")) {
      reduced_.assign(r.asArrayRef().begin(), r.asArrayRef().end());
    }
  }

  const llvm::DenseMap<mlir::OpOperand *, AffineMap> &UseMaps() const { return use_map_; }
  // Record a conflict here instead of emitting an error.
  void ReportConflictTo(mlir::Operation **conflict) { conflict_ = conflict; }

  mlir::LogicalResult Run() {
    mlir::Block &block = graph_.getBodyBlock();
    mlir::Operation *terminator = block.getTerminator();
    for (mlir::OpOperand &use : terminator->getOpOperands()) {
      if (!use.get().getType().isa<mlir::RankedTensorType>()) continue;
      AffineMap m = Natural(use.get().getType());
      if (!m) {
        return graph_.emitOpError() << "result " << use.getOperandNumber() << " of type " << use.get().getType()
                                    << " is a reshape of the iteration domain across dynamic dims (["
                                    << absl::StrJoin(domain_, ", ")
                                    << "]): its index cannot be computed by an affine map";
      }
      use_map_[&use] = m;
    }
    llvm::SmallVector<mlir::Operation *> ops;
    for (mlir::Operation &op : block.without_terminator()) ops.push_back(&op);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      if (mlir::failed(Visit(*it))) return mlir::failure();
    }
    for (mlir::BlockArgument arg : block.getArguments()) {
      llvm::SetVector<AffineMap> maps;
      for (mlir::OpOperand &use : arg.getUses()) {
        if (auto m = use_map_.lookup(&use)) maps.insert(m);
      }
      if (maps.size() == 1 && annotate_) {
        graph_.setArgAttr(arg.getArgNumber(), TirDialect::kIterSpaceMapAttr, mlir::AffineMapAttr::get(maps[0]));
      }
    }
    return mlir::success();
  }

 private:
  unsigned Rank() const { return domain_.size(); }
  AffineExpr D(unsigned i) const { return mlir::getAffineDimExpr(i, ctx_); }
  AffineExpr C(int64_t v) const { return mlir::getAffineConstantExpr(v, ctx_); }
  AffineMap Map(llvm::ArrayRef<AffineExpr> results) const { return AffineMap::get(Rank(), 0, results, ctx_); }

  // The map of a value of `type` placed in the iteration domain.
  AffineMap Natural(mlir::Type type) {
    std::vector<int64_t> s = Shape(type);
    llvm::SmallVector<AffineExpr> r;
    if (kind_ == "matmul") {
      // Domain (batch..., M, N, K); values live in C's space (batch..., M, N).
      for (size_t i = 0; i < s.size(); ++i) r.push_back(s[i] == 1 && domain_[i] != 1 ? C(0) : D(i));
      return Map(r);
    }
    if (s.size() == domain_.size()) {
      for (size_t i = 0; i < s.size(); ++i) r.push_back(s[i] == 1 && domain_[i] != 1 ? C(0) : D(i));
      return Map(r);
    }
    // A reshaped value: through the linear index of the domain.
    if (std::optional<AffineExpr> lin = LinearIndex(IdentityExprs(), domain_)) {
      if (AffineMap m = Delinearize(*lin, s)) return m;
    }
    // Dynamic dims inside. A value that only adds or drops unit dims: each
    // other dim is the domain's dim it was (dynamic ones included).
    {
      llvm::SmallVector<size_t> kept;
      for (size_t i = 0; i < domain_.size(); ++i) {
        if (domain_[i] != 1) kept.push_back(i);
      }
      llvm::SmallVector<AffineExpr> exprs;
      size_t k = 0;
      bool same = true;
      for (int64_t d : s) {
        if (d == 1) {
          exprs.push_back(C(0));
          continue;
        }
        const int64_t dom = k < kept.size() ? domain_[kept[k]] : 1;
        same = same && k < kept.size() && (DynamicDim(d) ? DynamicDim(dom) : d == dom);
        if (!same) break;
        exprs.push_back(D(kept[k++]));
      }
      if (same && k == kept.size()) return Map(exprs);
    }
    // Else the leading dims the value shares with the domain are its own (a dynamic one when every dim after it is static
    // and their products agree, so the two sizes are equal), the rest
    // through their linear index. Null when that leaves a dynamic dim other
    // than the outermost of the rest.
    size_t p = 0;
    while (p < s.size() && p < domain_.size() && !DynamicDim(s[p]) && s[p] == domain_[p]) ++p;
    if (p < s.size() && p < domain_.size() && DynamicDim(s[p]) && DynamicDim(domain_[p])) {
      std::optional<int64_t> inner = StaticProduct({s.begin() + p + 1, s.end()});
      if (inner && inner == StaticProduct({domain_.begin() + p + 1, domain_.end()})) ++p;
    }
    llvm::SmallVector<AffineExpr> rest;
    for (size_t i = p; i < domain_.size(); ++i) rest.push_back(D(i));
    std::optional<AffineExpr> lin = LinearIndex(rest, {domain_.begin() + p, domain_.end()});
    AffineMap tail = lin ? Delinearize(*lin, {s.begin() + p, s.end()}) : AffineMap();
    if (!tail) return AffineMap();
    llvm::SmallVector<AffineExpr> exprs;
    for (size_t i = 0; i < p; ++i) exprs.push_back(D(i));
    exprs.append(tail.getResults().begin(), tail.getResults().end());
    return Map(exprs);
  }

  // The product of `dims`; nullopt when one is dynamic or it passes int64.
  static std::optional<int64_t> StaticProduct(const std::vector<int64_t> &dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (DynamicDim(d) || (d != 0 && n > std::numeric_limits<int64_t>::max() / d)) return std::nullopt;
      n *= d;
    }
    return n;
  }

  llvm::SmallVector<AffineExpr> IdentityExprs() const {
    llvm::SmallVector<AffineExpr> e;
    for (unsigned i = 0; i < Rank(); ++i) e.push_back(D(i));
    return e;
  }

  // The row-major linear index of `idx` in `shape`; nullopt when a dim
  // other than the outermost is dynamic.
  std::optional<AffineExpr> LinearIndex(llvm::ArrayRef<AffineExpr> idx, const std::vector<int64_t> &shape) const {
    std::optional<std::vector<int64_t>> st = Strides(shape);
    if (!st) return std::nullopt;
    AffineExpr lin = C(0);
    for (size_t i = 0; i < idx.size(); ++i) lin = lin + idx[i] * (*st)[i];
    return lin;
  }

  // `lin` as an index of `shape`; null when a dim other than the outermost
  // is dynamic (the outermost, dynamic, is the quotient, in range when `lin`
  // is).
  AffineMap Delinearize(AffineExpr lin, const std::vector<int64_t> &shape) const {
    std::optional<std::vector<int64_t>> st = Strides(shape);
    if (!st) return AffineMap();
    llvm::SmallVector<AffineExpr> r;
    for (size_t j = 0; j < shape.size(); ++j) {
      AffineExpr q = lin.floorDiv((*st)[j]);
      r.push_back(DynamicDim(shape[j]) ? q : q % shape[j]);
    }
    return Map(r);
  }

  mlir::LogicalResult Visit(mlir::Operation *op) {
    if (op->getNumResults() == 0) return mlir::success();
    mlir::Value result = op->getResult(0);
    if (!result.getType().isa<mlir::RankedTensorType>()) return mlir::success();  // index scalars
    // Uses grouped by the map they need.
    llvm::MapVector<AffineMap, llvm::SmallVector<mlir::OpOperand *>> byMap;
    for (mlir::Value r : op->getResults()) {
      for (mlir::OpOperand &use : r.getUses()) {
        if (auto m = use_map_.lookup(&use)) byMap[m].push_back(&use);
      }
    }
    if (byMap.empty()) {
      AffineMap natural = Natural(result.getType());
      if (!natural) {
        if (conflict_) {
          *conflict_ = op;
          return mlir::failure();
        }
        return op->emitOpError() << "result of type " << result.getType()
                                 << " is a reshape of the iteration domain across dynamic dims: its index cannot be "
                                    "computed by an affine map";
      }
      Assign(op, natural);
      return mlir::success();
    }
    if (byMap.size() > 1 && !IsPointwiseLikeOp(op)) {
      if (conflict_) {
        *conflict_ = op;
        return mlir::failure();
      }
      return op->emitOpError() << "result is needed under " << byMap.size()
                               << " different access maps in one kernel; only pointwise values can be "
                                  "recomputed per map, so this one needs a partition boundary";
    }
    auto entries = byMap.takeVector();
    for (size_t i = 1; i < entries.size(); ++i) {
      // Recompute the pointwise value for this map.
      mlir::OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      mlir::Operation *clone = b.clone(*op);
      for (mlir::OpOperand *use : entries[i].second) use->set(clone->getResult(use->get().cast<mlir::OpResult>().getResultNumber()));
      Assign(clone, entries[i].first);
    }
    Assign(op, entries[0].first);
    return mlir::success();
  }

  // Annotates `op` with `map` and derives its operands' maps.
  void Assign(mlir::Operation *op, AffineMap map) {
    op->setAttr("tir.access", mlir::AffineMapAttr::get(map));
    std::vector<int64_t> out = Shape(op->getResult(0).getType());
    auto set = [&](unsigned i, AffineMap m) { use_map_[&op->getOpOperand(i)] = m; };
    if (auto t = llvm::dyn_cast<TransposeOp>(op)) {
      llvm::ArrayRef<int64_t> perm = t.getPermutation();
      llvm::SmallVector<AffineExpr> r(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) r[perm[i]] = map.getResult(i);
      set(0, Map(r));
    } else if (auto s = llvm::dyn_cast<SliceOp>(op)) {
      llvm::SmallVector<AffineExpr> r;
      for (size_t i = 0; i < out.size(); ++i) r.push_back(C(s.getStarts()[i]) + map.getResult(i) * s.getStrides()[i]);
      set(0, Map(r));
    } else if (auto rs = llvm::dyn_cast<ReshapeOp>(op)) {
      std::vector<int64_t> in = Shape(rs.getInput().getType());
      if (UnitDimsOnly(in, out)) {
        // Unit dims in or out: each other input dim is the output dim it
        // becomes (dynamic extents included); unit dims are index 0.
        llvm::SmallVector<AffineExpr> r;
        size_t j = 0;
        for (int64_t d : in) {
          if (d == 1) {
            r.push_back(C(0));
            continue;
          }
          while (out[j] == 1) ++j;
          r.push_back(map.getResult(j++));
        }
        set(0, Map(r));
      } else if (Static(in) && Static(out)) {
        llvm::SmallVector<AffineExpr> idx(map.getResults().begin(), map.getResults().end());
        std::optional<AffineExpr> lin = LinearIndex(idx, out);
        if (AffineMap m = lin ? Delinearize(*lin, in) : AffineMap()) set(0, m);
      }
    } else if (auto cat = llvm::dyn_cast<ConcatenateOp>(op)) {
      int64_t offset = 0;
      const int64_t dim = cat.getDimension();
      for (unsigned k = 0; k < cat.getInputs().size(); ++k) {
        std::vector<int64_t> in = Shape(cat.getInputs()[k].getType());
        llvm::SmallVector<AffineExpr> r(map.getResults().begin(), map.getResults().end());
        r[dim] = r[dim] - offset;
        set(k, Map(r));
        offset += mlir::ShapedType::isDynamic(in[dim]) ? 0 : in[dim];
      }
    } else if (llvm::isa<ReduceOp, ReduceUdOp>(op)) {
      // Reduced dims of the input run over the domain's own dims.
      for (unsigned k = 0; k < op->getNumOperands(); ++k) {
        std::vector<int64_t> in = Shape(op->getOperand(k).getType());
        llvm::SmallVector<AffineExpr> r(map.getResults().begin(), map.getResults().end());
        for (int64_t d : reduced_) r[d] = D(d);
        if (reduced_.empty()) {  // a reduction outside a reduction kernel: its own dims
          llvm::ArrayRef<int32_t> dims = llvm::isa<ReduceOp>(op) ? llvm::cast<ReduceOp>(op).getDimensions()
                                                                 : llvm::cast<ReduceUdOp>(op).getDimensions();
          for (int32_t d : dims) r[d] = D(d);
        }
        set(k, Map(r));
      }
    } else if (auto g = llvm::dyn_cast<GatherOp>(op)) {
      // The indices at the result's dims [axis, axis + rank(indices)); the
      // data at positions they pick at run time: no affine map (the kernel
      // reads the data operand, a kernel input, from memory).
      const unsigned axis = g.getAxis(), rank = Shape(g.getIndices().getType()).size();
      llvm::SmallVector<AffineExpr> r;
      for (unsigned i = 0; i < rank; ++i) r.push_back(map.getResult(axis + i));
      set(1, Map(r));
    } else if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
      const unsigned b = out.size() - 2;  // batch dims; domain (batch..., M, N, K)
      std::vector<int64_t> as = Shape(mm.getA().getType()), bs = Shape(mm.getB().getType());
      llvm::SmallVector<AffineExpr> a, bb;
      for (unsigned i = 0; i < b; ++i) {
        a.push_back(as[i] == 1 && out[i] != 1 ? C(0) : map.getResult(i));
        bb.push_back(bs[i] == 1 && out[i] != 1 ? C(0) : map.getResult(i));
      }
      a.push_back(map.getResult(b));
      a.push_back(D(b + 2));
      bb.push_back(D(b + 2));
      bb.push_back(map.getResult(b + 1));
      set(0, Map(a));
      set(1, Map(bb));
      if (mm.getAccumulator()) set(2, map);
    } else {
      // Elementwise and broadcast: operand unit dims are read at 0.
      for (unsigned k = 0; k < op->getNumOperands(); ++k) {
        std::vector<int64_t> in = Shape(op->getOperand(k).getType());
        if (in.size() != out.size()) continue;  // scalars (splat values, index sizes)
        llvm::SmallVector<AffineExpr> r;
        for (size_t i = 0; i < in.size(); ++i) r.push_back(in[i] == 1 && out[i] != 1 ? C(0) : map.getResult(i));
        set(k, Map(r));
      }
    }
  }

  bool annotate_ = true;
  GraphOp graph_;
  mlir::MLIRContext *ctx_;
  std::string kind_;
  std::vector<int64_t> domain_, reduced_;
  llvm::DenseMap<mlir::OpOperand *, AffineMap> use_map_;
  mlir::Operation **conflict_ = nullptr;
};

}  // namespace

bool UnitDimsOnly(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out) {
  llvm::SmallVector<int64_t> a, b;
  for (int64_t d : in) {
    if (d != 1) a.push_back(d);
  }
  for (int64_t d : out) {
    if (d != 1) b.push_back(d);
  }
  return a == b;
}

mlir::FailureOr<AccessMaps> ComputeAccessMaps(GraphOp kernel, mlir::Operation **conflict) {
  if (!kernel->hasAttr("tir.kernel_kind") || !kernel->hasAttr("tir.iteration_domain")) {
    return kernel.emitOpError() << "is not a kernel graph (run tir-partition first)";
  }
  Builder b(kernel);
  if (conflict) {
    *conflict = nullptr;
    b.ReportConflictTo(conflict);
  }
  if (mlir::failed(b.Run())) return mlir::failure();
  AccessMaps maps;
  maps.operands = b.UseMaps();
  kernel.walk([&](mlir::Operation *op) {
    if (auto a = op->getAttrOfType<mlir::AffineMapAttr>("tir.access")) maps.results[op] = a.getValue();
  });
  // What the kernel computes its indices with: every division and modulus
  // by a positive constant, or the kernel is refused here (a modulus by a
  // dynamic size's placeholder once reached a kernel and killed its caller).
  for (const auto &[op, map] : maps.results) {
    if (!DivisorsInRange(map)) {
      return op->emitOpError() << "index map " << mlir::AffineMapAttr::get(map)
                               << " divides by a non-positive or non-constant amount";
    }
  }
  for (const auto &[use, map] : maps.operands) {
    if (!DivisorsInRange(map)) {
      return use->getOwner()->emitOpError() << "operand " << use->getOperandNumber() << " index map "
                                            << mlir::AffineMapAttr::get(map)
                                            << " divides by a non-positive or non-constant amount";
    }
  }
  return maps;
}

}  // namespace tir::planning
