#include "compiler/codegen/EmitTypes.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tir::codegen::detail {

absl::Status Unsupported(const std::string &reason, const std::string &m) {
  return MakeError(absl::StatusCode::kUnimplemented, reason, m);
}

std::string Sub(const std::string &tmpl, const std::string &x) {
  std::string out = tmpl;
  size_t p = out.find("%s");
  while (p != std::string::npos) {
    out.replace(p, 2, x);
    p = out.find("%s", p + x.size());
  }
  return out;
}

absl::StatusOr<TypeInfo> Info(mlir::Type t) {
  if (auto s = t.dyn_cast<mlir::ShapedType>()) t = s.getElementType();
  TypeInfo i;
  if (t.isF32()) return TypeInfo{"float", "float", "%s", "%s", "(float)(%s)", true};
  if (t.isF64()) return TypeInfo{"double", "double", "%s", "%s", "(double)(%s)", true};
  if (t.isBF16()) return TypeInfo{"tir_bf16", "float", "tir_from_bf16(%s)", "tir_to_bf16(%s)", "tir_round_bf16(%s)", true};
  if (t.isF16()) return TypeInfo{"tir_f16", "float", "tir_from_f16(%s)", "tir_to_f16(%s)", "tir_round_f16(%s)", true};
  if (t.isFloat8E4M3FN()) {
    return TypeInfo{"tir_f8e4m3", "float", "tir_from_f8e4m3(%s)", "tir_to_f8e4m3(%s)", "tir_round_f8e4m3(%s)", true};
  }
  if (t.isFloat8E5M2()) {
    return TypeInfo{"tir_f8e5m2", "float", "tir_from_f8e5m2(%s)", "tir_to_f8e5m2(%s)", "tir_round_f8e5m2(%s)", true};
  }
  if (t.isInteger(1)) {
    i = {"tir_u8", "tir_i64", "(tir_i64)(%s != 0)", "(tir_u8)(%s != 0)", "(tir_i64)((%s) != 0)"};
    i.is_bool = true;
    return i;
  }
  if (t.isIndex()) return TypeInfo{"tir_i64", "tir_i64", "%s", "%s", "(tir_i64)(%s)"};
  if (auto it = t.dyn_cast<mlir::IntegerType>()) {
    const unsigned w = it.getWidth();
    const std::string s = absl::StrCat(it.isUnsigned() ? "tir_u" : "tir_i", w);
    if (it.isUnsigned()) {
      i = {s, "tir_u64", "(tir_u64)(%s)", "(" + s + ")(%s)", "(tir_u64)(" + s + ")(%s)"};
      i.is_unsigned = true;
      return i;
    }
    return TypeInfo{s, "tir_i64", "(tir_i64)(%s)", "(" + s + ")(%s)", "(tir_i64)(" + s + ")(%s)"};
  }
  return Unsupported("UNSUPPORTED_DTYPE", "codegen does not support element type " +
                                              [&] { std::string s; llvm::raw_string_ostream os(s); t.print(os); return os.str(); }());
}

std::string StoreRounded(const TypeInfo &t) {
  return t.storage == "tir_bf16" ? "tir_bf16_of_rounded(%s)" : t.store;
}

std::string Literal(double v) {
  if (std::isnan(v)) return "TIR_NAN";
  if (std::isinf(v)) return v > 0 ? "TIR_INF" : "(-TIR_INF)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace tir::codegen::detail
