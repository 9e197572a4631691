#include "compiler/conversion/AttributeProto.h"

#include "absl/strings/str_cat.h"
#include "compiler/conversion/DTypes.h"
#include "compiler/conversion/InputLimits.h"
#include "compiler/ir/ShapeRules.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/support/status.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/AsmParser/AsmParser.h"

namespace tir {
namespace {

absl::Status Invalid(const std::string &message) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", message);
}

absl::Status Limit(const std::string &message) {
  return MakeError(absl::StatusCode::kInvalidArgument, "LIMIT_EXCEEDED", message);
}

unsigned StorageBytes(mlir::Type element) {
  const unsigned bits = element.getIntOrFloatBitWidth();
  return bits <= 8 ? 1 : bits / 8;
}

std::string Print(mlir::Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  attr.print(os);
  return s;
}

void AppendLittleEndian(std::string &out, const llvm::APInt &bits, unsigned bytes) {
  const uint64_t v = bits.getZExtValue();
  for (unsigned b = 0; b < bytes; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
}

llvm::APInt ReadLittleEndian(const std::string &data, size_t offset, unsigned bytes,
                             unsigned bits) {
  uint64_t v = 0;
  for (unsigned b = 0; b < bytes; ++b) {
    v |= uint64_t{static_cast<unsigned char>(data[offset + b])} << (8 * b);
  }
  return llvm::APInt(bits, bits < 64 ? (v & ((uint64_t{1} << bits) - 1)) : v);
}

}  // namespace

absl::StatusOr<tir::v1::TensorType> ExportType(mlir::Type type) {
  tir::v1::TensorType out;
  mlir::Type element = type;
  if (auto tensor = type.dyn_cast<mlir::RankedTensorType>()) {
    element = tensor.getElementType();
    for (int64_t d : tensor.getShape()) out.add_shape(mlir::ShapedType::isDynamic(d) ? -1 : d);
  } else {
    out.set_scalar(true);
  }
  std::optional<tir::v1::DType> dtype = ToDType(element);
  if (!dtype) return Invalid(absl::StrCat("type ", Print(mlir::TypeAttr::get(type)), " has no wire dtype"));
  out.set_dtype(*dtype);
  return out;
}

absl::StatusOr<mlir::Type> ImportType(const tir::v1::TensorType &type, mlir::MLIRContext *ctx,
                                      const std::string &what) {
  mlir::Type element = ToMlirType(type.dtype(), ctx);
  if (!element) {
    return Invalid(absl::StrCat(what, " has no valid dtype (", type.dtype(), ")"));
  }
  if (type.scalar()) {
    if (type.shape_size() != 0 || type.strides_size() != 0) {
      return Invalid(absl::StrCat(what, " is a scalar but has a shape or strides"));
    }
    return element;
  }
  if (element.isIndex()) return Invalid(absl::StrCat(what, " is a tensor of index; only scalars may be index"));
  if (type.shape_size() > kMaxRank) {
    return Limit(absl::StrCat(what, " has rank ", type.shape_size(), ", above the limit of ", kMaxRank));
  }
  llvm::SmallVector<int64_t> shape;
  for (int i = 0; i < type.shape_size(); ++i) {
    const int64_t d = type.shape(i);
    if (d == -1) {
      shape.push_back(mlir::ShapedType::kDynamic);
      continue;
    }
    if (d < 0) return Invalid(absl::StrCat(what, " dimension ", i, " is ", d, "; use -1 for dynamic"));
    if (d > kMaxDimension) {
      return Limit(absl::StrCat(what, " dimension ", i, " is ", d, ", above the limit of 2^40"));
    }
    shape.push_back(d);
  }
  std::optional<int64_t> count = staticElementCount(shape);
  bool dynamic = llvm::any_of(shape, mlir::ShapedType::isDynamic);
  if (!dynamic && (!count || *count > kMaxElements)) {
    return Limit(absl::StrCat(what, " has more than 2^48 elements"));
  }
  if (type.strides_size() != 0 && type.strides_size() != type.shape_size()) {
    return Invalid(absl::StrCat(what, " has ", type.strides_size(), " strides for rank ",
                                type.shape_size()));
  }
  return mlir::RankedTensorType::get(shape, element);
}

absl::StatusOr<tir::v1::Attribute> ExportAttribute(mlir::Attribute attr) {
  tir::v1::Attribute out;
  if (auto b = attr.dyn_cast<mlir::BoolAttr>()) {
    out.set_bool_value(b.getValue());
  } else if (auto i = attr.dyn_cast<mlir::IntegerAttr>()) {
    mlir::Type t = i.getType();
    std::optional<tir::v1::DType> dtype = ToDType(t);
    if (t.isSignlessInteger(64)) {
      out.set_int_value(i.getValue().getSExtValue());
    } else if (dtype && *dtype != tir::v1::DTYPE_I1) {
      out.set_int_value(t.isUnsignedInteger() ? static_cast<int64_t>(i.getValue().getZExtValue())
                                              : i.getValue().getSExtValue());
      out.set_scalar_type(*dtype);
    } else {
      out.set_mlir(Print(attr));
    }
  } else if (auto f = attr.dyn_cast<mlir::FloatAttr>()) {
    std::optional<tir::v1::DType> dtype = ToDType(f.getType());
    if (!dtype) {
      out.set_mlir(Print(attr));
    } else {
      out.set_float_value(f.getValueAsDouble());
      if (*dtype != tir::v1::DTYPE_F64) out.set_scalar_type(*dtype);
    }
  } else if (auto a = attr.dyn_cast<mlir::DenseI64ArrayAttr>()) {
    for (int64_t v : a.asArrayRef()) out.mutable_ints()->add_values(v);
    out.mutable_ints()->set_bit_width(64);
  } else if (auto a = attr.dyn_cast<mlir::DenseI32ArrayAttr>()) {
    for (int32_t v : a.asArrayRef()) out.mutable_ints()->add_values(v);
    out.mutable_ints()->set_bit_width(32);
  } else if (auto list = attr.dyn_cast<mlir::ArrayAttr>()) {
    auto *l = out.mutable_list();
    for (mlir::Attribute e : list) {
      absl::StatusOr<tir::v1::Attribute> ee = ExportAttribute(e);
      if (!ee.ok()) return ee.status();
      *l->add_values() = *std::move(ee);
    }
  } else if (auto s = attr.dyn_cast<mlir::StringAttr>()) {
    out.set_string_value(s.getValue().str());
  } else if (auto m = attr.dyn_cast<ReductionModeAttr>()) {
    out.set_enum_value(stringifyReductionMode(m.getValue()).str());
  } else if (auto p = attr.dyn_cast<CmpPredicateAttr>()) {
    out.set_enum_value(stringifyCmpPredicate(p.getValue()).str());
  } else if (auto dense = attr.dyn_cast<mlir::DenseIntOrFPElementsAttr>();
             dense && isTirTensorType(dense.getType())) {
    auto type = dense.getType().cast<mlir::RankedTensorType>();
    absl::StatusOr<tir::v1::TensorType> t = ExportType(type);
    if (!t.ok()) return t.status();
    auto *lit = out.mutable_tensor();
    *lit->mutable_type() = *t;
    const unsigned bytes = StorageBytes(type.getElementType());
    std::string data;
    auto append = [&](const llvm::APInt &bits) { AppendLittleEndian(data, bits, bytes); };
    const bool isFloat = type.getElementType().isa<mlir::FloatType>();
    if (dense.isSplat()) {
      lit->set_splat(true);
      append(isFloat ? dense.getSplatValue<llvm::APFloat>().bitcastToAPInt()
                     : dense.getSplatValue<llvm::APInt>());
    } else if (isFloat) {
      for (const llvm::APFloat &v : dense.getValues<llvm::APFloat>()) append(v.bitcastToAPInt());
    } else {
      for (const llvm::APInt &v : dense.getValues<llvm::APInt>()) append(v);
    }
    lit->set_data(std::move(data));
  } else {
    out.set_mlir(Print(attr));
  }
  return out;
}

absl::StatusOr<mlir::Attribute> ImportAttribute(const tir::v1::Attribute &attr,
                                                llvm::StringRef name, mlir::MLIRContext *ctx,
                                                const std::string &what) {
  mlir::Builder b(ctx);
  const std::string where = absl::StrCat("attribute '", name.str(), "' of ", what);
  auto scalarType = [&](mlir::Type fallback) -> absl::StatusOr<mlir::Type> {
    if (attr.scalar_type() == tir::v1::DTYPE_UNSPECIFIED) return fallback;
    mlir::Type t = ToMlirType(attr.scalar_type(), ctx);
    if (!t) return Invalid(absl::StrCat(where, " has an unknown scalar_type"));
    return t;
  };
  switch (attr.value_case()) {
    case tir::v1::Attribute::kIntValue: {
      absl::StatusOr<mlir::Type> t = scalarType(b.getI64Type());
      if (!t.ok()) return t.status();
      if (!t->isIntOrIndex()) return Invalid(absl::StrCat(where, " is an integer with non-integer type"));
      const unsigned bits = t->isIndex() ? 64 : t->getIntOrFloatBitWidth();
      const uint64_t raw = static_cast<uint64_t>(attr.int_value());
      const uint64_t masked = bits < 64 ? raw & ((uint64_t{1} << bits) - 1) : raw;
      if (bits < 64 && (t->isUnsignedInteger() ? masked != raw
                                                : llvm::APInt(bits, masked).getSExtValue() != attr.int_value())) {
        return Invalid(absl::StrCat(where, " value ", attr.int_value(), " does not fit its type"));
      }
      return mlir::Attribute(b.getIntegerAttr(*t, llvm::APInt(bits, masked)));
    }
    case tir::v1::Attribute::kFloatValue: {
      absl::StatusOr<mlir::Type> t = scalarType(b.getF64Type());
      if (!t.ok()) return t.status();
      if (!t->isa<mlir::FloatType>()) return Invalid(absl::StrCat(where, " is a float with non-float type"));
      return mlir::Attribute(b.getFloatAttr(*t, attr.float_value()));
    }
    case tir::v1::Attribute::kBoolValue:
      return mlir::Attribute(b.getBoolAttr(attr.bool_value()));
    case tir::v1::Attribute::kEnumValue: {
      if (name == "reduction_mode") {
        if (auto m = parseReductionModeName(attr.enum_value())) {
          return mlir::Attribute(ReductionModeAttr::get(ctx, *m));
        }
      } else if (name == "predicate") {
        if (auto p = symbolizeCmpPredicate(attr.enum_value())) {
          return mlir::Attribute(CmpPredicateAttr::get(ctx, *p));
        }
      } else {
        return Invalid(absl::StrCat(where, " is not an enum attribute"));
      }
      return Invalid(absl::StrCat(where, " has unknown enumerant '", attr.enum_value(), "'"));
    }
    case tir::v1::Attribute::kInts: {
      std::vector<int64_t> v(attr.ints().values().begin(), attr.ints().values().end());
      if (attr.ints().bit_width() == 32) {
        std::vector<int32_t> v32;
        for (int64_t x : v) {
          if (x < INT32_MIN || x > INT32_MAX) return Invalid(absl::StrCat(where, " value ", x, " exceeds 32 bits"));
          v32.push_back(static_cast<int32_t>(x));
        }
        return mlir::Attribute(b.getDenseI32ArrayAttr(v32));
      }
      if (attr.ints().bit_width() != 0 && attr.ints().bit_width() != 64) {
        return Invalid(absl::StrCat(where, " has bit_width ", attr.ints().bit_width(), "; expected 32 or 64"));
      }
      return mlir::Attribute(b.getDenseI64ArrayAttr(v));
    }
    case tir::v1::Attribute::kFloats: {
      llvm::SmallVector<mlir::Attribute> v;
      for (double x : attr.floats().values()) v.push_back(b.getF64FloatAttr(x));
      return mlir::Attribute(b.getArrayAttr(v));
    }
    case tir::v1::Attribute::kList: {
      llvm::SmallVector<mlir::Attribute> v;
      for (const auto &e : attr.list().values()) {
        absl::StatusOr<mlir::Attribute> a = ImportAttribute(e, name, ctx, what);
        if (!a.ok()) return a.status();
        v.push_back(*a);
      }
      return mlir::Attribute(b.getArrayAttr(v));
    }
    case tir::v1::Attribute::kStringValue:
      return mlir::Attribute(b.getStringAttr(attr.string_value()));
    case tir::v1::Attribute::kDtypeValue: {
      mlir::Type t = ToMlirType(attr.dtype_value(), ctx);
      if (!t) return Invalid(absl::StrCat(where, " has an unknown dtype"));
      return mlir::Attribute(mlir::TypeAttr::get(t));
    }
    case tir::v1::Attribute::kTensor: {
      const auto &lit = attr.tensor();
      absl::StatusOr<mlir::Type> t = ImportType(lit.type(), ctx, where);
      if (!t.ok()) return t.status();
      auto type = t->dyn_cast<mlir::RankedTensorType>();
      if (!type || !type.hasStaticShape() || lit.type().strides_size() != 0) {
        return Invalid(absl::StrCat(where, " literal needs a static, dense tensor type"));
      }
      const unsigned bytes = StorageBytes(type.getElementType());
      const int64_t count = lit.splat() ? 1 : type.getNumElements();
      if (lit.data().size() != static_cast<size_t>(count) * bytes) {
        return Invalid(absl::StrCat(where, " literal has ", lit.data().size(), " bytes, expected ",
                                    count * bytes));
      }
      const unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      if (auto ft = type.getElementType().dyn_cast<mlir::FloatType>()) {
        std::vector<llvm::APFloat> values;
        values.reserve(count);
        for (int64_t i = 0; i < count; ++i) {
          values.emplace_back(ft.getFloatSemantics(), ReadLittleEndian(lit.data(), i * bytes, bytes, bits));
        }
        if (lit.splat()) return mlir::Attribute(mlir::DenseElementsAttr::get(type, values[0]));
        return mlir::Attribute(mlir::DenseElementsAttr::get(type, values));
      }
      std::vector<llvm::APInt> values;
      values.reserve(count);
      for (int64_t i = 0; i < count; ++i) values.push_back(ReadLittleEndian(lit.data(), i * bytes, bytes, bits));
      if (lit.splat()) return mlir::Attribute(mlir::DenseElementsAttr::get(type, values[0]));
      return mlir::Attribute(mlir::DenseElementsAttr::get(type, values));
    }
    case tir::v1::Attribute::kMlir: {
      if (absl::Status deep = CheckTextNesting(attr.mlir(), absl::StrCat(where, "'s text")); !deep.ok()) return deep;
      size_t consumed = 0;
      mlir::Attribute a;
      if (absl::Status ran = RunOnLargeStack([&] { a = mlir::parseAttribute(attr.mlir(), ctx, consumed); }); !ran.ok()) {
        return ran;
      }
      if (!a || consumed != attr.mlir().size()) {
        return Invalid(absl::StrCat(where, " is not a valid MLIR attribute: '", attr.mlir(), "'"));
      }
      return a;
    }
    case tir::v1::Attribute::VALUE_NOT_SET:
      break;
  }
  return Invalid(absl::StrCat(where, " has no value"));
}

}  // namespace tir
