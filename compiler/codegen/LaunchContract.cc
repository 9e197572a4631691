#include "compiler/codegen/LaunchContract.h"

#include "absl/strings/str_cat.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/support/status.h"

namespace tir::codegen {
namespace {

absl::Status Violated(const std::string &m) {
  return MakeError(absl::StatusCode::kInvalidArgument, "LAYOUT_CONTRACT_VIOLATED", m);
}

}  // namespace

LayoutContract ContractOf(mlir::DictionaryAttr attrs) {
  LayoutContract c;
  if (!attrs) return c;
  if (auto a = attrs.getAs<mlir::IntegerAttr>(TirDialect::kAlignmentAttr)) c.alignment = a.getInt();
  if (auto s = attrs.getAs<mlir::StringAttr>(TirDialect::kStrideAttr)) c.spec = parseStrideSpec(s.getValue(), nullptr);
  return c;
}

LayoutContract ContractOf(const tir::v1::TensorType &type) {
  LayoutContract c;
  c.alignment = type.alignment();
  if (type.strides_size() > 0) {
    StrideSpec spec;
    for (int i = 0; i < type.strides_size(); ++i) {
      const int64_t s = type.strides(i);
      spec.strides.push_back(s < 0 ? mlir::ShapedType::kDynamic : s);
      const int64_t div = i < type.stride_divisors_size() ? type.stride_divisors(i) : 0;
      spec.divisors.push_back(s < 0 ? std::max<int64_t>(1, div) : s);
      spec.widths.push_back(i < type.stride_widths_size() ? type.stride_widths(i) : 0);
    }
    c.spec = spec;
  }
  return c;
}

std::vector<int64_t> LayoutStrides(const std::vector<int64_t> &shape, const LayoutContract &contract) {
  const size_t rank = shape.size();
  auto declared = [&](size_t d) {
    return contract.spec && d < contract.spec->strides.size() ? contract.spec->strides[d] : mlir::ShapedType::kDynamic;
  };
  // Static strides as declared; the run-time ones after everything the
  // static ones span, innermost first (row-major among themselves), each
  // rounded up to its divisor.
  std::vector<int64_t> out(rank, 1);
  int64_t running = 1;  // one past the largest offset the static dims reach
  for (size_t d = 0; d < rank; ++d) {
    if (!mlir::ShapedType::isDynamic(declared(d))) {
      out[d] = declared(d);
      running += declared(d) * std::max<int64_t>(shape[d] - 1, 0);
    }
  }
  for (size_t k = rank; k-- > 0;) {
    if (!mlir::ShapedType::isDynamic(declared(k))) continue;
    const int64_t div = contract.spec && k < contract.spec->divisors.size() ? std::max<int64_t>(1, contract.spec->divisors[k]) : 1;
    out[k] = (running + div - 1) / div * div;
    running = out[k] * std::max<int64_t>(shape[k], 1);
  }
  return out;
}

absl::Status CheckLaunchContract(const LayoutContract &contract, const void *pointer,
                                 const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                                 bool output, const std::string &what) {
  if (contract.alignment > 1 && reinterpret_cast<uintptr_t>(pointer) % contract.alignment != 0) {
    return Violated(absl::StrCat(what, " is declared ", contract.alignment, "-byte aligned (tir.alignment) but is at ",
                                 reinterpret_cast<uintptr_t>(pointer) % contract.alignment, " bytes past a multiple"));
  }
  if (!contract.spec) return absl::OkStatus();
  const StrideSpec &spec = *contract.spec;
  if (spec.strides.size() != strides.size()) {
    return Violated(absl::StrCat(what, " is declared with ", spec.strides.size(), " strides but launched with ",
                                 strides.size()));
  }
  for (size_t d = 0; d < strides.size(); ++d) {
    if (!mlir::ShapedType::isDynamic(spec.strides[d])) {
      if (strides[d] != spec.strides[d]) {
        return Violated(absl::StrCat(what, " is declared with stride ", spec.strides[d], " in dimension ", d,
                                     " (", formatStrideSpec(spec), ") but launched with ", strides[d]));
      }
    } else if (output && strides[d] == 0 && d < shape.size() && shape[d] > 1) {
      return Violated(absl::StrCat(what, " is launched with stride 0 in dimension ", d, " (extent ", shape[d],
                                   "), declared ", formatStrideSpec(spec),
                                   ": every index would store to one address; declare the 0 in the graph"));
    } else if (spec.divisors[d] > 1 && strides[d] % spec.divisors[d] != 0) {
      return Violated(absl::StrCat(what, " declares its stride in dimension ", d, " a multiple of ", spec.divisors[d],
                                   " (", formatStrideSpec(spec), ") but is launched with ", strides[d]));
    }
  }
  return absl::OkStatus();
}

std::vector<reference::Tensor> AsStoredOutputs(GraphOp kernel, std::vector<reference::Tensor> outputs) {
  for (size_t o = 0; o < outputs.size() && o < kernel.getNumResults(); ++o) {
    if (outputs[o].dtype == tir::v1::DTYPE_UNSPECIFIED) continue;  // reference::NoRounding()
    outputs[o] = reference::AsStored(outputs[o], LayoutStrides(outputs[o].shape, ContractOf(kernel.getResultAttrDict(o))));
  }
  return outputs;
}

}  // namespace tir::codegen
