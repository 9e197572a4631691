#include "compiler/reference/ShapeSolver.h"

#include <map>
#include <numeric>
#include <optional>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace tir::reference {
namespace {

using mlir::ShapedType;

// A term is a constant (>= 0) or a symbol (< 0: symbol -1 - term).
using Term = int64_t;

class Solver {
 public:
  explicit Solver(int64_t preferred) : preferred_(preferred) {}

  Term Const(int64_t v) { return v; }
  Term Fresh() {
    parent_.push_back(parent_.size());
    value_.push_back(-1);
    lower_.push_back(0);
    return -1 - static_cast<Term>(parent_.size() - 1);
  }
  // The constant a term has, or -1.
  int64_t ValueOf(Term t) {
    if (t >= 0) return t;
    return value_[Find(-1 - t)];
  }
  void Equate(Term a, Term b) {
    if (a >= 0 && b >= 0) {
      if (a != b) consistent_ = false;
      return;
    }
    if (a >= 0) std::swap(a, b);
    const size_t ra = Find(-1 - a);
    if (b >= 0) {
      Assign(ra, b);
      return;
    }
    const size_t rb = Find(-1 - b);
    if (ra == rb) return;
    parent_[rb] = ra;
    lower_[ra] = std::max(lower_[ra], lower_[rb]);
    if (value_[rb] >= 0) Assign(ra, value_[rb]);
  }
  void AtLeast(Term t, int64_t lo) {
    if (t >= 0) {
      if (t < lo) consistent_ = false;
      return;
    }
    const size_t r = Find(-1 - t);
    lower_[r] = std::max(lower_[r], lo);
    if (value_[r] >= 0 && value_[r] < lo) consistent_ = false;
  }
  // sum(terms) == total; product(lhs) == product(rhs).
  void Sum(std::vector<Term> terms, Term total) { sums_.push_back({std::move(terms), total}); }
  void Product(std::vector<Term> lhs, std::vector<Term> rhs) { products_.push_back({std::move(lhs), std::move(rhs)}); }

  void Solve(bool assignFree = true) {
    for (; assignFree;) {
      Propagate();
      // A product with several unknowns on one side (a reshape into
      // run-time extents): the first takes the divisor nearest the square
      // root of what is left, so the reshape regroups rather than only
      // merging or splitting dims.
      if (SplitProduct()) continue;
      // Give the first free symbol a value.
      bool assigned = false;
      for (size_t i = 0; i < parent_.size() && !assigned; ++i) {
        const size_t r = Find(i);
        if (value_[r] < 0) {
          Assign(r, std::max(preferred_, lower_[r]));
          assigned = true;
        }
      }
      if (!assigned) break;
    }
    Propagate();
  }
  bool consistent() const { return consistent_; }
  // The class of a symbol (nullopt for a constant).
  std::optional<size_t> Root(Term t) {
    if (t >= 0) return std::nullopt;
    return Find(-1 - t);
  }

