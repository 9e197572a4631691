//===- Interpreter.cpp - reference evaluation of tir graphs ---------------===//

#include "compiler/reference/Interpreter.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/conversion/DTypes.h"
#include "compiler/reference/Elementwise.h"
#include "compiler/reference/ScalarArith.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/support/status.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tir::reference {
namespace {

absl::Status Invalid(const std::string &m) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", m);
}

std::string Str(const std::vector<int64_t> &shape) {
  Tensor t;
  t.shape = shape;
  return t.ShapeString();
}

std::vector<int64_t> Strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// Multi-index of row-major position k.
void Unravel(int64_t k, const std::vector<int64_t> &shape, std::vector<int64_t> &idx) {
  idx.resize(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
}

// Row-major position in `shape` of idx, with size-1 dims broadcast.
int64_t BroadcastIndex(const std::vector<int64_t> &idx, const std::vector<int64_t> &shape) {
  int64_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) k = k * shape[d] + (shape[d] == 1 ? 0 : idx[d]);
  return k;
}

class Interpreter {
 public:
  absl::StatusOr<std::vector<Tensor>> Run(GraphOp graph, const std::vector<Tensor> &inputs) {
    mlir::Block &block = graph.getBodyBlock();
    if (inputs.size() != block.getNumArguments()) {
      return Invalid(absl::StrCat("graph @", graph.getSymName().str(), " takes ",
                                  block.getNumArguments(), " inputs, got ", inputs.size()));
    }
    graph_ = graph;
    for (mlir::BlockArgument arg : block.getArguments()) {
      const Tensor &t = inputs[arg.getArgNumber()];
      TIR_RETURN_IF_ERROR(CheckMatches(t, arg.getType(), absl::StrCat("input #", arg.getArgNumber())));
      values_[arg.getAsOpaquePointer()] = t;
      const bool index = arg.getType().isIndex();
      arguments_.push_back(t.scalar ? (index ? std::vector<int64_t>{t.GetI(0)} : std::vector<int64_t>{}) : t.shape);
    }
    for (mlir::Operation &op : block.without_terminator()) {
      TIR_RETURN_IF_ERROR(Eval(op));
      if (track_) TIR_RETURN_IF_ERROR(Propagate(op));
    }
    std::vector<Tensor> out;
    for (mlir::Value v : block.getTerminator()->getOperands()) out.push_back(Get(v));
    return out;
  }

  // Also work out each value's rounding scale (Interpreter.h's Reference).
  void TrackRounding() { track_ = true; }
  // The scale of `v`, or null where none reaches it.
  const Tensor *RoundingOf(mlir::Value v) const {
    auto it = rounding_.find(v.getAsOpaquePointer());
    return it == rounding_.end() ? nullptr : &it->second;
  }

 private:
  // ---- rounding scales (see Interpreter.h) ----

  // The unit roundoff of the accumulator kernels sum `dtype` in: f64 in
  // f64, every other float in f32.
  static double AccumulatorRoundoff(DType dtype) {
    return dtype == tir::v1::DTYPE_F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  }

  // The scale of `v` at element k, 0 where it has none.
  double ScaleAt(mlir::Value v, int64_t k) const {
    const Tensor *t = RoundingOf(v);
    return t ? t->f[k] : 0.0;
  }

  absl::Status Propagate(mlir::Operation &op) {
    if (op.getNumResults() == 0 || !op.getResult(0).getType().isa<mlir::RankedTensorType>()) return absl::OkStatus();
    if (!IsFloat(Get(op.getResult(0)).dtype)) return absl::OkStatus();  // integers and i1 are exact
    bool carried = false;
    for (mlir::Value v : op.getOperands()) carried |= RoundingOf(v) != nullptr;
    const bool sums = (llvm::isa<ReduceOp>(op) && (llvm::cast<ReduceOp>(op).getReductionMode() == ReductionMode::add ||
                                                   llvm::cast<ReduceOp>(op).getReductionMode() == ReductionMode::avg)) ||
                      llvm::isa<MatmulOp>(op);
    if (!carried && !sums) return absl::OkStatus();
    if (std::optional<Pointwise> pw = PointwiseOf(op.getName().getStringRef())) return PointwiseRounding(op, *pw);
    return llvm::TypeSwitch<mlir::Operation *, absl::Status>(&op)
        .Case<ReduceOp>([&](ReduceOp o) { return ReduceRounding(o); })
        .Case<MatmulOp>([&](MatmulOp o) { return MatmulRounding(o); })
        .Case<BinarySelectOp>([&](BinarySelectOp o) {
          const Tensor &c = Get(o.getCond()), &out = Get(o.getOutput());
          const Tensor *ea = RoundingOf(o.getLhs()), *eb = RoundingOf(o.getRhs());
          const Tensor &a = Get(o.getLhs()), &b = Get(o.getRhs());
          Tensor e = Tensor::Zeros(tir::v1::DTYPE_F64, out.shape);
          std::vector<int64_t> idx;
          for (int64_t k = 0; k < e.NumElements(); ++k) {
            Unravel(k, out.shape, idx);
            const bool pick = c.GetF(BroadcastIndex(idx, c.shape)) != 0;
            const Tensor *src = pick ? ea : eb;
            if (src) e.f[k] = src->f[BroadcastIndex(idx, (pick ? a : b).shape)];
          }
          return SetRounding(o.getOutput(), std::move(e));
        })
        .Case<ConvertOp>([&](ConvertOp o) {
          if (const Tensor *e = RoundingOf(o.getInput())) return SetRounding(o.getOutput(), *e);
          return absl::OkStatus();
        })
        // Views move elements: their scales move with them.
        .Case<BroadcastOp, ReshapeOp, TransposeOp, SliceOp, ConcatenateOp, GatherOp>(
            [&](mlir::Operation *view) { return ViewRounding(*view); })
        .Default([&](mlir::Operation *) { return absl::OkStatus(); });
  }

  absl::Status SetRounding(mlir::Value v, Tensor e) {
    for (double &x : e.f) {
      if (!std::isfinite(x)) x = 0;  // no bound from a value that overflows
    }
    rounding_[v.getAsOpaquePointer()] = std::move(e);
    return absl::OkStatus();
  }

  // A view evaluated on its operands' scales (zeros where one has none).
  absl::Status ViewRounding(mlir::Operation &op) {
    std::vector<std::pair<const void *, Tensor>> saved;
    for (mlir::Value v : op.getOperands()) {
      const Tensor &real = Get(v);
      if (!v.getType().isa<mlir::RankedTensorType>() || !IsFloat(real.dtype)) continue;
      const Tensor *e = RoundingOf(v);
      Tensor scale = e ? *e : Tensor::Zeros(tir::v1::DTYPE_F64, real.shape);
      saved.emplace_back(v.getAsOpaquePointer(), real);
      values_[v.getAsOpaquePointer()] = std::move(scale);
    }
    const void *result = op.getResult(0).getAsOpaquePointer();
    Tensor real = values_[result];
    absl::Status status = Eval(op);
    Tensor scale = std::move(values_[result]);
    values_[result] = std::move(real);
    for (auto &[v, t] : saved) values_[v] = std::move(t);
    TIR_RETURN_IF_ERROR(status);
    scale.dtype = tir::v1::DTYPE_F64;
    return SetRounding(op.getResult(0), std::move(scale));
  }

