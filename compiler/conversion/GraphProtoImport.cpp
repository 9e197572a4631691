//===- GraphProtoImport.cpp - tir.v1.Graph -> tir.graph -------------------===//
//
// 1. Collect every value id (inputs, op results, region values); a repeated id
//    or a repeated non-empty name is an error.
// 2. Order the ops topologically (Kahn's algorithm, ties by position): an op is
//    ready once all its operands are defined. Ops left over either use an id
//    nothing defines (dangling) or sit on a cycle; both are reported by op.
// 3. Build each op generically from its kind, operands, result types,
//    attributes and regions, located at a NameLoc carrying its result name.
// 4. Run the dialect verifier; its diagnostics become the error message.

#include <cctype>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "compiler/conversion/AttributeProto.h"
#include "compiler/conversion/DiagnosticStatus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/support/status.h"
#include "mlir/IR/Verifier.h"

namespace tir {
namespace {

absl::Status Invalid(const std::string &message) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", message);
}

// Attribute names must print and re-parse as bare identifiers.
bool IsValidAttributeName(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.')) return false;
  }
  return true;
}

absl::Status CheckAttributeName(const std::string &name, const std::string &where) {
  if (IsValidAttributeName(name)) return absl::OkStatus();
  return Invalid(absl::StrCat("attribute name '", name, "' of ", where,
                              " is not an identifier ([A-Za-z_][A-Za-z0-9_$.]*)"));
}

std::string OpLabel(const tir::v1::Op &op, int index, const std::string &scope) {
  return absl::StrCat(scope, "op #", index, " (", op.kind().empty() ? "<no kind>" : op.kind(), ")");
}

class Importer {
 public:
  Importer(mlir::MLIRContext *ctx) : ctx_(ctx), builder_(ctx) {}

  absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> Run(const tir::v1::Graph &g) {
    if (g.schema_version() > kGraphSchemaVersion) {
      return Invalid(absl::StrCat("graph schema version ", g.schema_version(),
                                  " is newer than this coordinator reads (", kGraphSchemaVersion, ")"));
    }
    if (g.outputs_size() == 0) return Invalid("the graph has no outputs: there is nothing to compute");
    TIR_RETURN_IF_ERROR(CollectIds(g));

    llvm::SmallVector<mlir::Type> inputTypes, outputTypes;
    for (int i = 0; i < g.inputs_size(); ++i) {
      const tir::v1::Value &v = g.inputs(i);
      TIR_ASSIGN_OR_RETURN(mlir::Type t, ImportType(v.type(), ctx_, ValueLabel(v, "input #" + std::to_string(i))));
      inputTypes.push_back(t);
    }
    mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(builder_.getUnknownLoc());
    builder_.setInsertionPointToEnd(module->getBody());
    auto graph = builder_.create<GraphOp>(Loc(g.name().empty() ? "graph" : g.name()),
                                          g.name().empty() ? "graph" : g.name(),
                                          builder_.getFunctionType(inputTypes, {}));
    mlir::Block &block = graph.getBodyBlock();
    for (int i = 0; i < g.inputs_size(); ++i) {
      const tir::v1::Value &v = g.inputs(i);
      block.getArgument(i).setLoc(Loc(v.name().empty() ? "input #" + std::to_string(i) : v.name()));
      values_[v.id()] = block.getArgument(i);
      TIR_RETURN_IF_ERROR(SetSignatureAttrs(
          v.type().strides(), v.type().stride_divisors(), v.type().stride_widths(), v.attributes(),
          ValueLabel(v, "input #" + std::to_string(i)),
          [&](llvm::StringRef name, mlir::Attribute a) { graph.setArgAttr(i, name, a); }));
    }
    builder_.setInsertionPointToEnd(&block);
    TIR_RETURN_IF_ERROR(ImportOps(g.ops(), ""));

    llvm::SmallVector<mlir::Value> outputs;
    for (int i = 0; i < g.outputs_size(); ++i) {
      const tir::v1::Output &o = g.outputs(i);
      auto it = values_.find(o.value());
      if (it == values_.end()) {
        return Invalid(absl::StrCat("output #", i, " refers to value ", o.value(),
                                    ", which no input or op defines"));
      }
      outputs.push_back(it->second);
      outputTypes.push_back(it->second.getType());
    }
    auto resultsOp = builder_.create<ResultsOp>(Loc("results"), outputs);
    {
      std::vector<std::string> keys;
      for (const auto &[k, unused] : g.results_attributes()) keys.push_back(k);
      std::sort(keys.begin(), keys.end());
      for (const std::string &k : keys) {
        TIR_RETURN_IF_ERROR(CheckAttributeName(k, "the results"));
        TIR_ASSIGN_OR_RETURN(mlir::Attribute a, ImportAttribute(g.results_attributes().at(k), k, ctx_, "the results"));
        resultsOp->setAttr(k, a);
      }
    }
    graph.setFunctionTypeAttr(mlir::TypeAttr::get(builder_.getFunctionType(inputTypes, outputTypes)));
    for (int i = 0; i < g.outputs_size(); ++i) {
      TIR_RETURN_IF_ERROR(SetSignatureAttrs(
          g.outputs(i).strides(), g.outputs(i).stride_divisors(), g.outputs(i).stride_widths(),
          g.outputs(i).attributes(), absl::StrCat("output #", i),
          [&](llvm::StringRef name, mlir::Attribute a) { graph.setResultAttr(i, name, a); }));
    }

    {
      std::vector<std::string> keys;
      for (const auto &[k, unused] : g.attributes()) keys.push_back(k);
      std::sort(keys.begin(), keys.end());
      for (const std::string &k : keys) {
        TIR_RETURN_IF_ERROR(CheckAttributeName(k, "the graph"));
        if (k == "sym_name" || k == "function_type" || k == "arg_attrs" || k == "res_attrs") {
          return Invalid("graph attribute '" + k + "' is set by the graph itself");
        }
        TIR_ASSIGN_OR_RETURN(mlir::Attribute a, ImportAttribute(g.attributes().at(k), k, ctx_, "the graph"));
        graph->setAttr(k, a);
      }
    }
    DiagnosticCollector diagnostics(ctx_);
    if (mlir::failed(mlir::verify(*module))) {
      return diagnostics.ToStatus("INVALID_GRAPH", "graph does not verify");
    }
    return module;
  }

