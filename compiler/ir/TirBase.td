//===- TirBase.td - tir dialect, type constraints, enums ---*- tablegen -*-===//
//
// The `tir` dialect: flat graphs of tensor ops, the unit tir compiles and tunes.
//
//===----------------------------------------------------------------------===//

#ifndef TIR_BASE_TD
#define TIR_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tir_Dialect : Dialect {
  let name = "tir";
  let cppNamespace = "::tir";
  let summary = "Tensor graphs compiled and autotuned by tir";
  let description = [{
    A `tir.graph` is a symbol with a function signature and one block holding a
    DAG of tensor ops that ends in `tir.results`. Shapes live in ranked tensor
    types (`?` is dynamic); strides in the `tir.stride` argument/result
    attribute, row-major when absent. Graphs written in NVIDIA TensorIR's
    textual form (`nv_tensor_ir.*`) are accepted as the same dialect.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let useDefaultAttributePrinterParser = 1;
  let useFoldAPI = kEmitFoldAdaptorFolder;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    // Names of the signature attributes a graph argument or result may carry.
    static constexpr ::llvm::StringLiteral kStrideAttr = "tir.stride";
    static constexpr ::llvm::StringLiteral kAlignmentAttr = "tir.alignment";
    static constexpr ::llvm::StringLiteral kCostAttr = "tir.cost";
    static constexpr ::llvm::StringLiteral kIterSpaceMapAttr = "tir.iter_space_map";
    static constexpr ::llvm::StringLiteral kLayoutAttr = "tir.layout";
    // Upper bounds of an argument's dynamic dims (see DimBounds.h).
    static constexpr ::llvm::StringLiteral kBoundsAttr = "tir.bounds";
    // Written back by TensorIR's analysis passes; accepted and ignored.
    static constexpr ::llvm::StringLiteral kIterSpaceIdAttr = "tir.iter_space_id";
    static constexpr ::llvm::StringLiteral kIterSpaceIdsAttr = "tir.iter_space_ids";
    static constexpr ::llvm::StringLiteral kIterSpaceDimDomainsAttr = "tir.iter_space_dim_domains";
    static constexpr ::llvm::StringLiteral kAllowTmaAttr = "tir.allow_tma";
    // Graph attributes: the user's tile for the graph (TensorIR's names).
    static constexpr ::llvm::StringLiteral kTileSizeAttr = "tile_size";
    static constexpr ::llvm::StringLiteral kReductionTileSizeAttr = "reduction_tile_size";
    static constexpr ::llvm::StringLiteral kTileCandidatesAttr = "tile_candidates";
  private:
    void registerAttributes();
  public:
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tir_Tensor : Type<CPred<"::tir::isTirTensorType($_self)">,
    "TensorIR-compatible ranked tensor (element type i1, f16, bf16, f32, f64, "
    "f8E4M3FN, f8E5M2, si8-si64 or ui8-ui64; no encoding)", "::mlir::RankedTensorType">;

def Tir_ScalarType : Type<CPred<"::tir::isTirElementType($_self)">,
    "tir element type", "::mlir::Type">;

def Tir_IndexOrScalar : AnyTypeOf<[Index, Tir_ScalarType]>;

//===----------------------------------------------------------------------===//
// Attribute constraints
//===----------------------------------------------------------------------===//

def Tir_FloatAttr : Attr<CPred<"$_self.isa<::mlir::FloatAttr>()">,
                         "floating-point attribute"> {
  let storageType = "::mlir::FloatAttr";
  let returnType = "::mlir::FloatAttr";
  let convertFromStorage = "$_self";
}

def Tir_NonEmptyI32Array : ConfinedAttr<DenseI32ArrayAttr, [
    AttrConstraint<CPred<"!$_self.cast<::mlir::DenseI32ArrayAttr>().empty()">,
                   "with at least 1 elements">]>;

def Tir_NonNegativeI64Array : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayNonNegative<DenseI64ArrayAttr>]>;

def Tir_PositiveI64Array : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayStrictlyPositive<DenseI64ArrayAttr>]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// TensorIR's reduction modes. `avg` is the mean (`mean` is accepted as its
// alias); `mul_no_zeros` is the product of the non-zero elements;
// `customize` names a user-defined combiner, which only `reduce_ud` carries.
def Tir_ReductionMode : I32EnumAttr<"ReductionMode", "reduction combiner", [
    I32EnumAttrCase<"add", 0>,
    I32EnumAttrCase<"mul", 1>,
    I32EnumAttrCase<"max", 2>,
    I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"avg", 4>,
    I32EnumAttrCase<"amax", 5>,
    I32EnumAttrCase<"norm1", 6>,
    I32EnumAttrCase<"norm2", 7>,
    I32EnumAttrCase<"mul_no_zeros", 8>,
    I32EnumAttrCase<"customize", 9>,
  ]> {
  let cppNamespace = "::tir";
  let genSpecializedAttr = 0;
}

