#include "server/tuning/work_items.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/conversion/AttributeProto.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/status.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

namespace tir::tuning {

namespace {

tir::v1::TensorRef Ref(tir::v1::TensorRef::Kind kind, uint32_t index) {
  tir::v1::TensorRef r;
  r.set_kind(kind);
  r.set_index(index);
  return r;
}

// The type of a graph-level tensor with what the graph declares of its
// memory (strides with their divisibility hints, alignment): `attrs` are the
// input's or output's signature attributes (null for an intermediate).
absl::StatusOr<tir::v1::TensorType> TypeOf(mlir::Value v, mlir::DictionaryAttr attrs) {
  TIR_ASSIGN_OR_RETURN(tir::v1::TensorType t, ExportType(v.getType()));
  if (!attrs) return t;
  if (auto s = attrs.getAs<mlir::StringAttr>(TirDialect::kStrideAttr)) {
    if (std::optional<StrideSpec> spec = parseStrideSpec(s.getValue(), nullptr)) {
      bool hints = false;
      for (size_t i = 0; i < spec->strides.size(); ++i) {
        const bool dynamic = mlir::ShapedType::isDynamic(spec->strides[i]);
        t.add_strides(dynamic ? -1 : spec->strides[i]);
        hints |= dynamic && spec->divisors[i] > 1;
      }
      if (hints) {
        for (size_t i = 0; i < spec->strides.size(); ++i) {
          t.add_stride_divisors(mlir::ShapedType::isDynamic(spec->strides[i]) ? spec->divisors[i] : 0);
        }
      }
    }
  }
  if (auto a = attrs.getAs<mlir::IntegerAttr>(TirDialect::kAlignmentAttr)) t.set_alignment(a.getInt());
  return t;
}

absl::StatusOr<tir::v1::TensorRef> RefOf(const std::map<void *, tir::v1::TensorRef> &refs, mlir::Value v) {
  auto it = refs.find(v.getAsOpaquePointer());
  if (it == refs.end()) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "a kernel tensor has no graph ref");
  return it->second;
}

// A kernel's tir_args fields as argument records over the graph's tensors.
absl::StatusOr<std::vector<tir::v1::KernelArgument>> Arguments(const std::vector<std::string> &fields,
                                                               const planning::Kernel &kernel, GraphOp kernelGraph,
                                                               const std::map<void *, tir::v1::TensorRef> &refs) {
  std::vector<tir::v1::KernelArgument> out;
  auto refOf = [&](mlir::Value v) { return RefOf(refs, v); };
  auto rankOf = [](mlir::Value v) {
    auto t = v.getType().dyn_cast<mlir::RankedTensorType>();
    return std::max<int64_t>(1, t ? t.getRank() : 0);
  };
  auto add = [&](tir::v1::KernelArgument::Kind kind, const tir::v1::TensorRef &ref, uint32_t dim) {
    tir::v1::KernelArgument a;
    a.set_kind(kind);
    *a.mutable_tensor() = ref;
    a.set_dim(dim);
    out.push_back(a);
  };
  const int64_t domainRank = kernelGraph->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").size();
  for (const std::string &f : fields) {
    if (f == "dim") {
      // A rank-0 domain still has one entry (1), as a rank-0 tensor does.
      for (int64_t d = 0; d < std::max<int64_t>(1, domainRank); ++d) {
        add(tir::v1::KernelArgument::SIZE, Ref(tir::v1::TensorRef::ITERATION_DOMAIN, 0), d);
      }
      continue;
    }
    if (f == "workspace") {
      add(tir::v1::KernelArgument::WORKSPACE, tir::v1::TensorRef(), 0);
      continue;
    }
    int mapInput = -1;
    uint32_t box0 = 0, box1 = 0;
    bool mapOutput = false;
    if (codegen::ParseTensorMapField(f, &mapInput, &box0, &box1, &mapOutput)) {
      const std::vector<mlir::Value> &mapped = mapOutput ? kernel.outputs : kernel.inputs;
      if (mapInput < 0 || static_cast<size_t>(mapInput) >= mapped.size()) {
        return MakeError(absl::StatusCode::kInternal, "INTERNAL", "field " + f + " out of range");
      }
      TIR_ASSIGN_OR_RETURN(tir::v1::TensorRef ref, refOf(mapped[mapInput]));
      add(tir::v1::KernelArgument::TENSOR_MAP, ref, 0);
      out.back().add_box(box0);
      out.back().add_box(box1);
      continue;
    }
    const bool isInput = f.rfind("in", 0) == 0;
    const size_t digits = isInput ? 2 : 3;
    const size_t index = std::stoul(f.substr(digits));
    const std::vector<mlir::Value> &values = isInput ? kernel.inputs : kernel.outputs;
    if (index >= values.size()) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "field " + f + " out of range");
    mlir::Value v = values[index];
    TIR_ASSIGN_OR_RETURN(tir::v1::TensorRef ref, refOf(v));
    if (f.find("_size") != std::string::npos) {
      for (int64_t d = 0; d < rankOf(v); ++d) add(tir::v1::KernelArgument::SIZE, ref, d);
    } else if (f.find("_stride") != std::string::npos) {
      for (int64_t d = 0; d < rankOf(v); ++d) add(tir::v1::KernelArgument::STRIDE, ref, d);
    } else {
      add(v.getType().isa<mlir::RankedTensorType>() ? tir::v1::KernelArgument::POINTER : tir::v1::KernelArgument::SCALAR,
          ref, 0);
    }
  }
  return out;
}

