//===- Partition.cpp - kernels with one iteration space each --------------===//
//
// See Partition.h for the kinds, domains and the algorithm.

#include "compiler/planning/Partition.h"

#include "compiler/planning/AccessMaps.h"
#include "compiler/planning/DynamicDims.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/OnlineSoftmax.h"
#include "compiler/support/status.h"
#include "mlir/IR/IRMapping.h"

namespace tir::planning {
namespace {

// Where in a kernel an op's result lives.
enum class Domain { kMain, kRow, kReduced, kA, kB, kC };

std::vector<int64_t> ShapeOf(mlir::Type t) {
  auto r = t.dyn_cast<mlir::RankedTensorType>();
  if (!r) return {};
  std::vector<int64_t> s;
  for (int64_t d : r.getShape()) s.push_back(mlir::ShapedType::isDynamic(d) ? -1 : d);
  return s;
}

std::string Fmt(const std::vector<int64_t> &shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(d < 0 ? "?" : std::to_string(d));
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

bool IsReduction(mlir::Operation *op) { return llvm::isa<ReduceOp, ReduceUdOp>(op); }
bool IsMatmul(mlir::Operation *op) { return llvm::isa<MatmulOp>(op); }
// Scalars (an index from `dim`, a scalar input) count as static.
bool ShapeIsStatic(mlir::Type t) {
  auto shaped = t.dyn_cast<mlir::ShapedType>();
  return !shaped || shaped.hasStaticShape();
}

bool IsPointwiseLike(mlir::Operation *op) { return !IsReduction(op) && !IsMatmul(op) && !llvm::isa<LaunchOp>(op); }

// `a` can be read per element of `b`: same rank, each extent equal or 1.
bool BroadcastsInto(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  if (a.size() != b.size()) return a.empty();  // scalars broadcast anywhere
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1) return false;
  }
  return true;
}

std::vector<int> ReducedDims(mlir::Operation *op) {
  llvm::ArrayRef<int32_t> dims = llvm::isa<ReduceOp>(op) ? llvm::cast<ReduceOp>(op).getDimensions()
                                                         : llvm::cast<ReduceUdOp>(op).getDimensions();
  std::vector<int> out(dims.begin(), dims.end());
  std::sort(out.begin(), out.end());
  return out;
}

struct Draft {
  IterationSpace space;
  std::set<mlir::Operation *> ops;
  std::map<mlir::Operation *, Domain> domain;
  std::string reason;
  // Kept as ops join (placing an op costs no walk over the kernel's ops, so
  // partitioning stays near-linear in the graph's size): its matmul (a
  // kernel holds one) and how many reductions it has.
  mlir::Operation *matmul = nullptr;
  int reductions = 0;
  void Add(mlir::Operation *op) {
    if (!ops.insert(op).second) return;
    if (IsMatmul(op)) matmul = op;
    reductions += IsReduction(op);
  }
};

class Partitioner {
 public:
  Partitioner(GraphOp graph, const target::ArchInfo &arch, const std::set<mlir::Operation *> &materialized,
              absl::Time deadline, size_t max_kernels)
      : graph_(graph), arch_(arch), materialized_(materialized), deadline_(deadline), max_kernels_(max_kernels) {}

