//===- Emitter.cpp - CUDA C++ for one kernel and one candidate ------------===//

#include "compiler/codegen/Emitter.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/ReduceBody.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/planning/AccessMaps.h"
#include "compiler/reference/Elementwise.h"
#include "compiler/support/status.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace tir::codegen {

const std::string &RuntimeHeader() { return RuntimeHeaders()[0].second; }

const std::vector<std::pair<std::string, std::string>> &RuntimeHeaders() {
  static const auto *headers = new std::vector<std::pair<std::string, std::string>>{
      {"tir_runtime.h",
#include "compiler/codegen/runtime_header.inc"
      },
      {"tir_tiles.h",
#include "compiler/codegen/tiles_header.inc"
      },
      {"tir_lanes.h",
#include "compiler/codegen/lanes_header.inc"
      },
  };
  return *headers;
}

namespace {

using reference::Pointwise;

absl::Status Unsupported(const std::string &reason, const std::string &m) {
  return MakeError(absl::StatusCode::kUnimplemented, reason, m);
}

// How a dtype is stored in memory and computed with.
struct TypeInfo {
  std::string storage;   // C type in buffers
  std::string compute;   // C type of values
  std::string load;      // expression template: %s is the storage value
  std::string store;     // expression template: %s is the compute value
  std::string round;     // rounds a compute value to the dtype ("%s" placeholder)
  bool is_float = false, is_unsigned = false, is_bool = false;
};

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

std::string Literal(double v) {
  if (std::isnan(v)) return "TIR_NAN";
  if (std::isinf(v)) return v > 0 ? "TIR_INF" : "(-TIR_INF)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

class Emitter {
 public:
  Emitter(GraphOp kernel, const std::map<std::string, int64_t> &params) : kernel_(kernel), params_(params) {}

  // The names of tir_args' fields, in order (what Run's DeclareArgs gives).
  absl::StatusOr<std::vector<std::string>> FieldNames() {
    rank_ = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").size();
    TIR_RETURN_IF_ERROR(DeclareArgs());
    return field_names_;
  }

  absl::StatusOr<EmittedKernel> Run() {
    mlir::FailureOr<planning::AccessMaps> maps = planning::ComputeAccessMaps(kernel_);
    if (mlir::failed(maps)) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "access maps could not be computed");
    }
    maps_ = *maps;
    kind_ = kernel_->getAttrOfType<mlir::StringAttr>("tir.kernel_kind").getValue().str();
    auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
    rank_ = domain.size();
    if (auto r = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.reduced_dims")) {
      reduced_.insert(r.asArrayRef().begin(), r.asArrayRef().end());
    }
    if (kind_ == "matmul") reduced_.insert(rank_ - 1);
    TIR_RETURN_IF_ERROR(DeclareArgs());
    std::string body;
    if (kind_ == "pointwise") {
      TIR_ASSIGN_OR_RETURN(body, Pointwise());
    } else if (kind_ == "reduction") {
      TIR_ASSIGN_OR_RETURN(body, Reduction());
    } else {
      TIR_ASSIGN_OR_RETURN(body, Matmul());
    }
    EmittedKernel out;
    out.fields = fields_;
    out.source = absl::StrCat("// Generated by tir: a ", kind_, " kernel\n",
                              "#include \"tir_runtime.h\"\n\n", constants_, "struct tir_args {\n");
    for (const std::string &f : fields_) absl::StrAppend(&out.source, "  ", f, ";\n");
    absl::StrAppend(&out.source, "};\n\nTIR_KERNEL void tir_kernel(tir_args a) {\n", body, "}\n\n",
                    "#if TIR_EMULATE\n"
                    "// Emulated GPU form: every block of the grid with the block size of\n"
                    "// the launch, lane by lane (tir_lanes.h). Returns the number of errors;\n"
                    "// the first is written to `error`.\n"
                    "extern \"C\" int tir_lanes_call(void **fields, const unsigned *grid, const unsigned *block,\n"
                    "                                unsigned long dynamic_smem, char *error, unsigned long error_bytes,\n"
                    "                                unsigned long long *stats) {\n"
                    "  tir_args a;\n");
    for (size_t i = 0; i < field_names_.size(); ++i) {
      absl::StrAppend(&out.source, "  std::memcpy(&a.", field_names_[i], ", fields[", i, "], sizeof(a.", field_names_[i], "));\n");
    }
    absl::StrAppend(&out.source,
                    "  gridDim.x = grid[0]; gridDim.y = grid[1]; gridDim.z = grid[2];\n"
                    "  blockDim.x = block[0]; blockDim.y = block[1]; blockDim.z = block[2];\n"
                    "  const tir_lanes::Result r = tir_lanes::Launch(\n"
                    "      \"tir_kernel\", {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, dynamic_smem,\n"
                    "      [](tir_lanes::Dim3 b) { blockIdx.x = b.x; blockIdx.y = b.y; blockIdx.z = b.z; },\n"
                    "      [&a] { tir_kernel(a); });\n"
                    "  std::snprintf(error, error_bytes, \"%s\", r.first_error.c_str());\n"
                    "  stats[0] = r.events; stats[1] = r.lanes;\n"
                    "  return (int)r.errors;\n"
                    "}\n"
                    "#elif !TIR_DEVICE\n"
                    "// Host backend: runs every block of the grid on the calling thread.\n"
                    "// `fields[i]` points at the value of the i-th field of tir_args.\n"
                    "extern \"C\" void tir_host_call(void **fields, unsigned gx, unsigned gy, unsigned gz) {\n"
                    "  tir_args a;\n");
    for (size_t i = 0; i < field_names_.size(); ++i) {
      absl::StrAppend(&out.source, "  std::memcpy(&a.", field_names_[i], ", fields[", i, "], sizeof(a.", field_names_[i], "));\n");
    }
    absl::StrAppend(&out.source,
                    "  gridDim.x = gx; gridDim.y = gy; gridDim.z = gz;\n"
                    "  blockDim.x = blockDim.y = blockDim.z = 1;\n"
                    "  threadIdx.x = threadIdx.y = threadIdx.z = 0;\n"
                    "  for (unsigned z = 0; z < gz; ++z)\n"
                    "    for (unsigned y = 0; y < gy; ++y)\n"
                    "      for (unsigned x = 0; x < gx; ++x) {\n"
                    "        blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;\n"
                    "        tir_kernel(a);\n"
                    "      }\n"
                    "}\n#endif\n");
    out.field_names = field_names_;
    out.launch = launch_;
    return out;
  }

 private:
  int64_t Param(const char *name, int64_t fallback) const {
    auto it = params_.find(name);
    return it == params_.end() ? fallback : it->second;
  }

  void Field(const std::string &decl, const std::string &name) {
    fields_.push_back(decl);
    field_names_.push_back(name);
  }