// SHA-256 of what makes a kernel: its source and its launch rule.
std::string SourceHash(const codegen::EmittedKernel &e) {
  std::string text = e.source;
  text += '\0';
  text += e.launch.SerializeAsString();
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)), /*LowerCase=*/true);
}

// What kind of tile a candidate is, coarsely: candidates of one family are
// neighbours (the reduction's strategy and layout of threads, the matmul's
// block shape, the pointwise vector width).
std::string TileFamily(const planning::TileCandidate &c) {
  auto p = [&](const char *name) {
    auto it = c.params.find(name);
    return it == c.params.end() ? int64_t{-1} : it->second;
  };
  if (c.params.count("strategy")) {
    return absl::StrCat("r", p("strategy"), "/", p("threads_per_row") >= 256 ? "wide" : "narrow", "/", p("rows_per_block") > 1);
  }
  if (c.params.count("block_m")) return absl::StrCat("m", p("block_m"), "x", p("block_n"));
  return absl::StrCat("p", p("vector_width"), "/", p("elements_per_thread") > 1);
}

}  // namespace

absl::StatusOr<std::vector<KernelWork>> BuildWorkItems(GraphOp graph, const target::ArchInfo &arch,
                                                       size_t per_kernel, const tir::v1::MeasurementPolicy &policy,
                                                       tir::v1::KernelBundle *signature, const planning::CostModel *model,
                                                       double max_space_fraction, const planning::PlanOptions &plan_options,
                                                       const std::vector<std::vector<int64_t>> *shapes) {
  planning::AnalyticCostModel analytic;
  TIR_ASSIGN_OR_RETURN(planning::PlannedGraph planned, planning::PlanGraph(graph, arch, model ? *model : analytic, 1, plan_options));
  // Graph-level names of every tensor a kernel reads or writes.
  std::map<void *, tir::v1::TensorRef> refs;
  tir::v1::KernelBundle sig;
  for (mlir::BlockArgument a : graph.getBodyBlock().getArguments()) {
    refs[mlir::Value(a).getAsOpaquePointer()] = Ref(tir::v1::TensorRef::INPUT, a.getArgNumber());
    TIR_ASSIGN_OR_RETURN(*sig.add_inputs(), TypeOf(a, graph.getArgAttrDict(a.getArgNumber())));
  }
  auto results = llvm::cast<ResultsOp>(graph.getBodyBlock().getTerminator());
  for (auto [j, v] : llvm::enumerate(results.getValues())) {
    refs.emplace(v.getAsOpaquePointer(), Ref(tir::v1::TensorRef::OUTPUT, j));
    TIR_ASSIGN_OR_RETURN(*sig.add_outputs(), TypeOf(v, graph.getResultAttrDict(j)));
  }
  for (const planning::Kernel &k : planned.partition.kernels) {
    for (mlir::Value v : k.outputs) {
      if (refs.count(v.getAsOpaquePointer())) continue;
      refs[v.getAsOpaquePointer()] = Ref(tir::v1::TensorRef::INTERMEDIATE, sig.intermediates_size());
      TIR_ASSIGN_OR_RETURN(*sig.add_intermediates(), TypeOf(v, nullptr));
    }
  }
  if (signature != nullptr) {
    *signature->mutable_inputs() = sig.inputs();
    *signature->mutable_outputs() = sig.outputs();
    *signature->mutable_intermediates() = sig.intermediates();
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(graph, planned.partition);
  const std::string name = graph.getSymName().str();
  std::vector<KernelWork> out;
  std::map<std::string, GraphOp, std::less<>> byName;
  for (GraphOp g : module->getOps<GraphOp>()) byName[g.getSymName().str()] = g;
  for (size_t k = 0; k < planned.partition.kernels.size(); ++k) {
    if (absl::Now() > plan_options.deadline) return planning::PlanningBudgetExceeded();
    auto found = byName.find(absl::StrCat(name, "_k", k));
    GraphOp kernel = found == byName.end() ? GraphOp() : found->second;
    if (!kernel) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("kernel ", k, " missing"));
    KernelWork work;
    tir::v1::WorkItem &item = work.item;
    llvm::raw_string_ostream os(*item.mutable_kernel_mlir());
    // Printed in its own scope and unverified (the module is verified as it
    // is built): the default walks, and verifies, the whole module for each
    // kernel, kernels x module size in all.
    kernel->print(os, mlir::OpPrintingFlags().useLocalScope().assumeVerified());
    os.flush();
    item.set_arch(arch.name);
    *item.mutable_policy() = policy;
    const planning::Kernel &pk = planned.partition.kernels[k];
    for (mlir::Value v : pk.inputs) {
      TIR_ASSIGN_OR_RETURN(tir::v1::TensorRef ref, RefOf(refs, v));
      work.input_refs.push_back(ref);
    }
    for (mlir::Value v : pk.outputs) {
      TIR_ASSIGN_OR_RETURN(tir::v1::TensorRef ref, RefOf(refs, v));
      work.output_refs.push_back(ref);
    }
    if (shapes != nullptr) {
      TIR_ASSIGN_OR_RETURN(std::vector<tir::v1::ShapeHint> hints, KernelShapes(graph, *shapes, pk.inputs));
      for (tir::v1::ShapeHint &h : hints) *item.add_shapes() = std::move(h);
    }
    const auto &space = planned.spaces[k].kept;
    // Round 0: the model's top picks, and a quarter of the width spent on
    // candidates of other kinds of tile (the best predicted of each family
    // the top picks lack), so a wrong model cannot hide the best one.
    const size_t width = std::min(per_kernel, std::max<size_t>(2, static_cast<size_t>(space.size() * max_space_fraction)));
    const size_t diverse = width >= 3 ? std::max<size_t>(1, width / 4) : 0;
    // The default is always measured: when the top picks do not hold it,
    // it takes one of the width's places (so the tuner keeps every pick).
    size_t defaultRank = space.size();
    for (size_t i = 0; i < space.size(); ++i) {
      if (space[i].is_default) defaultRank = std::min(defaultRank, i);
    }
    const size_t reserve = defaultRank < space.size() && defaultRank + diverse >= width ? 1 : 0;
    std::set<std::string> families;
    for (size_t i = 0; i < space.size() && work.ranks.size() + diverse + reserve < width; ++i) {
      work.ranks.push_back(i);
      families.insert(TileFamily(space[i]));
    }
    for (size_t i = work.ranks.size(); i < space.size() && work.ranks.size() + reserve < width; ++i) {
      if (i != defaultRank && families.insert(TileFamily(space[i])).second) work.ranks.push_back(i);
    }
    // Too few other families: the next best predicted fill the width.
    for (size_t i = 0; i < space.size() && work.ranks.size() + reserve < width; ++i) {
      if (std::find(work.ranks.begin(), work.ranks.end(), i) == work.ranks.end()) work.ranks.push_back(i);
    }
    for (size_t i = 0; i < space.size(); ++i) {
      if (space[i].is_default && std::find(work.ranks.begin(), work.ranks.end(), i) == work.ranks.end()) {
        work.ranks.push_back(i);
      }
    }
    std::sort(work.ranks.begin(), work.ranks.end());
    TIR_ASSIGN_OR_RETURN(std::vector<std::string> fields,
                         codegen::ArgumentFieldNames(kernel, work.ranks.empty() ? std::map<std::string, int64_t>{}
                                                                                : space[work.ranks[0]].params));
    TIR_ASSIGN_OR_RETURN(std::vector<tir::v1::KernelArgument> arguments,
                         Arguments(fields, planned.partition.kernels[k], kernel, refs));
    work.space_size = space.size();
    auto domain = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
    work.domain.assign(domain.begin(), domain.end());
    work.kind = planning::KernelKindName(planned.partition.kernels[k].space.kind);
    // Candidates whose kernels are the same (source and launch rule) are
    // one: the first keeps the others' indices, the rest leave the list.
    std::map<std::string, int> byHash;
    std::vector<size_t> kept;
    absl::Status firstRefusal;
    for (size_t i : work.ranks) {
      const planning::TileCandidate &c = space[i];
      absl::StatusOr<codegen::EmittedKernel> made = codegen::EmitKernel(kernel, c.params);
      // A candidate the code generator cannot make (the planner's rules and
      // the emitter's disagree) is left out, not the whole compile.
      if (!made.ok() && ReasonOf(made.status()) == "INVALID_CANDIDATE") {
        firstRefusal = firstRefusal.ok() ? made.status() : firstRefusal;
        continue;
      }
      TIR_RETURN_IF_ERROR(made.status());
      const codegen::EmittedKernel &emitted = *made;
      const std::string hash = SourceHash(emitted);
      if (auto seen = byHash.find(hash); seen != byHash.end()) {
        tir::v1::CandidateWork *first = item.mutable_candidates(seen->second);
        first->add_merged_candidate_indices(static_cast<uint32_t>(i));
        if (c.is_default) work.default_position = seen->second;
        continue;
      }
      byHash[hash] = item.candidates_size();
      kept.push_back(i);
      if (c.is_default) work.default_position = item.candidates_size();
      tir::v1::CandidateWork *cw = item.add_candidates();
      cw->set_source_hash(hash);
      cw->set_candidate_index(static_cast<uint32_t>(i));
      *cw->mutable_candidate() =
          planning::CandidateToProto(c, planned.predictions[k][i], planned.partition.kernels[k].space.kind, i);
      cw->set_source(emitted.source);
      for (const auto &a : arguments) *cw->add_arguments() = a;
      cw->set_entry_symbol(emitted.entry);
      *cw->mutable_launch() = emitted.launch;
    }
    if (kept.empty() && firstRefusal.ok() && std::find(work.domain.begin(), work.domain.end(), 0) != work.domain.end()) {
      // A zero-sized tensor: no tile covers an empty domain.
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                       absl::StrCat("kernel ", k, " iterates over [", absl::StrJoin(work.domain, ", "),
                                    "]: a dimension of extent 0 leaves nothing to compute (zero-sized tensors are "
                                    "not compiled)"));
    }
    if (kept.empty()) {
      return firstRefusal.ok() ? MakeError(absl::StatusCode::kInternal, "INTERNAL",
                                           absl::StrCat("kernel ", k, " has no tile candidate"))
                               : firstRefusal;
    }
    if (work.default_position < 0) work.default_position = 0;
    work.ranks = kept;
    out.push_back(std::move(work));
  }
  return out;
}