 private:
  size_t Find(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void Assign(size_t r, int64_t v) {
    if (value_[r] >= 0) {
      if (value_[r] != v) consistent_ = false;
      return;
    }
    if (v < lower_[r]) consistent_ = false;
    value_[r] = v;
  }
  bool SplitProduct() {
    for (auto &[lhs, rhs] : products_) {
      for (int side = 0; side < 2; ++side) {
        const std::vector<Term> &open = side ? rhs : lhs, &closed = side ? lhs : rhs;
        int64_t total = 1, known = 1;
        bool ready = true;
        for (Term t : closed) {
          if (ValueOf(t) < 0) ready = false; else total *= ValueOf(t);
        }
        std::vector<Term> unknown;
        for (Term t : open) {
          if (ValueOf(t) >= 0) known *= ValueOf(t); else unknown.push_back(t);
        }
        if (!ready || unknown.size() < 2 || known == 0 || total % known != 0) continue;
        const int64_t left = total / known;
        int64_t q = 1;
        for (int64_t d = 1; d * d <= left; ++d) {
          if (left % d == 0) q = d;
        }
        Equate(unknown[0], q);
        return true;
      }
    }
    return false;
  }

  // Solves equations with exactly one unknown until none changes.
  void Propagate() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto &[terms, total] : sums_) {
        int64_t known = 0;
        std::vector<Term> unknown;
        for (Term t : terms) {
          if (ValueOf(t) >= 0) known += ValueOf(t); else unknown.push_back(t);
        }
        const int64_t tv = ValueOf(total);
        if (unknown.empty() && tv < 0) { Equate(total, known); changed = true; }
        else if (unknown.size() == 1 && tv >= 0) {
          if (tv - known < 0) { consistent_ = false; continue; }
          Equate(unknown[0], tv - known);
          changed = true;
        } else if (unknown.empty() && tv >= 0 && tv != known) {
          consistent_ = false;
        }
      }
      for (auto &[lhs, rhs] : products_) {
        auto side = [&](const std::vector<Term> &ts, int64_t &known, std::vector<Term> &unknown) {
          known = 1;
          for (Term t : ts) {
            if (ValueOf(t) >= 0) known *= ValueOf(t); else unknown.push_back(t);
          }
        };
        int64_t kl = 1, kr = 1;
        std::vector<Term> ul, ur;
        side(lhs, kl, ul);
        side(rhs, kr, ur);
        if (ul.size() + ur.size() != 1) {
          if (ul.empty() && ur.empty() && kl != kr) consistent_ = false;
          continue;
        }
        const int64_t have = ul.empty() ? kl : kr, other = ul.empty() ? kr : kl;
        const Term t = ul.empty() ? ur[0] : ul[0];
        if (other == 0 || have % other != 0) {
          consistent_ = false;
          Equate(t, other == 0 ? 0 : std::max<int64_t>(1, have / other));
        } else {
          Equate(t, have / other);
        }
        changed = true;
      }
    }
  }

  int64_t preferred_;
  std::vector<size_t> parent_;
  std::vector<int64_t> value_, lower_;
  std::vector<std::pair<std::vector<Term>, Term>> sums_;
  std::vector<std::pair<std::vector<Term>, std::vector<Term>>> products_;
  bool consistent_ = true;
};

struct ArgumentsAndValues {
  std::vector<std::vector<int64_t>> arguments;
  llvm::DenseMap<mlir::Value, std::vector<int64_t>> values;
};

class GraphShapes {
 public:
  GraphShapes(GraphOp graph, int64_t preferred) : graph_(graph), s_(preferred) {}

  // Fixes the arguments to known shapes / index values.
  void Fix(const std::vector<std::vector<int64_t>> &arguments) { fixed_ = &arguments; }

  // Solves, then the shape of every tensor value (-1: open).
  llvm::DenseMap<mlir::Value, std::vector<int64_t>> Shapes() {
    Run();
    return Collect();
  }
  // After Run: every tensor value's shape (-1: open) and every argument's
  // (an index argument's value, -1 when open).
  ArgumentsAndValues CollectAll() {
    ArgumentsAndValues out;
    out.values = Collect();
    for (mlir::BlockArgument arg : graph_.getBodyBlock().getArguments()) {
      std::vector<int64_t> v;
      if (arg.getType().isa<mlir::RankedTensorType>()) {
        for (Term t : dims_[arg]) v.push_back(s_.ValueOf(t));
      } else if (arg.getType().isIndex()) {
        v.push_back(s_.ValueOf(scalar_[arg]));
      }
      out.arguments.push_back(std::move(v));
    }
    return out;
  }
  llvm::DenseMap<mlir::Value, std::vector<int64_t>> Collect() {
    llvm::DenseMap<mlir::Value, std::vector<int64_t>> out;
    for (auto &[v, terms] : dims_) {
      std::vector<int64_t> shape;
      for (Term t : terms) shape.push_back(s_.ValueOf(t));
      out[v] = std::move(shape);
    }
    return out;
  }

  bool consistent() const { return s_.consistent(); }

