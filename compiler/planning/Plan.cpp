#include "compiler/planning/Plan.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/status.h"

namespace tir::planning {
namespace {

std::string Params(const tir::v1::Candidate &c) {
  std::vector<std::string> parts;
  std::vector<std::pair<std::string, int64_t>> sorted(c.params().begin(), c.params().end());
  std::sort(sorted.begin(), sorted.end());
  for (const auto &[k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, " ");
}

// Everything the candidate space and its ranking depend on.
std::string FactsKey(const KernelFacts &f) {
  return absl::StrCat(static_cast<int>(f.space.kind), "|", absl::StrJoin(f.space.shape, ","), "|",
                      absl::StrJoin(f.space.reduced_dims, ","), "|", f.space.row_resident, "|",
                      absl::StrJoin(f.space.batch, ","), "|", f.space.m, ",", f.space.n, ",", f.space.k, "|",
                      f.bytes_in, "|", f.bytes_out, "|", f.flops_per_point, "|", f.element_bytes, "|", f.io_bytes, "|",
                      f.operand_bytes, "|", f.tensor_core, f.tf32, "|", f.max_vector, "|", f.live_values, "|",
                      f.reductions, f.online, f.ordered_reduction, f.row_outputs, f.static_row, f.column, "|", f.row_inputs, "|",
                      f.innermost_reduced, "|", f.matmul_pipelined, f.matmul_f32);
}

}  // namespace

tir::v1::Candidate CandidateToProto(const TileCandidate &c, const Prediction &p, KernelKind kind, int rank) {
  tir::v1::Candidate out;
  out.set_kernel_kind(KernelKindName(kind));
  for (const auto &[k, v] : c.params) (*out.mutable_params())[k] = v;
  out.set_is_default(c.is_default);
  out.set_predicted_seconds(p.seconds);
  out.set_rank(rank);
  for (const auto &[k, v] : p.inputs) (*out.mutable_model_inputs())[k] = v;
  return out;
}

absl::Status CheckPrecision(const std::string &precision) {
  if (precision.empty() || precision == "ieee" || precision == "tf32") return absl::OkStatus();
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_OPTIONS",
                   "precision '" + precision + "' is not one of ieee, tf32");
}

absl::StatusOr<PlannedGraph> PlanGraph(GraphOp graph, const target::ArchInfo &arch, const CostModel &model,
                                       int top, const PlanOptions &options) {
  TIR_RETURN_IF_ERROR(CheckPrecision(options.precision));
  PlannedGraph out;
  std::string why;
  mlir::FailureOr<TileHints> hints = parseTileHints(graph, &why);
  if (mlir::failed(hints)) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", why);
  // Kernels with identical facts (repeated layers) share one ranked space.
  std::map<std::string, std::pair<CandidateSpace, std::vector<Prediction>>> memo;
  absl::StatusOr<Partition> partition = PartitionGraph(graph, arch, options.deadline, options.max_kernels);
  if (!partition.ok()) return partition.status();
  out.partition = *std::move(partition);
  if (options.max_kernels > 0 && out.partition.kernels.size() > options.max_kernels) {
    return KernelsExceeded(options.max_kernels, out.partition.kernels.size());
  }
  out.plan.set_graph(graph.getSymName().str());
  out.plan.set_arch(arch.name);
  if (options.precision == "tf32") out.plan.set_precision("tf32");
  uint32_t intermediates = 0;
  // A dynamic graph ranked at the sizes it is tuned at.
  std::optional<ValueShapeMap> sized;
  if (options.shapes != nullptr) sized = reference::ValueShapes(graph, *options.shapes);
  size_t candidates = 0;
  for (const Kernel &k : out.partition.kernels) {
    if (absl::Now() > options.deadline) return PlanningBudgetExceeded();
    for (mlir::Value v : k.outputs) {
      bool returned = false;
      for (mlir::Operation *u : v.getUsers()) returned |= llvm::isa<ResultsOp>(u);
      intermediates += !returned;
    }
    KernelFacts facts = ComputeFacts(k, sized ? &*sized : nullptr);
    // tf32 on request, for f32 operands on a GPU with tensor cores.
    if (options.precision == "tf32" && arch.is_gpu && facts.space.kind == KernelKind::kMatmul && facts.operand_bytes == 4 &&
        !facts.tensor_core && facts.element_bytes == 4 && facts.matmul_f32) {
      facts.tf32 = true;
      facts.tensor_core = true;
      facts.matmul_pipelined = false;
    }
    const std::string key = FactsKey(facts);
    auto hit = memo.find(key);
    if (hit == memo.end()) {
      CandidateSpace space = GenerateCandidates(facts, arch, &*hints);
      std::vector<Prediction> preds;
      // Every prediction carries the model's inputs: measured candidates
      // become data points for the model's calibration.
      for (const TileCandidate &c : space.kept) preds.push_back(model.Predict(facts, c, arch, /*explain=*/true));
      std::vector<size_t> order(space.kept.size());
      std::iota(order.begin(), order.end(), 0);
      // A GPU matmul whose shape has the work to fill the machine ranks
      // the candidates that do (FillUnits) first: one that leaves SMs idle
      // (108 tiles of 64 x 192 on 132 SMs) stays in the space for tuning to
      // measure, behind them.
      // A GPU pointwise or reduction kernel ranks the candidates that move
      // the widest runs its operands allow (16 bytes) first: a warp moves
      // 512 bytes an instruction at 16 bytes a thread against 64 at 2, so
      // narrower runs issue up to 8x the loads and stores for the same bytes
      // and keep fewer bytes in flight, which the model's byte count alone
      // does not price.
      int64_t most = 0, widest = 0;
      auto width = [&](const TileCandidate &c) {
        auto v = c.params.find("vector_width");
        return v == c.params.end() ? int64_t{1} : v->second;
      };
      for (const TileCandidate &c : space.kept) {
        most = std::max(most, c.Units());
        widest = std::max(widest, width(c));
      }
      const bool fillFirst = arch.is_gpu && facts.space.kind == KernelKind::kMatmul && most >= FillUnits(arch);
      const bool wideFirst = arch.is_gpu && facts.space.kind != KernelKind::kMatmul;
      auto tier = [&](size_t i) {
        if (fillFirst && space.kept[i].Units() < FillUnits(arch)) return 1;
        if (wideFirst && width(space.kept[i]) < widest) return 1;
        return 0;
      };
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (tier(a) != tier(b)) return tier(a) < tier(b);
        return preds[a].seconds < preds[b].seconds;
      });
      CandidateSpace ranked = space;
      ranked.kept.clear();
      std::vector<Prediction> rankedPreds;
      for (size_t i : order) {
        ranked.kept.push_back(space.kept[i]);
        rankedPreds.push_back(preds[i]);
      }
      hit = memo.emplace(key, std::make_pair(std::move(ranked), std::move(rankedPreds))).first;
    }
    const CandidateSpace &ranked = hit->second.first;
    const std::vector<Prediction> &rankedPreds = hit->second.second;
    // No tile of the arch runs the kernel (a domain too large for a grid: a
    // broadcast to 2^48 elements is more blocks than a grid holds at any
    // tile): the graph is refused here, naming why, not left to a later
    // stage with nothing to compile. A zero-sized domain (nothing to
    // compute) is refused where its kernel is built (INVALID_GRAPH).
    const std::vector<int64_t> parallel = k.space.Parallel(), reduced = k.space.Reduced();
    const bool empty = std::count(parallel.begin(), parallel.end(), 0) + std::count(reduced.begin(), reduced.end(), 0) > 0;
    if (ranked.kept.empty() && !empty) {
      std::vector<std::string> reasons;
      for (const auto &[reason, n] : ranked.pruned) reasons.push_back(absl::StrCat(reason, " (", n, ")"));
      return MakeError(absl::StatusCode::kInvalidArgument, "LIMIT_EXCEEDED",
                       absl::StrCat("kernel ", k.index, " (", k.space.ToString(), ") has no tile ", arch.name,
                                    " can run: each of its ", ranked.before_pruning, " candidates is refused: ",
                                    absl::StrJoin(reasons, "; "),
                                    "; split the computation into smaller tensors"));
    }
    candidates += ranked.kept.size();
    if (options.max_candidates > 0 && candidates > options.max_candidates) {
      return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                       absl::StrCat("maxPlannedCandidates=", options.max_candidates, ": the ",
                                    out.partition.kernels.size(), " kernels of this graph keep more candidates than ",
                                    options.max_candidates, " in all (", candidates, " by kernel ", k.index,
                                    "); split the graph, or raise maxPlannedCandidates"));
    }
    tir::v1::KernelPlan *kp = out.plan.add_kernels();
    kp->set_index(k.index);
    kp->set_kind(KernelKindName(k.space.kind));
    kp->set_iteration_space(k.space.ToString());
    for (int64_t d : k.space.Parallel()) kp->add_parallel(d);
    for (int64_t d : k.space.Reduced()) kp->add_reduced(d);
    if (k.index + 1 < static_cast<int>(out.partition.kernels.size())) kp->set_split_reason(k.reason);
    kp->set_op_count(k.ops.size());
    kp->set_candidates_before_pruning(ranked.before_pruning);
    kp->set_candidates_after_pruning(ranked.kept.size());
    for (const auto &[reason, n] : ranked.pruned) (*kp->mutable_pruned())[reason] = n;
    kp->set_user_tile(ranked.user_tile);
    for (size_t r = 0; r < ranked.kept.size(); ++r) {
      if (static_cast<int>(r) < top) *kp->add_top() = CandidateToProto(ranked.kept[r], rankedPreds[r], k.space.kind, r);
      if (ranked.kept[r].is_default) *kp->mutable_default_candidate() = CandidateToProto(ranked.kept[r], rankedPreds[r], k.space.kind, r);
    }
    out.spaces.push_back(ranked);
    out.predictions.push_back(rankedPreds);
  }
  out.plan.set_intermediates(intermediates);
  return out;
}

