#include "compiler/reference/DynamicShapes.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/ir/DimBounds.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/status.h"
#include "llvm/Support/raw_ostream.h"

namespace tir::reference {
namespace {

absl::Status Invalid(const std::string &reason, const std::string &message) {
  return MakeError(absl::StatusCode::kInvalidArgument, reason, message);
}

std::string TypeText(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return os.str();
}

// "input 0 dim 1" / "index input 2".
std::string DimName(const DynamicDim &d) {
  return d.index ? absl::StrCat("index input ", d.input) : absl::StrCat("input ", d.input, " dim ", d.dim);
}

int64_t NextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Every value's shape is known and within the element limit.
absl::Status CheckComplete(GraphOp graph, const InferredShapes &inferred) {
  for (mlir::BlockArgument arg : graph.getBodyBlock().getArguments()) {
    const std::vector<int64_t> &a = inferred.arguments[arg.getArgNumber()];
    if (arg.getType().isIndex() && (a.empty() || a[0] < 0)) {
      return Invalid("SHAPE_HINT_MISSING",
                     absl::StrCat("index input ", arg.getArgNumber(),
                                  " is not determined by the tensor sizes; give its value as a shape hint (",
                                  arg.getArgNumber(), "=N)"));
    }
  }
  std::string open;
  graph.walk([&](mlir::Operation *op) {
    if (!open.empty()) return;
    for (mlir::Value r : op->getResults()) {
      auto it = inferred.values.find(r);
      if (it == inferred.values.end()) continue;
      int64_t n = 1;
      for (size_t d = 0; d < it->second.size(); ++d) {
        if (it->second[d] < 0) {
          open = absl::StrCat("dim ", d, " of the result of ", op->getName().getStringRef().str(), " (",
                              TypeText(r.getType()), ") is not determined by the sizes given");
          return;
        }
        n = it->second[d] > 0 && n > kMaxElements / it->second[d] ? kMaxElements + 1 : n * it->second[d];
      }
      if (n > kMaxElements) {
        open = absl::StrCat("LIMIT:the result of ", op->getName().getStringRef().str(),
                            " has more elements than the limit of 2^48 at these sizes");
        return;
      }
    }
  });
  if (absl::StartsWith(open, "LIMIT:")) return Invalid("LIMIT_EXCEEDED", open.substr(6));
  if (!open.empty()) return Invalid("SHAPE_HINT_MISSING", open);
  return absl::OkStatus();
}

std::vector<int64_t> SizesOf(const std::vector<DynamicDim> &dims, const ArgShapes &args) {
  std::vector<int64_t> sizes;
  for (const DynamicDim &d : dims) sizes.push_back(args[d.input][d.index ? 0 : d.dim]);
  return sizes;
}

}  // namespace

std::vector<DynamicDim> DynamicDimsOf(GraphOp graph) {
  std::vector<DynamicDim> out;
  for (mlir::BlockArgument arg : graph.getBodyBlock().getArguments()) {
    const unsigned i = arg.getArgNumber();
    if (arg.getType().isIndex()) {
      out.push_back({i, 0, true, 0});
      continue;
    }
    auto t = arg.getType().dyn_cast<mlir::RankedTensorType>();
    if (!t || t.hasStaticShape()) continue;
    std::optional<std::vector<int64_t>> bounds;
    if (mlir::Attribute a = graph.getArgAttr(i, TirDialect::kBoundsAttr)) {
      std::string why;
      bounds = parseDimBounds(a, t, &why);  // the verifier has checked it
    }
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (t.isDynamicDim(d)) out.push_back({i, static_cast<uint32_t>(d), false, bounds ? (*bounds)[d] : 0});
    }
  }
  return out;
}

absl::StatusOr<BucketPolicy> BucketPolicy::Parse(absl::string_view text) {
  BucketPolicy p;
  if (text.empty() || text == "pow2") return p;
  if (text == "bound") {
    p.kind = kBound;
    return p;
  }
  if (absl::ConsumePrefix(&text, "multiple:") && absl::SimpleAtoi(text, &p.multiple) && p.multiple >= 1 &&
      p.multiple <= kMaxDimension) {
    p.kind = kMultiple;
    return p;
  }
  return Invalid("INVALID_CONFIG", absl::StrCat("shapeBuckets is \"", text,
                                                "\"; use pow2, multiple:N (N >= 1) or bound"));
}