  // After Constrain-ing every op (Run without Fix): per value dim, the
  // graph argument its symbol shares a class with.
  llvm::DenseMap<mlir::Value, std::vector<std::optional<ExtentSource>>> Sources() {
    Run();
    std::map<size_t, ExtentSource> byRoot;
    for (mlir::BlockArgument arg : graph_.getBodyBlock().getArguments()) {
      if (arg.getType().isa<mlir::RankedTensorType>()) {
        for (size_t d = 0; d < dims_[arg].size(); ++d) {
          if (std::optional<size_t> r = s_.Root(dims_[arg][d])) byRoot.emplace(*r, ExtentSource{arg.getArgNumber(), static_cast<int64_t>(d)});
        }
      } else if (arg.getType().isIndex()) {
        if (std::optional<size_t> r = s_.Root(scalar_[arg])) byRoot.emplace(*r, ExtentSource{arg.getArgNumber(), -1});
      }
    }
    llvm::DenseMap<mlir::Value, std::vector<std::optional<ExtentSource>>> out;
    for (auto &[v, terms] : dims_) {
      std::vector<std::optional<ExtentSource>> sources;
      for (Term t : terms) {
        std::optional<size_t> r = s_.Root(t);
        auto it = r ? byRoot.find(*r) : byRoot.end();
        sources.push_back(it == byRoot.end() ? std::nullopt : std::optional<ExtentSource>(it->second));
      }
      out[v] = std::move(sources);
    }
    return out;
  }

  SolvedShapes Run() {
    mlir::Block &body = graph_.getBodyBlock();
    for (mlir::BlockArgument arg : body.getArguments()) {
      Declare(arg);
      if (!fixed_ || arg.getArgNumber() >= fixed_->size()) continue;
      const std::vector<int64_t> &known = (*fixed_)[arg.getArgNumber()];
      if (arg.getType().isa<mlir::RankedTensorType>()) {
        for (size_t d = 0; d < known.size() && d < dims_[arg].size(); ++d) s_.Equate(dims_[arg][d], known[d]);
      } else if (arg.getType().isIndex() && !known.empty()) {
        s_.Equate(scalar_[arg], known[0]);
      }
    }
    // Ops in dependency order (a graph body is an unordered DAG).
    llvm::SetVector<mlir::Operation *> done;
    std::vector<mlir::Operation *> pending;
    for (mlir::Operation &op : body.without_terminator()) pending.push_back(&op);
    for (bool progress = true; progress && !pending.empty();) {
      progress = false;
      std::vector<mlir::Operation *> later;
      for (mlir::Operation *op : pending) {
        bool ready = true;
        for (mlir::Value v : op->getOperands()) {
          if (mlir::Operation *d = v.getDefiningOp(); d && !done.count(d)) ready = false;
        }
        if (!ready) {
          later.push_back(op);
          continue;
        }
        for (mlir::Value r : op->getResults()) Declare(r);
        Constrain(*op);
        done.insert(op);
        progress = true;
      }
      pending = std::move(later);
    }
    s_.Solve(/*assignFree=*/fixed_ == nullptr);
    SolvedShapes out;
    out.consistent = s_.consistent();
    for (mlir::BlockArgument arg : body.getArguments()) {
      std::vector<int64_t> v;
      if (arg.getType().isa<mlir::RankedTensorType>()) {
        for (Term t : dims_[arg]) v.push_back(std::max<int64_t>(0, s_.ValueOf(t)));
      } else if (arg.getType().isIndex()) {
        v.push_back(std::max<int64_t>(0, s_.ValueOf(scalar_[arg])));
      }
      out.arguments.push_back(std::move(v));
    }
    return out;
  }

 private:
  void Declare(mlir::Value v) {
    if (auto t = v.getType().dyn_cast<mlir::RankedTensorType>()) {
      std::vector<Term> d;
      for (int64_t e : t.getShape()) d.push_back(ShapedType::isDynamic(e) ? s_.Fresh() : s_.Const(e));
      dims_[v] = std::move(d);
    } else if (v.getType().isIndex()) {
      scalar_[v] = s_.Fresh();
    }
  }
  const std::vector<Term> &D(mlir::Value v) { return dims_[v]; }