std::string PlanToText(const tir::v1::Plan &plan) {
  std::string s = absl::StrFormat("plan of @%s for %s: %d kernel(s), %d intermediate(s)\n", plan.graph(), plan.arch(),
                                  plan.kernels_size(), plan.intermediates());
  if (plan.precision() == "tf32") {
    s += "precision: tf32 (f32 matmul operands rounded to 10 mantissa bits on tensor cores)\n";
  }
  for (const tir::v1::KernelPlan &k : plan.kernels()) {
    absl::StrAppendFormat(&s, "\nkernel %d: %s (%d ops)\n", k.index(), k.iteration_space(), k.op_count());
    if (!k.split_reason().empty()) absl::StrAppendFormat(&s, "  split: %s\n", k.split_reason());
    absl::StrAppendFormat(&s, "  candidates: %d, %d after pruning\n", k.candidates_before_pruning(),
                          k.candidates_after_pruning());
    if (!k.user_tile().empty()) absl::StrAppendFormat(&s, "  user tile: %s\n", k.user_tile());
    for (const tir::v1::Candidate &c : k.top()) {
      absl::StrAppendFormat(&s, "  #%-3d %9.2f us  %s%s\n", c.rank(), c.predicted_seconds() * 1e6, Params(c),
                            c.is_default() ? "  (default)" : "");
    }
    if (k.has_default_candidate() && k.default_candidate().rank() >= static_cast<uint32_t>(k.top_size())) {
      absl::StrAppendFormat(&s, "  default #%d %9.2f us  %s\n", k.default_candidate().rank(),
                            k.default_candidate().predicted_seconds() * 1e6, Params(k.default_candidate()));
    }
  }
  return s;
}

}  // namespace tir::planning
