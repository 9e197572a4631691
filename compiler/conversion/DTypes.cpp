#include "compiler/conversion/DTypes.h"

#include "mlir/IR/Builders.h"

namespace tir {

using tir::v1::DType;

mlir::Type ToMlirType(DType dtype, mlir::MLIRContext *ctx) {
  mlir::Builder b(ctx);
  auto si = [&](unsigned w) { return mlir::IntegerType::get(ctx, w, mlir::IntegerType::Signed); };
  auto ui = [&](unsigned w) { return mlir::IntegerType::get(ctx, w, mlir::IntegerType::Unsigned); };
  switch (dtype) {
    case tir::v1::DTYPE_I1: return b.getI1Type();
    case tir::v1::DTYPE_F16: return b.getF16Type();
    case tir::v1::DTYPE_BF16: return b.getBF16Type();
    case tir::v1::DTYPE_F32: return b.getF32Type();
    case tir::v1::DTYPE_F64: return b.getF64Type();
    case tir::v1::DTYPE_SI8: return si(8);
    case tir::v1::DTYPE_SI16: return si(16);
    case tir::v1::DTYPE_SI32: return si(32);
    case tir::v1::DTYPE_SI64: return si(64);
    case tir::v1::DTYPE_UI8: return ui(8);
    case tir::v1::DTYPE_UI16: return ui(16);
    case tir::v1::DTYPE_UI32: return ui(32);
    case tir::v1::DTYPE_UI64: return ui(64);
    case tir::v1::DTYPE_INDEX: return b.getIndexType();
    case tir::v1::DTYPE_F8E4M3FN: return b.getFloat8E4M3FNType();
    case tir::v1::DTYPE_F8E5M2: return b.getFloat8E5M2Type();
    case tir::v1::DTYPE_I8: return b.getIntegerType(8);
    case tir::v1::DTYPE_I16: return b.getIntegerType(16);
    case tir::v1::DTYPE_I32: return b.getIntegerType(32);
    case tir::v1::DTYPE_I64: return b.getIntegerType(64);
    default: return {};
  }
}

std::optional<DType> ToDType(mlir::Type t) {
  if (t.isIndex()) return tir::v1::DTYPE_INDEX;
  if (t.isF16()) return tir::v1::DTYPE_F16;
  if (t.isBF16()) return tir::v1::DTYPE_BF16;
  if (t.isF32()) return tir::v1::DTYPE_F32;
  if (t.isF64()) return tir::v1::DTYPE_F64;
  if (t.isFloat8E4M3FN()) return tir::v1::DTYPE_F8E4M3FN;
  if (t.isFloat8E5M2()) return tir::v1::DTYPE_F8E5M2;
  auto i = t.dyn_cast<mlir::IntegerType>();
  if (!i) return std::nullopt;
  if (i.getWidth() == 1 && i.isSignless()) return tir::v1::DTYPE_I1;
  if (i.isSignless()) {
    switch (i.getWidth()) {
      case 8: return tir::v1::DTYPE_I8;
      case 16: return tir::v1::DTYPE_I16;
      case 32: return tir::v1::DTYPE_I32;
      case 64: return tir::v1::DTYPE_I64;
      default: return std::nullopt;
    }
  }
  const bool s = i.isSigned();
  switch (i.getWidth()) {
    case 8: return s ? tir::v1::DTYPE_SI8 : tir::v1::DTYPE_UI8;
    case 16: return s ? tir::v1::DTYPE_SI16 : tir::v1::DTYPE_UI16;
    case 32: return s ? tir::v1::DTYPE_SI32 : tir::v1::DTYPE_UI32;
    case 64: return s ? tir::v1::DTYPE_SI64 : tir::v1::DTYPE_UI64;
    default: return std::nullopt;
  }
}

const char *DTypeName(DType dtype) {
  switch (dtype) {
    case tir::v1::DTYPE_I1: return "i1";
    case tir::v1::DTYPE_F16: return "f16";
    case tir::v1::DTYPE_BF16: return "bf16";
    case tir::v1::DTYPE_F32: return "f32";
    case tir::v1::DTYPE_F64: return "f64";
    case tir::v1::DTYPE_SI8: return "si8";
    case tir::v1::DTYPE_SI16: return "si16";
    case tir::v1::DTYPE_SI32: return "si32";
    case tir::v1::DTYPE_SI64: return "si64";
    case tir::v1::DTYPE_UI8: return "ui8";
    case tir::v1::DTYPE_UI16: return "ui16";
    case tir::v1::DTYPE_UI32: return "ui32";
    case tir::v1::DTYPE_UI64: return "ui64";
    case tir::v1::DTYPE_INDEX: return "index";
    case tir::v1::DTYPE_F8E4M3FN: return "f8E4M3FN";
    case tir::v1::DTYPE_F8E5M2: return "f8E5M2";
    case tir::v1::DTYPE_I8: return "i8";
    case tir::v1::DTYPE_I16: return "i16";
    case tir::v1::DTYPE_I32: return "i32";
    case tir::v1::DTYPE_I64: return "i64";
    default: return "unspecified";
  }
}

}  // namespace tir