  // out[d] follows the operands' d by the broadcast rule (a static 1 yields).
  void Elementwise(mlir::Operation &op, mlir::Value out) {
    const std::vector<Term> &o = D(out);
    for (mlir::Value in : op.getOperands()) {
      if (!in.getType().isa<mlir::RankedTensorType>()) continue;
      const std::vector<Term> &i = D(in);
      if (i.size() != o.size()) continue;
      for (size_t d = 0; d < o.size(); ++d) {
        if (s_.ValueOf(i[d]) == 1 && i[d] >= 0) continue;  // a static 1 broadcasts
        s_.Equate(i[d], o[d]);
      }
    }
  }
  // The k-th dynamic dim of `out` is dynamic_dims[k].
  void DynamicDims(mlir::Value out, mlir::ValueRange dynamic) {
    auto type = out.getType().cast<mlir::RankedTensorType>();
    size_t k = 0;
    for (int64_t d = 0; d < type.getRank() && k < dynamic.size(); ++d) {
      if (type.isDynamicDim(d)) s_.Equate(D(out)[d], scalar_[dynamic[k++]]);
    }
  }

  void Constrain(mlir::Operation &op) {
    if (auto b = llvm::dyn_cast<BroadcastOp>(op)) {
      DynamicDims(b.getOutput(), b.getDynamicDims());
      const auto &i = D(b.getInput()), &o = D(b.getOutput());
      for (size_t d = 0; d < i.size() && d < o.size(); ++d) {
        if (!(i[d] >= 0 && i[d] == 1)) s_.Equate(i[d], o[d]);
      }
    } else if (auto sp = llvm::dyn_cast<SplatOp>(op)) {
      DynamicDims(sp.getOutput(), sp.getDynamicDims());
    } else if (auto io = llvm::dyn_cast<IotaOp>(op)) {
      DynamicDims(io.getOutput(), io.getDynamicDims());
    } else if (auto rs = llvm::dyn_cast<ReshapeOp>(op)) {
      DynamicDims(rs.getOutput(), rs.getDynamicDims());
      s_.Product(D(rs.getInput()), D(rs.getOutput()));
    } else if (auto tr = llvm::dyn_cast<TransposeOp>(op)) {
      auto perm = tr.getPermutation();
      for (size_t d = 0; d < perm.size(); ++d) s_.Equate(D(tr.getOutput())[d], D(tr.getInput())[perm[d]]);
    } else if (auto sl = llvm::dyn_cast<SliceOp>(op)) {
      auto outType = sl.getOutput().getType().cast<mlir::RankedTensorType>();
      for (size_t d = 0; d < sl.getLimits().size(); ++d) {
        if (outType.isDynamicDim(d)) {
          s_.Equate(D(sl.getOutput())[d], D(sl.getInput())[d]);  // a dynamic dim kept whole
        } else {
          s_.AtLeast(D(sl.getInput())[d], sl.getLimits()[d]);
        }
      }
    } else if (auto c = llvm::dyn_cast<ConcatenateOp>(op)) {
      const size_t axis = c.getDimension();
      std::vector<Term> parts;
      for (mlir::Value in : c.getInputs()) {
        for (size_t d = 0; d < D(in).size(); ++d) {
          if (d == axis) parts.push_back(D(in)[d]); else s_.Equate(D(in)[d], D(c.getOutput())[d]);
        }
      }
      s_.Sum(parts, D(c.getOutput())[axis]);
    } else if (auto r = llvm::dyn_cast<ReduceOp>(op)) {
      Kept(r.getInput(), r.getOutput(), r.getDimensions());
    } else if (auto u = llvm::dyn_cast<ReduceUdOp>(op)) {
      for (size_t k = 0; k < u.getInputs().size(); ++k) {
        Kept(u.getInputs()[k], u.getOutputs()[k], u.getDimensions());
        for (size_t d = 0; d < D(u.getInputs()[k]).size(); ++d) s_.Equate(D(u.getInputs()[0])[d], D(u.getInputs()[k])[d]);
      }
    } else if (auto m = llvm::dyn_cast<MatmulOp>(op)) {
      const auto &a = D(m.getA()), &b = D(m.getB()), &c2 = D(m.getC());
      const size_t r2 = a.size();
      s_.Equate(a[r2 - 1], b[r2 - 2]);
      s_.Equate(c2[r2 - 2], a[r2 - 2]);
      s_.Equate(c2[r2 - 1], b[r2 - 1]);
      for (size_t d = 0; d + 2 < r2; ++d) {
        for (Term t : {a[d], b[d]}) {
          if (!(t >= 0 && t == 1)) s_.Equate(t, c2[d]);
        }
      }
      if (m.getAccumulator()) {
        for (size_t d = 0; d < r2; ++d) s_.Equate(D(m.getAccumulator())[d], c2[d]);
      }
    } else if (auto g = llvm::dyn_cast<GatherOp>(op)) {
      // data.shape[:axis] + indices.shape + data.shape[axis+1:]
      const auto &data = D(g.getData()), &indices = D(g.getIndices()), &out = D(g.getOutput());
      const size_t axis = g.getAxis();
      size_t at = 0;
      for (size_t d = 0; d < data.size() && at < out.size(); ++d) {
        if (d == axis) {
          for (Term t : indices) {
            if (at < out.size()) s_.Equate(t, out[at++]);
          }
        } else {
          s_.Equate(data[d], out[at++]);
        }
      }
    } else if (auto dm = llvm::dyn_cast<DimOp>(op)) {
      s_.Equate(scalar_[dm.getOutput()], D(dm.getInput())[dm.getDimension()]);
    } else if (op.getNumResults() == 1 && op.getResult(0).getType().isa<mlir::RankedTensorType>() &&
               !llvm::isa<ConstantOp>(op)) {
      Elementwise(op, op.getResult(0));
    }
  }
  void Kept(mlir::Value in, mlir::Value out, llvm::ArrayRef<int32_t> reduced) {
    for (size_t d = 0; d < D(in).size(); ++d) {
      if (!llvm::is_contained(reduced, static_cast<int32_t>(d))) s_.Equate(D(in)[d], D(out)[d]);
    }
  }