absl::StatusOr<std::vector<tir::v1::ShapeHint>> KernelShapes(GraphOp graph, const std::vector<std::vector<int64_t>> &args,
                                                             const std::vector<mlir::Value> &inputs) {
  const reference::InferredShapes inferred = reference::InferShapes(graph, args);
  std::vector<tir::v1::ShapeHint> out;
  for (size_t j = 0; j < inputs.size(); ++j) {
    mlir::Value v = inputs[j];
    tir::v1::ShapeHint h;
    h.set_input(static_cast<uint32_t>(j));
    if (v.getType().isIndex()) {
      auto arg = v.dyn_cast<mlir::BlockArgument>();
      if (!arg || arg.getOwner() != &graph.getBodyBlock() || args[arg.getArgNumber()].empty()) {
        return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                         absl::StrCat("kernel input ", j, " is an index computed inside the graph; it cannot be sized"));
      }
      h.add_shape(args[arg.getArgNumber()][0]);
    } else if (auto t = v.getType().dyn_cast<mlir::RankedTensorType>(); t && !t.hasStaticShape()) {
      auto it = inferred.values.find(v);
      if (it == inferred.values.end()) {
        return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("kernel input ", j, " has no inferred shape"));
      }
      for (int64_t d : it->second) {
        if (d < 0) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("kernel input ", j, " is not sized"));
        h.add_shape(d);
      }
    } else {
      continue;
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace tir::tuning