  absl::StatusOr<Partition> Run() {
    mlir::Block &block = graph_.getBodyBlock();
    // Leaves: pointwise ops reading graph inputs, constants, other leaves
    // and reduction results (a value per row, read broadcast). A leaf used
    // by several kernels is computed in each rather than written by one and
    // read by the others: softmax's exp(x - max) is recomputed from x where
    // it is normalized instead of moving a row-sized intermediate through
    // memory twice.
    for (mlir::Operation &op : block.without_terminator()) {
      if (IsPointwiseLike(&op) && op.getNumRegions() == 0) {
        bool leaf = true;
        bool perRow = false;
        for (mlir::Value v : op.getOperands()) {
          mlir::Operation *def = v.getDefiningOp();
          if (!def) continue;
          perRow |= llvm::isa<ReduceOp>(def) || row_leaf_.count(def);
          if (!leaf_.count(def) && !llvm::isa<ReduceOp>(def)) leaf = false;
        }
        if (leaf) leaf_.insert(&op);
        if (leaf && perRow) row_leaf_.insert(&op);
      }
    }
    for (mlir::Value v : block.getTerminator()->getOperands()) {
      if (mlir::Operation *def = v.getDefiningOp()) returned_.insert(def);
    }
    llvm::SmallVector<mlir::Operation *> order;
    for (mlir::Operation &op : block.without_terminator()) order.push_back(&op);
    size_t placed = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (++placed % 256 == 0 && absl::Now() > deadline_) return PlanningBudgetExceeded();
      TIR_RETURN_IF_ERROR(Place(*it));
      if (max_kernels_ > 0 && drafts_.size() > max_kernels_) return KernelsExceeded(max_kernels_, drafts_.size());
      if (kernel_ops_ > kMaxKernelOps) {
        return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                         absl::StrCat("maxKernelOps=", kMaxKernelOps, ": the kernels of this graph would hold more than ",
                                      kMaxKernelOps, " ops in all (values recomputed in every kernel that reads them); "
                                      "split the graph"));
      }
    }
    return Finish();
  }

 private:
  // Kernels (by creation index) that contain a user of `op`.
  std::vector<int> UserKernels(mlir::Operation *op, bool &returned) {
    std::set<int> ks;
    returned = returned_.count(op) > 0;
    for (mlir::Operation *user : op->getUsers()) {
      auto it = kernels_of_.find(user);
      if (it == kernels_of_.end()) continue;  // dead user or terminator
      ks.insert(it->second.begin(), it->second.end());
    }
    return std::vector<int>(ks.begin(), ks.end());
  }

  absl::Status Place(mlir::Operation *op) {
    bool returned = false;
    std::vector<int> users = UserKernels(op, returned);
    if (users.empty() && !returned) return absl::OkStatus();  // dead: computes nothing used
    if (users.empty()) {
      NewKernel(op, "it computes a graph output that no op of another kernel consumes, so it shares no "
                    "iteration space with them");
      return absl::OkStatus();
    }
    if (materialized_.count(op)) {
      NewKernel(op, "its result is read under two different index maps by the kernel it feeds (directly and "
                    "through a transpose or other view), and only pointwise values can be recomputed per map, "
                    "so it is written out first");
      return absl::OkStatus();
    }
    // Cheap leaves are recomputed in every kernel that uses them. One that
    // reads a reduction result is written by the kernel that runs first
    // when the graph returns it or a matmul stages it.
    if (leaf_.count(op) && !(row_leaf_.count(op) && returned)) {
      std::vector<Domain> domains;
      bool all = true;
      for (int k : users) {
        std::string why;
        std::optional<Domain> d = Fits(op, k, why);
        if (!d || (row_leaf_.count(op) && (*d == Domain::kA || *d == Domain::kB))) { all = false; break; }
        domains.push_back(*d);
      }
      // A returned leaf that a matmul would only stage is never stored there:
      // it takes the path below, which writes it out first.
      const bool stagedOnly =
          returned && std::any_of(domains.begin(), domains.end(), [](Domain d) { return d == Domain::kA || d == Domain::kB; });
      if (all && !stagedOnly) {
        for (size_t i = 0; i < users.size(); ++i) Join(op, users[i], domains[i]);
        return absl::OkStatus();
      }
    }
    const int k = *std::max_element(users.begin(), users.end());  // runs first among users
    std::string why;
    if (std::optional<Domain> d = Fits(op, k, why)) {
      // A staged matmul operand (a prologue value) is computed per K tile
      // and never stored: a value another kernel (or the graph) also reads
      // is written out by a kernel of its own.
      if ((*d == Domain::kA || *d == Domain::kB) && (users.size() > 1 || returned)) {
        NewKernel(op, "it is a staged operand of a matmul and is also read by another kernel; a staged operand "
                      "is not stored, so it is written out first");
        return absl::OkStatus();
      }
      // A value this kernel would store for another kernel (or the graph)
      // must be covered by the kernel's iteration: one read through a slice
      // or view of a different shape is larger than what the kernel visits.
      if (*d == Domain::kMain && drafts_[k].space.kind == KernelKind::kPointwise && (users.size() > 1 || returned)) {
        const std::vector<int64_t> shape = ShapeOf(op->getResult(0).getType());
        const std::vector<int64_t> &space = drafts_[k].space.shape;
        if (!shape.empty() && shape != space && !BroadcastsInto(shape, space)) {
          NewKernel(op, absl::StrCat("its value ", Fmt(shape), " is also read by another kernel and does not map onto "
                                     "this kernel's ", Fmt(space), " iteration space, so it is written out first"));
          return absl::OkStatus();
        }
      }
      Join(op, k, *d);
      return absl::OkStatus();
    }
    NewKernel(op, why);
    return absl::OkStatus();
  }

  void Join(mlir::Operation *op, int k, Domain d) {
    drafts_[k].Add(op);
    ++kernel_ops_;
    drafts_[k].domain[op] = d;
    kernels_of_[op].push_back(k);
  }

  void NewKernel(mlir::Operation *op, const std::string &reason) {
    Draft draft;
    draft.reason = reason;
    std::vector<int64_t> shape = ShapeOf(op->getResult(0).getType());
    if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
      SetMatmulSpace(draft.space, mm);
      draft.domain[op] = Domain::kC;
    } else if (IsReduction(op)) {
      SetReductionSpace(draft.space, op, /*rowResident=*/false);
      draft.domain[op] = Domain::kReduced;
    } else {
      draft.space.kind = KernelKind::kPointwise;
      draft.space.shape = shape;
      draft.domain[op] = Domain::kMain;
    }
    draft.Add(op);
    ++kernel_ops_;
    drafts_.push_back(std::move(draft));
    kernels_of_[op].push_back(static_cast<int>(drafts_.size()) - 1);
  }

  static void SetMatmulSpace(IterationSpace &s, MatmulOp mm) {
    s.kind = KernelKind::kMatmul;
    s.shape = ShapeOf(mm.getC().getType());
    std::vector<int64_t> a = ShapeOf(mm.getA().getType());
    const size_t r = a.size();
    s.batch.assign(s.shape.begin(), s.shape.end() - 2);
    s.m = s.shape[r - 2];
    s.n = s.shape[r - 1];
    s.k = a[r - 1];
  }

  static void SetReductionSpace(IterationSpace &s, mlir::Operation *red, bool rowResident) {
    s.kind = KernelKind::kReduction;
    s.shape = ShapeOf(red->getOperand(0).getType());
    s.reduced_dims = ReducedDims(red);
    s.row_resident = rowResident;
  }

  bool RowFits(const IterationSpace &s, mlir::Type element, std::string &why) {
    int64_t extent = 1;
    for (int d : s.reduced_dims) {
      if (s.shape[d] < 0) {
        why = "the reduced extent is dynamic, so a row is not known to fit on chip";
        return false;
      }
      extent *= s.shape[d];
    }
    const int64_t bytes = extent * std::max<int64_t>(4, element.getIntOrFloatBitWidth() / 8);
    if (bytes > arch_.row_budget_bytes) {
      why = absl::StrCat("a row of ", extent, " elements (", bytes, " bytes) exceeds the ",
                         arch_.row_budget_bytes, "-byte on-chip row budget of ", arch_.name);
      return false;
    }
    return true;
  }

  std::vector<int64_t> DomainShape(const Draft &k, Domain d, mlir::Operation *anchor) {
    switch (d) {
      case Domain::kMain: return k.space.shape;
      case Domain::kRow: return k.space.shape;
      case Domain::kReduced: {
        std::vector<int64_t> s = k.space.shape;
        for (int r : k.space.reduced_dims) s[r] = 1;
        return s;
      }
      case Domain::kC: return k.space.shape;
      case Domain::kA:
      case Domain::kB: return ShapeOf(anchor->getOperand(d == Domain::kA ? 0 : 1).getType());
    }
    return {};
  }

  // The domain `op` would take in kernel `k`, or nullopt with the reason.
  std::optional<Domain> Fits(mlir::Operation *op, int k, std::string &why) {
    Draft &draft = drafts_[k];
    // 1. The domain the users in k need op's result in.
    std::optional<Domain> need;
    mlir::Operation *anchor = nullptr;
    for (mlir::Operation *user : op->getUsers()) {
      if (!draft.ops.count(user)) continue;
      Domain d = draft.domain[user];
      if (auto mm = llvm::dyn_cast<MatmulOp>(user)) {
        anchor = user;
        if (mm.getA().getDefiningOp() == op) d = Domain::kA;
        else if (mm.getB().getDefiningOp() == op) d = Domain::kB;
        else d = Domain::kC;  // accumulator
      } else if (IsReduction(user)) {
        d = Domain::kRow;
      }
      // A reduction's result (one value a row) is read in the row domain
      // and after the row's reductions alike.
      if (need && *need != d && IsReduction(op) && draft.space.kind == KernelKind::kReduction &&
          std::min(*need, d) == Domain::kRow && std::max(*need, d) == Domain::kReduced) {
        need = Domain::kRow;
        continue;
      }
      if (need && *need != d) {
        why = "its value is used in two different iteration domains of the consumer kernel";
        return std::nullopt;
      }
      need = d;
    }
    if (!need) {
      why = "no user in the kernel";
      return std::nullopt;
    }
    // A gather reads its data operand at positions its indices pick at run
    // time: no tile of the gather's iteration space covers them, so the
    // kernel reads that operand whole, from memory.
    for (mlir::Operation *user : op->getUsers()) {
      auto gather = llvm::dyn_cast<GatherOp>(user);
      if (gather && draft.ops.count(user) && gather.getData().getDefiningOp() == op) {
        why = "it is the data a gather reads at run-time indices, which no tile of the gather's iteration space "
              "covers, so it is written out first";
        return std::nullopt;
      }
    }
    if (!anchor) anchor = draft.matmul;
    const std::vector<int64_t> target = DomainShape(draft, *need, anchor);
    const std::vector<int64_t> shape = ShapeOf(op->getResult(0).getType());
    const bool tiled = *need == Domain::kRow || *need == Domain::kA || *need == Domain::kB ||
                       (draft.space.kind != KernelKind::kPointwise && *need == Domain::kMain);

    if (IsPointwiseLike(op)) {
      if (llvm::isa<ReshapeOp>(op) && tiled && ShapeOf(op->getOperand(0).getType()) != shape &&
          !UnitDimsOnly(ShapeOf(op->getOperand(0).getType()), shape)) {
        why = "a reshape remaps the dimensions the consumer's reduction or matmul tiles";
        return std::nullopt;
      }
      // Each user in the kernel must address op's elements from its own
      // indices: elementwise users through a broadcast (unit dims at 0), views
      // (transpose, slice, reshape) through their index relation, reductions
      // and matmuls by reading their operand.
      for (mlir::Operation *user : op->getUsers()) {
        if (!draft.ops.count(user)) continue;
        // (A gather's indices are read through its index relation; its data
        // was refused above.)
        if (llvm::isa<TransposeOp, SliceOp, ReduceOp, ReduceUdOp, MatmulOp, GatherOp>(user)) continue;
        if (llvm::isa<ReshapeOp>(user)) {
          // A size the reshape takes (a `dim` of another value) is read as a
          // scalar, not through the reshape's index relation.
          if (user->getOperand(0).getDefiningOp() != op) continue;
          // Unit dims in or out relabel indices: read through it anywhere.
          if (UnitDimsOnly(shape, ShapeOf(user->getResult(0).getType()))) continue;
          if (tiled) {
            why = "a reshape remaps the dimensions the consumer's reduction or matmul tiles";
            return std::nullopt;
          }
          if (!ShapeIsStatic(op->getResult(0).getType()) || !ShapeIsStatic(user->getResult(0).getType())) {
            why = "a reshape with run-time extents reads its input through a linear index, so the value it "
                  "reshapes is written out first";
            return std::nullopt;
          }
          continue;
        }
        const std::vector<int64_t> userShape = ShapeOf(user->getResult(0).getType());
        if (shape != userShape && !BroadcastsInto(shape, userShape)) {
          why = absl::StrCat("its shape ", Fmt(shape), " does not map onto the consumer's ", Fmt(userShape),
                             " iteration space");
          return std::nullopt;
        }
      }
      (void)target;
      return *need;
    }

    if (IsReduction(op)) {
      IterationSpace mine;
      SetReductionSpace(mine, op, false);
      std::vector<int64_t> reduced = mine.shape;
      for (int r : mine.reduced_dims) reduced[r] = 1;
      mlir::Type element = op->getOperand(0).getType().cast<mlir::ShapedType>().getElementType();
      if (draft.space.kind == KernelKind::kMatmul) {
        why = "a reduction result feeds a matmul kernel; the reduction runs first as its own kernel";
        return std::nullopt;
      }
      if (draft.space.kind == KernelKind::kPointwise) {
        if (target == reduced) {  // epilogue in the reduced shape
          ConvertToReduction(draft, op, /*rowResident=*/false, Domain::kReduced);
          return Domain::kReduced;
        }
        if (target == mine.shape) {  // broadcast back over its own rows
          if (!RowFits(mine, element, why)) {
            why = "the reduction's result is broadcast back over the reduced dimension and " + why;
            return std::nullopt;
          }
          ConvertToReduction(draft, op, /*rowResident=*/true, Domain::kRow);
          return Domain::kReduced;
        }
        why = absl::StrCat("the reduction of ", Fmt(mine.shape), " feeds a kernel iterating ", Fmt(target));
        return std::nullopt;
      }
      // Reduction kernel: same rows and dims only.
      if (mine.shape != draft.space.shape || mine.reduced_dims != draft.space.reduced_dims) {
        why = absl::StrCat("it reduces ", Fmt(mine.shape), " over dims [",
                           absl::StrJoin(mine.reduced_dims, ", "), "] while the consumer kernel reduces ",
                           Fmt(draft.space.shape), " over dims [", absl::StrJoin(draft.space.reduced_dims, ", "),
                           "]");
        return std::nullopt;
      }
      if (*need == Domain::kRow || *need == Domain::kMain) {
        if (!draft.space.row_resident && !RowFits(mine, element, why)) {
          // A max whose only use here is the exp(a - max) an add-reduction
          // sums: both in one pass (OnlineSoftmax.h).
          if (OnlineFits(draft, op)) {
            draft.space.online = true;
            return Domain::kReduced;
          }
          why = "the reduction's result is broadcast back over the reduced dimension and " + why;
          return std::nullopt;
        }
        draft.space.row_resident = true;
      }
      return Domain::kReduced;
    }

    // Matmul.
    if (draft.space.kind == KernelKind::kMatmul) {
      why = (*need == Domain::kA || *need == Domain::kB)
                ? "a matmul result is an operand of another matmul, whose K-reduction reads whole rows "
                  "and columns of it, so it is materialized"
                : "a kernel holds one matmul";
      return std::nullopt;
    }
    if (draft.space.kind == KernelKind::kReduction) {
      why = "the matmul output is reduced over its N dimension, which needs every N tile of a row; the "
            "reduction runs as its own kernel";
      return std::nullopt;
    }
    if (target != shape) {
      why = absl::StrCat("the matmul result ", Fmt(shape), " feeds a kernel iterating ", Fmt(target));
      return std::nullopt;
    }
    // The same shape is not the same space when a view between C and what
    // the kernel stores remaps dims: a transpose of equal or run-time
    // extents keeps the shape.
    if (RemapsInDraft(op, draft)) {
      why = absl::StrCat("the matmul result ", Fmt(shape), " reaches the kernel's stores through a view that "
                         "remaps its dims");
      return std::nullopt;
    }
    // A pointwise kernel of C's shape becomes the matmul's epilogue.
    SetMatmulSpace(draft.space, llvm::cast<MatmulOp>(op));
    for (auto &[o, d] : draft.domain) d = Domain::kC;
    return Domain::kC;
  }

  // Whether a view among the draft's ops that read `op`'s value (directly
  // or through other ops of the draft) remaps dims: a transpose that
  // permutes, a slice, a reshape other than unit dims in or out.
  static bool RemapsInDraft(mlir::Operation *op, const Draft &draft) {
    std::vector<mlir::Operation *> stack = {op};
    std::set<mlir::Operation *> seen;
    while (!stack.empty()) {
      mlir::Operation *cur = stack.back();
      stack.pop_back();
      for (mlir::Operation *user : cur->getUsers()) {
        if (!draft.ops.count(user) || !seen.insert(user).second) continue;
        if (auto t = llvm::dyn_cast<TransposeOp>(user)) {
          for (size_t i = 0; i < t.getPermutation().size(); ++i) {
            if (t.getPermutation()[i] != static_cast<int64_t>(i)) return true;
          }
        } else if (llvm::isa<SliceOp>(user)) {
          return true;
        } else if (llvm::isa<ReshapeOp>(user) &&
                   !UnitDimsOnly(ShapeOf(user->getOperand(0).getType()), ShapeOf(user->getResult(0).getType()))) {
          return true;
        }
        stack.push_back(user);
      }
    }
    return false;
  }

  // `op` pairs with the one reduction of the streaming kernel `draft` as an
  // online max and sum.
  static bool OnlineFits(const Draft &draft, mlir::Operation *op) {
    auto max = llvm::dyn_cast<ReduceOp>(op);
    if (!max || draft.space.online) return false;
    // Rows along the innermost dim (a column reduction keeps its two passes,
    // as codegen and KernelFacts do).
    const int64_t rank = max.getInput().getType().cast<mlir::RankedTensorType>().getRank();
    const auto dims = max.getDimensions();
    if (static_cast<int64_t>(dims.size()) < rank && llvm::find(dims, rank - 1) == dims.end()) return false;
    if (draft.reductions != 1) return false;
    return MatchOnlineSoftmax(max, [&](mlir::Operation *o) { return draft.ops.count(o) > 0; }).has_value();
  }

  void ConvertToReduction(Draft &draft, mlir::Operation *red, bool rowResident, Domain existing) {
    SetReductionSpace(draft.space, red, rowResident);
    for (auto &[o, d] : draft.domain) d = existing;
  }

  absl::StatusOr<Partition> Finish() {
    Partition p;
    const int n = static_cast<int>(drafts_.size());
    // Execution order is the reverse of creation order.
    std::vector<int> execIndex(n);
    for (int c = 0; c < n; ++c) execIndex[c] = n - 1 - c;
    std::vector<Kernel> kernels(n);
    mlir::Block &block = graph_.getBodyBlock();
    llvm::DenseMap<mlir::Operation *, int> position;
    int pos = 0;
    for (mlir::Operation &op : block) position[&op] = pos++;
    // Writer of each value: the kernel that computes it and runs first.
    auto writer = [&](mlir::Operation *def) {
      const auto &ks = kernels_of_[def];
      return execIndex[*std::max_element(ks.begin(), ks.end())];
    };
    for (int c = 0; c < n; ++c) {
      Kernel &k = kernels[execIndex[c]];
      k.index = execIndex[c];
      k.space = drafts_[c].space;
      k.reason = drafts_[c].reason;
      k.ops.assign(drafts_[c].ops.begin(), drafts_[c].ops.end());
      std::sort(k.ops.begin(), k.ops.end(),
                [&](mlir::Operation *a, mlir::Operation *b) { return position[a] < position[b]; });
    }
    for (Kernel &k : kernels) {
      std::set<mlir::Operation *> mine(k.ops.begin(), k.ops.end());
      llvm::SetVector<mlir::Value> inputs;
      for (mlir::Operation *op : k.ops) {
        op->walk([&](mlir::Operation *inner) {
          for (mlir::Value v : inner->getOperands()) {
            mlir::Operation *def = v.getDefiningOp();
            if (def && (mine.count(def) || op->isProperAncestor(def))) continue;
            if (auto arg = v.dyn_cast<mlir::BlockArgument>(); arg && arg.getOwner() != &block) continue;
            inputs.insert(v);
          }
        });
      }
      k.inputs.assign(inputs.begin(), inputs.end());
      for (mlir::Value v : k.inputs) {
        if (mlir::Operation *def = v.getDefiningOp(); def && writer(def) >= k.index) {
          return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                           absl::StrCat("partition order broken: kernel ", k.index, " reads a value kernel ",
                                        writer(def), " writes"));
        }
      }
    }
    // Outputs: values read by another kernel that does not compute them, and graph results.
    llvm::DenseMap<mlir::Value, llvm::SmallVector<int, 2>> readers;  // value -> kernels that read it
    for (const Kernel &k : kernels) {
      for (mlir::Value v : k.inputs) readers[v].push_back(k.index);
    }
    for (Kernel &k : kernels) {
      llvm::SetVector<mlir::Value> outputs;
      for (mlir::Operation *op : k.ops) {
        if (writer(op) != k.index) continue;
        for (mlir::Value r : op->getResults()) {
          bool needed = llvm::any_of(r.getUsers(), [](mlir::Operation *user) { return llvm::isa<ResultsOp>(user); });
          if (auto it = readers.find(r); it != readers.end()) {
            needed |= llvm::any_of(it->second, [&](int other) { return other != k.index; });
          }
          if (needed) outputs.insert(r);
        }
      }
      k.outputs.assign(outputs.begin(), outputs.end());
    }
    for (const Kernel &k : kernels) {
      if (k.index + 1 < n) {
        p.splits.push_back(absl::StrCat("kernel ", k.index, " is separate from the kernels it feeds: ", k.reason));
      }
    }
    p.kernels = std::move(kernels);
    return p;
  }

  GraphOp graph_;
  const target::ArchInfo &arch_;
  std::vector<Draft> drafts_;
  llvm::DenseMap<mlir::Operation *, std::vector<int>> kernels_of_;
  std::set<mlir::Operation *> leaf_, returned_;
  std::set<mlir::Operation *> row_leaf_;  // leaves that read a reduction result
  const std::set<mlir::Operation *> &materialized_;
  const absl::Time deadline_;
  const size_t max_kernels_;
  size_t kernel_ops_ = 0;  // ops placed in all kernels, recomputed leaves counted in each
};

