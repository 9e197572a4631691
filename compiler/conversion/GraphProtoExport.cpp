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
        TIR_RETURN_IF_ERROR(ExportSignatureAttrs(attrs, v->mutable_type()->mutable_strides(),
                                                 v->mutable_attributes()));
      }
    }
    for (mlir::Operation &op : block.without_terminator()) {
      TIR_RETURN_IF_ERROR(ExportOp(op, out.add_ops()));
    }
    auto results = llvm::cast<ResultsOp>(block.getTerminator());
    for (auto [i, value] : llvm::enumerate(results.getValues())) {
      tir::v1::Output *o = out.add_outputs();
      o->set_value(ids_.lookup(value));
      if (mlir::DictionaryAttr attrs = graph.getResultAttrDict(i)) {
        TIR_RETURN_IF_ERROR(ExportSignatureAttrs(attrs, o->mutable_strides(), o->mutable_attributes()));
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
                                    google::protobuf::Map<std::string, tir::v1::Attribute> *rest) {
    for (mlir::NamedAttribute a : attrs) {
      if (a.getName() == TirDialect::kStrideAttr) {
        auto parsed = parseStrideString(a.getValue().cast<mlir::StringAttr>().getValue(), nullptr);
        for (int64_t s : *parsed) strides->Add(mlir::ShapedType::isDynamic(s) ? -1 : s);
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