  absl::Status DeclareArgs() {
    mlir::Block &block = kernel_.getBodyBlock();
    for (mlir::BlockArgument arg : block.getArguments()) {
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(arg.getType()));
      const std::string name = absl::StrCat("in", arg.getArgNumber());
      if (arg.getType().isa<mlir::RankedTensorType>()) {
        Field(absl::StrCat("const ", t.storage, " *", name), name);
      } else {
        Field(absl::StrCat(t.storage, " ", name), name);
      }
    }
    auto results = llvm::cast<ResultsOp>(block.getTerminator());
    for (auto [i, v] : llvm::enumerate(results.getValues())) {
      if (!v.getType().isa<mlir::RankedTensorType>()) {
        return Unsupported("UNSUPPORTED_OP", absl::StrCat("result ", i, " is a scalar; kernels write tensors (return a "
                                                          "tensor of one element instead)"));
      }
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(v.getType()));
      Field(absl::StrCat(t.storage, " *out", i), absl::StrCat("out", i));
    }
    Field(absl::StrCat("tir_i64 dim[", rank_, "]"), "dim");
    for (mlir::BlockArgument arg : block.getArguments()) {
      if (auto r = arg.getType().dyn_cast<mlir::RankedTensorType>()) {
        Field(absl::StrCat("tir_i64 in", arg.getArgNumber(), "_size[", std::max<int64_t>(1, r.getRank()), "]"),
              absl::StrCat("in", arg.getArgNumber(), "_size"));
        Field(absl::StrCat("tir_i64 in", arg.getArgNumber(), "_stride[", std::max<int64_t>(1, r.getRank()), "]"),
              absl::StrCat("in", arg.getArgNumber(), "_stride"));
      }
    }
    for (auto [i, v] : llvm::enumerate(results.getValues())) {
      auto r = v.getType().cast<mlir::RankedTensorType>();
      Field(absl::StrCat("tir_i64 out", i, "_stride[", std::max<int64_t>(1, r.getRank()), "]"),
            absl::StrCat("out", i, "_stride"));
    }
    return absl::OkStatus();
  }

  // C expression of an affine expression over the domain index variables.
  std::string Expr(mlir::AffineExpr e) {
    if (auto d = e.dyn_cast<mlir::AffineDimExpr>()) return absl::StrCat("i", d.getPosition());
    if (auto c = e.dyn_cast<mlir::AffineConstantExpr>()) return absl::StrCat("(tir_i64)", c.getValue());
    auto b = e.cast<mlir::AffineBinaryOpExpr>();
    const std::string l = Expr(b.getLHS()), r = Expr(b.getRHS());
    switch (e.getKind()) {
      case mlir::AffineExprKind::Add: return absl::StrCat("(", l, " + ", r, ")");
      case mlir::AffineExprKind::Mul: return absl::StrCat("(", l, " * ", r, ")");
      case mlir::AffineExprKind::FloorDiv: return absl::StrCat("(", l, " / ", r, ")");  // indices are non-negative
      case mlir::AffineExprKind::Mod: return absl::StrCat("(", l, " % ", r, ")");
      default: return absl::StrCat("(", l, " / ", r, ")");
    }
  }

  // Offset of element `map(idx)` in a buffer with the given stride array.
  std::string Offset(mlir::AffineMap map, const std::string &strides) {
    std::vector<std::string> terms;
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      terms.push_back(absl::StrCat(Expr(map.getResult(j)), " * ", strides, "[", j, "]"));
    }
    return terms.empty() ? "0" : absl::StrJoin(terms, " + ");
  }

  // The result of `map` that is exactly domain dim `d` when no other result
  // depends on d (a run along d then walks that dim alone); else -1.
  // Whether `vec` elements of `type` make one access tir_chunk provides.
  static bool RunFits(mlir::Type type, int64_t vec) {
    const int64_t bytes = vec * std::max<int64_t>(1, type.cast<mlir::ShapedType>().getElementTypeBitWidth() / 8);
    return bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
  }

  int RunDim(mlir::AffineMap map, int d) {
    int found = -1;
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      mlir::AffineExpr e = map.getResult(j);
      if (!e.isFunctionOfDim(d)) continue;
      auto dim = e.dyn_cast<mlir::AffineDimExpr>();
      if (found >= 0 || !dim) return -1;
      found = static_cast<int>(j);
    }
    return found;
  }

  // Whether the graph's declarations prove that a run of `vec` elements of a
  // tensor with attributes `attrs` read at `map` (run dim `j`) is one aligned
  // access: unit stride along the run, every other stride a multiple of vec
  // (static, or a `?{div=N}` hint), and the base pointer's declared alignment
  // a multiple of the run's bytes. Then no run-time check is emitted; the
  // launcher checks the declarations instead (a launch that breaks them is
  // refused: LAYOUT_CONTRACT_VIOLATED).
  static bool ProvenRun(mlir::DictionaryAttr attrs, mlir::Type type, mlir::AffineMap map, int j, int64_t vec) {
    if (!attrs) return false;
    auto align = attrs.getAs<mlir::IntegerAttr>(TirDialect::kAlignmentAttr);
    const int64_t bytes = vec * std::max<int64_t>(1, type.cast<mlir::ShapedType>().getElementTypeBitWidth() / 8);
    if (!align || align.getInt() % bytes != 0) return false;
    auto str = attrs.getAs<mlir::StringAttr>(TirDialect::kStrideAttr);
    std::optional<StrideSpec> spec;
    if (str) {
      spec = parseStrideSpec(str.getValue(), nullptr);
    } else if (auto r = type.dyn_cast<mlir::RankedTensorType>()) {
      spec.emplace();
      spec->strides = rowMajorStrides(r.getShape());
      for (int64_t st : spec->strides) spec->divisors.push_back(mlir::ShapedType::isDynamic(st) ? 1 : st);
    }
    if (!spec || static_cast<int>(spec->strides.size()) != static_cast<int>(map.getNumResults())) return false;
    for (size_t d = 0; d < spec->strides.size(); ++d) {
      if (static_cast<int>(d) == j) {
        if (spec->strides[d] != 1) return false;
        // The run starts at a multiple of vec along its dim (the kernel's
        // innermost index is), unless the map offsets it.
        if (!map.getResult(d).isa<mlir::AffineDimExpr>()) return false;
      } else if (spec->divisors[d] % vec != 0 && spec->strides[d] != 0) {
        return false;
      }
    }
    return true;
  }

  // Whether a map reads any of the domain's reduced dims.
  bool UsesReduced(mlir::AffineMap map) {
    for (int64_t d : reduced_) {
      if (map.isFunctionOfDim(d)) return true;
    }
    return false;
  }

  // The operand value of `use` as a compute-typed expression.
  absl::StatusOr<std::string> Operand(mlir::OpOperand &use, std::string &code, const std::string &indent) {
    mlir::Value v = use.get();
    if (auto arg = v.dyn_cast<mlir::BlockArgument>()) {
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(v.getType()));
      const std::string name = absl::StrCat("in", arg.getArgNumber());
      if (!v.getType().isa<mlir::RankedTensorType>()) return Sub(t.load, "a." + name);
      auto it = maps_.operands.find(&use);
      if (it == maps_.operands.end()) {
        return Unsupported("UNSUPPORTED_OP", "input #" + std::to_string(arg.getArgNumber()) + " is read by " +
                                                 use.getOwner()->getName().getStringRef().str() +
                                                 " without an access map");
      }
      if (auto run = run_reads_.find(&use); run != run_reads_.end()) return Sub(t.load, run->second + "[v]");
      return Sub(t.load, absl::StrCat("a.", name, "[", Offset(it->second, "a." + name + "_stride"), "]"));
    }
    auto found = values_.find(v.getAsOpaquePointer());
    if (found == values_.end()) return Unsupported("UNSUPPORTED_OP", "value used before it is computed");
    (void)code;
    (void)indent;
    return found->second;
  }

  // A reshape with run-time extents reads its input through the row-major
  // linear index of the output element, worked out in the kernel: output
  // extents are static or the reshape's dynamic_dims, input extents static or
  // the input's sizes. Only kernel inputs can be read this way (a computed
  // value has no storage to index).
  absl::Status DynamicReshape(ReshapeOp rs, std::string &code, const std::string &indent) {
    auto arg = rs.getInput().dyn_cast<mlir::BlockArgument>();
    if (!arg) return Unsupported("UNSUPPORTED_OP", "reshape of a computed value with dynamic extents");
    auto found = maps_.results.find(rs.getOperation());
    if (found == maps_.results.end()) return Unsupported("UNSUPPORTED_OP", "reshape without an access map");
    const mlir::AffineMap map = found->second;
    auto outType = rs.getOutput().getType().cast<mlir::RankedTensorType>();
    auto inType = rs.getInput().getType().cast<mlir::RankedTensorType>();
    if (map.getNumResults() != static_cast<unsigned>(outType.getRank())) {
      return Unsupported("UNSUPPORTED_OP", "reshape whose access map does not match its rank");
    }
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(rs.getInput().getType()));
    const std::string id = std::to_string(next_++);
    const std::string lin = "rs_lin" + id, rem = "rs_rem" + id, input = absl::StrCat("a.in", arg.getArgNumber());
    std::string linear = "(tir_i64)0";
    unsigned dynamic = 0;
    // Without dynamic_dims a single dynamic result extent is the element
    // count over the static result extents (as the interpreter infers it).
    const int64_t dynamicOut = llvm::count_if(outType.getShape(), mlir::ShapedType::isDynamic);
    if (rs.getDynamicDims().empty() && dynamicOut > 1) {
      return Unsupported("UNSUPPORTED_OP", "a reshape with several dynamic result extents needs dynamic_dims");
    }
    for (int64_t j = 0; j < outType.getRank(); ++j) {
      std::string extent;
      if (!outType.isDynamicDim(j)) {
        extent = absl::StrCat("(tir_i64)", outType.getDimSize(j));
      } else if (rs.getDynamicDims().empty()) {
        std::string count = "(tir_i64)1";
        for (int64_t i = 0; i < inType.getRank(); ++i) {
          count += inType.isDynamicDim(i) ? absl::StrCat(" * ", input, "_size[", i, "]")
                                          : absl::StrCat(" * (tir_i64)", inType.getDimSize(i));
        }
        int64_t known = 1;
        for (int64_t e : outType.getShape()) {
          if (!mlir::ShapedType::isDynamic(e)) known *= e;
        }
        extent = absl::StrCat("((", count, ") / (tir_i64)", std::max<int64_t>(known, 1), ")");
      } else {
        if (dynamic >= rs.getDynamicDims().size()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "reshape has too few dynamic_dims");
        TIR_ASSIGN_OR_RETURN(std::string e, Operand(rs->getOpOperand(1 + dynamic++), code, indent));
        extent = "(tir_i64)(" + e + ")";
      }
      linear = absl::StrCat("(", linear, ") * ", extent, " + ", Expr(map.getResult(j)));
    }
    absl::StrAppend(&code, indent, "const tir_i64 ", lin, " = ", linear, ";\n", indent, "tir_i64 ", rem, " = ", lin,
                    ";\n");
    std::vector<std::string> terms;
    for (int64_t j = inType.getRank() - 1; j >= 0; --j) {
      // max(.., 1): an empty input has no elements to read, and the division stays defined.
      const std::string extent = inType.isDynamicDim(j) ? absl::StrCat("tir_max(", input, "_size[", j, "], (tir_i64)1)")
                                                         : absl::StrCat("(tir_i64)", inType.getDimSize(j));
      const std::string idx = absl::StrCat("rs_i", id, "_", j);
      absl::StrAppend(&code, indent, "const tir_i64 ", idx, " = ", rem, " % ", extent, "; ", rem, " /= ", extent,
                      ";\n");
      terms.push_back(absl::StrCat(idx, " * ", input, "_stride[", j, "]"));
    }
    const std::string var = absl::StrCat("v", next_++);
    absl::StrAppend(&code, indent, "const ", t.compute, " ", var, " = ",
                    Sub(t.load, absl::StrCat(input, "[", terms.empty() ? "0" : absl::StrJoin(terms, " + "), "]")),
                    ";\n");
    values_[rs.getOutput().getAsOpaquePointer()] = var;
    return absl::OkStatus();
  }

  // Picks the input of a concatenation whose range holds `at`: input k ends
  // (exclusively) at ends[k]; only the chosen input is read.
  static std::string ConcatSelect(const std::string &at, const std::vector<std::string> &inputs,
                                  const std::vector<std::string> &ends) {
    std::string e = inputs.back();
    for (int k = static_cast<int>(inputs.size()) - 2; k >= 0; --k) {
      e = "(" + at + " < " + ends[k] + " ? (" + inputs[k] + ") : (" + e + "))";
    }
    return e;
  }

  // A concatenation along a dimension with run-time extents: each input's
  // offset is the sum of the extents before it, read from the inputs' sizes.
  // The access maps carry only the static part of an offset, so the dynamic
  // part is subtracted here; inputs must be kernel inputs (the partitioner
  // makes them so).
  absl::Status DynamicConcat(ConcatenateOp cat, std::string &code, const std::string &indent) {
    TIR_ASSIGN_OR_RETURN(TypeInfo out, Info(cat.getOutput().getType()));
    auto found = maps_.results.find(cat.getOperation());
    if (found == maps_.results.end()) return Unsupported("UNSUPPORTED_OP", "concatenate without an access map");
    const int64_t dim = cat.getDimension();
    const std::string at = Expr(found->second.getResult(dim));
    std::string dynamicOffset;  // run-time part of the current input's offset ("" while none)
    int64_t staticOffset = 0;
    std::vector<std::string> reads, ends;
    for (mlir::OpOperand &use : cat->getOpOperands()) {
      auto arg = use.get().dyn_cast<mlir::BlockArgument>();
      if (!arg) return Unsupported("UNSUPPORTED_OP", "concatenate of a computed value with dynamic extents");
      auto map = maps_.operands.find(&use);
      if (map == maps_.operands.end()) return Unsupported("UNSUPPORTED_OP", "concatenate input without an access map");
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
      const std::string input = absl::StrCat("a.in", arg.getArgNumber());
      std::vector<std::string> terms;
      for (unsigned j = 0; j < map->second.getNumResults(); ++j) {
        std::string index = Expr(map->second.getResult(j));
        if (j == static_cast<unsigned>(dim) && !dynamicOffset.empty()) index = "(" + index + " - " + dynamicOffset + ")";
        terms.push_back(absl::StrCat(index, " * ", input, "_stride[", j, "]"));
      }
      reads.push_back(Sub(t.load, absl::StrCat(input, "[", terms.empty() ? "0" : absl::StrJoin(terms, " + "), "]")));
      const int64_t ext = use.get().getType().cast<mlir::RankedTensorType>().getDimSize(dim);
      if (mlir::ShapedType::isDynamic(ext)) {
        dynamicOffset = (dynamicOffset.empty() ? "" : dynamicOffset + " + ") + absl::StrCat(input, "_size[", dim, "]");
      } else {
        staticOffset += ext;
      }
      ends.push_back(dynamicOffset.empty() ? std::to_string(staticOffset)
                                           : absl::StrCat("(", dynamicOffset, " + ", staticOffset, ")"));
    }
    const std::string e = ConcatSelect(at, reads, ends);
    const std::string var = absl::StrCat("v", next_++);
    absl::StrAppend(&code, indent, "const ", out.compute, " ", var, " = ", Sub(out.round, e), ";\n");
    values_[cat.getOutput().getAsOpaquePointer()] = var;
    return absl::OkStatus();
  }

  // Emits `op` (pointwise-like) as `const T vN = ...;` into `code`.
  absl::Status EmitOp(mlir::Operation *op, std::string &code, const std::string &indent) {
    if (op->getNumResults() == 0) return absl::OkStatus();
    if (auto rs = llvm::dyn_cast<ReshapeOp>(op)) {
      if (!rs.getInput().getType().cast<mlir::ShapedType>().hasStaticShape() ||
          !rs.getOutput().getType().cast<mlir::ShapedType>().hasStaticShape()) {
        return DynamicReshape(rs, code, indent);
      }
    }
    if (auto cat = llvm::dyn_cast<ConcatenateOp>(op)) {
      for (mlir::Value v : cat.getInputs()) {
        if (v.getType().cast<mlir::RankedTensorType>().isDynamicDim(cat.getDimension())) {
          return DynamicConcat(cat, code, indent);
        }
      }
    }
    if (auto dim = llvm::dyn_cast<DimOp>(op)) {
      // The run-time extent: static, an input's size, or a domain extent.
      const int64_t d = dim.getDimension();
      auto type = dim.getInput().getType().cast<mlir::RankedTensorType>();
      std::string expr;
      if (!type.isDynamicDim(d)) {
        expr = absl::StrCat("(tir_i64)", type.getDimSize(d));
      } else if (auto arg = dim.getInput().dyn_cast<mlir::BlockArgument>()) {
        expr = absl::StrCat("a.in", arg.getArgNumber(), "_size[", d, "]");
      } else if (auto m = maps_.results.find(dim.getInput().getDefiningOp()); m != maps_.results.end()) {
        auto e = m->second.getResult(d).dyn_cast<mlir::AffineDimExpr>();
        if (!e) return Unsupported("UNSUPPORTED_OP", "dim of a computed value whose extent is not a domain extent");
        expr = absl::StrCat("a.dim[", e.getPosition(), "]");
      } else {
        return Unsupported("UNSUPPORTED_OP", "dim of a value without an access map");
      }
      const std::string var = absl::StrCat("v", next_++);
      absl::StrAppend(&code, indent, "const tir_i64 ", var, " = ", expr, ";\n");
      values_[op->getResult(0).getAsOpaquePointer()] = var;
      return absl::OkStatus();
    }
    TIR_ASSIGN_OR_RETURN(TypeInfo out, Info(op->getResult(0).getType()));
    std::vector<std::string> in;
    for (mlir::OpOperand &use : op->getOpOperands()) {
      TIR_ASSIGN_OR_RETURN(std::string e, Operand(use, code, indent));
      in.push_back(e);
    }
    const std::string var = absl::StrCat("v", next_++);
    std::string expr;
    TIR_ASSIGN_OR_RETURN(expr, Value(op, in, out));
    absl::StrAppend(&code, indent, "const ", out.compute, " ", var, " = ", Sub(out.round, expr), ";\n");
    values_[op->getResult(0).getAsOpaquePointer()] = var;
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Value(mlir::Operation *op, const std::vector<std::string> &in, const TypeInfo &out) {
    if (auto pw = reference::PointwiseOf(op->getName().getStringRef())) {
      TIR_ASSIGN_OR_RETURN(TypeInfo it, Info(op->getOperand(0).getType()));
      double beta = 1.0;
      if (auto b = op->getAttrOfType<mlir::FloatAttr>("beta")) beta = b.getValueAsDouble();
      const std::string bt = absl::StrCat("(", out.compute, ")", Literal(beta));
      const bool fl = it.is_float;
      const std::string a = in[0], b = in.size() > 1 ? in[1] : "";
      const std::string ua = "(tir_u64)(" + a + ")", ub = "(tir_u64)(" + b + ")";
      switch (*pw) {
        case Pointwise::kAdd: return fl ? a + " + " + b : "(tir_i64)(" + ua + " + " + ub + ")";
        case Pointwise::kSub: return fl ? a + " - " + b : "(tir_i64)(" + ua + " - " + ub + ")";
        case Pointwise::kMul: return fl ? a + " * " + b : "(tir_i64)(" + ua + " * " + ub + ")";
        case Pointwise::kAddSquare: return fl ? a + " + " + b + " * " + b : "(tir_i64)(" + ua + " + " + ub + " * " + ub + ")";
        case Pointwise::kDiv: return fl ? a + " / " + b : (it.is_unsigned ? "tir_udiv(" + ua + ", " + ub + ")" : "tir_idiv(" + a + ", " + b + ")");
        case Pointwise::kRem: return fl ? "fmod(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_urem(" + ua + ", " + ub + ")" : "tir_irem(" + a + ", " + b + ")");
        case Pointwise::kMod: return fl ? "tir_fmodf(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_urem(" + ua + ", " + ub + ")" : "tir_imod(" + a + ", " + b + ")");
        case Pointwise::kMax: return fl ? "tir_fmax(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_max(" + ua + ", " + ub + ")" : "tir_max(" + a + ", " + b + ")");
        case Pointwise::kMin: return fl ? "tir_fmin(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_min(" + ua + ", " + ub + ")" : "tir_min(" + a + ", " + b + ")");
        case Pointwise::kPow: {
          TIR_ASSIGN_OR_RETURN(TypeInfo et, Info(op->getOperand(1).getType()));
          if (fl) return "pow(" + a + ", (" + out.compute + ")(" + b + "))";
          (void)et;
          return "tir_ipow(" + a + ", " + b + ")";
        }
        case Pointwise::kAtan2: return "atan2(" + a + ", " + b + ")";
        case Pointwise::kReluBwd: return "tir_relu_bwd(" + a + ", " + b + ")";
        case Pointwise::kSigmoidBwd: return "tir_sigmoid_bwd(" + a + ", " + b + ")";
        case Pointwise::kTanhBwd: return "tir_tanh_bwd(" + a + ", " + b + ")";
        case Pointwise::kGeluBwd: return "tir_gelu_bwd(" + a + ", " + b + ")";
        case Pointwise::kGeluApproxTanhBwd: return "tir_gelu_tanh_bwd(" + a + ", " + b + ")";
        case Pointwise::kSoftplusBwd: return "tir_softplus_bwd(" + a + ", " + b + ", " + bt + ")";
        case Pointwise::kSwishBwd: return "tir_swish_bwd(" + a + ", " + b + ", " + bt + ")";
        case Pointwise::kEluBwd: return "tir_elu_bwd(" + a + ", " + b + ", " + bt + ")";
        case Pointwise::kAnd: return "(tir_i64)((" + a + ") != 0 && (" + b + ") != 0)";
        case Pointwise::kOr: return "(tir_i64)((" + a + ") != 0 || (" + b + ") != 0)";
        case Pointwise::kAbs: return fl ? "fabs(" + a + ")" : (it.is_unsigned ? a : "(tir_i64)((" + a + ") < 0 ? 0 - " + ua + " : " + ua + ")");
        case Pointwise::kCeil: return "ceil(" + a + ")";
        case Pointwise::kFloor: return "floor(" + a + ")";
        case Pointwise::kNeg: return "-(" + a + ")";
        case Pointwise::kSqrt: return "sqrt(" + a + ")";
        case Pointwise::kRsqrt: return "(" + out.compute + ")1 / sqrt(" + a + ")";
        case Pointwise::kExp: return "exp(" + a + ")";
        case Pointwise::kLog: return "log(" + a + ")";
        case Pointwise::kSin: return "sin(" + a + ")";
        case Pointwise::kCos: return "cos(" + a + ")";
        case Pointwise::kTan: return "tan(" + a + ")";
        case Pointwise::kErf: return "erf(" + a + ")";
        case Pointwise::kReciprocal: return "(" + out.compute + ")1 / (" + a + ")";
        case Pointwise::kRelu: return "(" + a + ") > 0 ? (" + a + ") : (" + out.compute + ")0";
        case Pointwise::kSigmoid: return "tir_sigmoid(" + a + ")";
        case Pointwise::kTanh: return "tanh(" + a + ")";
        case Pointwise::kGelu: return "tir_gelu(" + a + ")";
        case Pointwise::kGeluApproxTanh: return "tir_gelu_tanh(" + a + ")";
        case Pointwise::kSoftplus: return "tir_softplus(" + a + ", " + bt + ")";
        case Pointwise::kSwish: return "tir_swish(" + a + ", " + bt + ")";
        case Pointwise::kElu: return "tir_elu(" + a + ", " + bt + ")";
        case Pointwise::kNot: return "(tir_i64)((" + a + ") == 0)";
      }
    }
    return llvm::TypeSwitch<mlir::Operation *, absl::StatusOr<std::string>>(op)
        .Case<CmpOp>([&](CmpOp c) -> absl::StatusOr<std::string> {
          TIR_ASSIGN_OR_RETURN(TypeInfo it, Info(c.getLhs().getType()));
          const std::string a = it.is_unsigned ? "(tir_u64)(" + in[0] + ")" : in[0];
          const std::string b = it.is_unsigned ? "(tir_u64)(" + in[1] + ")" : in[1];
          const std::string un = "(isnan(" + in[0] + ") || isnan(" + in[1] + "))";
          auto ord = [&](const char *o) { return "(tir_i64)(!" + un + " && " + a + " " + o + " " + b + ")"; };
          auto unord = [&](const char *o) { return "(tir_i64)(" + un + " || " + a + " " + o + " " + b + ")"; };
          auto plain = [&](const char *o) { return "(tir_i64)(" + a + " " + o + " " + b + ")"; };
          switch (c.getPredicate()) {
            case CmpPredicate::oeq: return ord("==");
            case CmpPredicate::one: return ord("!=");
            case CmpPredicate::ogt: return ord(">");
            case CmpPredicate::oge: return ord(">=");
            case CmpPredicate::olt: return ord("<");
            case CmpPredicate::ole: return ord("<=");
            case CmpPredicate::ueq: return unord("==");
            case CmpPredicate::une: return unord("!=");
            case CmpPredicate::ugt: return unord(">");
            case CmpPredicate::uge: return unord(">=");
            case CmpPredicate::ult: return unord("<");
            case CmpPredicate::ule: return unord("<=");
            case CmpPredicate::eq: return plain("==");
            case CmpPredicate::neq: return plain("!=");
            case CmpPredicate::gt: return plain(">");
            case CmpPredicate::ge: return plain(">=");
            case CmpPredicate::lt: return plain("<");
            case CmpPredicate::le: return plain("<=");
          }
          return std::string("0");
        })
        .Case<BinarySelectOp>([&](auto) -> absl::StatusOr<std::string> {
          return "(" + in[0] + ") != 0 ? (" + in[1] + ") : (" + in[2] + ")";
        })
        .Case<ConvertOp>([&](ConvertOp c) -> absl::StatusOr<std::string> {
          TIR_ASSIGN_OR_RETURN(TypeInfo from, Info(c.getInput().getType()));
          // To i1: non-zero (NaN included) is 1.
          if (out.is_bool) return "(" + out.compute + ")((" + in[0] + ") != 0)";
          // To f8: rounded once from the source value (an f64 is not rounded to
          // f32 on the way), saturating.
          if (out.storage == "tir_f8e4m3" || out.storage == "tir_f8e5m2") return Sub(out.round, in[0]);
          if (out.is_float) return "(" + out.compute + ")(" + in[0] + ")";
          if (from.is_float) {
            // NaN -> 0, truncate, saturate to the target's range (as the interpreter does).
            mlir::Type e = c.getOutput().getType().cast<mlir::ShapedType>().getElementType();
            const unsigned w = e.getIntOrFloatBitWidth();
            const bool u = e.isUnsignedInteger();
            const double lo = u ? 0.0 : -std::ldexp(1.0, w - 1);
            const double hi = u ? std::ldexp(1.0, w) - 1 : std::ldexp(1.0, w - 1) - 1;
            const std::string x = "(double)(" + in[0] + ")";
            return "isnan(" + x + ") ? (" + out.compute + ")0 : (" + x + " <= " + Literal(lo) + " ? (" + out.compute +
                   ")" + Literal(lo) + " : (" + x + " >= " + Literal(hi) + " ? (" + out.compute + ")" +
                   (w >= 64 ? (u ? "18446744073709549568.0" : "9223372036854774784.0") : Literal(hi)) + " : (" +
                   out.compute + ")" + x + "))";
          }
          return "(" + out.compute + ")(" + in[0] + ")";
        })
        .Case<ConstantOp>([&](ConstantOp c) -> absl::StatusOr<std::string> { return ConstantValue(c); })
        .Case<SplatOp>([&](auto) -> absl::StatusOr<std::string> { return in[0]; })
        .Case<BroadcastOp, ReshapeOp, TransposeOp, SliceOp>([&](auto) -> absl::StatusOr<std::string> { return in[0]; })
        .Case<IotaOp>([&](IotaOp io) -> absl::StatusOr<std::string> {
          mlir::AffineMap m = maps_.results.lookup(io.getOperation());
          return "(" + out.compute + ")" + Expr(m.getResult(io.getDimension()));
        })
        .Case<ConcatenateOp>([&](ConcatenateOp cat) -> absl::StatusOr<std::string> {
          mlir::AffineMap m = maps_.results.lookup(cat.getOperation());
          const std::string at = Expr(m.getResult(cat.getDimension()));
          // Static extents only: EmitOp sends run-time extents to DynamicConcat.
          int64_t offset = 0;
          std::vector<std::string> ends;
          for (mlir::Value v : cat.getInputs()) {
            const int64_t ext = v.getType().cast<mlir::RankedTensorType>().getDimSize(cat.getDimension());
            if (mlir::ShapedType::isDynamic(ext)) return Unsupported("UNSUPPORTED_OP", "concatenate of dynamic extents");
            offset += ext;
            ends.push_back(std::to_string(offset));
          }
          return ConcatSelect(at, in, ends);
        })
        .Default([&](mlir::Operation *) -> absl::StatusOr<std::string> {
          return Unsupported("UNSUPPORTED_OP", "codegen does not support " + op->getName().getStringRef().str() + " yet");
        });
  }

  absl::StatusOr<std::string> ConstantValue(ConstantOp c) {
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(c.getOutput().getType()));
    mlir::Attribute value = c.getValue();
    auto scalar = [&](mlir::Attribute a) -> std::string {
      if (auto f = a.dyn_cast<mlir::FloatAttr>()) return "(" + t.compute + ")" + Literal(f.getValueAsDouble());
      if (auto b = a.dyn_cast<mlir::BoolAttr>()) return b.getValue() ? "(tir_i64)1" : "(tir_i64)0";
      auto i = a.cast<mlir::IntegerAttr>();
      const bool u = i.getType().isUnsignedInteger() || i.getType().isInteger(1);
      return "(" + t.compute + ")" + (u ? std::to_string(i.getValue().getZExtValue()) + "ull"
                                         : std::to_string(i.getValue().getSExtValue()) + "ll");
    };
    auto dense = value.dyn_cast<mlir::DenseElementsAttr>();
    if (!dense) return scalar(value);
    if (dense.isSplat()) return scalar(dense.getSplatValue<mlir::Attribute>());
    // A constant array, indexed by the constant's access map (row-major).
    std::string &name = constant_names_[c.getOperation()];
    if (name.empty()) {
      name = absl::StrCat("tir_const", constants_count_++);
      std::vector<std::string> items;
      for (mlir::Attribute a : dense.getValues<mlir::Attribute>()) items.push_back(scalar(a));
      absl::StrAppend(&constants_, "#if TIR_DEVICE\n__device__\n#else\nstatic\n#endif\nconst ", t.compute, " ", name,
                      "[] = {", absl::StrJoin(items, ", "), "};\n\n");
    }
    auto type = dense.getType().cast<mlir::RankedTensorType>();
    std::vector<int64_t> strides(type.getRank(), 1);
    for (int64_t d = type.getRank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * type.getDimSize(d + 1);
    mlir::AffineMap m = maps_.results.lookup(c.getOperation());
    std::vector<std::string> terms;
    for (unsigned j = 0; j < m.getNumResults(); ++j) terms.push_back(Expr(m.getResult(j)) + " * " + std::to_string(strides[j]));
    return name + "[" + (terms.empty() ? "0" : absl::StrJoin(terms, " + ")) + "]";
  }

  // Stores every kernel output whose producer is in `domain` (`rowDomain`:
  // maps that use reduced dims) into `code`.
  absl::Status StoreOutputs(std::string &code, const std::string &indent, int filter) {
    auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
    for (mlir::OpOperand &use : results->getOpOperands()) {
      auto it = maps_.operands.find(&use);
      if (it == maps_.operands.end()) continue;
      if (filter >= 0 && UsesReduced(it->second) != (filter == 1)) continue;
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
      TIR_ASSIGN_OR_RETURN(std::string v, Operand(use, code, indent));
      const unsigned i = use.getOperandNumber();
      if (auto run = run_writes_.find(i); run != run_writes_.end()) {
        absl::StrAppend(&code, indent, run->second, "[v] = ", Sub(t.store, v), ";\n");
        continue;
      }
      absl::StrAppend(&code, indent, StoreGuard(i, it->second), "a.out", i, "[",
                      Offset(it->second, absl::StrCat("a.out", i, "_stride")), "] = ", Sub(t.store, v), ";\n");
    }
    return absl::OkStatus();
  }

  // Output `i` declares a stride of 0 on a dim of extent above 1: that dim
  // holds one element, and only the value at index 0 of it is stored
  // ("if (...) "), so no two threads write one address. (A stride given at
  // launch is never 0: the launcher refuses that.)
  std::string StoreGuard(unsigned i, mlir::AffineMap map) {
    auto str = kernel_.getResultAttrOfType<mlir::StringAttr>(i, TirDialect::kStrideAttr);
    if (!str) return "";
    std::optional<StrideSpec> spec = parseStrideSpec(str.getValue(), nullptr);
    auto type = kernel_.getResultTypes()[i].dyn_cast<mlir::RankedTensorType>();
    if (!spec || !type || spec->strides.size() != map.getNumResults()) return "";
    std::vector<std::string> terms;
    for (size_t d = 0; d < spec->strides.size(); ++d) {
      if (type.getDimSize(d) == 1 || spec->strides[d] != 0) continue;
      terms.push_back("(" + Expr(map.getResult(d)) + ") == 0");
    }
    return terms.empty() ? "" : "if (" + absl::StrJoin(terms, " && ") + ") ";
  }

  std::string Delinearize(const std::string &lin, const std::vector<int> &dims, const std::string &indent) {
    std::string code = absl::StrCat(indent, "tir_i64 rem_", lin, " = ", lin, ";\n");
    for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
      const int d = dims[k];
      if (k == 0) {
        absl::StrAppend(&code, indent, "const tir_i64 i", d, " = rem_", lin, ";\n");
      } else {
        absl::StrAppend(&code, indent, "const tir_i64 i", d, " = rem_", lin, " % a.dim[", d, "]; rem_", lin,
                        " /= a.dim[", d, "];\n");
      }
    }
    return code;
  }

  absl::StatusOr<std::string> Pointwise() {
    const int64_t threads = Param("threads", 256), ept = Param("elements_per_thread", 1);
    std::vector<int> dims;
    for (int d = 0; d < rank_; ++d) dims.push_back(d);
    const int64_t vec = Param("vector_width", 1);
    std::string code = absl::StrCat("  tir_i64 total = 1;\n  for (int d = 0; d < ", rank_,
                                    "; ++d) total *= a.dim[d];\n  const tir_i64 tile = ", threads * ept,
                                    ";\n  const tir_i64 base = (tir_i64)blockIdx.x * tile;\n");
    // With vector_width > 1 each thread takes runs of `vec` consecutive
    // elements of one row (consecutive threads take consecutive runs, so a
    // warp still reads contiguous memory) and delinearizes once per run. The
    // run must not cross a row, which holds when the innermost extent is a
    // multiple of vec; otherwise the element loop below runs.
    const bool vectorized = vec > 1 && rank_ >= 1 && ept % vec == 0;
    std::string indent = "    ";
    if (vectorized) {
      const int last = rank_ - 1;
      absl::StrAppend(&code, "  if (a.dim[", last, "] % ", vec, " == 0) {\n", "    for (tir_i64 g = threadIdx.x; g < ",
                      threads * ept / vec, "; g += blockDim.x) {\n", "      const tir_i64 run = base + g * ", vec,
                      ";\n      if (run >= total) break;\n");
      absl::StrAppend(&code, Delinearize("run", dims, "      "));
      // Kernel inputs and outputs that walk the run along one of their dims
      // move as whole runs (tir_load_run / tir_store_run: one wide access
      // when contiguous and aligned). Concatenation inputs are left out: each
      // is read only where it lies.
      std::string stores;
      for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
        if (llvm::isa<ConcatenateOp, DimOp>(op)) continue;
        for (mlir::OpOperand &use : op.getOpOperands()) {
          auto arg = use.get().dyn_cast<mlir::BlockArgument>();
          auto map = maps_.operands.find(&use);
          if (!arg || map == maps_.operands.end() || !use.get().getType().isa<mlir::RankedTensorType>() ||
              !RunFits(use.get().getType(), vec)) {
            continue;
          }
          const int j = RunDim(map->second, last);
          if (j < 0) continue;
          TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
          const std::string name = absl::StrCat("in_run", run_reads_.size()), input = absl::StrCat("a.in", arg.getArgNumber());
          absl::StrAppend(&code, "      ", t.storage, " ", name, "[", vec, "];\n");
          if (ProvenRun(kernel_.getArgAttrDict(arg.getArgNumber()), use.get().getType(), map->second, j, vec)) {
            absl::StrAppend(&code, "      tir_load_run_aligned<", vec, ">(", input, " + (",
                            Offset(map->second, input + "_stride"), "), ", name, ");\n");
          } else {
            absl::StrAppend(&code, "      tir_load_run<", vec, ">(", input, " + (", Offset(map->second, input + "_stride"),
                            "), ", input, "_stride[", j, "], ", name, ");\n");
          }
          run_reads_[&use] = name;
        }
      }
      auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
      for (mlir::OpOperand &use : results->getOpOperands()) {
        auto map = maps_.operands.find(&use);
        if (map == maps_.operands.end() || run_writes_.count(use.getOperandNumber()) || !RunFits(use.get().getType(), vec) ||
            !StoreGuard(use.getOperandNumber(), map->second).empty()) {
          continue;
        }
        const int j = RunDim(map->second, last);
        if (j < 0) continue;
        TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
        const unsigned i = use.getOperandNumber();
        const std::string name = absl::StrCat("out_run", i), output = absl::StrCat("a.out", i);
        absl::StrAppend(&code, "      ", t.storage, " ", name, "[", vec, "];\n");
        if (ProvenRun(kernel_.getResultAttrDict(i), use.get().getType(), map->second, j, vec)) {
          absl::StrAppend(&stores, "      tir_store_run_aligned<", vec, ">(", output, " + (",
                          Offset(map->second, output + "_stride"), "), ", name, ");\n");
        } else {
          absl::StrAppend(&stores, "      tir_store_run<", vec, ">(", output, " + (", Offset(map->second, output + "_stride"),
                          "), ", output, "_stride[", j, "], ", name, ");\n");
        }
        run_writes_[i] = name;
      }
      absl::StrAppend(&code, "      const tir_i64 run_i", last, " = i", last, ";\n", "#pragma unroll\n",
                      "      for (int v = 0; v < ", vec, "; ++v) {\n", "        const tir_i64 i", last, " = run_i", last,
                      " + v;\n");
      std::string body;
      for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
        TIR_RETURN_IF_ERROR(EmitOp(&op, body, "        "));
      }
      TIR_RETURN_IF_ERROR(StoreOutputs(body, "        ", -1));
      absl::StrAppend(&code, body, "      }\n", stores, "    }\n    return;\n  }\n");
      // The element loop emits every op again: values computed above are
      // scoped to the run loop.
      values_.clear();
      run_reads_.clear();
      run_writes_.clear();
    }
    absl::StrAppend(&code, "  for (tir_i64 t = threadIdx.x; t < tile; t += blockDim.x) {\n",
                    "    const tir_i64 lin = base + t;\n    if (lin >= total) break;\n");
    absl::StrAppend(&code, Delinearize("lin", dims, indent));
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) TIR_RETURN_IF_ERROR(EmitOp(&op, code, indent));
    TIR_RETURN_IF_ERROR(StoreOutputs(code, indent, -1));
    absl::StrAppend(&code, "  }\n");
    auto *g = launch_.add_grid();
    g->set_constant(1);
    g->set_divisor(threads * ept);
    AddDomainDims(g);
    launch_.add_grid()->set_constant(1);
    launch_.add_grid()->set_constant(1);
    launch_.add_block(threads);
    launch_.add_block(1);
    launch_.add_block(1);
    return code;
  }

  // The grid extent multiplies in every domain extent (the launcher evaluates
  // them from the actual shapes; tir.iteration_domain records which).
  void AddDomainDims(tir::v1::LaunchExtent *g, bool onlyParallel = false) {
    for (int d = 0; d < rank_; ++d) {
      if (onlyParallel && reduced_.count(d)) continue;
      auto *td = g->add_dims();
      td->mutable_tensor()->set_kind(tir::v1::TensorRef::ITERATION_DOMAIN);
      td->set_dim(d);
    }
  }

  absl::StatusOr<std::string> Reduction() {
    bool userDefined = false;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) userDefined |= llvm::isa<ReduceUdOp>(op);
    // A user-defined combiner is applied element by element in order, so its
    // rows are reduced by one thread each.
    const int64_t tpr = userDefined ? 1 : Param("threads_per_row", 128), rpb = Param("rows_per_block", 1);
    std::vector<int> par, red;
    for (int d = 0; d < rank_; ++d) (reduced_.count(d) ? red : par).push_back(d);
    std::string code = absl::StrCat(
        "  const int tpr = TIR_LANES ? ", tpr, " : 1;\n  const int rpb = ", rpb, ";\n",
        "  TIR_SHARED_ARRAY(double, scratch_f, ", tpr * rpb, ");\n  TIR_SHARED_ARRAY(tir_i64, scratch_i, ", tpr * rpb, ");\n",
        "  tir_i64 rows = 1;\n");
    for (int d : par) absl::StrAppend(&code, "  rows *= a.dim[", d, "];\n");
    absl::StrAppend(&code, "  tir_i64 len = 1;\n");
    for (int d : red) absl::StrAppend(&code, "  len *= a.dim[", d, "];\n");
    // A block owns rpb row slots: on a GPU each group of tpr threads takes one
    // (the loop runs once), on the host the block's one thread takes them all.
    absl::StrAppend(&code, "  for (int slot = TIR_LANES ? (int)(threadIdx.x / tpr) : 0; slot < rpb;",
                    " slot += TIR_LANES ? rpb : 1) {\n",
                    "  const tir_i64 row = (tir_i64)blockIdx.x * rpb + slot;\n",
                    "  const int lane = threadIdx.x % tpr;\n  const bool active = row < rows;\n",
                    "  const tir_i64 row_c = active ? row : 0;\n");
    absl::StrAppend(&code, Delinearize("row_c", par, "  "));
    // Reduced-domain code sees the reduced indices as 0.
    std::string top;
    for (int d : red) absl::StrAppend(&top, "  const tir_i64 i", d, " = 0;\n");
    absl::StrAppend(&code, "  {\n", top);
    // Walk ops in order: reductions become passes, reduced-domain ops scalars.
    std::set<mlir::Operation *> rowOps;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      auto m = maps_.results.find(&op);
      if (m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<ReduceOp, ReduceUdOp>(op)) rowOps.insert(&op);
    }
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      if (auto r = llvm::dyn_cast<ReduceOp>(op)) {
        TIR_RETURN_IF_ERROR(ReductionPass(r, rowOps, red, code));
        continue;
      }
      if (auto ud = llvm::dyn_cast<ReduceUdOp>(op)) {
        TIR_RETURN_IF_ERROR(UserReductionPass(ud, rowOps, red, code));
        continue;
      }
      if (!rowOps.count(&op)) TIR_RETURN_IF_ERROR(EmitOp(&op, code, "    "));
    }
    // Outputs: row-domain ones in a final pass, reduced-domain ones once per row.
    std::string rowPass;
    auto saved = values_;
    for (mlir::Operation *op : Ordered(rowOps)) TIR_RETURN_IF_ERROR(EmitOp(op, rowPass, "        "));
    std::string stores;
    TIR_RETURN_IF_ERROR(StoreOutputs(stores, "        ", 1));
    if (!stores.empty()) {
      absl::StrAppend(&code, "    if (active) for (tir_i64 j = lane; j < len; j += tpr) {\n");
      absl::StrAppend(&code, InnerIndices(red), rowPass, stores, "    }\n");
    }
    values_ = saved;
    std::string redStores;
    TIR_RETURN_IF_ERROR(StoreOutputs(redStores, "      ", 0));
    if (!redStores.empty()) absl::StrAppend(&code, "    if (active && lane == 0) {\n", redStores, "    }\n");
    absl::StrAppend(&code, "  }\n  }\n");
    auto *g = launch_.add_grid();
    g->set_constant(1);
    g->set_divisor(rpb);
    AddDomainDims(g, /*onlyParallel=*/true);
    launch_.add_grid()->set_constant(1);
    launch_.add_grid()->set_constant(1);
    launch_.add_block(tpr * rpb);
    launch_.add_block(1);
    launch_.add_block(1);
    return code;
  }

  std::vector<mlir::Operation *> Ordered(const std::set<mlir::Operation *> &ops) {
    std::vector<mlir::Operation *> out;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      if (ops.count(&op)) out.push_back(&op);
    }
    return out;
  }

  std::string InnerIndices(const std::vector<int> &red) {
    std::string s = "        tir_i64 rem_j = j;\n";
    for (int k = static_cast<int>(red.size()) - 1; k >= 0; --k) {
      const int d = red[k];
      if (k == 0) {
        absl::StrAppend(&s, "        const tir_i64 i", d, " = rem_j;\n");
      } else {
        absl::StrAppend(&s, "        const tir_i64 i", d, " = rem_j % a.dim[", d, "]; rem_j /= a.dim[", d, "];\n");
      }
    }
    return s;
  }

  // One pass over each row computing reduction `r`.
  absl::Status ReductionPass(ReduceOp r, const std::set<mlir::Operation *> &rowOps, const std::vector<int> &red,
                             std::string &code) {
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(r.getInput().getType()));
    const bool ints = !t.is_float;
    const std::string acc = absl::StrCat("acc", next_++);
    const std::string at = ints ? "tir_i64" : "double";
    std::string init, combine, finish;
    const ReductionMode mode = r.getReductionMode();
    switch (mode) {
      case ReductionMode::add: case ReductionMode::avg: case ReductionMode::norm1: case ReductionMode::norm2:
        init = "0"; combine = "%a + %b"; break;
      case ReductionMode::mul: case ReductionMode::mul_no_zeros: init = "1"; combine = "%a * %b"; break;
      case ReductionMode::customize:
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "reduce with reduction_mode customize");
      case ReductionMode::max: case ReductionMode::amax:
        init = ints ? (t.is_unsigned ? "0" : "(-9223372036854775807ll - 1)") : "-TIR_INF";
        combine = ints ? "tir_max(%a, %b)" : "tir_fmax(%a, %b)"; break;
      case ReductionMode::min:
        init = ints ? "9223372036854775807ll" : "TIR_INF";
        combine = ints ? "tir_min(%a, %b)" : "tir_fmin(%a, %b)"; break;
    }
    auto comb = [&](const std::string &x, const std::string &y) {
      std::string c = combine;
      c.replace(c.find("%a"), 2, x);
      c.replace(c.find("%b"), 2, y);
      return c;
    };
    absl::StrAppend(&code, "    ", at, " ", acc, " = ", init, ";\n",
                    "    if (active) for (tir_i64 j = lane; j < len; j += tpr) {\n", InnerIndices(red));
    auto saved = values_;
    std::string inner;
    for (mlir::Operation *op : Slice(r->getOperands(), rowOps)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
    TIR_ASSIGN_OR_RETURN(std::string x, Operand(r->getOpOperand(0), inner, "        "));
    values_ = saved;
    std::string term = "(" + at + ")(" + x + ")";
    if (mode == ReductionMode::amax || mode == ReductionMode::norm1) term = ints ? "tir_max(" + term + ", -" + term + ")" : "fabs(" + term + ")";
    if (mode == ReductionMode::norm2) term = term + " * " + term;
    // Zeros (+0 and -0) count as 1; NaN is not a zero.
    if (mode == ReductionMode::mul_no_zeros) term = "tir_nonzero_or_one(" + term + ")";
    absl::StrAppend(&code, inner, "        ", acc, " = ", comb(acc, term), ";\n    }\n");
    absl::StrAppend(&code, "    ", acc, " = tir_group_reduce(", acc, ", tpr, ", ints ? "scratch_i" : "scratch_f",
                    ", [](", at, " x, ", at, " y) { return ", comb("x", "y"), "; });\n");
    std::string value = acc;
    if (mode == ReductionMode::avg) value = ints ? acc + " / (len ? len : 1)" : acc + " / (double)len";
    if (mode == ReductionMode::norm2) value = "sqrt(" + acc + ")";
    const std::string var = absl::StrCat("v", next_++);
    absl::StrAppend(&code, "    const ", t.compute, " ", var, " = ", Sub(t.round, "(" + t.compute + ")(" + value + ")"), ";\n");
    values_[r.getOutput().getAsOpaquePointer()] = var;
    return absl::OkStatus();
  }

  // The row-domain ops `roots` depend on, in graph order.
  std::vector<mlir::Operation *> Slice(mlir::ValueRange roots, const std::set<mlir::Operation *> &rowOps) {
    std::set<mlir::Operation *> slice;
    std::vector<mlir::Value> work(roots.begin(), roots.end());
    while (!work.empty()) {
      mlir::Value v = work.back();
      work.pop_back();
      mlir::Operation *def = v.getDefiningOp();
      if (!def || !rowOps.count(def) || slice.count(def)) continue;
      slice.insert(def);
      for (mlir::Value o : def->getOperands()) work.push_back(o);
    }
    return Ordered(slice);
  }

  // A reduce_ud: the region's scalar ops (compiler/ir/ReduceBody.h) run once
  // per element, in order, on typed scalars: integers as tir_u64 bit patterns
  // of their width, floats in their compute type rounded after every op, as
  // the reference interpreter evaluates them.
  absl::Status UserReductionPass(ReduceUdOp ud, const std::set<mlir::Operation *> &rowOps,
                                 const std::vector<int> &red, std::string &code) {
    const size_t n = ud.getInputs().size();
    mlir::Block &body = ud.getBody().front();
    std::vector<std::string> accs;
    for (size_t i = 0; i < n; ++i) {
      mlir::Type e = ud.getOutputs()[i].getType().cast<mlir::ShapedType>().getElementType();
      TIR_ASSIGN_OR_RETURN(std::string ctype, BodyCType(e));
      mlir::Attribute id = ud.getIdentity()[i];
      std::string init;
      if (auto fa = id.dyn_cast<mlir::FloatAttr>()) {
        TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(e));
        init = Sub(t.round, Literal(fa.getValueAsDouble()));
      } else {
        const uint64_t bits = id.cast<mlir::IntegerAttr>().getValue().getZExtValue();
        init = absl::StrCat("tir_bits(", bits, "ull, ", e.getIntOrFloatBitWidth(), ")");
      }
      accs.push_back(absl::StrCat("uacc", next_++));
      absl::StrAppend(&code, "    ", ctype, " ", accs.back(), " = ", init, ";\n");
    }
    absl::StrAppend(&code, "    if (active) for (tir_i64 j = 0; j < len; ++j) {\n", InnerIndices(red));
    auto saved = values_;
    std::string inner;
    for (mlir::Operation *op : Slice(ud.getInputs(), rowOps)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
    std::map<const void *, std::string> scalars;
    for (size_t i = 0; i < n; ++i) {
      scalars[body.getArgument(i).getAsOpaquePointer()] = accs[i];
      TIR_ASSIGN_OR_RETURN(std::string x, Operand(ud->getOpOperand(i), inner, "        "));
      mlir::Type e = ud.getInputs()[i].getType().cast<mlir::ShapedType>().getElementType();
      scalars[body.getArgument(n + i).getAsOpaquePointer()] =
          e.isa<mlir::FloatType>() ? "(" + x + ")"
                                   : absl::StrCat("tir_bits((tir_u64)(", x, "), ", e.getIntOrFloatBitWidth(), ")");
    }
    values_ = saved;
    for (mlir::Operation &op : body.without_terminator()) {
      std::vector<std::string> args;
      for (mlir::Value v : op.getOperands()) args.push_back(scalars[v.getAsOpaquePointer()]);
      TIR_ASSIGN_OR_RETURN(std::string e, BodyOpExpr(op, args));
      TIR_ASSIGN_OR_RETURN(std::string ctype, BodyCType(op.getResult(0).getType()));
      const std::string var = absl::StrCat("r", next_++);
      absl::StrAppend(&inner, "        const ", ctype, " ", var, " = ", e, ";\n");
      scalars[op.getResult(0).getAsOpaquePointer()] = var;
    }
    for (size_t i = 0; i < n; ++i) {
      absl::StrAppend(&inner, "        ", accs[i], " = ", scalars[body.getTerminator()->getOperand(i).getAsOpaquePointer()],
                      ";\n");
    }
    absl::StrAppend(&code, inner, "    }\n");
    for (size_t i = 0; i < n; ++i) {
      // Back to the element's compute type: signed integers sign-extend.
      mlir::Type e = ud.getOutputs()[i].getType().cast<mlir::ShapedType>().getElementType();
      std::string v = accs[i];
      if (auto it = e.dyn_cast<mlir::IntegerType>(); it && !it.isUnsigned()) {
        v = absl::StrCat("(tir_i64)tir_sbits(", accs[i], ", ", it.getWidth(), ")");
      }
      values_[ud.getOutputs()[i].getAsOpaquePointer()] = v;
    }
    return absl::OkStatus();
  }

  // The C type of a body scalar of type `t`.
  absl::StatusOr<std::string> BodyCType(mlir::Type t) {
    if (t.isa<mlir::IntegerType>()) return std::string("tir_u64");
    TIR_ASSIGN_OR_RETURN(TypeInfo info, Info(t));
    return info.compute;
  }

  // The C expression of body op `op` on `a` (its operands' expressions).
  absl::StatusOr<std::string> BodyOpExpr(mlir::Operation &op, const std::vector<std::string> &a) {
    std::optional<BodyOp> kind = classifyBodyOp(op);
    if (!kind) {
      return Unsupported("UNSUPPORTED_OP", op.getName().getStringRef().str() + " is not supported in a reduce_ud body");
    }
    mlir::Type rt = op.getResult(0).getType();
    const unsigned rw = rt.getIntOrFloatBitWidth();
    const unsigned w = op.getNumOperands() > 0 ? op.getOperand(0).getType().getIntOrFloatBitWidth() : rw;
    const std::string W = std::to_string(w), RW = std::to_string(rw);
    auto rounded = [&](const std::string &x) -> absl::StatusOr<std::string> {
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(rt));
      return Sub(t.round, x);
    };
    auto bits = [&](const std::string &x) { return "tir_bits(" + x + ", " + RW + ")"; };
    switch (*kind) {
      case BodyOp::kConstant: {
        mlir::Attribute c = llvm::cast<mlir::arith::ConstantOp>(op).getValue();
        if (auto fa = c.dyn_cast<mlir::FloatAttr>()) return rounded(Literal(fa.getValueAsDouble()));
        return bits(absl::StrCat(c.cast<mlir::IntegerAttr>().getValue().getZExtValue(), "ull"));
      }
      case BodyOp::kAddF: return rounded(a[0] + " + " + a[1]);
      case BodyOp::kSubF: return rounded(a[0] + " - " + a[1]);
      case BodyOp::kMulF: return rounded(a[0] + " * " + a[1]);
      case BodyOp::kDivF: return rounded(a[0] + " / " + a[1]);
      case BodyOp::kRemF: return rounded("fmod(" + a[0] + ", " + a[1] + ")");
      case BodyOp::kNegF: return rounded("-(" + a[0] + ")");
      case BodyOp::kMaxF: return rounded("tir_arith_maxf(" + a[0] + ", " + a[1] + ")");
      case BodyOp::kMinF: return rounded("tir_arith_minf(" + a[0] + ", " + a[1] + ")");
      case BodyOp::kCmpF:
        return absl::StrCat("tir_arith_cmpf(", a[0], ", ", a[1], ", ",
                            static_cast<int>(llvm::cast<mlir::arith::CmpFOp>(op).getPredicate()), ")");
      case BodyOp::kExtF: case BodyOp::kTruncF: return rounded(a[0]);
      case BodyOp::kAddI: return bits(a[0] + " + " + a[1]);
      case BodyOp::kSubI: return bits(a[0] + " - " + a[1]);
      case BodyOp::kMulI: return bits(a[0] + " * " + a[1]);
      case BodyOp::kDivSI: return "tir_arith_divsi(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kCeilDivSI: return "tir_arith_divround(" + a[0] + ", " + a[1] + ", " + W + ", true)";
      case BodyOp::kFloorDivSI: return "tir_arith_divround(" + a[0] + ", " + a[1] + ", " + W + ", false)";
      case BodyOp::kDivUI: return "tir_arith_divui(" + a[0] + ", " + a[1] + ")";
      case BodyOp::kCeilDivUI: return "tir_arith_ceildivui(" + a[0] + ", " + a[1] + ")";
      case BodyOp::kRemSI: return "tir_arith_remsi(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kRemUI: return "tir_arith_remui(" + a[0] + ", " + a[1] + ")";
      case BodyOp::kMaxSI: return "tir_arith_maxsi(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kMinSI: return "tir_arith_minsi(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kMaxUI: return "tir_max(" + a[0] + ", " + a[1] + ")";
      case BodyOp::kMinUI: return "tir_min(" + a[0] + ", " + a[1] + ")";
      case BodyOp::kAndI: return "(" + a[0] + " & " + a[1] + ")";
      case BodyOp::kOrI: return "(" + a[0] + " | " + a[1] + ")";
      case BodyOp::kXOrI: return "(" + a[0] + " ^ " + a[1] + ")";
      case BodyOp::kShLI: return "tir_arith_shli(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kShRSI: return "tir_arith_shrsi(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kShRUI: return "tir_arith_shrui(" + a[0] + ", " + a[1] + ", " + W + ")";
      case BodyOp::kCmpI:
        return absl::StrCat("tir_arith_cmpi(", a[0], ", ", a[1], ", ", w, ", ",
                            static_cast<int>(llvm::cast<mlir::arith::CmpIOp>(op).getPredicate()), ")");
      case BodyOp::kExtSI: return bits("(tir_u64)tir_sbits(" + a[0] + ", " + W + ")");
      case BodyOp::kExtUI: return a[0];
      case BodyOp::kTruncI: return bits(a[0]);
      case BodyOp::kSIToFP: return rounded("(double)tir_sbits(" + a[0] + ", " + W + ")");
      case BodyOp::kUIToFP: return rounded("(double)(" + a[0] + ")");
      case BodyOp::kFPToSI: return "tir_arith_fptoi((double)(" + a[0] + "), " + RW + ", true)";
      case BodyOp::kFPToUI: return "tir_arith_fptoi((double)(" + a[0] + "), " + RW + ", false)";
      case BodyOp::kSelect: return "((" + a[0] + ") & 1) ? (" + a[1] + ") : (" + a[2] + ")";
    }
    return Unsupported("UNSUPPORTED_OP", op.getName().getStringRef().str());
  }

  // Prologue ops of a matmul kernel (maps that read K), in graph order.
  std::set<mlir::Operation *> MatmulPrologue() {
    std::set<mlir::Operation *> prologue;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      auto m = maps_.results.find(&op);
      if (m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<MatmulOp>(op)) prologue.insert(&op);
    }
    return prologue;
  }

  // The tensor-core form for bf16/f16 operands. Each K step stages a
  // block_m x block_k tile of A and a block_k x block_n tile of B in shared
  // memory (prologue ops applied, out-of-range elements zero), then:
  //  - on a GPU, each warp owns a (block_m / warps_m) x (block_n / warps_n)
  //    sub-tile and issues mma.sync.m16n8k16 (f32 accumulate) on fragments read
  //    from shared memory;
  //  - on the host, the one thread multiplies the same shared tiles in loops.
  // The epilogue runs per output element on the f32 accumulator.
  absl::StatusOr<std::string> MatmulTiled(MatmulOp mm, int64_t bm, int64_t bn, int64_t bk, int64_t warpsM,
                                          int64_t warpsN, const std::string &mmaType) {
    const int b = rank_ - 3;
    TIR_ASSIGN_OR_RETURN(TypeInfo ct, Info(mm.getC().getType()));
    TIR_ASSIGN_OR_RETURN(TypeInfo at, Info(mm.getA().getType()));
    TIR_ASSIGN_OR_RETURN(TypeInfo bt, Info(mm.getB().getType()));
    const std::string toBits = mmaType == "bf16" ? "tir_to_bf16" : "tir_to_f16";
    const std::string fromBits = mmaType == "bf16" ? "tir_from_bf16" : "tir_from_f16";
    const std::string storage = mmaType == "bf16" ? "tir_bf16" : "tir_f16";
    const int64_t wm = bm / warpsM, wn = bn / warpsN;
    std::set<mlir::Operation *> prologue = MatmulPrologue();
    // The cp.async pipeline: A and B are kernel inputs read as they are (no
    // prologue) and indexed (.., m, k) and (.., k, n). Whether the run-time
    // layout allows 16-byte copies is checked in the kernel, which otherwise
    // stages element by element.
    int64_t stages = 1;
    auto argA = mm.getA().dyn_cast<mlir::BlockArgument>(), argB = mm.getB().dyn_cast<mlir::BlockArgument>();
    auto mapA = maps_.operands.find(&mm->getOpOperand(0)), mapB = maps_.operands.find(&mm->getOpOperand(1));
    auto tail = [&](decltype(mapA) m, int r, int c) {
      const unsigned n = m->second.getNumResults();
      if (n < 2 || m->second.getResult(n - 2) != mlir::getAffineDimExpr(r, m->second.getContext()) ||
          m->second.getResult(n - 1) != mlir::getAffineDimExpr(c, m->second.getContext())) {
        return false;
      }
      for (unsigned j = 0; j + 2 < n; ++j) {
        for (int d : {b, b + 1, b + 2}) {
          if (m->second.getResult(j).isFunctionOfDim(d)) return false;
        }
      }
      return true;
    };
    const int64_t pipelineStages = Param("stages", 1);
    if (pipelineStages >= 2 && prologue.empty() && argA && argB && mapA != maps_.operands.end() &&
        mapB != maps_.operands.end() && tail(mapA, b, b + 2) && tail(mapB, b + 2, b + 1)) {
      stages = pipelineStages;
    }
    const int64_t aBytes = stages * bm * bk * 2, smemBytes = aBytes + stages * bk * bn * 2;
    std::string code = absl::StrCat(
        "  const tir_i64 M = a.dim[", b, "], N = a.dim[", b + 1, "], K = a.dim[", b + 2, "];\n",
        TileCoords(),
        // Tiles live in dynamic shared memory (above the 48 KiB static limit
        // with the launcher's opt-in), stage after stage, each in the swizzled
        // layout of tir_swz: A tiles block_m x block_k, B tiles block_k x
        // block_n.
        "  TIR_DYNAMIC_SHARED(tir_smem, ", smemBytes, ");\n",
        "  tir_sptr<tir_u16> As = tir_sptr_cast<tir_u16>(tir_smem);\n",
        "  tir_sptr<tir_u16> Bs = tir_sptr_cast<tir_u16>(tir_smem + ", aBytes, ");\n");
    // Element (r, c) of stage `st`'s A or B tile, and its address.
    auto index_a = [&](const std::string &st, const std::string &r, const std::string &c) {
      return absl::StrCat("(", st, ") * ", bm * bk, " + tir_swz<", bk, ">(", r, ", ", c, ")");
    };
    auto index_b = [&](const std::string &st, const std::string &r, const std::string &c) {
      return absl::StrCat("(", st, ") * ", bk * bn, " + tir_swz<", bn, ">(", r, ", ", c, ")");
    };
    auto at_a = [&](const std::string &st, const std::string &r, const std::string &c) { return "As[" + index_a(st, r, c) + "]"; };
    auto at_b = [&](const std::string &st, const std::string &r, const std::string &c) { return "Bs[" + index_b(st, r, c) + "]"; };
    auto addr_a = [&](const std::string &st, const std::string &r, const std::string &c) { return "As + (" + index_a(st, r, c) + ")"; };
    auto addr_b = [&](const std::string &st, const std::string &r, const std::string &c) { return "Bs + (" + index_b(st, r, c) + ")"; };
    launch_.set_dynamic_shared_memory_bytes(static_cast<uint32_t>(smemBytes));
    absl::StrAppend(&code, Delinearize("batch", [&] { std::vector<int> v; for (int d = 0; d < b; ++d) v.push_back(d); return v; }(), "  "));
    absl::StrAppend(&code, "#if TIR_LANES\n",
                    "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n",
                    "  const int warp_m = warp / ", warpsN, ", warp_n = warp % ", warpsN, ";\n",
                    "  float acc[", wm / 16, "][", wn / 8, "][4];\n",
                    "  for (int i = 0; i < ", wm / 16, "; ++i) for (int j = 0; j < ", wn / 8,
                    "; ++j) for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;\n",
                    "#else\n  TIR_SHARED float acc_h[", bm * bn, "];\n",
                    "  for (int e = 0; e < ", bm * bn, "; ++e) acc_h[e] = 0.f;\n#endif\n");
    // One K step on the tiles of stage `st`.
    const std::string compute = absl::StrCat(
        "#if TIR_LANES\n",
        "    for (int ks = 0; ks < ", bk, "; ks += 16) {\n",
        "      for (int i = 0; i < ", wm / 16, "; ++i) {\n",
        // ldmatrix.x4: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) of the
        // warp's 16-row slice are exactly the a0..a3 fragments of mma.sync.
        "        tir_u32 a0, a1, a2, a3;\n",
        "        tir_ldmatrix_x4(a0, a1, a2, a3, ", addr_a("st", absl::StrCat("warp_m * ", wm, " + i * 16 + lane % 16"), "ks + (lane / 16) * 8"), ");\n",
        "        for (int j = 0; j < ", wn / 8, "; ++j) {\n",
        // B is stored k-major; the transposing load gives the column fragments.
        "          tir_u32 b0, b1;\n",
        "          tir_ldmatrix_x2_trans(b0, b1, ", addr_b("st", "ks + lane % 16", absl::StrCat("warp_n * ", wn, " + j * 8")), ");\n",
        "          tir_mma_m16n8k16_", mmaType, "(acc[i][j], a0, a1, a2, a3, b0, b1);\n",
        "        }\n      }\n    }\n",
        "#else\n",
        "    for (int r = 0; r < ", bm, "; ++r)\n      for (int kk = 0; kk < ", bk, "; ++kk) {\n",
        "        tir_", storage.substr(4), " av; av.bits = ", at_a("st", "r", "kk"), ";\n",
        "        const float x = ", fromBits, "(av);\n",
        "        for (int c = 0; c < ", bn, "; ++c) {\n",
        "          tir_", storage.substr(4), " bv; bv.bits = ", at_b("st", "kk", "c"), ";\n",
        "          acc_h[r * ", bn, " + c] += x * ", fromBits, "(bv);\n        }\n      }\n",
        "#endif\n");
    if (stages > 1) {
      const std::string inA = absl::StrCat("a.in", argA.getArgNumber()), inB = absl::StrCat("a.in", argB.getArgNumber());
      const unsigned ra = mapA->second.getNumResults(), rb = mapB->second.getNumResults();
      absl::StrAppend(&code, "  const tir_u16 *pa = 0, *pb = 0;\n  {\n    const tir_i64 i", b, " = 0, i", b + 1, " = 0, i", b + 2,
                      " = 0;\n    pa = (const tir_u16 *)(", inA, " + (", Offset(mapA->second, inA + "_stride"), "));\n",
                      "    pb = (const tir_u16 *)(", inB, " + (", Offset(mapB->second, inB + "_stride"), "));\n  }\n",
                      "  const tir_i64 sam = ", inA, "_stride[", ra - 2, "], sbk = ", inB, "_stride[", rb - 2, "];\n",
                      "  const bool pipe = K % 8 == 0 && N % 8 == 0 && ", inA, "_stride[", ra - 1, "] == 1 && ", inB,
                      "_stride[", rb - 1, "] == 1 && sam % 8 == 0 && sbk % 8 == 0 && (tir_u64)pa % 16 == 0 && "
                      "(tir_u64)pb % 16 == 0;\n");
      // Copies the K tile starting at `k` into stage `s`, 16 bytes per copy;
      // chunks past M, N or K are zero-filled.
      auto load = [&](const std::string &st, const std::string &k) {
        return absl::StrCat(
            "      for (int e = threadIdx.x; e < ", bm * bk / 8, "; e += blockDim.x) {\n",
            "        const int r = e / ", bk / 8, ", c = (e % ", bk / 8, ") * 8;\n",
            "        const tir_i64 gm = tm * ", bm, " + r, gk = ", k, " + c;\n",
            "        const bool ok = gm < M && gk < K;\n",
            "        tir_cp_async16(", addr_a(st, "r", "c"), ", ok ? pa + gm * sam + gk : pa, ok ? 16 : 0);\n      }\n",
            "      for (int e = threadIdx.x; e < ", bk * bn / 8, "; e += blockDim.x) {\n",
            "        const int r = e / ", bn / 8, ", c = (e % ", bn / 8, ") * 8;\n",
            "        const tir_i64 gk = ", k, " + r, gn = tn * ", bn, " + c;\n",
            "        const bool ok = gk < K && gn < N;\n",
            "        tir_cp_async16(", addr_b(st, "r", "c"), ", ok ? pb + gk * sbk + gn : pb, ok ? 16 : 0);\n      }\n");
      };
      absl::StrAppend(&code, "  if (pipe) {\n", "    const tir_i64 KT = (K + ", bk - 1, ") / ", bk, ";\n",
                      "    for (int s = 0; s < ", stages - 1, "; ++s) {\n", "      if (s < KT) {\n",
                      load("s", absl::StrCat("(tir_i64)s * ", bk)), "      }\n      tir_cp_async_commit();\n    }\n",
                      "    for (tir_i64 kt = 0; kt < KT; ++kt) {\n", "      tir_cp_async_wait<", stages - 2, ">();\n",
                      "      TIR_SYNC();\n", "      const tir_i64 nk = kt + ", stages - 1, ";\n", "      if (nk < KT) {\n",
                      "        const int sn = (int)(nk % ", stages, ");\n", load("sn", absl::StrCat("nk * ", bk)),
                      "      }\n      tir_cp_async_commit();\n", "      const int st = (int)(kt % ", stages, ");\n",
                      compute, "    }\n    tir_cp_async_wait<0>();\n  } else {\n");
    }
    absl::StrAppend(&code, "  for (tir_i64 k0 = 0; k0 < K; k0 += ", bk, ") {\n");
    // Stage A (m, k) and B (k, n) with their prologues.
    auto stage = [&](int operand, const std::string &rows, const std::string &cols, const std::string &tile,
                     const std::string &rowVar, const std::string &colVar, int rowDim, int colDim) -> absl::Status {
      absl::StrAppend(&code, "    for (int e = threadIdx.x; e < ", rows, " * ", cols, "; e += blockDim.x) {\n",
                      "      const int r = e / ", cols, ", c = e % ", cols, ";\n",
                      "      const tir_i64 i", rowDim, " = ", rowVar, ";\n",
                      "      const tir_i64 i", colDim, " = ", colVar, ";\n",
                      "      const tir_i64 i", b + (operand == 0 ? 1 : 0), " = 0;\n",
                      "      float val = 0.f;\n      if (i", b, " < M && i", b + 1, " < N && i", b + 2, " < K) {\n");
      auto saved = values_;
      std::string inner;
      for (mlir::Operation *op : Ordered(prologue)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
      TIR_ASSIGN_OR_RETURN(std::string v, Operand(mm->getOpOperand(operand), inner, "        "));
      values_ = saved;
      absl::StrAppend(&code, inner, "        val = (float)(", v, ");\n      }\n",
                      "      ", tile, "[tir_swz<", cols, ">(r, c)] = ", toBits, "(val).bits;\n    }\n");
      return absl::OkStatus();
    };
    (void)at;
    (void)bt;
    // A tile: m = tm*bm + r (dim b), k = k0 + c (dim b+2); n is fixed in range (0).
    TIR_RETURN_IF_ERROR(stage(0, std::to_string(bm), std::to_string(bk), "As", absl::StrCat("tm * ", bm, " + r"),
                              "k0 + c", b, b + 2));
    // B tile: k = k0 + r (dim b+2), n = tn*bn + c (dim b+1); m fixed at 0.
    TIR_RETURN_IF_ERROR(stage(1, std::to_string(bk), std::to_string(bn), "Bs", "k0 + r",
                              absl::StrCat("tn * ", bn, " + c"), b + 2, b + 1));
    absl::StrAppend(&code, "    TIR_SYNC();\n    {\n    const int st = 0;\n", compute, "    }\n    TIR_SYNC();\n  }\n",
                    stages > 1 ? "  }\n" : "");
    // The epilogue, once per output element owned.
    std::string epi;
    absl::StrAppend(&epi, "    const tir_i64 i", b + 2, " = 0;\n", "    if (i", b, " < M && i", b + 1, " < N) {\n");
    std::string inner;
    std::string init = "0";
    if (mm.getAccumulator()) {
      TIR_ASSIGN_OR_RETURN(init, Operand(mm->getOpOperand(2), inner, "      "));
    }
    const std::string var = absl::StrCat("v", next_++);
    absl::StrAppend(&inner, "      const ", ct.compute, " ", var, " = ", Sub(ct.round, "accv + (float)(" + init + ")"), ";\n");
    values_[mm.getC().getAsOpaquePointer()] = var;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      if (prologue.count(&op) || &op == mm.getOperation()) continue;
      TIR_RETURN_IF_ERROR(EmitOp(&op, inner, "      "));
    }
    TIR_RETURN_IF_ERROR(StoreOutputs(inner, "      ", -1));
    absl::StrAppend(&epi, inner, "    }\n");
    absl::StrAppend(&code, "#if TIR_LANES\n",
                    "  for (int i = 0; i < ", wm / 16, "; ++i) for (int j = 0; j < ", wn / 8, "; ++j) for (int q = 0; q < 4; ++q) {\n",
                    "    const tir_i64 i", b, " = tm * ", bm, " + warp_m * ", wm, " + i * 16 + (lane / 4) + (q >= 2 ? 8 : 0);\n",
                    "    const tir_i64 i", b + 1, " = tn * ", bn, " + warp_n * ", wn, " + j * 8 + (lane % 4) * 2 + (q & 1);\n",
                    "    const float accv = acc[i][j][q];\n", epi, "  }\n#else\n",
                    "  for (int e = 0; e < ", bm * bn, "; ++e) {\n",
                    "    const tir_i64 i", b, " = tm * ", bm, " + e / ", bn, ";\n",
                    "    const tir_i64 i", b + 1, " = tn * ", bn, " + e % ", bn, ";\n",
                    "    const float accv = acc_h[e];\n", epi, "  }\n#endif\n");
    return code;
  }

  // The output tile (tm, tn) of this block. With group_m > 1, consecutive
  // blocks walk a column of group_m tile rows before moving to the next
  // column, so the B tiles they share are still in L2 (a bijection over the
  // grid; the last group may be shorter).
  std::string TileCoords() {
    const int64_t group = Param("group_m", 1);
    if (group <= 1) return "  const tir_i64 tn = blockIdx.x, tm = blockIdx.y, batch = blockIdx.z;\n";
    return absl::StrCat("  const tir_i64 tiles_m_ = gridDim.y, tiles_n_ = gridDim.x, batch = blockIdx.z;\n",
                        "  const tir_i64 pid_ = (tir_i64)blockIdx.y * tiles_n_ + blockIdx.x;\n",
                        "  const tir_i64 width_ = ", group, " * tiles_n_, first_m_ = (pid_ / width_) * ", group, ";\n",
                        "  const tir_i64 rows_ = tiles_m_ - first_m_ < ", group, " ? tiles_m_ - first_m_ : ", group, ";\n",
                        "  const tir_i64 tm = first_m_ + (pid_ % width_) % rows_, tn = (pid_ % width_) / rows_;\n");
  }

  // grid = (ceil(N / block_n), ceil(M / block_m), batch), block = threads.
  void AddMatmulLaunch(int64_t bm, int64_t bn, int64_t threads, int b) {
    auto domainDim = [&](tir::v1::LaunchExtent *g, int d) {
      auto *td = g->add_dims();
      td->mutable_tensor()->set_kind(tir::v1::TensorRef::ITERATION_DOMAIN);
      td->set_dim(d);
    };
    auto *gx = launch_.add_grid();
    gx->set_constant(1);
    gx->set_divisor(bn);
    domainDim(gx, b + 1);
    auto *gy = launch_.add_grid();
    gy->set_constant(1);
    gy->set_divisor(bm);
    domainDim(gy, b);
    auto *gz = launch_.add_grid();
    gz->set_constant(1);
    for (int d = 0; d < b; ++d) domainDim(gz, d);
    launch_.add_block(threads);
    launch_.add_block(1);
    launch_.add_block(1);
  }

  absl::StatusOr<std::string> Matmul() {
    const int64_t bm = Param("block_m", 64), bn = Param("block_n", 64), warps = Param("warps", 4);
    const int64_t threads = warps * 32;
    const int b = rank_ - 3;  // batch dims; then M, N, K
    MatmulOp mm;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      if (auto m = llvm::dyn_cast<MatmulOp>(op)) mm = m;
    }
    {
      // bf16/f16 operands take the tensor-core form when the tile splits into
      // whole m16n8k16 fragments per warp.
      mlir::Type ea = mm.getA().getType().cast<mlir::ShapedType>().getElementType();
      mlir::Type eb = mm.getB().getType().cast<mlir::ShapedType>().getElementType();
      const int64_t bk = Param("block_k", 32);
      int64_t warpsM = 1;
      while (warpsM * 2 <= warps && bm / (warpsM * 2) >= 16) warpsM *= 2;
      const int64_t warpsN = warps / warpsM;
      const bool shapes = bm % (16 * warpsM) == 0 && warpsN > 0 && bn % (8 * warpsN) == 0 && bk % 16 == 0 &&
                          warpsM * warpsN == warps;
      if (ea == eb && (ea.isBF16() || ea.isF16()) && shapes) {
        TIR_ASSIGN_OR_RETURN(std::string tiled, MatmulTiled(mm, bm, bn, bk, warpsM, warpsN, ea.isBF16() ? "bf16" : "f16"));
        AddMatmulLaunch(bm, bn, threads, b);
        return tiled;
      }
    }
    TIR_ASSIGN_OR_RETURN(TypeInfo ct, Info(mm.getC().getType()));
    TIR_ASSIGN_OR_RETURN(TypeInfo at, Info(mm.getA().getType()));
    const std::string acct = at.is_float ? (mm.getA().getType().cast<mlir::ShapedType>().getElementType().isF64() ? "double" : "float") : "tir_i64";
    std::string code = absl::StrCat("  tir_i64 batches = 1;\n");
    for (int d = 0; d < b; ++d) absl::StrAppend(&code, "  batches *= a.dim[", d, "];\n");
    absl::StrAppend(&code, "  const tir_i64 M = a.dim[", b, "], N = a.dim[", b + 1, "], K = a.dim[", b + 2, "];\n",
                    "  const tir_i64 tiles_m = (M + ", bm - 1, ") / ", bm, ", tiles_n = (N + ", bn - 1, ") / ", bn, ";\n",
                    TileCoords(),
                    "  (void)tiles_m; (void)tiles_n;\n",
                    "  for (tir_i64 e = threadIdx.x; e < ", bm * bn, "; e += blockDim.x) {\n",
                    "    const tir_i64 i", b, " = tm * ", bm, " + e / ", bn, ";\n",
                    "    const tir_i64 i", b + 1, " = tn * ", bn, " + e % ", bn, ";\n",
                    "    if (i", b, " >= M || i", b + 1, " >= N || batch >= batches) continue;\n");
    absl::StrAppend(&code, Delinearize("batch", [&] { std::vector<int> v; for (int d = 0; d < b; ++d) v.push_back(d); return v; }(), "    "));
    // Prologue ops (maps that use K) are evaluated inside the K loop.
    std::set<mlir::Operation *> prologue;
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      auto m = maps_.results.find(&op);
      if (m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<MatmulOp>(op)) prologue.insert(&op);
    }
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      if (prologue.count(&op)) continue;
      if (&op != mm.getOperation()) {
        TIR_RETURN_IF_ERROR(EmitOp(&op, code, "    "));
        continue;
      }
      std::string init = "0";
      if (mm.getAccumulator()) {
        absl::StrAppend(&code, "    const tir_i64 i", b + 2, "_unused = 0; (void)i", b + 2, "_unused;\n");
        TIR_ASSIGN_OR_RETURN(init, Operand(mm->getOpOperand(2), code, "    "));
      }
      absl::StrAppend(&code, "    ", acct, " acc = (", acct, ")(", init, ");\n",
                      "    for (tir_i64 i", b + 2, " = 0; i", b + 2, " < K; ++i", b + 2, ") {\n");
      auto saved = values_;
      std::string inner;
      for (mlir::Operation *op2 : Ordered(prologue)) TIR_RETURN_IF_ERROR(EmitOp(op2, inner, "      "));
      TIR_ASSIGN_OR_RETURN(std::string av, Operand(mm->getOpOperand(0), inner, "      "));
      TIR_ASSIGN_OR_RETURN(std::string bv, Operand(mm->getOpOperand(1), inner, "      "));
      values_ = saved;
      absl::StrAppend(&code, inner, "      acc += (", acct, ")(", av, ") * (", acct, ")(", bv, ");\n    }\n");
      const std::string var = absl::StrCat("v", next_++);
      absl::StrAppend(&code, "    const ", ct.compute, " ", var, " = ", Sub(ct.round, "acc"), ";\n");
      values_[mm.getC().getAsOpaquePointer()] = var;
    }
    TIR_RETURN_IF_ERROR(StoreOutputs(code, "    ", -1));
    absl::StrAppend(&code, "  }\n");
    // The accumulator's map does not use K; make sure a dummy K index exists.
    code = absl::StrCat("  const tir_i64 i", b + 2, "_k_unused = 0; (void)i", b + 2, "_k_unused;\n", code);
    AddMatmulLaunch(bm, bn, threads, b);
    return code;
  }

  GraphOp kernel_;
  std::map<std::string, int64_t> params_;
  planning::AccessMaps maps_;
  std::string kind_;
  int rank_ = 0;
  std::set<int64_t> reduced_;
  std::vector<std::string> fields_, field_names_;
  std::map<const void *, std::string> values_;  // SSA value -> C expression or variable
  std::string constants_;
  int constants_count_ = 0;
  // Inside a pointwise run: operands read from a preloaded run array, and
  // outputs written to one (by result number).
  llvm::DenseMap<mlir::OpOperand *, std::string> run_reads_;
  std::map<unsigned, std::string> run_writes_;
  // Array name of each dense constant already written to constants_.
  llvm::DenseMap<mlir::Operation *, std::string> constant_names_;
  int next_ = 0;
  tir::v1::LaunchRule launch_;
};

}  // namespace

namespace {
absl::Status CheckKernelGraph(GraphOp kernel) {
  auto kind = kernel->getAttrOfType<mlir::StringAttr>("tir.kernel_kind");
  if (!kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain") || !kind ||
      (kind.getValue() != "pointwise" && kind.getValue() != "reduction" && kind.getValue() != "matmul")) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     "not a kernel graph: tir.kernel_kind and tir.iteration_domain come from tir-partition");
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<EmittedKernel> EmitKernel(GraphOp kernel, const std::map<std::string, int64_t> &params) {
  TIR_RETURN_IF_ERROR(CheckKernelGraph(kernel));
  return Emitter(kernel, params).Run();
}

absl::StatusOr<std::vector<std::string>> ArgumentFieldNames(GraphOp kernel) {
  TIR_RETURN_IF_ERROR(CheckKernelGraph(kernel));
  return Emitter(kernel, {}).FieldNames();
}

}  // namespace tir::codegen