// The op (of `graph`) whose value some kernel of `p` needs under two access
// maps, or null.
mlir::Operation *AccessConflict(GraphOp graph, const Partition &p) {
  mlir::OwningOpRef<mlir::ModuleOp> module = BuildPartitionedModule(graph, p);
  const std::string name = graph.getSymName().str();
  std::map<std::string, GraphOp, std::less<>> byName;
  for (GraphOp g : module->getOps<GraphOp>()) byName[g.getSymName().str()] = g;
  for (const Kernel &k : p.kernels) {
    auto found = byName.find(absl::StrCat(name, "_k", k.index));
    if (found == byName.end()) continue;
    GraphOp kg = found->second;
    // Kernel ops are the clones of k.ops, in order.
    std::vector<mlir::Operation *> clones;
    for (mlir::Operation &op : kg.getBodyBlock().without_terminator()) clones.push_back(&op);
    mlir::Operation *conflict = nullptr;
    if (mlir::succeeded(ComputeAccessMaps(kg, &conflict)) || conflict == nullptr) continue;
    for (size_t i = 0; i < clones.size() && i < k.ops.size(); ++i) {
      if (clones[i] == conflict) return k.ops[i];
    }
  }
  return nullptr;
}

}  // namespace

const char *KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kPointwise: return "pointwise";
    case KernelKind::kReduction: return "reduction";
    case KernelKind::kMatmul: return "matmul";
  }
  return "unknown";
}

