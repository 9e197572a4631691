//===- TirOps.td - tir ops ---------------------------------*- tablegen -*-===//
//
// Every op TensorIR v0.1.0 defines, in tir's dialect. Most ops use shared C++
// parsers, printers and verifiers (TirOpHelpers.h) so that the TensorIR
// textual forms parse unchanged; shape rules are in ShapeRules.h.
//
//===----------------------------------------------------------------------===//

#ifndef TIR_OPS_TD
#define TIR_OPS_TD

include "compiler/ir/TirBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/FunctionInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Tir_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tir_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Graph and terminators
//===----------------------------------------------------------------------===//

def Tir_GraphOp : Tir_Op<"graph", [
    IsolatedFromAbove, Symbol, FunctionOpInterface, SingleBlock,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getDefaultDialect"]>]> {
  let summary = "a tensor graph: signature plus a DAG of tensor ops";
  let description = [{
    ```mlir
    tir.graph @scale(%x: tensor<8x?xf32> {tir.stride = "(?,1)"}) -> tensor<8x?xf32> {
      %y = add %x, %x : tensor<8x?xf32>
      results %y : tensor<8x?xf32>
    }
    ```
    Arguments are tir tensors or scalars (an element type or `index`).
    Signature attributes: `tir.stride` (string), `tir.alignment` (integer
    >= 1), `tir.cost` (integer), `tir.iter_space_map` (affine map),
    `tir.layout` (source attribute); anything else is an error.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::FunctionType":$type)>];
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() { return getFunctionType().getInputs(); }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() { return getFunctionType().getResults(); }
    bool isExternal() { return false; }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Tir_ResultsOp : Tir_Op<"results", [Pure, Terminator, HasParent<"GraphOp">]> {
  let summary = "the outputs of a graph";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "$values attr-dict-with-keyword (`:` type($values)^)?";
  let hasVerifier = 1;
}

def Tir_YieldOp : Tir_Op<"yield", [Pure, Terminator, HasParent<"ReduceUdOp">]> {
  let summary = "the combined values of a reduce_ud step";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Tir_LaunchOp : Tir_Op<"launch", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run one kernel graph of a partitioned graph";
  let description = [{
    After partitioning, the stitching graph holds only launches: each runs the
    kernel graph `callee` on its operands (graph inputs or intermediates from
    earlier launches) and yields the kernel's outputs, which become global
    intermediates or graph outputs.

    ```mlir
    %t = launch @softmax_k0(%x) : (tensor<8x4096xf32>) -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = "$callee `(` $args `)` attr-dict `:` functional-type($args, $results)";
}

//===----------------------------------------------------------------------===//
// Pointwise binary
//===----------------------------------------------------------------------===//

// `op[<beta = F>] %lhs, %rhs : T` or `: (T0, T1) -> T2`. Operands merge by the
// broadcast rule; the result has the merged shape.
class Tir_BinaryOp<string mnemonic, string kind, bit beta = 0>
    : Tir_Op<mnemonic, [Pure]> {
  let arguments = !if(beta,
      (ins Tir_Tensor:$lhs, Tir_Tensor:$rhs, OptionalAttr<Tir_FloatAttr>:$beta),
      (ins Tir_Tensor:$lhs, Tir_Tensor:$rhs));
  let results = (outs Tir_Tensor:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::ParseResult $cppClass::parse(::mlir::OpAsmParser &parser,
                                         ::mlir::OperationState &result) {
      return ::tir::parseBinaryOp(parser, result, }] # !if(beta, "true", "false") # [{);
    }
    void $cppClass::print(::mlir::OpAsmPrinter &p) { ::tir::printBinaryOp(p, *this); }
    ::mlir::LogicalResult $cppClass::verify() {
      return ::tir::verifyBinaryOp(*this, ::tir::BinaryKind::}] # kind # [{);
    }
  }];
}

// Arithmetic on any numeric type.
def Tir_AddOp : Tir_BinaryOp<"add", "kNumeric">;
def Tir_SubOp : Tir_BinaryOp<"sub", "kNumeric">;
def Tir_MulOp : Tir_BinaryOp<"mul", "kNumeric">;
def Tir_DivOp : Tir_BinaryOp<"div", "kNumeric">;
def Tir_MaxOp : Tir_BinaryOp<"max", "kNumeric">;
def Tir_MinOp : Tir_BinaryOp<"min", "kNumeric">;
def Tir_ModOp : Tir_BinaryOp<"mod", "kNumeric">;
def Tir_RemOp : Tir_BinaryOp<"rem", "kNumeric">;
def Tir_AddSquareOp : Tir_BinaryOp<"add_square", "kNumeric">;
// `pow`: same element types, or a float base with an integer exponent.
def Tir_PowOp : Tir_BinaryOp<"pow", "kPow">;
def Tir_Atan2Op : Tir_BinaryOp<"atan2", "kFloat">;
// Activation gradients: (forward input, incoming gradient) -> gradient.
def Tir_ReluBwdOp : Tir_BinaryOp<"relu_bwd", "kFloat">;
def Tir_SigmoidBwdOp : Tir_BinaryOp<"sigmoid_bwd", "kFloat">;
def Tir_TanhBwdOp : Tir_BinaryOp<"tanh_bwd", "kFloat">;
def Tir_GeluBwdOp : Tir_BinaryOp<"gelu_bwd", "kFloat">;
def Tir_GeluApproxTanhBwdOp : Tir_BinaryOp<"gelu_approx_tanh_bwd", "kFloat">;
def Tir_SoftplusBwdOp : Tir_BinaryOp<"softplus_bwd", "kFloat", 1>;
def Tir_SwishBwdOp : Tir_BinaryOp<"swish_bwd", "kFloat", 1>;
def Tir_EluBwdOp : Tir_BinaryOp<"elu_bwd", "kFloat", 1>;
// Logical and/or of i1 or integer operands (non-zero is true); result i1.
def Tir_AndOp : Tir_BinaryOp<"and", "kLogical">;
def Tir_OrOp : Tir_BinaryOp<"or", "kLogical">;

def Tir_CmpOp : Tir_Op<"cmp", [Pure]> {
  let summary = "elementwise comparison: `cmp %a olt %b : T`, result i1";
  let arguments = (ins Tir_Tensor:$lhs, Tir_CmpPredicateAttr:$predicate, Tir_Tensor:$rhs);
  let results = (outs Tir_Tensor:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Tir_BinarySelectOp : Tir_Op<"binary_select", [Pure]> {
  let summary = "elementwise `cond ? lhs : rhs`: `binary_select %c, %a, %b : T`";
  let arguments = (ins Tir_Tensor:$cond, Tir_Tensor:$lhs, Tir_Tensor:$rhs);
  let results = (outs Tir_Tensor:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise unary
//===----------------------------------------------------------------------===//

// `op[<beta = F>] %x : T` (or `: T0 -> T1`).
class Tir_UnaryOp<string mnemonic, string kind, bit beta = 0>
    : Tir_Op<mnemonic, [Pure]> {
  let arguments = !if(beta,
      (ins Tir_Tensor:$input, OptionalAttr<Tir_FloatAttr>:$beta),
      (ins Tir_Tensor:$input));
  let results = (outs Tir_Tensor:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::ParseResult $cppClass::parse(::mlir::OpAsmParser &parser,
                                         ::mlir::OperationState &result) {
      return ::tir::parseUnaryOp(parser, result, }] # !if(beta, "true", "false") # [{,
                                 ::tir::UnaryKind::}] # kind # [{);
    }
    void $cppClass::print(::mlir::OpAsmPrinter &p) { ::tir::printUnaryOp(p, *this); }
    ::mlir::LogicalResult $cppClass::verify() {
      return ::tir::verifyUnaryOp(*this, ::tir::UnaryKind::}] # kind # [{);
    }
  }];
}

def Tir_AbsOp : Tir_UnaryOp<"abs", "kNumeric">;
def Tir_CeilOp : Tir_UnaryOp<"ceil", "kFloat">;
def Tir_FloorOp : Tir_UnaryOp<"floor", "kFloat">;
def Tir_NegOp : Tir_UnaryOp<"neg", "kFloat">;
def Tir_SqrtOp : Tir_UnaryOp<"sqrt", "kFloat">;
def Tir_RsqrtOp : Tir_UnaryOp<"rsqrt", "kFloat">;
def Tir_ExpOp : Tir_UnaryOp<"exp", "kFloat">;
def Tir_LogOp : Tir_UnaryOp<"log", "kFloat">;
def Tir_SinOp : Tir_UnaryOp<"sin", "kFloat">;
def Tir_CosOp : Tir_UnaryOp<"cos", "kFloat">;
def Tir_TanOp : Tir_UnaryOp<"tan", "kFloat">;
def Tir_ErfOp : Tir_UnaryOp<"erf", "kFloat">;
def Tir_ReciprocalOp : Tir_UnaryOp<"reciprocal", "kFloat">;
def Tir_ReluFwdOp : Tir_UnaryOp<"relu_fwd", "kFloat">;
def Tir_SigmoidFwdOp : Tir_UnaryOp<"sigmoid_fwd", "kFloat">;
def Tir_TanhFwdOp : Tir_UnaryOp<"tanh_fwd", "kFloat">;
def Tir_GeluFwdOp : Tir_UnaryOp<"gelu_fwd", "kFloat">;
def Tir_GeluApproxTanhFwdOp : Tir_UnaryOp<"gelu_approx_tanh_fwd", "kFloat">;
def Tir_SoftplusFwdOp : Tir_UnaryOp<"softplus_fwd", "kFloat", 1>;
def Tir_SwishFwdOp : Tir_UnaryOp<"swish_fwd", "kFloat", 1>;
def Tir_EluFwdOp : Tir_UnaryOp<"elu_fwd", "kFloat", 1>;
// Logical not of an i1 or integer operand; result i1.
def Tir_NotOp : Tir_UnaryOp<"not", "kLogical">;

//===----------------------------------------------------------------------===//
// Types and constants
//===----------------------------------------------------------------------===//

def Tir_ConvertOp : Tir_Op<"convert", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise conversion to another element type";
  let arguments = (ins Tir_Tensor:$input);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
}

def Tir_ConstantOp : Tir_Op<"constant", [Pure]> {
  let summary = "a scalar or dense tensor literal: `constant dense<[1, 2]> : tensor<2xsi32>`";
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs AnyType:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Tir_SplatOp : Tir_Op<"splat", [Pure,
    TypesMatchWith<"the scalar type is the result element type", "output", "value",
                   "$_self.cast<::mlir::ShapedType>().getElementType()">]> {
  let summary = "a tensor filled with one scalar: `splat %v [dynamic_dims(%n)] : T`";
  let arguments = (ins Tir_ScalarType:$value, Variadic<Index>:$dynamic_dims);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$value (`dynamic_dims` `(` $dynamic_dims^ `)`)? attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Tir_IotaOp : Tir_Op<"iota", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "element indices along one dimension: `iota dimension = 1 : T`";
  let arguments = (ins I64Attr:$dimension, Variadic<Index>:$dynamic_dims);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "`dimension` `=` $dimension (`dynamic_dims` `(` $dynamic_dims^ `)`)? attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Tir_DimOp : Tir_Op<"dim", [Pure]> {
  let summary = "the runtime extent of one dimension: `dim %x dimension = 0 : T`";
  let arguments = (ins Tir_Tensor:$input, I64Attr:$dimension);
  let results = (outs Index:$output);
  let assemblyFormat = "$input `dimension` `=` $dimension attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Views and data movement
//===----------------------------------------------------------------------===//

def Tir_BroadcastOp : Tir_Op<"broadcast", [Pure]> {
  let summary = "expand unit dimensions: `broadcast %x : tensor<4x1xf32> -> tensor<4x8xf32>`";
  let arguments = (ins Tir_Tensor:$input, Variadic<Index>:$dynamic_dims);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$input (`dynamic_dims` `(` $dynamic_dims^ `)`)? attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Tir_ReshapeOp : Tir_Op<"reshape", [Pure]> {
  let summary = "reinterpret the row-major element order under a new shape";
  let arguments = (ins Tir_Tensor:$input, Variadic<Index>:$dynamic_dims);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$input (`dynamic_dims` `(` $dynamic_dims^ `)`)? attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Tir_TransposeOp : Tir_Op<"transpose", [Pure]> {
  let summary = "permute dimensions: output dim i is input dim permutation[i]";
  let arguments = (ins Tir_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$input `permutation` `=` $permutation attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Tir_SliceOp : Tir_Op<"slice", [Pure]> {
  let summary = "a strided window: `slice %x starts = [..] limits = [..] strides = [..]`";
  let arguments = (ins Tir_Tensor:$input, Tir_NonNegativeI64Array:$starts,
                       Tir_NonNegativeI64Array:$limits, Tir_PositiveI64Array:$strides);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$input `starts` `=` $starts `limits` `=` $limits `strides` `=` $strides attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Tir_ConcatenateOp : Tir_Op<"concatenate", [Pure]> {
  let summary = "join tensors along one dimension";
  let arguments = (ins Variadic<Tir_Tensor>:$inputs, I64Attr:$dimension);
  let results = (outs Tir_Tensor:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Tir_GatherOp : Tir_Op<"gather", [Pure]> {
  let summary = "read slices of `data` picked by integer indices along one axis";
  let description = [{
    `torch.nn.functional.embedding(indices, weight)` is a gather of the
    weight's rows (axis 0); `torch.index_select(x, axis, i)` with a rank-1
    `i` is one along `axis`:

    ```mlir
    %e = gather %weight, %ids axis = 0 : (tensor<1000x64xf32>, tensor<37xsi64>) -> tensor<37x64xf32>
    ```

    The result's shape is data.shape[:axis] + indices.shape +
    data.shape[axis+1:], its element type data's:
    result[p..., q..., s...] = data[p..., indices[q...], s...]. Indices are
    si32 or si64 and must lie in [0, data.shape[axis]): a negative or larger
    index is an error, never clamped or wrapped. The reference interpreter
    refuses it (INDEX_OUT_OF_RANGE, naming the position and the value);
    a kernel stops without reading outside `data` (on a GPU the launch
    fails with an illegal instruction, on the host the process traps).
  }];
  let arguments = (ins Tir_Tensor:$data, Tir_Tensor:$indices, I64Attr:$axis);
  let results = (outs Tir_Tensor:$output);
  let assemblyFormat = "$data `,` $indices `axis` `=` $axis attr-dict `:` `(` type($data) `,` type($indices) `)` `->` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and contraction
//===----------------------------------------------------------------------===//

def Tir_ReduceOp : Tir_Op<"reduce", [Pure]> {
  let summary = "reduce dimensions to extent 1 with a built-in combiner";
  let description = [{
    ```mlir
    %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<8x32xf32> -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins Tir_Tensor:$input, Tir_NonEmptyI32Array:$dimensions,
                       Tir_ReductionModeAttr:$reduction_mode);
  let results = (outs Tir_Tensor:$output);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Tir_ReduceUdOp : Tir_Op<"reduce_ud", [Pure]> {
  let summary = "reduce dimensions with a user-defined combiner region";
  let description = [{
    N inputs reduce together into N results. The region takes
    (prev_result_0..N-1, curr_operand_0..N-1) as scalars and yields the N new
    partial results; `identity` gives their starting values.
  }];
  let arguments = (ins Variadic<Tir_Tensor>:$inputs, Tir_NonEmptyI32Array:$dimensions,
                       ArrayAttr:$identity);
  let results = (outs Variadic<Tir_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Tir_MatmulOp : Tir_Op<"matmul", [Pure]> {
  let summary = "batched matrix product C = A x B (+ accumulator)";
  let description = [{
    ```mlir
    %c = matmul(%a, %b) accum(%acc : tensor<16x8xf32>) : (tensor<16x32xf16>, tensor<32x8xf16>) -> tensor<16x8xf32>
    ```
    Rank >= 2; leading dims are batch dims and broadcast-merge.
  }];
  let arguments = (ins Tir_Tensor:$a, Tir_Tensor:$b, Optional<Tir_Tensor>:$accumulator);
  let results = (outs Tir_Tensor:$c);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

#endif // TIR_OPS_TD