 private:
  mlir::Location Loc(const std::string &name) { return mlir::NameLoc::get(builder_.getStringAttr(name)); }

  static std::string ValueLabel(const tir::v1::Value &v, const std::string &fallback) {
    return v.name().empty() ? absl::StrCat(fallback, " (value ", v.id(), ")")
                            : absl::StrCat(fallback, " '", v.name(), "'");
  }

  absl::Status CollectIds(const tir::v1::Graph &g) {
    absl::Status status;
    auto add = [&](const tir::v1::Value &v, const std::string &where) {
      if (!status.ok()) return;
      if (!all_ids_.insert(v.id()).second) {
        status = Invalid(absl::StrCat("value id ", v.id(), " is defined twice (again by ", where, ")"));
      } else if (!v.name().empty() && !names_.insert(v.name()).second) {
        status = Invalid(absl::StrCat("value name '", v.name(), "' is used twice (again by ", where, ")"));
      }
    };
    for (int i = 0; i < g.inputs_size(); ++i) add(g.inputs(i), absl::StrCat("input #", i));
    std::function<void(const google::protobuf::RepeatedPtrField<tir::v1::Op> &, const std::string &)> walk =
        [&](const auto &ops, const std::string &scope) {
          for (int i = 0; i < ops.size(); ++i) {
            const std::string label = OpLabel(ops[i], i, scope);
            for (const auto &r : ops[i].results()) add(r, label);
            for (int k = 0; k < ops[i].regions_size(); ++k) {
              for (const auto &a : ops[i].regions(k).arguments()) add(a, label + " region argument");
              walk(ops[i].regions(k).ops(), label + " region: ");
            }
          }
        };
    walk(g.ops(), "");
    return status;
  }