  // First order, per operand that carries a scale e: how far the op moves
  // when that operand moves by e either way, in f64 (the scalar semantics
  // before the result's rounding), summed over the operands.
  absl::Status PointwiseRounding(mlir::Operation &op, Pointwise pw) {
    const Tensor &out = Get(op.getResult(0));
    const Tensor &a = Get(op.getOperand(0));
    const Tensor *b = op.getNumOperands() > 1 ? &Get(op.getOperand(1)) : nullptr;
    const Tensor *ea = RoundingOf(op.getOperand(0)), *eb = b ? RoundingOf(op.getOperand(1)) : nullptr;
    double beta = 1.0;
    if (auto attr = op.getAttrOfType<mlir::FloatAttr>("beta")) beta = attr.getValueAsDouble();
    auto f = [&](double x, double y) { return b ? FloatBinary(pw, x, y, beta) : FloatUnary(pw, x, beta); };
    auto moved = [&](double f0, double x, double y, double dx, double dy) {
      return std::max(std::fabs(f(x + dx, y + dy) - f0), std::fabs(f(x - dx, y - dy) - f0));
    };
    Tensor e = Tensor::Zeros(tir::v1::DTYPE_F64, out.shape);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < e.NumElements(); ++k) {
      Unravel(k, out.shape, idx);
      const int64_t ka = BroadcastIndex(idx, a.shape), kb = b ? BroadcastIndex(idx, b->shape) : 0;
      const double x = a.GetF(ka), y = b ? b->GetF(kb) : 0.0, f0 = f(x, y);
      double sum = 0;
      if (ea && ea->f[ka] > 0) sum += moved(f0, x, y, ea->f[ka], 0);
      if (eb && eb->f[kb] > 0) sum += moved(f0, x, y, 0, eb->f[kb]);
      e.f[k] = sum;
    }
    return SetRounding(op.getResult(0), std::move(e));
  }

  // A sum (or mean) of n terms x_i: u sqrt(n) sum |x_i| (over n), the
  // statistical size of a float sum's rounding (Tensor.h's CheckOutput says
  // why), plus the terms' own scales; max, min and norms carry their
  // inputs' scales only (their own rounding does not cancel).
  absl::Status ReduceRounding(ReduceOp o) {
    const Tensor &in = Get(o.getInput());
    const Tensor *ein = RoundingOf(o.getInput());
    const ReductionMode mode = o.getReductionMode();
    const bool sums = mode == ReductionMode::add || mode == ReductionMode::avg;
    if (!sums && mode != ReductionMode::max && mode != ReductionMode::min && mode != ReductionMode::amax &&
        mode != ReductionMode::norm1 && mode != ReductionMode::norm2) {
      return absl::OkStatus();  // products: relative rounding, the dtype's bound holds
    }
    std::vector<int64_t> outShape;
    ForEachReduced(in.shape, o.getDimensions(), outShape, [](int64_t, int64_t) {});
    const int64_t outN = std::accumulate(outShape.begin(), outShape.end(), int64_t{1}, std::multiplies<>());
    const int64_t n = outN ? in.NumElements() / outN : 0;
    std::vector<double> absSum(outN), eSum(outN), eMax(outN), eSquares(outN);
    ForEachReduced(in.shape, o.getDimensions(), outShape, [&](int64_t out, int64_t k) {
      const double x = in.GetF(k);
      if (std::isfinite(x)) absSum[out] += std::fabs(x);
      if (ein) {
        const double e = ein->f[k];
        eSum[out] += e;
        eMax[out] = std::max(eMax[out], e);
        eSquares[out] += e * e;
      }
    });
    const double u = AccumulatorRoundoff(in.dtype), root = std::sqrt(static_cast<double>(std::max<int64_t>(n, 1)));
    Tensor e = Tensor::Zeros(tir::v1::DTYPE_F64, outShape);
    for (int64_t k = 0; k < outN; ++k) {
      switch (mode) {
        case ReductionMode::add: e.f[k] = u * root * absSum[k] + eSum[k]; break;
        case ReductionMode::avg: e.f[k] = n ? (u * root * absSum[k] + eSum[k]) / static_cast<double>(n) : 0; break;
        case ReductionMode::norm1: e.f[k] = eSum[k]; break;
        case ReductionMode::norm2: e.f[k] = std::sqrt(eSquares[k]); break;
        default: e.f[k] = eMax[k]; break;  // max, min, amax
      }
    }
    return SetRounding(o.getOutput(), std::move(e));
  }

  // A matmul sums K products: u sqrt(K) sum_k |a_ik b_kj|, plus the
  // operands' scales through the products (and the accumulator's).
  absl::Status MatmulRounding(MatmulOp o) {
    const Tensor &a = Get(o.getA()), &b = Get(o.getB()), &c = Get(o.getC());
    const Tensor *ea = RoundingOf(o.getA()), *eb = RoundingOf(o.getB());
    const Tensor *eacc = o.getAccumulator() ? RoundingOf(o.getAccumulator()) : nullptr;
    const int64_t r = a.shape.size();
    const int64_t m = a.shape[r - 2], kk = a.shape[r - 1], n = b.shape[r - 1];
    std::vector<int64_t> batchShape(c.shape.begin(), c.shape.end() - 2), aBatch(a.shape.begin(), a.shape.end() - 2),
        bBatch(b.shape.begin(), b.shape.end() - 2);
    int64_t batches = 1;
    for (int64_t x : batchShape) batches *= x;
    const double u = AccumulatorRoundoff(a.dtype), root = std::sqrt(static_cast<double>(std::max<int64_t>(kk, 1)));
    Tensor e = Tensor::Zeros(tir::v1::DTYPE_F64, c.shape);
    std::vector<int64_t> idx;
    for (int64_t bi = 0; bi < batches; ++bi) {
      Unravel(bi, batchShape, idx);
      const int64_t ab = BroadcastIndex(idx, aBatch), bb = BroadcastIndex(idx, bBatch);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double products = 0, carried = 0;
          for (int64_t p = 0; p < kk; ++p) {
            const int64_t ka = (ab * m + i) * kk + p, kb = (bb * kk + p) * n + j;
            const double x = std::fabs(a.GetF(ka)), y = std::fabs(b.GetF(kb));
            products += x * y;
            if (ea) carried += ea->f[ka] * y;
            if (eb) carried += x * eb->f[kb];
          }
          const int64_t at = (bi * m + i) * n + j;
          e.f[at] = u * root * products + carried + (eacc ? eacc->f[at] : 0.0);
        }
      }
    }
    return SetRounding(o.getC(), std::move(e));
  }

  absl::Status CheckMatches(const Tensor &t, mlir::Type type, const std::string &what) {
    if (auto tensor = type.dyn_cast<mlir::RankedTensorType>()) {
      if (t.scalar) return Invalid(what + " must be a tensor, got a scalar");
      if (t.dtype != DTypeOf(tensor.getElementType())) {
        return Invalid(absl::StrCat(what, " has dtype ", DTypeName(t.dtype), ", expected ",
                                    DTypeName(DTypeOf(tensor.getElementType()))));
      }
      if (static_cast<int64_t>(t.shape.size()) != tensor.getRank()) {
        return Invalid(absl::StrCat(what, " has shape ", t.ShapeString(), ", expected rank ", tensor.getRank()));
      }
      for (int64_t d = 0; d < tensor.getRank(); ++d) {
        if (t.shape[d] < 0 || (!tensor.isDynamicDim(d) && tensor.getDimSize(d) != t.shape[d])) {
          return Invalid(absl::StrCat(what, " has shape ", t.ShapeString(), ", which does not fit the declared type"));
        }
      }
      return absl::OkStatus();
    }
    if (!t.scalar) return Invalid(what + " must be a scalar");
    if (t.dtype != DTypeOf(type)) return Invalid(absl::StrCat(what, " has the wrong scalar dtype"));
    return absl::OkStatus();
  }

  const Tensor &Get(mlir::Value v) { return values_.at(v.getAsOpaquePointer()); }

  // The extent of dim `d` of `v` that the graph's shape inference gives
  // from the inputs' shapes (ShapeSolver's rules), or -1: a size an op does
  // not carry itself (a broadcast to `?` from a unit dim, a splat without
  // dynamic_dims) that other ops tie to an input's.
  int64_t Inferred(mlir::Value v, int64_t d) {
    if (!inferred_) inferred_ = ValueShapes(graph_, arguments_);
    auto it = inferred_->find(v);
    if (it == inferred_->end() || d >= static_cast<int64_t>(it->second.size())) return -1;
    return it->second[d];
  }

  // Result shape: static dims from the type, dynamic ones from `dynamic`
  // (in order), else from `fallback`, else from the graph's shape inference.
  absl::StatusOr<std::vector<int64_t>> ResultShape(mlir::Operation &op, mlir::ValueRange dynamicDims,
                                                   const std::vector<int64_t> &fallback) {
    auto type = op.getResult(0).getType().cast<mlir::RankedTensorType>();
    std::vector<int64_t> shape;
    size_t next = 0;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        shape.push_back(type.getDimSize(d));
      } else if (!dynamicDims.empty()) {
        shape.push_back(Get(dynamicDims[next++]).GetI(0));
      } else if (d < static_cast<int64_t>(fallback.size()) && fallback[d] >= 0) {
        shape.push_back(fallback[d]);
      } else if (const int64_t inferred = Inferred(op.getResult(0), d); inferred >= 0) {
        shape.push_back(inferred);
      } else {
        return Invalid(absl::StrCat(op.getName().getStringRef().str(), ": dynamic result dimension ", d,
                                    " has no size (give dynamic_dims)"));
      }
      if (shape.back() < 0) return Invalid("negative dynamic extent");
    }
    return shape;
  }

  absl::Status Eval(mlir::Operation &op) {
    if (std::optional<Pointwise> pw = PointwiseOf(op.getName().getStringRef())) return EvalPointwise(op, *pw);
    return llvm::TypeSwitch<mlir::Operation *, absl::Status>(&op)
        .Case<CmpOp>([&](CmpOp o) { return EvalCmp(o); })
        .Case<BinarySelectOp>([&](BinarySelectOp o) { return EvalSelect(o); })
        .Case<ConvertOp>([&](ConvertOp o) {
          const Tensor &in = Get(o.getInput());
          Tensor out = Tensor::Zeros(DTypeOf(ElementOf(o.getOutput())), in.shape);
          for (int64_t k = 0; k < in.NumElements(); ++k) {
            if (in.UsesInts() && out.UsesInts()) out.SetI(k, in.GetI(k)); else out.SetF(k, in.GetF(k));
          }
          return Set(o.getOutput(), std::move(out));
        })
        .Case<ConstantOp>([&](ConstantOp o) { return EvalConstant(o); })
        .Case<SplatOp>([&](SplatOp o) -> absl::Status {
          TIR_ASSIGN_OR_RETURN(auto shape, ResultShape(op, o.getDynamicDims(), {}));
          const Tensor &v = Get(o.getValue());
          Tensor out = Tensor::Zeros(v.dtype, shape);
          for (int64_t k = 0; k < out.NumElements(); ++k) {
            if (out.UsesInts()) out.SetI(k, v.GetI(0)); else out.SetF(k, v.GetF(0));
          }
          return Set(o.getOutput(), std::move(out));
        })
        .Case<IotaOp>([&](IotaOp o) -> absl::Status {
          TIR_ASSIGN_OR_RETURN(auto shape, ResultShape(op, o.getDynamicDims(), {}));
          Tensor out = Tensor::Zeros(DTypeOf(ElementOf(o.getOutput())), shape);
          std::vector<int64_t> idx;
          for (int64_t k = 0; k < out.NumElements(); ++k) {
            Unravel(k, shape, idx);
            out.SetI(k, idx[o.getDimension()]);
          }
          return Set(o.getOutput(), std::move(out));
        })
        .Case<DimOp>([&](DimOp o) {
          return Set(o.getOutput(), Tensor::ScalarInt(tir::v1::DTYPE_INDEX,
                                                      Get(o.getInput()).shape[o.getDimension()]));
        })
        .Case<BroadcastOp>([&](BroadcastOp o) -> absl::Status {
          const Tensor &in = Get(o.getInput());
          std::vector<int64_t> fallback = in.shape;
          for (int64_t &d : fallback) if (d == 1) d = -1;
          TIR_ASSIGN_OR_RETURN(auto shape, ResultShape(op, o.getDynamicDims(), fallback));
          for (size_t d = 0; d < shape.size(); ++d) {
            if (in.shape[d] != 1 && in.shape[d] != shape[d]) {
              return Invalid(absl::StrCat("broadcast of ", in.ShapeString(), " to ", Str(shape), " at run time"));
            }
          }
          return Set(o.getOutput(), Gather(in, shape, [&](const std::vector<int64_t> &idx) {
                       return BroadcastIndex(idx, in.shape);
                     }));
        })
        .Case<ReshapeOp>([&](ReshapeOp o) { return EvalReshape(o); })
        .Case<TransposeOp>([&](TransposeOp o) -> absl::Status {
          const Tensor &in = Get(o.getInput());
          auto perm = o.getPermutation();
          std::vector<int64_t> shape;
          for (int64_t p : perm) shape.push_back(in.shape[p]);
          const std::vector<int64_t> inStrides = Strides(in.shape);
          return Set(o.getOutput(), Gather(in, shape, [&](const std::vector<int64_t> &idx) {
                       int64_t k = 0;
                       for (size_t d = 0; d < perm.size(); ++d) k += idx[d] * inStrides[perm[d]];
                       return k;
                     }));
        })
        .Case<SliceOp>([&](SliceOp o) -> absl::Status {
          const Tensor &in = Get(o.getInput());
          auto starts = o.getStarts(), steps = o.getStrides();
          std::vector<int64_t> limits(o.getLimits().begin(), o.getLimits().end());
          auto outType = o.getOutput().getType().cast<mlir::RankedTensorType>();
          std::vector<int64_t> shape;
          for (size_t d = 0; d < in.shape.size(); ++d) {
            if (outType.isDynamicDim(d)) limits[d] = in.shape[d];  // a dynamic dim kept whole
            if (limits[d] > in.shape[d]) {
              return Invalid(absl::StrCat("slice limit ", limits[d], " exceeds extent ", in.shape[d],
                                          " of dimension ", d, " at run time"));
            }
            shape.push_back((limits[d] - starts[d] + steps[d] - 1) / steps[d]);
          }
          const std::vector<int64_t> inStrides = Strides(in.shape);
          return Set(o.getOutput(), Gather(in, shape, [&](const std::vector<int64_t> &idx) {
                       int64_t k = 0;
                       for (size_t d = 0; d < idx.size(); ++d) k += (starts[d] + idx[d] * steps[d]) * inStrides[d];
                       return k;
                     }));
        })
        .Case<ConcatenateOp>([&](ConcatenateOp o) { return EvalConcat(o); })
        .Case<GatherOp>([&](GatherOp o) { return EvalGather(o); })
        .Case<ReduceOp>([&](ReduceOp o) { return EvalReduce(o); })
        .Case<ReduceUdOp>([&](ReduceUdOp o) { return EvalReduceUd(o); })
        .Case<MatmulOp>([&](MatmulOp o) { return EvalMatmul(o); })
        .Case<LaunchOp>([&](LaunchOp o) -> absl::Status {
          auto callee = mlir::SymbolTable::lookupNearestSymbolFrom<GraphOp>(o, o.getCalleeAttr());
          if (!callee) return Invalid("launch of an unknown kernel graph");
          std::vector<Tensor> args;
          for (mlir::Value v : o.getArgs()) args.push_back(Get(v));
          TIR_ASSIGN_OR_RETURN(std::vector<Tensor> outs, Interpreter().Run(callee, args));
          for (auto [i, r] : llvm::enumerate(o.getResults())) TIR_RETURN_IF_ERROR(Set(r, std::move(outs[i])));
          return absl::OkStatus();
        })
        .Default([&](mlir::Operation *) {
          return MakeError(absl::StatusCode::kUnimplemented, "UNSUPPORTED_OP",
                           absl::StrCat("the reference interpreter cannot evaluate ",
                                        op.getName().getStringRef().str()));
        });
  }

  static mlir::Type ElementOf(mlir::Value v) {
    mlir::Type t = v.getType();
    if (auto s = t.dyn_cast<mlir::ShapedType>()) return s.getElementType();
    return t;
  }

  absl::Status Set(mlir::Value v, Tensor t) {
    values_[v.getAsOpaquePointer()] = std::move(t);
    return absl::OkStatus();
  }

  template <typename IndexFn>
  Tensor Gather(const Tensor &in, const std::vector<int64_t> &shape, IndexFn source) {
    Tensor out = Tensor::Zeros(in.dtype, shape);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < out.NumElements(); ++k) {
      Unravel(k, shape, idx);
      const int64_t s = source(idx);
      if (out.UsesInts()) out.i[k] = in.i[s]; else out.f[k] = in.f[s];
    }
    return out;
  }

  absl::StatusOr<std::vector<int64_t>> MergeShapes(mlir::Operation &op) {
    std::vector<int64_t> shape = Get(op.getOperand(0)).shape;
    for (mlir::Value v : op.getOperands().drop_front()) {
      const std::vector<int64_t> &s = Get(v).shape;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == s[d] || s[d] == 1) continue;
        if (shape[d] == 1) { shape[d] = s[d]; continue; }
        return Invalid(absl::StrCat(op.getName().getStringRef().str(), ": operand shapes ", Str(shape), " and ",
                                    Str(s), " do not broadcast at run time"));
      }
    }
    return shape;
  }

  absl::Status EvalPointwise(mlir::Operation &op, Pointwise pw) {
    TIR_ASSIGN_OR_RETURN(std::vector<int64_t> shape, MergeShapes(op));
    const DType outType = DTypeOf(ElementOf(op.getResult(0)));
    const DType inType = DTypeOf(ElementOf(op.getOperand(0)));
    double beta = 1.0;
    if (auto b = op.getAttrOfType<mlir::FloatAttr>("beta")) beta = b.getValueAsDouble();
    Tensor out = Tensor::Zeros(outType, shape);
    const Tensor &a = Get(op.getOperand(0));
    const Tensor *b = op.getNumOperands() > 1 ? &Get(op.getOperand(1)) : nullptr;
    const bool ints = IsInteger(inType) && (b == nullptr || IsInteger(b->dtype)) && IsInteger(outType);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < out.NumElements(); ++k) {
      Unravel(k, shape, idx);
      const int64_t ka = BroadcastIndex(idx, a.shape);
      if (IsUnaryPointwise(pw)) {
        if (ints) {
          out.SetI(k, IsUnsigned(inType) && pw == Pointwise::kAbs ? a.GetI(ka) : IntUnary(pw, a.GetI(ka)));
        } else {
          out.SetF(k, FloatUnary(pw, a.GetF(ka), beta));
        }
        continue;
      }
      const int64_t kb = BroadcastIndex(idx, b->shape);
      if (ints || ((pw == Pointwise::kAnd || pw == Pointwise::kOr) && IsInteger(inType))) {
        out.SetI(k, IntBinary(pw, a.GetI(ka), b->GetI(kb), IsUnsigned(inType)));
      } else {
        out.SetF(k, FloatBinary(pw, a.GetF(ka), b->GetF(kb), beta));
      }
    }
    return Set(op.getResult(0), std::move(out));
  }

  absl::Status EvalCmp(CmpOp o) {
    TIR_ASSIGN_OR_RETURN(std::vector<int64_t> shape, MergeShapes(*o));
    const Tensor &a = Get(o.getLhs()), &b = Get(o.getRhs());
    Tensor out = Tensor::Zeros(tir::v1::DTYPE_I1, shape);
    const bool isUnsigned = IsUnsigned(a.dtype);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < out.NumElements(); ++k) {
      Unravel(k, shape, idx);
      const int64_t ka = BroadcastIndex(idx, a.shape), kb = BroadcastIndex(idx, b.shape);
      bool r = false;
      if (isFloatPredicate(o.getPredicate())) {
        const double x = a.GetF(ka), y = b.GetF(kb);
        const bool unordered = std::isnan(x) || std::isnan(y);
        switch (o.getPredicate()) {
          case CmpPredicate::oeq: r = !unordered && x == y; break;
          case CmpPredicate::one: r = !unordered && x != y; break;
          case CmpPredicate::ogt: r = !unordered && x > y; break;
          case CmpPredicate::oge: r = !unordered && x >= y; break;
          case CmpPredicate::olt: r = !unordered && x < y; break;
          case CmpPredicate::ole: r = !unordered && x <= y; break;
          case CmpPredicate::ueq: r = unordered || x == y; break;
          case CmpPredicate::une: r = unordered || x != y; break;
          case CmpPredicate::ugt: r = unordered || x > y; break;
          case CmpPredicate::uge: r = unordered || x >= y; break;
          case CmpPredicate::ult: r = unordered || x < y; break;
          case CmpPredicate::ule: r = unordered || x <= y; break;
          default: break;
        }
      } else {
        const int64_t x = a.GetI(ka), y = b.GetI(kb);
        const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
        switch (o.getPredicate()) {
          case CmpPredicate::eq: r = x == y; break;
          case CmpPredicate::neq: r = x != y; break;
          case CmpPredicate::gt: r = isUnsigned ? ux > uy : x > y; break;
          case CmpPredicate::ge: r = isUnsigned ? ux >= uy : x >= y; break;
          case CmpPredicate::lt: r = isUnsigned ? ux < uy : x < y; break;
          case CmpPredicate::le: r = isUnsigned ? ux <= uy : x <= y; break;
          default: break;
        }
      }
      out.f[k] = r ? 1.0 : 0.0;
    }
    return Set(o.getOutput(), std::move(out));
  }

  absl::Status EvalSelect(BinarySelectOp o) {
    TIR_ASSIGN_OR_RETURN(std::vector<int64_t> shape, MergeShapes(*o));
    const Tensor &c = Get(o.getCond()), &a = Get(o.getLhs()), &b = Get(o.getRhs());
    Tensor out = Tensor::Zeros(a.dtype, shape);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < out.NumElements(); ++k) {
      Unravel(k, shape, idx);
      const bool pick = c.GetF(BroadcastIndex(idx, c.shape)) != 0;
      const Tensor &src = pick ? a : b;
      const int64_t s = BroadcastIndex(idx, src.shape);
      if (out.UsesInts()) out.i[k] = src.i[s]; else out.f[k] = src.f[s];
    }
    return Set(o.getOutput(), std::move(out));
  }

  absl::Status EvalConstant(ConstantOp o) {
    mlir::Attribute value = o.getValue();
    if (auto dense = value.dyn_cast<mlir::DenseElementsAttr>()) {
      auto type = dense.getType().cast<mlir::RankedTensorType>();
      Tensor out = Tensor::Zeros(DTypeOf(type.getElementType()),
                                 std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
      const int64_t n = out.NumElements();
      if (type.getElementType().isa<mlir::FloatType>()) {
        auto values = dense.getValues<llvm::APFloat>();
        for (int64_t k = 0; k < n; ++k) out.SetF(k, ToDouble(values[k]));
      } else {
        auto values = dense.getValues<llvm::APInt>();
        const bool isUnsigned = type.getElementType().isUnsignedInteger() || type.getElementType().isInteger(1);
        for (int64_t k = 0; k < n; ++k) {
          const llvm::APInt v = values[k];
          const int64_t x = isUnsigned ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue();
          if (out.UsesInts()) out.SetI(k, x); else out.SetF(k, static_cast<double>(x));
        }
      }
      return Set(o.getOutput(), std::move(out));
    }
    const DType dtype = DTypeOf(o.getOutput().getType());
    if (auto f = value.dyn_cast<mlir::FloatAttr>()) return Set(o.getOutput(), Tensor::Scalar(dtype, f.getValueAsDouble()));
    if (auto b = value.dyn_cast<mlir::BoolAttr>()) return Set(o.getOutput(), Tensor::Scalar(dtype, b.getValue() ? 1 : 0));
    auto i = value.cast<mlir::IntegerAttr>();
    const int64_t x = i.getType().isUnsignedInteger() ? static_cast<int64_t>(i.getValue().getZExtValue())
                                                      : i.getValue().getSExtValue();
    Tensor t = IsInteger(dtype) ? Tensor::ScalarInt(dtype, x) : Tensor::Scalar(dtype, static_cast<double>(x));
    return Set(o.getOutput(), std::move(t));
  }

  static double ToDouble(const llvm::APFloat &v) {
    llvm::APFloat d = v;
    bool lost = false;
    d.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return d.convertToDouble();
  }

  absl::Status EvalReshape(ReshapeOp o) {
    const Tensor &in = Get(o.getInput());
    auto type = o.getOutput().getType().cast<mlir::RankedTensorType>();
    std::vector<int64_t> shape;
    if (!o.getDynamicDims().empty() || type.hasStaticShape()) {
      TIR_ASSIGN_OR_RETURN(shape, ResultShape(*o, o.getDynamicDims(), {}));
    } else {
      // Dynamic extents from the graph's shape inference, and the one it
      // leaves open (if any) from the element count.
      int64_t known = 1, unknown = -1;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        const int64_t extent = type.isDynamicDim(d) ? Inferred(o.getOutput(), d) : type.getDimSize(d);
        if (extent < 0) {
          if (unknown >= 0) return Invalid("reshape with several dynamic extents needs dynamic_dims");
          unknown = d;
          shape.push_back(-1);
        } else {
          known *= extent;
          shape.push_back(extent);
        }
      }
      if (unknown >= 0) {
        if (known == 0 || in.NumElements() % known) return Invalid("reshape cannot infer its dynamic extent");
        shape[unknown] = in.NumElements() / known;
      }
    }
    Tensor out = in;
    out.shape = shape;
    if (out.NumElements() != in.NumElements()) {
      return Invalid(absl::StrCat("reshape of ", in.ShapeString(), " to ", Str(shape),
                                  " changes the element count at run time"));
    }
    return Set(o.getOutput(), std::move(out));
  }

  absl::Status EvalConcat(ConcatenateOp o) {
    const int64_t dim = o.getDimension();
    std::vector<int64_t> shape = Get(o.getInputs()[0]).shape;
    shape[dim] = 0;
    for (mlir::Value v : o.getInputs()) {
      const Tensor &t = Get(v);
      for (size_t d = 0; d < shape.size(); ++d) {
        if (static_cast<int64_t>(d) != dim && t.shape[d] != shape[d]) {
          return Invalid(absl::StrCat("concatenate inputs disagree at run time: ", t.ShapeString(), " vs ", Str(shape)));
        }
      }
      shape[dim] += t.shape[dim];
    }
    Tensor out = Tensor::Zeros(Get(o.getInputs()[0]).dtype, shape);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < out.NumElements(); ++k) {
      Unravel(k, shape, idx);
      int64_t pos = idx[dim];
      for (mlir::Value v : o.getInputs()) {
        const Tensor &t = Get(v);
        if (pos < t.shape[dim]) {
          std::vector<int64_t> local = idx;
          local[dim] = pos;
          const int64_t s = BroadcastIndex(local, t.shape);
          if (out.UsesInts()) out.i[k] = t.i[s]; else out.f[k] = t.f[s];
          break;
        }
        pos -= t.shape[dim];
      }
    }
    return Set(o.getOutput(), std::move(out));
  }

  // result[p..., q..., s...] = data[p..., indices[q...], s...]; an index
  // outside [0, extent) is refused, as kernels refuse it.
  absl::Status EvalGather(GatherOp o) {
    const Tensor &data = Get(o.getData()), &indices = Get(o.getIndices());
    const int64_t axis = o.getAxis();
    const size_t ri = indices.shape.size();
    std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
    shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
    shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    for (int64_t k = 0; k < indices.NumElements(); ++k) {
      const int64_t v = indices.GetI(k);
      if (v < 0 || v >= data.shape[axis]) {
        std::vector<int64_t> at;
        Unravel(k, indices.shape, at);
        return MakeError(absl::StatusCode::kInvalidArgument, "INDEX_OUT_OF_RANGE",
                         absl::StrCat("gather: index ", v, " at ", Str(at), " of the indices is outside [0, ",
                                      data.shape[axis], ") (dimension ", axis, " of the data)"));
      }
    }
    const std::vector<int64_t> dataStrides = Strides(data.shape), indexStrides = Strides(indices.shape);
    return Set(o.getOutput(), Gather(data, shape, [&](const std::vector<int64_t> &idx) {
                 int64_t q = 0;
                 for (size_t d = 0; d < ri; ++d) q += idx[axis + d] * indexStrides[d];
                 int64_t k = indices.GetI(q) * dataStrides[axis];
                 for (int64_t d = 0; d < axis; ++d) k += idx[d] * dataStrides[d];
                 for (size_t d = axis + 1; d < data.shape.size(); ++d) k += idx[d + ri - 1] * dataStrides[d];
                 return k;
               }));
  }

  // Calls fn(outputIndex, inputIndex) for every input element.
  template <typename Fn>
  static void ForEachReduced(const std::vector<int64_t> &inShape, llvm::ArrayRef<int32_t> dims,
                             std::vector<int64_t> &outShape, Fn fn) {
    outShape = inShape;
    for (int32_t d : dims) outShape[d] = 1;
    std::vector<int64_t> idx;
    int64_t n = 1;
    for (int64_t e : inShape) n *= e;
    for (int64_t k = 0; k < n; ++k) {
      Unravel(k, inShape, idx);
      for (int32_t d : dims) idx[d] = 0;
      int64_t o = 0;
      for (size_t d = 0; d < outShape.size(); ++d) o = o * outShape[d] + idx[d];
      fn(o, k);
    }
  }

  absl::Status EvalReduce(ReduceOp o) {
    const Tensor &in = Get(o.getInput());
    std::vector<int64_t> outShape;
    ForEachReduced(in.shape, o.getDimensions(), outShape, [](int64_t, int64_t) {});
    const int64_t outN = std::accumulate(outShape.begin(), outShape.end(), int64_t{1}, std::multiplies<>());
    const int64_t count = outN ? in.NumElements() / outN : 0;
    const ReductionMode mode = o.getReductionMode();
    const bool ints = in.UsesInts();
    const bool isUnsigned = IsUnsigned(in.dtype);
    // Accumulators: f64 for floats, int64 (wrapping) for integers.
    std::vector<double> accF(outN);
    std::vector<int64_t> accI(outN);
    std::vector<bool> first(outN, true);
    ForEachReduced(in.shape, o.getDimensions(), outShape, [&](int64_t out, int64_t k) {
      if (ints) {
        int64_t x = in.GetI(k);
        int64_t &a = accI[out];
        const bool init = first[out];
        first[out] = false;
        switch (mode) {
          case ReductionMode::add: case ReductionMode::avg: a = init ? x : IntBinary(Pointwise::kAdd, a, x, isUnsigned); break;
          case ReductionMode::mul: a = init ? x : IntBinary(Pointwise::kMul, a, x, isUnsigned); break;
          case ReductionMode::mul_no_zeros: a = IntBinary(Pointwise::kMul, init ? 1 : a, x == 0 ? 1 : x, isUnsigned); break;
          case ReductionMode::customize: break;  // refused by the verifier
          case ReductionMode::max: a = init ? x : IntBinary(Pointwise::kMax, a, x, isUnsigned); break;
          case ReductionMode::min: a = init ? x : IntBinary(Pointwise::kMin, a, x, isUnsigned); break;
          case ReductionMode::amax: x = isUnsigned ? x : IntUnary(Pointwise::kAbs, x); a = init ? x : std::max(a, x); break;
          case ReductionMode::norm1: x = isUnsigned ? x : IntUnary(Pointwise::kAbs, x); a = init ? x : a + x; break;
          case ReductionMode::norm2: accF[out] += static_cast<double>(x) * static_cast<double>(x); break;
        }
        return;
      }
      const double x = in.GetF(k);
      double &a = accF[out];
      const bool init = first[out];
      first[out] = false;
      switch (mode) {
        case ReductionMode::add: case ReductionMode::avg: a = init ? x : a + x; break;
        case ReductionMode::mul: a = init ? x : a * x; break;
        // Zeros (+0 and -0) are skipped; NaN is not a zero and propagates.
        case ReductionMode::mul_no_zeros: a = (init ? 1.0 : a) * (x == 0 ? 1.0 : x); break;
        case ReductionMode::customize: break;  // refused by the verifier
        case ReductionMode::max: a = init ? x : FloatBinary(Pointwise::kMax, a, x, 0); break;
        case ReductionMode::min: a = init ? x : FloatBinary(Pointwise::kMin, a, x, 0); break;
        case ReductionMode::amax: a = init ? std::fabs(x) : FloatBinary(Pointwise::kMax, a, std::fabs(x), 0); break;
        case ReductionMode::norm1: a = init ? std::fabs(x) : a + std::fabs(x); break;
        case ReductionMode::norm2: a = init ? x * x : a + x * x; break;
      }
    });
    Tensor out = Tensor::Zeros(in.dtype, outShape);
    for (int64_t k = 0; k < outN; ++k) {
      if (count == 0) {  // empty reduction: the identity of the combiner
        const bool one = mode == ReductionMode::mul || mode == ReductionMode::mul_no_zeros;
        const double v = mode == ReductionMode::max ? -INFINITY : mode == ReductionMode::min ? INFINITY : (one ? 1 : 0);
        if (ints) out.SetI(k, one ? 1 : 0); else out.SetF(k, v);
        continue;
      }
      if (mode == ReductionMode::norm2) {
        out.SetF(k, std::sqrt(accF[k]));
      } else if (ints) {
        out.SetI(k, mode == ReductionMode::avg ? accI[k] / count : accI[k]);
      } else {
        out.SetF(k, mode == ReductionMode::avg ? accF[k] / count : accF[k]);
      }
    }
    return Set(o.getOutput(), std::move(out));
  }

  absl::Status EvalReduceUd(ReduceUdOp o) {
    const size_t n = o.getInputs().size();
    std::vector<const Tensor *> ins;
    for (mlir::Value v : o.getInputs()) ins.push_back(&Get(v));
    std::vector<int64_t> outShape;
    ForEachReduced(ins[0]->shape, o.getDimensions(), outShape, [](int64_t, int64_t) {});
    std::vector<Tensor> outs;
    for (size_t i = 0; i < n; ++i) outs.push_back(Tensor::Zeros(ins[i]->dtype, outShape));
    const int64_t outN = outs[0].NumElements();
    mlir::Block &body = o.getBody().front();
    // Body values are typed scalars (ScalarArith.h): integers as bit patterns
    // of their width, floats rounded to their type after every op.
    std::vector<unsigned> widths(n);
    std::vector<bool> isInt(n);
    for (size_t i = 0; i < n; ++i) {
      mlir::Type e = ElementOf(o.getOutputs()[i]);
      isInt[i] = !e.isa<mlir::FloatType>();
      widths[i] = e.getIntOrFloatBitWidth();
    }
    auto element = [&](const Tensor &t, int64_t k, size_t i) {
      reference::ScalarValue v;
      if (isInt[i]) v = reference::IntScalar(t.GetI(k), widths[i]); else v.f = t.GetF(k);
      return v;
    };
    std::vector<std::vector<reference::ScalarValue>> acc(outN, std::vector<reference::ScalarValue>(n));
    for (size_t i = 0; i < n; ++i) {
      mlir::Attribute id = o.getIdentity()[i];
      reference::ScalarValue v;
      if (auto fa = id.dyn_cast<mlir::FloatAttr>()) {
        v.f = reference::RoundToType(fa.getValueAsDouble(), ElementOf(o.getOutputs()[i]));
      } else {
        v = reference::IntScalar(static_cast<int64_t>(id.cast<mlir::IntegerAttr>().getValue().getZExtValue()), widths[i]);
      }
      for (int64_t k = 0; k < outN; ++k) acc[k][i] = v;
    }
    absl::Status status;
    ForEachReduced(ins[0]->shape, o.getDimensions(), outShape, [&](int64_t out, int64_t k) {
      if (!status.ok()) return;
      llvm::DenseMap<mlir::Value, reference::ScalarValue> scalars;
      for (size_t i = 0; i < n; ++i) {
        scalars[body.getArgument(i)] = acc[out][i];
        scalars[body.getArgument(n + i)] = element(*ins[i], k, i);
      }
      for (mlir::Operation &inner : body.without_terminator()) {
        llvm::SmallVector<reference::ScalarValue> operands;
        for (mlir::Value v : inner.getOperands()) operands.push_back(scalars.lookup(v));
        absl::StatusOr<reference::ScalarValue> r = reference::EvalBodyOp(inner, operands);
        if (!r.ok()) { status = r.status(); return; }
        scalars[inner.getResult(0)] = *r;
      }
      for (size_t i = 0; i < n; ++i) acc[out][i] = scalars.lookup(body.getTerminator()->getOperand(i));
    });
    TIR_RETURN_IF_ERROR(status);
    for (size_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < outN; ++k) {
        if (!isInt[i]) {
          outs[i].SetF(k, acc[k][i].f);
        } else if (reference::IsUnsigned(outs[i].dtype)) {
          outs[i].SetI(k, static_cast<int64_t>(acc[k][i].bits));
        } else {
          outs[i].SetI(k, reference::SignedValue(acc[k][i].bits, widths[i]));
        }
      }
      TIR_RETURN_IF_ERROR(Set(o.getOutputs()[i], std::move(outs[i])));
    }
    return absl::OkStatus();
  }

  absl::Status EvalMatmul(MatmulOp o) {
    const Tensor &a = Get(o.getA()), &b = Get(o.getB());
    const int64_t r = a.shape.size();
    const int64_t m = a.shape[r - 2], kk = a.shape[r - 1], n = b.shape[r - 1];
    if (b.shape[r - 2] != kk) {
      return Invalid(absl::StrCat("matmul contracting extents differ at run time: ", kk, " vs ", b.shape[r - 2]));
    }
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < r - 2; ++d) {
      const int64_t x = a.shape[d], y = b.shape[d];
      if (x != y && x != 1 && y != 1) return Invalid("matmul batch extents do not broadcast at run time");
      shape.push_back(x == 1 ? y : x);
    }
    shape.push_back(m);
    shape.push_back(n);
    Tensor out = Tensor::Zeros(DTypeOf(ElementOf(o.getC())), shape);
    const Tensor *acc = o.getAccumulator() ? &Get(o.getAccumulator()) : nullptr;
    std::vector<int64_t> batchShape(shape.begin(), shape.end() - 2), aBatch(a.shape.begin(), a.shape.end() - 2),
        bBatch(b.shape.begin(), b.shape.end() - 2);
    int64_t batches = 1;
    for (int64_t e : batchShape) batches *= e;
    std::vector<int64_t> idx;
    for (int64_t bi = 0; bi < batches; ++bi) {
      Unravel(bi, batchShape, idx);
      const int64_t ab = BroadcastIndex(idx, aBatch), bb = BroadcastIndex(idx, bBatch);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t o = (bi * m + i) * n + j;
          if (out.UsesInts()) {
            int64_t sum = acc ? acc->GetI(o) : 0;
            for (int64_t p = 0; p < kk; ++p) sum += a.GetI((ab * m + i) * kk + p) * b.GetI((bb * kk + p) * n + j);
            out.SetI(o, sum);
          } else {
            double sum = acc ? acc->GetF(o) : 0.0;
            for (int64_t p = 0; p < kk; ++p) sum += a.GetF((ab * m + i) * kk + p) * b.GetF((bb * kk + p) * n + j);
            out.SetF(o, sum);
          }
        }
      }
    }
    return Set(o.getC(), std::move(out));
  }

  // Node-based, so references stay valid while results are added.
  std::map<const void *, Tensor> values_;
  bool track_ = false;
  std::map<const void *, Tensor> rounding_;  // f64 scales of the values a sum reaches
  GraphOp graph_;
  std::vector<std::vector<int64_t>> arguments_;  // as ValueShapes takes them
  std::optional<llvm::DenseMap<mlir::Value, std::vector<int64_t>>> inferred_;
};

}  // namespace