std::vector<int64_t> IterationSpace::Parallel() const {
  if (kind == KernelKind::kMatmul) {
    std::vector<int64_t> p = batch;
    p.push_back(m);
    p.push_back(n);
    return p;
  }
  if (kind == KernelKind::kPointwise) return shape;
  std::vector<int64_t> p;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (std::find(reduced_dims.begin(), reduced_dims.end(), static_cast<int>(d)) == reduced_dims.end()) {
      p.push_back(shape[d]);
    }
  }
  return p;
}

std::vector<int64_t> IterationSpace::Reduced() const {
  if (kind == KernelKind::kMatmul) return {k};
  std::vector<int64_t> r;
  for (int d : reduced_dims) r.push_back(shape[d]);
  return r;
}

std::string IterationSpace::ToString() const {
  switch (kind) {
    case KernelKind::kPointwise: return "pointwise " + Fmt(shape);
    case KernelKind::kReduction:
      return absl::StrCat("reduction rows ", Fmt(Parallel()), " x reduce ", Fmt(Reduced()),
                          row_resident ? " (row-resident)" : online ? " (streaming, online max and sum)" : " (streaming)");
    case KernelKind::kMatmul:
      return absl::StrCat("matmul batch ", Fmt(batch), " M=", m < 0 ? "?" : std::to_string(m),
                          " N=", n < 0 ? "?" : std::to_string(n), " K=", k < 0 ? "?" : std::to_string(k));
  }
  return "";
}