def Tir_ReductionModeAttr : EnumAttr<Tir_Dialect, Tir_ReductionMode, "reduction_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tir_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison predicate", [
    // Ordered float comparisons (false when either side is NaN).
    I32EnumAttrCase<"oeq", 0>, I32EnumAttrCase<"one", 1>, I32EnumAttrCase<"ogt", 2>,
    I32EnumAttrCase<"oge", 3>, I32EnumAttrCase<"olt", 4>, I32EnumAttrCase<"ole", 5>,
    // Unordered float comparisons (true when either side is NaN).
    I32EnumAttrCase<"ueq", 6>, I32EnumAttrCase<"une", 7>, I32EnumAttrCase<"ugt", 8>,
    I32EnumAttrCase<"uge", 9>, I32EnumAttrCase<"ult", 10>, I32EnumAttrCase<"ule", 11>,
    // Integer comparisons (signedness from the element type).
    I32EnumAttrCase<"eq", 12>, I32EnumAttrCase<"neq", 13>, I32EnumAttrCase<"gt", 14>,
    I32EnumAttrCase<"ge", 15>, I32EnumAttrCase<"lt", 16>, I32EnumAttrCase<"le", 17>,
  ]> {
  let cppNamespace = "::tir";
  let genSpecializedAttr = 0;
}

def Tir_CmpPredicateAttr : EnumAttr<Tir_Dialect, Tir_CmpPredicate, "cmp_predicate"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Layout attributes (the provenance of a value's elements)
//===----------------------------------------------------------------------===//

class Tir_Attr<string name, string attrMnemonic> : AttrDef<Tir_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Tir_TensorSourceAttr : Tir_Attr<"TensorSource", "tensor_source"> {
  let summary = "elements of a value read from one graph tensor through a layout";
  let description = [{
    `#tir.tensor_source<tensor, offset, "(shape):(stride)" [, [mapping]]>`:
    the value's elements are those of graph tensor `tensor` starting at
    element `offset`, laid out by the layout string (shape and strides per
    dim, `?` dynamic, strides optional and row-major when omitted). The
    optional mapping says which run-time value supplies each `?` of the
    layout (a permutation). Written by TensorIR's layout analysis.
  }];
  let parameters = (ins "int64_t":$tensor, "int64_t":$offset, StringRefParameter<>:$layout,
                        OptionalArrayRefParameter<"int32_t">:$mapping);
  let assemblyFormat = "`<` $tensor `,` $offset `,` $layout (`,` `[` $mapping^ `]`)? `>`";
  let genVerifyDecl = 1;
}

def Tir_CompositeSourceAttr : Tir_Attr<"CompositeSource", "composite_source"> {
  let summary = "a value whose elements combine several sources";
  let parameters = (ins ArrayRefParameter<"::mlir::Attribute">:$sources);
  let assemblyFormat = "`<` $sources `>`";
  let genVerifyDecl = 1;
}

def Tir_ConcatSourceAttr : Tir_Attr<"ConcatSource", "concat_source"> {
  let summary = "sources concatenated along one layout dimension";
  let description = [{
    `#tir.concat_source<dim = D, src, src, ... [, [argument indices]]>`.
  }];
  let parameters = (ins "int64_t":$dim, ArrayRefParameter<"::mlir::Attribute">:$sources,
                        OptionalArrayRefParameter<"int32_t">:$arguments);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Tir_ReductionSourceAttr : Tir_Attr<"ReductionSource", "reduction_source"> {
  let summary = "a reduction view (a layout string) over a source";
  let parameters = (ins StringRefParameter<>:$view, "::mlir::Attribute":$source);
  let assemblyFormat = "`<` $view `,` $source `>`";
  let genVerifyDecl = 1;
}

def Tir_MatmulSourceAttr : Tir_Attr<"MatmulSource", "matmul_source"> {
  let summary = "a matmul view over its operands' sources";
  let description = [{
    `#tir.matmul_source<"view", B, M, N, K, lhs, rhs>`.
  }];
  let parameters = (ins StringRefParameter<>:$view, "int64_t":$b, "int64_t":$m, "int64_t":$n, "int64_t":$k,
                        "::mlir::Attribute":$lhs, "::mlir::Attribute":$rhs);
  let assemblyFormat = "`<` $view `,` $b `,` $m `,` $n `,` $k `,` $lhs `,` $rhs `>`";
  let genVerifyDecl = 1;
}

def Tir_IterSpaceDimDomainsAttr : Tir_Attr<"IterSpaceDimDomains", "iter_space_dim_domains"> {
  let summary = "whether each iteration-space dimension's domain is defined";
  let description = [{
    Written by TensorIR's iteration-space analysis:
    `#tir<iter_space_dim_domains[def, undef]>` (also spelled
    `#tir.iter_space_dim_domains[def, undef]`). Accepted and ignored.
  }];
  let parameters = (ins ArrayRefParameter<"bool">:$defined);
  let hasCustomAssemblyFormat = 1;
}

#endif // TIR_BASE_TD
