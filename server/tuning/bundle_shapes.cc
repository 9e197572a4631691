#include "server/tuning/bundle_shapes.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/status.h"

namespace tir::tuning {
namespace {

absl::Status Invalid(const std::string &m) { return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_SHAPE_HINT", m); }
absl::Status Internal(const std::string &m) { return MakeError(absl::StatusCode::kInternal, "INTERNAL", m); }

using Ref = std::pair<int, uint32_t>;
Ref RefOf(const tir::v1::TensorRef &r) { return {r.kind(), r.index()}; }

const char *KindName(int kind) {
  switch (kind) {
    case tir::v1::TensorRef::INPUT: return "input";
    case tir::v1::TensorRef::OUTPUT: return "output";
    case tir::v1::TensorRef::INTERMEDIATE: return "intermediate";
    default: return "tensor";
  }
}

bool Dynamic(const tir::v1::TensorType &t) {
  for (int64_t d : t.shape()) {
    if (d < 0) return true;
  }
  return false;
}

}  // namespace

bool HasDynamicExtents(const tir::v1::KernelBundle &b) {
  for (const auto *list : {&b.inputs(), &b.outputs(), &b.intermediates()}) {
    for (const tir::v1::TensorType &t : *list) {
      if (Dynamic(t)) return true;
    }
  }
  for (const tir::v1::KernelEntry &k : b.kernels()) {
    for (int64_t d : k.iteration_domain()) {
      if (d < 0) return true;
    }
  }
  return false;
}

absl::StatusOr<BundleAtShape> SizeBundle(const tir::v1::KernelBundle &stored, const std::vector<tir::v1::ShapeHint> &shape) {
  BundleAtShape out;
  out.bundle = stored;
  tir::v1::KernelBundle &b = out.bundle;
  b.clear_served_shape();
  b.clear_signature();
  // Sizes of every bundle tensor (an index scalar: its value), by ref.
  std::map<Ref, std::vector<int64_t>> sizes;
  std::map<uint32_t, const tir::v1::ShapeHint *> byInput;
  for (const tir::v1::ShapeHint &h : shape) byInput[h.input()] = &h;
  for (int i = 0; i < b.inputs_size(); ++i) {
    const tir::v1::TensorType &t = b.inputs(i);
    auto hint = byInput.find(i);
    if (t.scalar()) {
      if (t.dtype() == tir::v1::DTYPE_INDEX) {
        if (hint == byInput.end() || hint->second->shape_size() != 1) {
          return Invalid(absl::StrCat("index input ", i, " needs its value in the shape"));
        }
        sizes[{tir::v1::TensorRef::INPUT, i}] = {hint->second->shape(0)};
      } else {
        sizes[{tir::v1::TensorRef::INPUT, i}] = {};
      }
      continue;
    }
    std::vector<int64_t> s(t.shape().begin(), t.shape().end());
    if (hint != byInput.end()) {
      if (hint->second->shape_size() != t.shape_size()) {
        return Invalid(absl::StrCat("input ", i, " has rank ", t.shape_size(), "; the shape gives ",
                                    hint->second->shape_size(), " sizes"));
      }
      for (int d = 0; d < t.shape_size(); ++d) {
        const int64_t v = hint->second->shape(d);
        if (v < 1 || (t.shape(d) >= 0 && v != t.shape(d))) {
          return Invalid(absl::StrCat("input ", i, " dim ", d, " is given as ", v, "; the bundle takes ",
                                      t.shape(d) >= 0 ? absl::StrCat(t.shape(d)) : std::string("a size >= 1")));
        }
        s[d] = v;
      }
    } else if (Dynamic(t)) {
      return Invalid(absl::StrCat("input ", i, " has dynamic extents and no size in the shape"));
    }
    sizes[{tir::v1::TensorRef::INPUT, i}] = std::move(s);
  }
  auto context = makeTirContext();
  for (tir::v1::KernelEntry &k : *b.mutable_kernels()) {
    // (A kernel may read no tensor: a constant, or an iota sized by a
    // static shape.)
    if (k.kernel_mlir().empty()) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "BUNDLE_NOT_SIZABLE",
                       absl::StrCat("bundle ", b.key(), " was stored without its kernel graphs and cannot be served "
                                    "for a shape; compile it again with force_retune"));
    }
    TIR_ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphText(k.kernel_mlir(), context.get(), "kernel.mlir"));
    GraphOp kernel = loaded.graph;
    // The emitter's annotations (access maps) are what extents resolve by.
    const std::map<std::string, int64_t> params(k.candidate().params().begin(), k.candidate().params().end());
    TIR_RETURN_IF_ERROR(codegen::ArgumentFieldNames(kernel, params).status());
    mlir::Block &body = kernel.getBodyBlock();
    if (static_cast<int>(body.getNumArguments()) != k.kernel_inputs_size()) {
      return Internal(absl::StrCat("kernel ", k.partition(), " takes ", body.getNumArguments(), " inputs; the bundle names ",
                                   k.kernel_inputs_size()));
    }
    std::vector<std::vector<int64_t>> args;
    for (const tir::v1::TensorRef &r : k.kernel_inputs()) {
      auto it = sizes.find(RefOf(r));
      if (it == sizes.end()) {
        return Internal(absl::StrCat("kernel ", k.partition(), " reads ", KindName(r.kind()), " ", r.index(),
                                     " before a kernel writes it"));
      }
      args.push_back(it->second);
    }
    TIR_ASSIGN_OR_RETURN(std::vector<int64_t> domain, codegen::ResolveDomain(kernel, args));
    k.clear_iteration_domain();
    for (int64_t d : domain) k.add_iteration_domain(d);
    const reference::InferredShapes inferred = reference::InferShapes(kernel, args);
    if (!inferred.consistent) {
      return Invalid(absl::StrCat("the shape contradicts kernel ", k.partition(), " of the bundle"));
    }
    auto results = llvm::cast<ResultsOp>(body.getTerminator());
    if (static_cast<int>(results.getValues().size()) != k.kernel_outputs_size()) {
      return Internal(absl::StrCat("kernel ", k.partition(), " has ", results.getValues().size(),
                                   " results; the bundle names ", k.kernel_outputs_size()));
    }
    for (auto [j, v] : llvm::enumerate(results.getValues())) {
      std::vector<int64_t> s;
      if (v.getType().isa<mlir::RankedTensorType>()) {
        auto it = inferred.values.find(v);
        if (it == inferred.values.end()) return Internal("a kernel result has no shape");
        s = it->second;
        for (int64_t d : s) {
          if (d < 0) return Internal(absl::StrCat("result ", j, " of kernel ", k.partition(), " cannot be sized"));
        }
      }
      sizes[RefOf(k.kernel_outputs(j))] = std::move(s);
    }
    // Its check: the chosen candidate at this shape, verified.
    tir::v1::WorkItem item;
    item.set_kernel_mlir(k.kernel_mlir());
    item.set_arch(b.arch());
    for (mlir::BlockArgument arg : body.getArguments()) {
      auto t = arg.getType().dyn_cast<mlir::RankedTensorType>();
      if (!arg.getType().isIndex() && (!t || t.hasStaticShape())) continue;
      tir::v1::ShapeHint *h = item.add_shapes();
      h->set_input(arg.getArgNumber());
      for (int64_t d : args[arg.getArgNumber()]) h->add_shape(d);
    }
    tir::v1::CandidateWork *c = item.add_candidates();
    c->set_candidate_index(k.candidate().rank());
    *c->mutable_candidate() = k.candidate();
    c->set_source(k.source());
    c->set_entry_symbol(k.entry_symbol());
    *c->mutable_launch() = k.launch();
    *c->mutable_arguments() = k.arguments();
    c->set_expected_seconds(k.measurement().median_seconds());
    tir::v1::MeasurementPolicy *p = item.mutable_policy();
    p->set_verify(true);
    p->set_min_runs(1);
    p->mutable_time_budget()->set_nanos(1);
    out.checks.push_back(std::move(item));
  }
  auto sizeAll = [&](google::protobuf::RepeatedPtrField<tir::v1::TensorType> *list, int kind) -> absl::Status {
    for (int i = 0; i < list->size(); ++i) {
      tir::v1::TensorType &t = *list->Mutable(i);
      if (t.scalar()) continue;
      auto it = sizes.find({kind, static_cast<uint32_t>(i)});
      if (it == sizes.end()) {
        if (Dynamic(t)) return Internal(absl::StrCat(KindName(kind), " ", i, " is written by no kernel"));
        continue;
      }
      if (static_cast<int>(it->second.size()) != t.shape_size()) {
        return Internal(absl::StrCat(KindName(kind), " ", i, " comes out with rank ", it->second.size()));
      }
      for (int d = 0; d < t.shape_size(); ++d) {
        if (t.shape(d) >= 0 && t.shape(d) != it->second[d]) {
          return Invalid(absl::StrCat(KindName(kind), " ", i, " dim ", d, " comes out as ", it->second[d],
                                      " at this shape; the graph declares ", t.shape(d)));
        }
        t.set_shape(d, it->second[d]);
      }
    }
    return absl::OkStatus();
  };
  TIR_RETURN_IF_ERROR(sizeAll(b.mutable_inputs(), tir::v1::TensorRef::INPUT));
  TIR_RETURN_IF_ERROR(sizeAll(b.mutable_outputs(), tir::v1::TensorRef::OUTPUT));
  TIR_RETURN_IF_ERROR(sizeAll(b.mutable_intermediates(), tir::v1::TensorRef::INTERMEDIATE));
  return out;
}

}  // namespace tir::tuning