namespace {

// Every tensor result is computed by an op of its own: a result that is a
// graph input, or that repeats an earlier result, becomes a same-type
// reshape (a copy) of it. A kernel writes each result it computes; without
// this, nothing would write the second of two equal results or an input
// returned as it is.
void CopyAliasedResults(GraphOp graph) {
  mlir::Operation *terminator = graph.getBodyBlock().getTerminator();
  std::set<void *> seen;
  mlir::OpBuilder b(terminator);
  for (mlir::OpOperand &use : terminator->getOpOperands()) {
    mlir::Value v = use.get();
    auto type = v.getType().dyn_cast<mlir::RankedTensorType>();
    const bool aliased = v.isa<mlir::BlockArgument>() || !seen.insert(v.getAsOpaquePointer()).second;
    if (!type || !aliased) continue;
    llvm::SmallVector<mlir::Value> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.isDynamicDim(d)) {
        dims.push_back(b.create<DimOp>(graph.getLoc(), b.getIndexType(), v, b.getI64IntegerAttr(d)));
      }
    }
    use.set(b.create<ReshapeOp>(graph.getLoc(), type, v, dims));
  }
}

}  // namespace

absl::Status PlanningBudgetExceeded() {
  return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                   "planningBudgetMs: planning this graph took longer than its time budget; split the graph, or raise "
                   "planningBudgetMs");
}