std::string BucketPolicy::Name() const {
  switch (kind) {
    case kPowerOfTwo: return "pow2";
    case kMultiple: return absl::StrCat("multiple:", multiple);
    case kBound: return "bound";
  }
  return "pow2";
}

absl::StatusOr<BoundShapes> BindShapes(GraphOp graph, const std::vector<DynamicDim> &dims,
                                       const google::protobuf::RepeatedPtrField<tir::v1::ShapeHint> &hints) {
  mlir::Block &body = graph.getBodyBlock();
  const unsigned n = body.getNumArguments();
  ArgShapes args(n);
  std::vector<bool> given(n, false);
  for (const tir::v1::ShapeHint &h : hints) {
    if (h.input() >= n) {
      return Invalid("INVALID_SHAPE_HINT", absl::StrCat("a shape hint names input ", h.input(), "; the graph has ", n,
                                                        " input", n == 1 ? "" : "s"));
    }
    const unsigned i = h.input();
    mlir::Type type = body.getArgument(i).getType();
    if (given[i]) return Invalid("INVALID_SHAPE_HINT", absl::StrCat("two shape hints for input ", i));
    std::vector<int64_t> shape(h.shape().begin(), h.shape().end());
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::string what = type.isIndex() ? absl::StrCat("index input ", i) : absl::StrCat("input ", i, " dim ", d);
      if (shape[d] < 0) return Invalid("INVALID_SHAPE_HINT", absl::StrCat(what, " is given as ", shape[d]));
      if (shape[d] == 0) {
        return Invalid("LIMIT_EXCEEDED", absl::StrCat(what, " is given as 0; a dynamic size is at least 1"));
      }
      if (shape[d] > kMaxDimension) {
        return Invalid("LIMIT_EXCEEDED", absl::StrCat(what, " is given as ", shape[d], ", above the limit of 2^40"));
      }
    }
    if (type.isIndex()) {
      if (shape.size() != 1) {
        return Invalid("INVALID_SHAPE_HINT", absl::StrCat("input ", i, " is an index; its hint holds its value alone, not ",
                                                          shape.size(), " sizes"));
      }
    } else if (auto t = type.dyn_cast<mlir::RankedTensorType>()) {
      if (static_cast<int64_t>(shape.size()) != t.getRank()) {
        return Invalid("INVALID_SHAPE_HINT", absl::StrCat("input ", i, " is ", TypeText(t), " (rank ", t.getRank(),
                                                          "); its hint gives ", shape.size(), " sizes"));
      }
      int64_t elements = 1;
      for (int64_t d = 0; d < t.getRank(); ++d) {
        if (!t.isDynamicDim(d) && shape[d] != t.getDimSize(d)) {
          return Invalid("INVALID_SHAPE_HINT", absl::StrCat("input ", i, " dim ", d, " is static (", t.getDimSize(d),
                                                            " in ", TypeText(t), "); the hint gives ", shape[d]));
        }
        elements = elements > kMaxElements / shape[d] ? kMaxElements + 1 : elements * shape[d];
      }
      if (elements > kMaxElements) {
        return Invalid("LIMIT_EXCEEDED", absl::StrCat("input ", i, " has more elements than the limit of 2^48 at ",
                                                      absl::StrJoin(shape, "x")));
      }
    } else {
      return Invalid("INVALID_SHAPE_HINT", absl::StrCat("input ", i, " is a scalar (", TypeText(type),
                                                        "); only tensor and index inputs take shape hints"));
    }
    args[i] = std::move(shape);
    given[i] = true;
  }
  // Every dynamic dim of a tensor needs a size; an index may be inferred.
  std::vector<std::string> missing;
  for (const DynamicDim &d : dims) {
    if (!d.index && !given[d.input]) missing.push_back(DimName(d));
  }
  if (!missing.empty()) {
    return Invalid("SHAPE_HINT_MISSING",
                   absl::StrCat("the graph has dynamic dims without sizes: ", absl::StrJoin(missing, ", "),
                                "; give each input's shape (CompileOptions.shape_hints, tirctl --shape INPUT=AxB)"));
  }
  for (const DynamicDim &d : dims) {
    if (d.bound <= 0 || !given[d.input]) continue;
    const int64_t v = args[d.input][d.index ? 0 : d.dim];
    if (v > d.bound) {
      return Invalid("SHAPE_OVER_BOUND", absl::StrCat(DimName(d), " is given as ", v, ", over its bound ", d.bound,
                                                      " (tir.bounds)"));
    }
  }
  InferredShapes inferred = InferShapes(graph, args);
  if (!inferred.consistent) {
    // Name the first size that makes the graph contradict itself: fix the
    // hints one dim at a time, in order.
    ArgShapes partial(n);
    for (unsigned i = 0; i < n; ++i) {
      if (!given[i]) continue;
      for (size_t d = 0; d < args[i].size(); ++d) {
        partial[i].resize(d + 1, 0);
        partial[i][d] = args[i][d];
        // A prefix of each tensor's dims is fixed; the rest keep their
        // type's static size or stay open.
        if (!InferShapes(graph, partial).consistent) {
          mlir::Type type = body.getArgument(i).getType();
          return Invalid("INVALID_SHAPE_HINT",
                         absl::StrCat(type.isIndex() ? absl::StrCat("index input ", i) : absl::StrCat("input ", i, " dim ", d),
                                      " = ", args[i][d], " contradicts the graph",
                                      i == 0 && d == 0 ? "" : " with the sizes given before it",
                                      " (an op needs the dims it combines to agree)"));
        }
      }
    }
    return Invalid("INVALID_SHAPE_HINT", "the shape hints contradict the graph");
  }
  TIR_RETURN_IF_ERROR(CheckComplete(graph, inferred));
  BoundShapes out;
  for (unsigned i = 0; i < n; ++i) {
    mlir::Type type = body.getArgument(i).getType();
    if (auto t = type.dyn_cast<mlir::RankedTensorType>()) {
      out.args.emplace_back(inferred.arguments[i]);
    } else if (type.isIndex()) {
      out.args.push_back({inferred.arguments[i][0]});
    } else {
      out.args.emplace_back();
    }
  }
  out.sizes = SizesOf(dims, out.args);
  for (const DynamicDim &d : dims) {
    const int64_t v = out.args[d.input][d.index ? 0 : d.dim];
    if (d.index && v <= 0) {
      return Invalid("LIMIT_EXCEEDED", absl::StrCat("index input ", d.input, " comes out as ", v,
                                                    " at these sizes; a dynamic size is at least 1"));
    }
  }
  return out;
}

