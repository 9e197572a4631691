//===- GraphProtoExport.cpp - tir.graph -> tir.v1.Graph -------------------===//

#include "absl/strings/str_cat.h"
#include "compiler/conversion/AttributeProto.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/support/status.h"

namespace tir {
namespace {

// Names recorded by ImportGraph in op locations ("op #i (kind)" is not a name).
llvm::SmallVector<std::string> NamesOf(mlir::Location loc, unsigned count) {
  llvm::SmallVector<std::string> names(count);
  auto take = [](mlir::Location l) -> std::string {
    if (auto n = l.dyn_cast<mlir::NameLoc>()) {
      llvm::StringRef s = n.getName().getValue();
      if (!s.startswith("op #") && !s.startswith("input #")) return s.str();
    }
    return "";
  };
  if (auto fused = loc.dyn_cast<mlir::FusedLoc>()) {
    for (unsigned i = 0; i < count && i < fused.getLocations().size(); ++i) {
      names[i] = take(fused.getLocations()[i]);
    }
  } else if (count > 0) {
    names[0] = take(loc);
  }
  return names;
}

class Exporter {
 public:
  absl::StatusOr<tir::v1::Graph> Run(GraphOp graph) {
    tir::v1::Graph out;
    out.set_schema_version(kGraphSchemaVersion);
    out.set_name(graph.getSymName().str());
    mlir::Block &block = graph.getBodyBlock();
    for (mlir::BlockArgument arg : block.getArguments()) {
      tir::v1::Value *v = out.add_inputs();
      TIR_RETURN_IF_ERROR(DefineValue(arg, v, NamesOf(arg.getLoc(), 1)[0]));
      if (mlir::DictionaryAttr attrs = graph.getArgAttrDict(arg.getArgNumber())) {
        tir::v1::TensorType *t = v->mutable_type();
        TIR_RETURN_IF_ERROR(ExportSignatureAttrs(attrs, t->mutable_strides(), t->mutable_stride_divisors(),
                                                 t->mutable_stride_widths(), v->mutable_attributes()));
      }
    }
    for (mlir::Operation &op : block.without_terminator()) {
      TIR_RETURN_IF_ERROR(ExportOp(op, out.add_ops()));
    }
    // Graph attributes (the user's tile, analysis annotations).
    for (mlir::NamedAttribute a : graph->getAttrs()) {
      const llvm::StringRef n = a.getName().strref();
      if (n == graph.getSymNameAttrName() || n == graph.getFunctionTypeAttrName() ||
          n == graph.getArgAttrsAttrName() || n == graph.getResAttrsAttrName()) {
        continue;
      }
      TIR_ASSIGN_OR_RETURN((*out.mutable_attributes())[n.str()], ExportAttribute(a.getValue()));
    }
    auto results = llvm::cast<ResultsOp>(block.getTerminator());
    for (mlir::NamedAttribute a : results->getAttrs()) {
      TIR_ASSIGN_OR_RETURN((*out.mutable_results_attributes())[a.getName().str()], ExportAttribute(a.getValue()));
    }
    for (auto [i, value] : llvm::enumerate(results.getValues())) {
      tir::v1::Output *o = out.add_outputs();
      o->set_value(ids_.lookup(value));
      if (mlir::DictionaryAttr attrs = graph.getResultAttrDict(i)) {
        TIR_RETURN_IF_ERROR(ExportSignatureAttrs(attrs, o->mutable_strides(), o->mutable_stride_divisors(),
                                                 o->mutable_stride_widths(), o->mutable_attributes()));
      }
    }
    return out;
  }

 private:
  absl::Status DefineValue(mlir::Value value, tir::v1::Value *out, const std::string &name) {
    const uint32_t id = next_id_++;
    ids_[value] = id;
    out->set_id(id);
    if (!name.empty()) out->set_name(name);
    TIR_ASSIGN_OR_RETURN(*out->mutable_type(), ExportType(value.getType()));
    return absl::OkStatus();
  }

  absl::Status ExportSignatureAttrs(mlir::DictionaryAttr attrs,
                                    google::protobuf::RepeatedField<int64_t> *strides,
                                    google::protobuf::RepeatedField<int64_t> *divisors,
                                    google::protobuf::RepeatedField<int32_t> *widths,
                                    google::protobuf::Map<std::string, tir::v1::Attribute> *rest) {
    for (mlir::NamedAttribute a : attrs) {
      if (a.getName() == TirDialect::kStrideAttr) {
        std::optional<StrideSpec> spec = parseStrideSpec(a.getValue().cast<mlir::StringAttr>().getValue(), nullptr);
        bool hints = false;
        for (size_t i = 0; i < spec->strides.size(); ++i) {
          const bool dynamic = mlir::ShapedType::isDynamic(spec->strides[i]);
          strides->Add(dynamic ? -1 : spec->strides[i]);
          hints |= dynamic && (spec->divisors[i] > 1 || spec->widths[i] != 0);
        }
        if (hints) {
          for (size_t i = 0; i < spec->strides.size(); ++i) {
            const bool dynamic = mlir::ShapedType::isDynamic(spec->strides[i]);
            divisors->Add(dynamic && spec->divisors[i] > 1 ? spec->divisors[i] : 0);
            widths->Add(dynamic ? spec->widths[i] : 0);
          }
        }
        continue;
      }
      TIR_ASSIGN_OR_RETURN((*rest)[a.getName().str()], ExportAttribute(a.getValue()));
    }
    return absl::OkStatus();
  }

  absl::Status ExportOp(mlir::Operation &op, tir::v1::Op *out) {
    llvm::StringRef name = op.getName().getStringRef();
    out->set_kind(name.startswith("tir.") ? name.drop_front(4).str() : name.str());
    for (mlir::Value operand : op.getOperands()) {
      auto it = ids_.find(operand);
      if (it == ids_.end()) {
        return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                         absl::StrCat("operand of ", name.str(), " defined outside the graph"));
      }
      out->add_operands(it->second);
    }
    llvm::SmallVector<std::string> names = NamesOf(op.getLoc(), op.getNumResults());
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      TIR_RETURN_IF_ERROR(DefineValue(result, out->add_results(), names[i]));
    }
    for (mlir::NamedAttribute a : op.getAttrs()) {
      TIR_ASSIGN_OR_RETURN((*out->mutable_attributes())[a.getName().str()],
                           ExportAttribute(a.getValue()));
    }
    for (mlir::Region &region : op.getRegions()) {
      tir::v1::Region *r = out->add_regions();
      mlir::Block &block = region.front();
      for (mlir::BlockArgument arg : block.getArguments()) {
        TIR_RETURN_IF_ERROR(DefineValue(arg, r->add_arguments(), ""));
      }
      for (mlir::Operation &inner : block.without_terminator()) {
        TIR_RETURN_IF_ERROR(ExportOp(inner, r->add_ops()));
      }
      for (mlir::Value v : block.getTerminator()->getOperands()) r->add_results(ids_.lookup(v));
    }
    return absl::OkStatus();
  }

  llvm::DenseMap<mlir::Value, uint32_t> ids_;
  uint32_t next_id_ = 0;
};

}  // namespace

absl::StatusOr<tir::v1::Graph> ExportGraph(GraphOp graph) { return Exporter().Run(graph); }

}  // namespace tir