  GraphOp graph_;
  Solver s_;
  const std::vector<std::vector<int64_t>> *fixed_ = nullptr;
  llvm::DenseMap<mlir::Value, std::vector<Term>> dims_;
  llvm::DenseMap<mlir::Value, Term> scalar_;
};

}  // namespace

llvm::DenseMap<mlir::Value, std::vector<int64_t>> ValueShapes(GraphOp graph,
                                                             const std::vector<std::vector<int64_t>> &arguments) {
  GraphShapes g(graph, 1);
  g.Fix(arguments);
  return g.Shapes();
}

InferredShapes InferShapes(GraphOp graph, const std::vector<std::vector<int64_t>> &arguments) {
  GraphShapes g(graph, 1);
  g.Fix(arguments);
  g.Run();
  ArgumentsAndValues all = g.CollectAll();
  InferredShapes out;
  out.values = std::move(all.values);
  out.arguments = std::move(all.arguments);
  out.consistent = g.consistent();
  return out;
}

llvm::DenseMap<mlir::Value, std::vector<std::optional<ExtentSource>>> ExtentSources(GraphOp graph) {
  static const std::vector<std::vector<int64_t>> kNone;
  GraphShapes g(graph, 1);
  g.Fix(kNone);  // nothing fixed, and no free symbol given a value
  return g.Sources();
}

SolvedShapes SolveDynamicExtents(GraphOp graph, int64_t preferred) {
  SolvedShapes best;
  for (int64_t p : {preferred, preferred * 3, preferred * 15, preferred * 105}) {
    SolvedShapes s = GraphShapes(graph, p).Run();
    if (s.consistent) return s;
    if (best.arguments.empty()) best = s;
  }
  return best;
}

}  // namespace tir::reference