std::vector<DimRange> BucketOf(const std::vector<DynamicDim> &dims, const std::vector<int64_t> &sizes,
                               const BucketPolicy &policy) {
  std::vector<DimRange> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t n = std::max<int64_t>(1, sizes[i]);
    const int64_t bound = dims[i].bound;
    DimRange r;
    if (policy.kind == BucketPolicy::kBound && bound > 0) {
      r = {1, bound};
    } else if (policy.kind == BucketPolicy::kMultiple) {
      r.upper = (n + policy.multiple - 1) / policy.multiple * policy.multiple;
      r.lower = r.upper - policy.multiple + 1;
    } else {
      r.upper = NextPowerOfTwo(n);
      r.lower = r.upper / 2 + 1;
    }
    if (bound > 0) r.upper = std::min(r.upper, bound);
    r.lower = std::max<int64_t>(1, std::min(r.lower, r.upper));
    out.push_back(r);
  }
  return out;
}

BoundShapes Representative(GraphOp graph, const std::vector<DynamicDim> &dims, const std::vector<DimRange> &bucket,
                           const BoundShapes &asked) {
  for (bool indexToo : {true, false}) {
    ArgShapes args = asked.args;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].index) {
        if (indexToo) args[dims[i].input] = {bucket[i].upper}; else args[dims[i].input].clear();
      } else {
        args[dims[i].input][dims[i].dim] = bucket[i].upper;
      }
    }
    InferredShapes inferred = InferShapes(graph, args);
    if (!inferred.consistent || !CheckComplete(graph, inferred).ok()) continue;
    BoundShapes out;
    for (mlir::BlockArgument arg : graph.getBodyBlock().getArguments()) {
      out.args.push_back(arg.getType().isa<mlir::RankedTensorType>() || arg.getType().isIndex()
                             ? inferred.arguments[arg.getArgNumber()]
                             : std::vector<int64_t>{});
    }
    out.sizes = SizesOf(dims, out.args);
    bool inside = true;
    for (size_t i = 0; i < dims.size(); ++i) inside &= out.sizes[i] >= 1 && out.sizes[i] <= std::max(bucket[i].upper, asked.sizes[i]);
    if (inside) return out;
  }
  return asked;
}