DType DTypeOf(mlir::Type t) {
  std::optional<DType> d = ToDType(t);
  return d ? *d : tir::v1::DTYPE_UNSPECIFIED;
}

absl::Status CheckVerificationFits(GraphOp graph, int64_t extent) {
  return CheckVerificationFitsAt(graph, SolveDynamicExtents(graph, extent).arguments);
}

absl::Status CheckVerificationFitsAt(GraphOp graph, const std::vector<std::vector<int64_t>> &arguments) {
  const llvm::DenseMap<mlir::Value, std::vector<int64_t>> shapes = ValueShapes(graph, arguments);
  // 8 bytes per element for every value the interpreter keeps, plus the
  // native-width buffers of the inputs and outputs a launch lays out.
  double bytes = 0, largest = 0;
  auto elements = [](const std::vector<int64_t> &shape) {
    double n = 1;
    for (int64_t d : shape) n *= std::max<int64_t>(d, 1);
    return n;
  };
  for (const auto &[v, shape] : shapes) {
    const double n = elements(shape);
    largest = std::max(largest, n);
    const bool edge = v.isa<mlir::BlockArgument>() ||
                      llvm::any_of(v.getUsers(), [](mlir::Operation *u) { return llvm::isa<ResultsOp>(u); });
    const double width = StorageBytes(DTypeOf(v.getType().cast<mlir::ShapedType>().getElementType()));
    bytes += n * 8 + (edge ? 2 * n * width : 0);  // outputs: the kernel's and the poisoned copy
  }
  double limit = 0;
  if (const char *env = std::getenv("TIR_VERIFY_MEMORY_BYTES"); env && *env) limit = std::atof(env);
  if (limit <= 0) {
    const double pages = static_cast<double>(sysconf(_SC_PHYS_PAGES));
    const double page = static_cast<double>(sysconf(_SC_PAGE_SIZE));
    limit = pages > 0 && page > 0 ? pages * page / 2 : 8.0 * (1 << 30);
  }
  if (bytes <= limit) return absl::OkStatus();
  return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                   absl::StrFormat("verifying @%s on the host needs about %.1f GiB (its largest value has %.0f "
                                   "elements; the reference keeps every value in f64), above the limit of %.1f GiB "
                                   "(half this machine's memory, or TIR_VERIFY_MEMORY_BYTES); verify a smaller "
                                   "shape, or run it on a GPU worker",
                                   graph.getSymName().str(), bytes / (1 << 30), largest, limit / (1 << 30)));
}