absl::Status KernelsExceeded(size_t max_kernels, size_t kernels) {
  return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                   absl::StrCat("maxKernelsPerGraph=", max_kernels, ": this graph is partitioned into ",
                                kernels > max_kernels ? "more than " : "", kernels > max_kernels ? max_kernels : kernels,
                                " kernels, each tuned and built on its own; split the graph, or raise "
                                "maxKernelsPerGraph"));
}

absl::StatusOr<Partition> PartitionGraph(GraphOp graph, const target::ArchInfo &arch, absl::Time deadline,
                                         size_t max_kernels) {
  CopyAliasedResults(graph);
  // Sizes only the whole graph's shape inference knows become dynamic_dims
  // read from graph inputs, so each kernel graph carries them.
  MaterializeDynamicDims(graph);
  // Partition, then check that every kernel's values can be indexed; a
  // non-pointwise value needed under two maps (a reduction or matmul result
  // read directly and transposed) is materialized and the graph partitioned
  // again.
  std::set<mlir::Operation *> materialized;
  for (;;) {
    TIR_ASSIGN_OR_RETURN(Partition p, Partitioner(graph, arch, materialized, deadline, max_kernels).Run());
    if (absl::Now() > deadline) return PlanningBudgetExceeded();
    mlir::Operation *conflict = AccessConflict(graph, p);
    if (conflict == nullptr || !materialized.insert(conflict).second) return p;
  }
}