std::vector<tir::v1::ShapeHint> AsHints(GraphOp graph, const ArgShapes &args) {
  std::vector<tir::v1::ShapeHint> out;
  for (mlir::BlockArgument arg : graph.getBodyBlock().getArguments()) {
    if (!arg.getType().isa<mlir::RankedTensorType>() && !arg.getType().isIndex()) continue;
    tir::v1::ShapeHint h;
    h.set_input(arg.getArgNumber());
    for (int64_t d : args[arg.getArgNumber()]) h.add_shape(d);
    out.push_back(std::move(h));
  }
  return out;
}

std::string FormatShapes(const std::vector<tir::v1::ShapeHint> &hints) {
  std::vector<std::string> parts;
  for (const tir::v1::ShapeHint &h : hints) parts.push_back(absl::StrCat(h.input(), "=", absl::StrJoin(h.shape(), "x")));
  return absl::StrJoin(parts, " ");
}

absl::StatusOr<tir::v1::ShapeHint> ParseShapeHint(absl::string_view text) {
  const size_t eq = text.find('=');
  tir::v1::ShapeHint h;
  uint32_t input = 0;
  if (eq == absl::string_view::npos || !absl::SimpleAtoi(text.substr(0, eq), &input)) {
    return Invalid("INVALID_SHAPE_HINT", absl::StrCat("shape \"", text, "\" is not INPUT=AxB (e.g. 0=8x512)"));
  }
  h.set_input(input);
  const absl::string_view dims = text.substr(eq + 1);
  if (dims.empty()) return h;  // a rank-0 tensor
  for (absl::string_view part : absl::StrSplit(dims, absl::ByAnyChar("x,"))) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v)) {
      return Invalid("INVALID_SHAPE_HINT", absl::StrCat("shape \"", text, "\": \"", part, "\" is not a size"));
    }
    h.add_shape(v);
  }
  return h;
}

google::protobuf::RepeatedPtrField<tir::v1::DimBucket> BucketProtos(const std::vector<DynamicDim> &dims,
                                                                   const std::vector<DimRange> &bucket) {
  google::protobuf::RepeatedPtrField<tir::v1::DimBucket> out;
  for (size_t i = 0; i < dims.size() && i < bucket.size(); ++i) {
    tir::v1::DimBucket *b = out.Add();
    b->set_input(dims[i].input);
    b->set_dim(dims[i].dim);
    b->set_index(dims[i].index);
    b->set_lower(bucket[i].lower);
    b->set_upper(bucket[i].upper);
    b->set_bound(dims[i].bound);
  }
  return out;
}

std::string FormatBucket(const std::vector<DynamicDim> &dims, const std::vector<DimRange> &bucket) {
  return FormatBucket(BucketProtos(dims, bucket));
}

std::string FormatBucket(const google::protobuf::RepeatedPtrField<tir::v1::DimBucket> &buckets) {
  std::vector<std::string> parts;
  for (const tir::v1::DimBucket &b : buckets) {
    const std::string at = b.index() ? absl::StrCat(b.input()) : absl::StrCat(b.input(), ":", b.dim());
    parts.push_back(b.lower() == b.upper() ? absl::StrCat(at, "=", b.upper())
                                           : absl::StrCat(at, "=", b.lower(), "..", b.upper()));
  }
  return absl::StrJoin(parts, " ");
}

}  // namespace tir::reference