  template <typename Setter>
  absl::Status SetSignatureAttrs(const google::protobuf::RepeatedField<int64_t> &strides,
                                 const google::protobuf::RepeatedField<int64_t> &divisors,
                                 const google::protobuf::RepeatedField<int32_t> &widths,
                                 const google::protobuf::Map<std::string, tir::v1::Attribute> &attrs,
                                 const std::string &what, Setter set) {
    if ((!divisors.empty() && divisors.size() != strides.size()) ||
        (!widths.empty() && widths.size() != strides.size())) {
      return Invalid(absl::StrCat(what, " has ", strides.size(), " strides but ", divisors.size(),
                                  " stride divisors and ", widths.size(), " stride widths"));
    }
    if (!strides.empty()) {
      StrideSpec spec;
      for (int i = 0; i < strides.size(); ++i) {
        const int64_t x = strides[i];
        if (x < -1) return Invalid(absl::StrCat(what, " has stride ", x, "; use -1 for dynamic"));
        const int64_t div = divisors.empty() ? 0 : divisors[i];
        const int width = widths.empty() ? 0 : widths[i];
        if (div < 0 || (width != 0 && width != 1 && width != 8 && width != 16 && width != 32 && width != 64)) {
          return Invalid(absl::StrCat(what, " has stride hint div=", div, " i", width,
                                      "; divisors are >= 1 (0: none), widths 1, 8, 16, 32 or 64 (0: none)"));
        }
        if (x != -1 && (div > 1 || width != 0)) {
          return Invalid(absl::StrCat(what, " has hints on static stride ", x, "; hints are for dynamic strides"));
        }
        spec.strides.push_back(x == -1 ? mlir::ShapedType::kDynamic : x);
        spec.divisors.push_back(x == -1 ? std::max<int64_t>(1, div) : x);
        spec.widths.push_back(width);
      }
      set(TirDialect::kStrideAttr, builder_.getStringAttr(formatStrideSpec(spec)));
    }
    // Sorted, so that import is deterministic whatever the map order.
    std::vector<std::string> keys;
    for (const auto &[k, unused] : attrs) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    for (const std::string &k : keys) {
      TIR_RETURN_IF_ERROR(CheckAttributeName(k, what));
      TIR_ASSIGN_OR_RETURN(mlir::Attribute a, ImportAttribute(attrs.at(k), k, ctx_, what));
      set(k, a);
    }
    return absl::OkStatus();
  }