mlir::OwningOpRef<mlir::ModuleOp> BuildPartitionedModule(GraphOp graph, const Partition &partition) {
  mlir::OpBuilder b(graph.getContext());
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(graph.getLoc());
  b.setInsertionPointToEnd(module->getBody());
  const std::string name = graph.getSymName().str();
  std::vector<GraphOp> kernelGraphs;
  for (const Kernel &k : partition.kernels) {
    llvm::SmallVector<mlir::Type> in, out;
    for (mlir::Value v : k.inputs) in.push_back(v.getType());
    for (mlir::Value v : k.outputs) out.push_back(v.getType());
    auto kg = b.create<GraphOp>(graph.getLoc(), absl::StrCat(name, "_k", k.index), b.getFunctionType(in, out));
    kg->setAttr("tir.kernel_kind", b.getStringAttr(KernelKindName(k.space.kind)));
    kg->setAttr("tir.iteration_space", b.getStringAttr(k.space.ToString()));
    // Structured form for passes: the iteration domain (matmul: batch..., M, N,
    // K) and, for reductions, the reduced dims of the domain.
    std::vector<int64_t> domain = k.space.shape;
    if (k.space.kind == KernelKind::kMatmul) domain.push_back(k.space.k);
    kg->setAttr("tir.iteration_domain", b.getDenseI64ArrayAttr(domain));  // -1: dynamic
    if (k.space.kind == KernelKind::kReduction) {
      std::vector<int64_t> dims(k.space.reduced_dims.begin(), k.space.reduced_dims.end());
      kg->setAttr("tir.reduced_dims", b.getDenseI64ArrayAttr(dims));
    }
    if (k.index + 1 < static_cast<int>(partition.kernels.size())) {
      kg->setAttr("tir.split_reason", b.getStringAttr(k.reason));
    }
    // Graph arguments keep their signature attributes (strides, alignment).
    for (auto [i, v] : llvm::enumerate(k.inputs)) {
      if (auto arg = v.dyn_cast<mlir::BlockArgument>()) {
        if (mlir::DictionaryAttr attrs = graph.getArgAttrDict(arg.getArgNumber())) kg.setArgAttrs(i, attrs);
      }
    }
    // Graph outputs keep theirs too: the kernel writes them where the graph
    // says (strides, a stride of 0, alignment).
    mlir::Operation *terminator = graph.getBodyBlock().getTerminator();
    for (auto [i, v] : llvm::enumerate(k.outputs)) {
      for (mlir::OpOperand &use : v.getUses()) {
        if (use.getOwner() != terminator) continue;
        if (mlir::DictionaryAttr attrs = graph.getResultAttrDict(use.getOperandNumber())) kg.setResultAttrs(i, attrs);
        break;
      }
    }
    mlir::IRMapping map;
    mlir::Block &body = kg.getBodyBlock();
    for (auto [i, v] : llvm::enumerate(k.inputs)) map.map(v, body.getArgument(i));
    mlir::OpBuilder kb = mlir::OpBuilder::atBlockEnd(&body);
    for (mlir::Operation *op : k.ops) kb.clone(*op, map);
    llvm::SmallVector<mlir::Value> results;
    for (mlir::Value v : k.outputs) results.push_back(map.lookup(v));
    kb.create<ResultsOp>(graph.getLoc(), results);
    kernelGraphs.push_back(kg);
  }
  // The stitching graph: the original signature, one launch per kernel.
  auto stitch = b.create<GraphOp>(graph.getLoc(), name, graph.getFunctionType());
  if (mlir::ArrayAttr a = graph.getArgAttrsAttr()) stitch.setArgAttrsAttr(a);
  if (mlir::ArrayAttr r = graph.getResAttrsAttr()) stitch.setResAttrsAttr(r);
  stitch->setAttr("tir.kernels", b.getI64IntegerAttr(partition.kernels.size()));
  mlir::IRMapping map;
  mlir::Block &body = stitch.getBodyBlock();
  for (auto [i, arg] : llvm::enumerate(graph.getBodyBlock().getArguments())) map.map(arg, body.getArgument(i));
  mlir::OpBuilder sb = mlir::OpBuilder::atBlockEnd(&body);
  for (const Kernel &k : partition.kernels) {
    llvm::SmallVector<mlir::Value> args;
    llvm::SmallVector<mlir::Type> types;
    for (mlir::Value v : k.inputs) args.push_back(map.lookup(v));
    for (mlir::Value v : k.outputs) types.push_back(v.getType());
    auto launch = sb.create<LaunchOp>(graph.getLoc(), types, kernelGraphs[k.index].getSymName(), args);
    for (auto [i, v] : llvm::enumerate(k.outputs)) map.map(v, launch.getResult(i));
  }
  llvm::SmallVector<mlir::Value> results;
  for (mlir::Value v : graph.getBodyBlock().getTerminator()->getOperands()) results.push_back(map.lookup(v));
  sb.create<ResultsOp>(graph.getLoc(), results);
  return module;
}

}  // namespace tir::planning