absl::StatusOr<std::vector<Tensor>> Evaluate(GraphOp graph, const std::vector<Tensor> &inputs) {
  return Interpreter().Run(graph, inputs);
}

Tensor NoRounding() {
  Tensor t;
  t.dtype = tir::v1::DTYPE_UNSPECIFIED;
  t.shape = {0};
  return t;
}

absl::StatusOr<Reference> EvaluateWithRounding(GraphOp graph, const std::vector<Tensor> &inputs) {
  Interpreter interpreter;
  interpreter.TrackRounding();
  Reference out;
  TIR_ASSIGN_OR_RETURN(out.outputs, interpreter.Run(graph, inputs));
  for (mlir::Value v : graph.getBodyBlock().getTerminator()->getOperands()) {
    const Tensor *e = interpreter.RoundingOf(v);
    out.rounding.push_back(e ? *e : NoRounding());
  }
  return out;
}

std::vector<Tensor> SampleInputs(GraphOp graph, int64_t extent, uint64_t seed) {
  mlir::Block &body = graph.getBodyBlock();
  // Dynamic extents (and index arguments) the ops agree on.
  const SolvedShapes shapes = SolveDynamicExtents(graph, extent);
  std::vector<Tensor> inputs;
  for (mlir::BlockArgument arg : body.getArguments()) {
    mlir::Type t = arg.getType();
    const std::vector<int64_t> &solved = shapes.arguments[arg.getArgNumber()];
    auto tensor = t.dyn_cast<mlir::RankedTensorType>();
    if (!tensor) {
      inputs.push_back(t.isIndex() ? Tensor::ScalarInt(tir::v1::DTYPE_INDEX, solved.empty() ? extent : solved[0])
                                   : Tensor::Scalar(DTypeOf(t), 0.75));
      continue;
    }
    Tensor x = RandomTensor(DTypeOf(tensor.getElementType()), solved, seed++);
    // Through the argument's layout: with a stride of 0 or overlapping
    // strides some elements share an address, and the kernel reads what the
    // buffer holds, so the reference must see the same values.
    if (auto s = graph.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(), TirDialect::kStrideAttr)) {
      std::optional<llvm::SmallVector<int64_t>> strides = parseStrideString(s.getValue(), nullptr);
      if (strides && llvm::none_of(*strides, [](int64_t v) { return mlir::ShapedType::isDynamic(v); })) {
        x = ThroughLayout(x, std::vector<int64_t>(strides->begin(), strides->end()));
      }
    }
    inputs.push_back(std::move(x));
  }
  FitGatherIndices(graph, inputs, seed);
  return inputs;
}