  // Orders `ops` topologically and builds them at the builder's insertion point.
  absl::Status ImportOps(const google::protobuf::RepeatedPtrField<tir::v1::Op> &ops,
                         const std::string &scope) {
    const int n = ops.size();
    std::vector<int> missing(n, 0);
    std::unordered_map<uint32_t, std::vector<int>> waiting;  // id -> ops that need it
    // Min-heap: among ready ops, the earliest in the message goes first.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < n; ++i) {
      std::unordered_set<uint32_t> seen;
      for (uint32_t id : ops[i].operands()) {
        if (values_.count(id) || !seen.insert(id).second) continue;
        ++missing[i];
        waiting[id].push_back(i);
      }
      if (missing[i] == 0) ready.push(i);
    }
    std::vector<bool> done(n, false);
    int built = 0;
    while (!ready.empty()) {
      const int i = ready.top();
      ready.pop();
      TIR_RETURN_IF_ERROR(BuildOp(ops[i], i, scope));
      done[i] = true;
      ++built;
      for (const auto &r : ops[i].results()) {
        auto it = waiting.find(r.id());
        if (it == waiting.end()) continue;
        for (int j : it->second) {
          if (--missing[j] == 0) ready.push(j);
        }
      }
    }
    if (built == n) return absl::OkStatus();
    // Explain the first op left over.
    std::unordered_map<uint32_t, int> producer;
    for (int i = 0; i < n; ++i) {
      for (const auto &r : ops[i].results()) producer[r.id()] = i;
    }
    for (int i = 0; i < n; ++i) {
      if (done[i]) continue;
      for (int k = 0; k < ops[i].operands_size(); ++k) {
        const uint32_t id = ops[i].operands(k);
        if (values_.count(id)) continue;
        auto p = producer.find(id);
        if (p == producer.end()) {
          return Invalid(absl::StrCat(OpLabel(ops[i], i, scope), " operand #", k, " refers to value ",
                                      id, ", which no input or op ",
                                      all_ids_.count(id) ? "in scope " : "", "defines"));
        }
        return Invalid(absl::StrCat("ops form a cycle: ", OpLabel(ops[i], i, scope), " needs value ",
                                    id, " from ", OpLabel(ops[p->second], p->second, scope),
                                    ", which depends on it"));
      }
    }
    return Invalid("ops could not be ordered");
  }

  absl::Status BuildOp(const tir::v1::Op &op, int index, const std::string &scope) {
    const std::string label = OpLabel(op, index, scope);
    if (op.kind().empty()) return Invalid(label + " has no kind");
    const std::string fullName = op.kind().find('.') == std::string::npos ? "tir." + op.kind() : op.kind();
    std::optional<mlir::RegisteredOperationName> name = mlir::RegisteredOperationName::lookup(fullName, ctx_);
    const bool structural = fullName == "tir.graph" || fullName == "tir.results" ||
                            fullName == "tir.yield" || fullName == "tir.launch";
    const bool allowed = name && !structural &&
                         (fullName.rfind("tir.", 0) == 0 || (!scope.empty() && fullName.rfind("arith.", 0) == 0));
    if (!allowed) {
      return MakeError(absl::StatusCode::kInvalidArgument, "UNSUPPORTED_OP",
                       absl::StrCat(label, ": unknown op kind '", op.kind(), "'",
                                    structural ? " (structural ops are implied by the graph; launch exists only in partitioned modules)" : ""));
    }
    llvm::SmallVector<std::string> names;
    for (const auto &r : op.results()) names.push_back(r.name());
    mlir::Location loc = Loc(names.empty() || names[0].empty() ? label : names[0]);
    if (names.size() > 1) {
      llvm::SmallVector<mlir::Location> locs;
      for (const std::string &nm : names) locs.push_back(Loc(nm.empty() ? label : nm));
      loc = mlir::FusedLoc::get(ctx_, locs);
    }
    mlir::OperationState state(loc, *name);
    for (uint32_t id : op.operands()) state.operands.push_back(values_.at(id));
    for (int k = 0; k < op.results_size(); ++k) {
      TIR_ASSIGN_OR_RETURN(mlir::Type t,
                           ImportType(op.results(k).type(), ctx_, absl::StrCat(label, " result #", k)));
      if (op.results(k).type().strides_size() != 0) {
        return Invalid(absl::StrCat(label, " result #", k, " has strides; only graph inputs and outputs do"));
      }
      state.types.push_back(t);
    }
    std::vector<std::string> keys;
    for (const auto &[k, unused] : op.attributes()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    for (const std::string &k : keys) {
      TIR_RETURN_IF_ERROR(CheckAttributeName(k, label));
      TIR_ASSIGN_OR_RETURN(mlir::Attribute a, ImportAttribute(op.attributes().at(k), k, ctx_, label));
      state.addAttribute(k, a);
    }
    for (int k = 0; k < op.regions_size(); ++k) {
      const tir::v1::Region &r = op.regions(k);
      mlir::Region *region = state.addRegion();
      mlir::Block *block = new mlir::Block();
      region->push_back(block);
      for (const auto &a : r.arguments()) {
        TIR_ASSIGN_OR_RETURN(mlir::Type t, ImportType(a.type(), ctx_, label + " region argument"));
        values_[a.id()] = block->addArgument(t, loc);
      }
      mlir::OpBuilder::InsertionGuard guard(builder_);
      builder_.setInsertionPointToEnd(block);
      TIR_RETURN_IF_ERROR(ImportOps(r.ops(), label + " region: "));
      llvm::SmallVector<mlir::Value> yielded;
      for (uint32_t id : r.results()) {
        auto it = values_.find(id);
        if (it == values_.end()) {
          return Invalid(absl::StrCat(label, " region yields value ", id, ", which it does not define"));
        }
        yielded.push_back(it->second);
      }
      builder_.create<YieldOp>(loc, yielded);
    }
    mlir::Operation *created = builder_.create(state);
    for (int k = 0; k < op.results_size(); ++k) values_[op.results(k).id()] = created->getResult(k);
    return absl::OkStatus();
  }

  mlir::MLIRContext *ctx_;
  mlir::OpBuilder builder_;
  // Any uint32 is a valid wire id, so no DenseMap (it reserves two keys).
  std::unordered_map<uint32_t, mlir::Value> values_;
  std::set<uint32_t> all_ids_;
  std::set<std::string> names_;
};

}  // namespace

absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportGraph(const tir::v1::Graph &graph,
                                                              mlir::MLIRContext *context) {
  return Importer(context).Run(graph);
}

}  // namespace tir