void FitGatherIndices(GraphOp graph, std::vector<Tensor> &inputs, uint64_t seed) {
  mlir::Block &body = graph.getBodyBlock();
  std::vector<std::vector<int64_t>> args;
  for (const Tensor &t : inputs) args.push_back(t.scalar ? std::vector<int64_t>{t.UsesInts() ? t.GetI(0) : 0} : t.shape);
  std::optional<llvm::DenseMap<mlir::Value, std::vector<int64_t>>> shapes;
  // The extent each argument's values index, the smallest where several gathers read it.
  std::map<unsigned, int64_t> extents;
  graph.walk([&](GatherOp g) {
    // Through ops that move values unchanged, back to an argument.
    mlir::Value v = g.getIndices();
    while (mlir::Operation *def = v.getDefiningOp()) {
      if (!llvm::isa<ConvertOp, ReshapeOp, BroadcastOp, TransposeOp, SliceOp>(def)) break;
      v = def->getOperand(0);
    }
    auto arg = v.dyn_cast<mlir::BlockArgument>();
    if (!arg || arg.getOwner() != &body || arg.getArgNumber() >= inputs.size()) return;
    auto data = g.getData().getType().cast<mlir::RankedTensorType>();
    int64_t extent = data.isDynamicDim(g.getAxis()) ? -1 : data.getDimSize(g.getAxis());
    if (extent < 0) {
      if (!shapes) shapes = ValueShapes(graph, args);
      auto it = shapes->find(g.getData());
      if (it != shapes->end()) extent = it->second[g.getAxis()];
    }
    if (extent <= 0) return;
    auto [it, fresh] = extents.emplace(arg.getArgNumber(), extent);
    if (!fresh) it->second = std::min(it->second, extent);
  });
  for (const auto &[i, extent] : extents) {
    Tensor &t = inputs[i];
    if (t.scalar || !t.UsesInts()) continue;
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + i);
    for (int64_t k = 0; k < t.NumElements(); ++k) t.SetI(k, static_cast<int64_t>(rng() % static_cast<uint64_t>(extent)));
  }
}

}  // namespace tir::reference
