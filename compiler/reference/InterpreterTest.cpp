#include "compiler/reference/Interpreter.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Elementwise.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::reference {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

constexpr auto F32 = tir::v1::DTYPE_F32;

Tensor T(tir::v1::DType d, std::vector<int64_t> shape, std::vector<double> v) {
  Tensor t = Tensor::Zeros(d, std::move(shape));
  for (size_t k = 0; k < v.size(); ++k) t.SetF(k, v[k]);
  return t;
}

Tensor I(tir::v1::DType d, std::vector<int64_t> shape, std::vector<int64_t> v) {
  Tensor t = Tensor::Zeros(d, std::move(shape));
  for (size_t k = 0; k < v.size(); ++k) t.SetI(k, v[k]);
  return t;
}

std::vector<double> Values(const Tensor &t) {
  std::vector<double> v;
  for (int64_t k = 0; k < t.NumElements(); ++k) v.push_back(t.GetF(k));
  return v;
}

class InterpreterTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::vector<Tensor>> Run(const std::string &text, const std::vector<Tensor> &in) {
    auto loaded = LoadGraphText(text, ctx_.get());
    if (!loaded.ok()) return loaded.status();
    modules_.push_back(std::move(loaded->module));
    return Evaluate(loaded->graph, in);
  }
  // Runs a one-op graph `%r = <body>` over inputs of the given types.
  std::vector<double> One(const std::string &args, const std::string &body, const std::string &resultType,
                          const std::vector<Tensor> &in) {
    auto out = Run("tir.graph @g(" + args + ") -> " + resultType + " {\n  %r = " + body +
                       "\n  results %r : " + resultType + "\n}\n",
                   in);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? Values((*out)[0]) : std::vector<double>{};
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
};

TEST_F(InterpreterTest, BinaryArithmeticWithBroadcast) {
  Tensor a = T(F32, {2, 3}, {1, 2, 3, 4, 5, 6}), b = T(F32, {1, 3}, {10, 20, 30});
  const std::string args = "%a: tensor<2x3xf32>, %b: tensor<1x3xf32>";
  const std::string ty = " : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>";
  EXPECT_THAT(One(args, "add %a, %b" + ty, "tensor<2x3xf32>", {a, b}), ElementsAre(11, 22, 33, 14, 25, 36));
  EXPECT_THAT(One(args, "sub %a, %b" + ty, "tensor<2x3xf32>", {a, b}), ElementsAre(-9, -18, -27, -6, -15, -24));
  EXPECT_THAT(One(args, "max %a, %b" + ty, "tensor<2x3xf32>", {a, b}), ElementsAre(10, 20, 30, 10, 20, 30));
  EXPECT_THAT(One(args, "add_square %a, %b" + ty, "tensor<2x3xf32>", {a, b}),
              ElementsAre(101, 402, 903, 104, 405, 906));
  EXPECT_THAT(One(args, "div %a, %b" + ty, "tensor<2x3xf32>", {a, b}),
              Pointwise(DoubleNear(1e-7), std::vector<double>{0.1, 0.1, 0.1, 0.4, 0.25, 0.2}));
}

TEST_F(InterpreterTest, ModAndRemFollowDivisorAndDividendSigns) {
  Tensor a = T(F32, {4}, {7, -7, 7, -7}), b = T(F32, {4}, {3, 3, -3, -3});
  const std::string args = "%a: tensor<4xf32>, %b: tensor<4xf32>";
  EXPECT_THAT(One(args, "mod %a, %b : tensor<4xf32>", "tensor<4xf32>", {a, b}), ElementsAre(1, 2, -2, -1));
  EXPECT_THAT(One(args, "rem %a, %b : tensor<4xf32>", "tensor<4xf32>", {a, b}), ElementsAre(1, -1, 1, -1));
  Tensor ia = I(tir::v1::DTYPE_SI32, {4}, {7, -7, 7, -7}), ib = I(tir::v1::DTYPE_SI32, {4}, {3, 3, -3, 0});
  const std::string iargs = "%a: tensor<4xsi32>, %b: tensor<4xsi32>";
  EXPECT_THAT(One(iargs, "mod %a, %b : tensor<4xsi32>", "tensor<4xsi32>", {ia, ib}), ElementsAre(1, 2, -2, 0));
  EXPECT_THAT(One(iargs, "rem %a, %b : tensor<4xsi32>", "tensor<4xsi32>", {ia, ib}), ElementsAre(1, -1, 1, 0));
  EXPECT_THAT(One(iargs, "div %a, %b : tensor<4xsi32>", "tensor<4xsi32>", {ia, ib}), ElementsAre(2, -2, -2, 0));
}

TEST_F(InterpreterTest, IntegersWrapToTheirWidth) {
  Tensor a = I(tir::v1::DTYPE_SI8, {3}, {100, -128, 5}), b = I(tir::v1::DTYPE_SI8, {3}, {100, -1, 3});
  const std::string args = "%a: tensor<3xsi8>, %b: tensor<3xsi8>";
  EXPECT_THAT(One(args, "add %a, %b : tensor<3xsi8>", "tensor<3xsi8>", {a, b}), ElementsAre(-56, 127, 8));
  EXPECT_THAT(One(args, "mul %a, %b : tensor<3xsi8>", "tensor<3xsi8>", {a, b}), ElementsAre(16, -128, 15));
  EXPECT_THAT(One(args, "pow %a, %b : tensor<3xsi8>", "tensor<3xsi8>", {a, b}), ElementsAre(0, 0, 125));
  Tensor u = I(tir::v1::DTYPE_UI8, {2}, {250, 3}), v = I(tir::v1::DTYPE_UI8, {2}, {10, 5});
  const std::string uargs = "%a: tensor<2xui8>, %b: tensor<2xui8>";
  EXPECT_THAT(One(uargs, "add %a, %b : tensor<2xui8>", "tensor<2xui8>", {u, v}), ElementsAre(4, 8));
  EXPECT_THAT(One(uargs, "sub %b, %a : tensor<2xui8>", "tensor<2xui8>", {u, v}), ElementsAre(16, 2));
  // Unsigned comparison: 250 > 10 even though the bits are negative as si8.
  EXPECT_THAT(One(uargs, "cmp %a gt %b : tensor<2xui8>", "tensor<2xi1>", {u, v}), ElementsAre(1, 0));
}

TEST_F(InterpreterTest, UnaryAndActivationsAtKnownPoints) {
  Tensor x = T(tir::v1::DTYPE_F64, {3}, {-1, 0, 1});
  const std::string args = "%x: tensor<3xf64>";
  auto run = [&](const std::string &op) { return One(args, op + " %x : tensor<3xf64>", "tensor<3xf64>", {x}); };
  EXPECT_THAT(run("relu_fwd"), ElementsAre(0, 0, 1));
  EXPECT_THAT(run("sigmoid_fwd"), Pointwise(DoubleNear(1e-12), std::vector<double>{0.2689414213699951, 0.5, 0.7310585786300049}));
  EXPECT_THAT(run("gelu_fwd"), Pointwise(DoubleNear(1e-9), std::vector<double>{-0.15865525393145707, 0, 0.8413447460685429}));
  EXPECT_THAT(run("gelu_approx_tanh_fwd"), Pointwise(DoubleNear(1e-9), std::vector<double>{-0.15880800939172324, 0, 0.8411919906082768}));
  EXPECT_THAT(run("elu_fwd<beta = 2.0 : f32>"), Pointwise(DoubleNear(1e-12), std::vector<double>{2 * (std::exp(-1.0) - 1), 0, 1}));
  EXPECT_THAT(run("softplus_fwd<beta = 2.0 : f32>"),
              Pointwise(DoubleNear(1e-12), std::vector<double>{std::log1p(std::exp(-2.0)) / 2, std::log(2.0) / 2, std::log1p(std::exp(2.0)) / 2}));
  EXPECT_THAT(run("swish_fwd<beta = 1.0 : f32>"), Pointwise(DoubleNear(1e-12), std::vector<double>{-0.2689414213699951, 0, 0.7310585786300049}));
  EXPECT_THAT(run("abs"), ElementsAre(1, 0, 1));
  EXPECT_THAT(run("neg"), ElementsAre(1, 0, -1));
  EXPECT_THAT(run("exp"), Pointwise(DoubleNear(1e-12), std::vector<double>{std::exp(-1.0), 1, std::exp(1.0)}));
  EXPECT_THAT(run("erf"), Pointwise(DoubleNear(1e-12), std::vector<double>{std::erf(-1.0), 0, std::erf(1.0)}));
}

// dx = dy * f'(x): each backward op against a central difference of its forward op.
TEST_F(InterpreterTest, BackwardOpsMatchFiniteDifferencesOfForwardOps) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"relu_bwd", "relu_fwd"},       {"sigmoid_bwd", "sigmoid_fwd"},
      {"tanh_bwd", "tanh_fwd"},       {"gelu_bwd", "gelu_fwd"},
      {"gelu_approx_tanh_bwd", "gelu_approx_tanh_fwd"},
      {"softplus_bwd<beta = 1.5 : f32>", "softplus_fwd<beta = 1.5 : f32>"},
      {"swish_bwd<beta = 0.7 : f32>", "swish_fwd<beta = 0.7 : f32>"},
      {"elu_bwd<beta = 0.5 : f32>", "elu_fwd<beta = 0.5 : f32>"},
  };
  const std::vector<double> xs = {-2.1, -0.6, 0.3, 1.7};
  const double h = 1e-6, dy = 0.75;
  for (const auto &[bwd, fwd] : pairs) {
    SCOPED_TRACE(bwd);
    Tensor x = T(tir::v1::DTYPE_F64, {4}, xs), g = T(tir::v1::DTYPE_F64, {4}, {dy, dy, dy, dy});
    std::vector<double> got = One("%x: tensor<4xf64>, %g: tensor<4xf64>", bwd + " %x, %g : tensor<4xf64>",
                                  "tensor<4xf64>", {x, g});
    std::vector<double> plus, minus;
    for (double v : xs) { plus.push_back(v + h); minus.push_back(v - h); }
    std::vector<double> fp = One("%x: tensor<4xf64>", fwd + " %x : tensor<4xf64>", "tensor<4xf64>", {T(tir::v1::DTYPE_F64, {4}, plus)});
    std::vector<double> fm = One("%x: tensor<4xf64>", fwd + " %x : tensor<4xf64>", "tensor<4xf64>", {T(tir::v1::DTYPE_F64, {4}, minus)});
    for (size_t k = 0; k < xs.size(); ++k) EXPECT_NEAR(got[k], dy * (fp[k] - fm[k]) / (2 * h), 1e-6) << xs[k];
  }
}

TEST_F(InterpreterTest, ComparisonsHandleNaNAndSelectPicks) {
  Tensor a = T(F32, {3}, {1, NAN, 3}), b = T(F32, {3}, {2, 2, 3});
  const std::string args = "%a: tensor<3xf32>, %b: tensor<3xf32>";
  EXPECT_THAT(One(args, "cmp %a olt %b : tensor<3xf32>", "tensor<3xi1>", {a, b}), ElementsAre(1, 0, 0));
  EXPECT_THAT(One(args, "cmp %a ult %b : tensor<3xf32>", "tensor<3xi1>", {a, b}), ElementsAre(1, 1, 0));
  EXPECT_THAT(One(args, "cmp %a oeq %b : tensor<3xf32>", "tensor<3xi1>", {a, b}), ElementsAre(0, 0, 1));
  auto m = One(args, "max %a, %b : tensor<3xf32>", "tensor<3xf32>", {a, b});
  EXPECT_TRUE(std::isnan(m[1])) << "max propagates NaN";
  Tensor c = T(tir::v1::DTYPE_I1, {3}, {1, 0, 1});
  EXPECT_THAT(One("%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>", "binary_select %c, %a, %b : tensor<3xf32>",
                  "tensor<3xf32>", {c, b, T(F32, {3}, {7, 8, 9})}),
              ElementsAre(2, 8, 3));
  Tensor p = T(tir::v1::DTYPE_I1, {4}, {0, 0, 1, 1}), q = T(tir::v1::DTYPE_I1, {4}, {0, 1, 0, 1});
  EXPECT_THAT(One("%p: tensor<4xi1>, %q: tensor<4xi1>", "and %p, %q : tensor<4xi1>", "tensor<4xi1>", {p, q}), ElementsAre(0, 0, 0, 1));
  EXPECT_THAT(One("%p: tensor<4xi1>, %q: tensor<4xi1>", "or %p, %q : tensor<4xi1>", "tensor<4xi1>", {p, q}), ElementsAre(0, 1, 1, 1));
  EXPECT_THAT(One("%p: tensor<4xi1>", "not %p : tensor<4xi1>", "tensor<4xi1>", {p}), ElementsAre(1, 1, 0, 0));
}

TEST_F(InterpreterTest, ConvertRoundsTruncatesAndSaturates) {
  Tensor x = T(tir::v1::DTYPE_F64, {5}, {1.00390625, 1.01171875, 70000.0, -3.7, 1e10});
  const std::string args = "%x: tensor<5xf64>";
  // bf16 has 8 bits of mantissa: 1 + 2^-8 ties to even (1.0); 1 + 3*2^-8 rounds up.
  EXPECT_THAT(One(args, "convert %x : tensor<5xf64> -> tensor<5xbf16>", "tensor<5xbf16>", {x}),
              ElementsAre(1.0, 1.015625, 70144.0, -3.703125, 9999220736.0));
  auto h = One(args, "convert %x : tensor<5xf64> -> tensor<5xf16>", "tensor<5xf16>", {x});
  EXPECT_TRUE(std::isinf(h[2])) << "70000 overflows f16";
  EXPECT_THAT(One(args, "convert %x : tensor<5xf64> -> tensor<5xsi8>", "tensor<5xsi8>", {x}), ElementsAre(1, 1, 127, -3, 127));
  EXPECT_THAT(One(args, "convert %x : tensor<5xf64> -> tensor<5xui8>", "tensor<5xui8>", {x}), ElementsAre(1, 1, 255, 0, 255));
}

TEST_F(InterpreterTest, DataMovement) {
  Tensor x = T(F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  const std::string args = "%x: tensor<2x3xf32>";
  EXPECT_THAT(One(args, "transpose %x permutation = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>", "tensor<3x2xf32>", {x}),
              ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_THAT(One(args, "reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>", "tensor<3x2xf32>", {x}), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(One(args, "slice %x starts = [0, 0] limits = [2, 3] strides = [1, 2] : tensor<2x3xf32> -> tensor<2x2xf32>",
                  "tensor<2x2xf32>", {x}),
              ElementsAre(1, 3, 4, 6));
  EXPECT_THAT(One("%x: tensor<2x3xf32>, %y: tensor<2x1xf32>",
                  "concatenate %x, %y dimension = 1 : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>", "tensor<2x4xf32>",
                  {x, T(F32, {2, 1}, {9, 8})}),
              ElementsAre(1, 2, 3, 9, 4, 5, 6, 8));
  EXPECT_THAT(One("%x: tensor<2x1xf32>", "broadcast %x : tensor<2x1xf32> -> tensor<2x3xf32>", "tensor<2x3xf32>",
                  {T(F32, {2, 1}, {7, 8})}),
              ElementsAre(7, 7, 7, 8, 8, 8));
  EXPECT_THAT(One("", "iota dimension = 1 : tensor<2x3xsi32>", "tensor<2x3xsi32>", {}), ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(One("", "constant dense<[[1, 2], [3, 4]]> : tensor<2x2xui8>", "tensor<2x2xui8>", {}), ElementsAre(1, 2, 3, 4));
}

TEST_F(InterpreterTest, ReductionsInEveryMode) {
  Tensor x = T(F32, {2, 3}, {1, -2, 3, 4, 5, -6});
  const std::string args = "%x: tensor<2x3xf32>";
  auto reduce = [&](const std::string &mode) {
    return One(args, "reduce(%x)<dimensions = [1], reduction_mode = <" + mode + ">> : tensor<2x3xf32> -> tensor<2x1xf32>",
               "tensor<2x1xf32>", {x});
  };
  EXPECT_THAT(reduce("add"), ElementsAre(2, 3));
  EXPECT_THAT(reduce("mul"), ElementsAre(-6, -120));
  EXPECT_THAT(reduce("max"), ElementsAre(3, 5));
  EXPECT_THAT(reduce("min"), ElementsAre(-2, -6));
  EXPECT_THAT(reduce("mean"), Pointwise(DoubleNear(1e-6), std::vector<double>{2.0 / 3, 1}));
  EXPECT_THAT(reduce("amax"), ElementsAre(3, 6));
  EXPECT_THAT(reduce("norm1"), ElementsAre(6, 15));
  EXPECT_THAT(reduce("norm2"), Pointwise(DoubleNear(1e-6), std::vector<double>{std::sqrt(14.0), std::sqrt(77.0)}));
  EXPECT_THAT(One(args, "reduce(%x)<dimensions = [0, 1], reduction_mode = <add>> : tensor<2x3xf32> -> tensor<1x1xf32>",
                  "tensor<1x1xf32>", {x}),
              ElementsAre(5));
  EXPECT_THAT(One(args,
                  "reduce_ud(%x)<dimensions = [0], identity = [0.0 : f32]> (%a: f32, %v: f32) {\n"
                  "    %s = arith.mulf %v, %v : f32\n    %t = arith.addf %a, %s : f32\n    tir.yield %t : f32\n"
                  "  } : tensor<2x3xf32> -> tensor<1x3xf32>",
                  "tensor<1x3xf32>", {x}),
              ElementsAre(17, 29, 45));
}

TEST_F(InterpreterTest, BatchedMatmulWithBroadcastAndAccumulator) {
  // A: 2 batches of 2x2; B: one 2x2 shared; acc adds 100.
  Tensor a = T(F32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), b = T(F32, {1, 2, 2}, {1, 0, 1, 1});
  Tensor acc = T(F32, {2, 2, 2}, {100, 100, 100, 100, 100, 100, 100, 100});
  EXPECT_THAT(One("%a: tensor<2x2x2xf32>, %b: tensor<1x2x2xf32>, %c: tensor<2x2x2xf32>",
                  "matmul(%a, %b) accum(%c : tensor<2x2x2xf32>) : (tensor<2x2x2xf32>, tensor<1x2x2xf32>) -> tensor<2x2x2xf32>",
                  "tensor<2x2x2xf32>", {a, b, acc}),
              ElementsAre(103, 102, 107, 104, 111, 106, 115, 108));
}

TEST_F(InterpreterTest, StridedInputsAreGatheredByTheirStrides) {
  // A 2x3 tensor stored column-major: element (i, j) at offset i + 2j.
  const float buffer[6] = {1, 4, 2, 5, 3, 6};
  Tensor x = FromBuffer(F32, {2, 3}, {1, 2}, buffer);
  EXPECT_THAT(Values(x), ElementsAre(1, 2, 3, 4, 5, 6));
  float out[6] = {};
  ToBuffer(x, {1, 2}, out);
  EXPECT_THAT(std::vector<float>(out, out + 6), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_EQ(BufferBytes(F32, {2, 3}, {1, 2}), 24);
  // bf16 stored as raw bits.
  const uint16_t bf[2] = {0x3f80, 0xc040};  // 1.0, -3.0
  EXPECT_THAT(Values(FromBuffer(tir::v1::DTYPE_BF16, {2}, {}, bf)), ElementsAre(1.0, -3.0));
}

TEST_F(InterpreterTest, DynamicShapesResolveFromInputsAndDynamicDims) {
  const std::string g = R"mlir(
tir.graph @g(%x: tensor<?x3xf32>, %v: f32) -> (tensor<?x3xf32>, tensor<?x1xf32>) {
  %n = dim %x dimension = 0 : tensor<?x3xf32>
  %f = splat %v dynamic_dims(%n) : tensor<?x3xf32>
  %y = mul %x, %f : tensor<?x3xf32>
  %s = reduce(%y)<dimensions = [1], reduction_mode = <add>> : tensor<?x3xf32> -> tensor<?x1xf32>
  results %y, %s : tensor<?x3xf32>, tensor<?x1xf32>
}
)mlir";
  for (int64_t rows : {1, 2, 5}) {
    Tensor x = Tensor::Zeros(F32, {rows, 3});
    for (int64_t k = 0; k < x.NumElements(); ++k) x.SetF(k, k);
    auto out = Run(g, {x, Tensor::Scalar(F32, 2.0)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].shape, ElementsAre(rows, 3));
    EXPECT_THAT((*out)[1].shape, ElementsAre(rows, 1));
    EXPECT_EQ((*out)[1].GetF(rows - 1), 2.0 * (3 * (rows - 1) * 3 + 3));
  }
}

TEST_F(InterpreterTest, BadInputsAreRejected) {
  const std::string g = "tir.graph @g(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3xf32> {\n"
                        "  %r = add %x, %y : tensor<?x3xf32>\n  results %r : tensor<?x3xf32>\n}\n";
  auto count = Run(g, {Tensor::Zeros(F32, {2, 3})});
  EXPECT_THAT(std::string(count.status().message()), HasSubstr("takes 2 inputs, got 1"));
  auto shape = Run(g, {Tensor::Zeros(F32, {2, 4}), Tensor::Zeros(F32, {2, 3})});
  EXPECT_THAT(std::string(shape.status().message()), HasSubstr("input #0 has shape [2, 4]"));
  auto dtype = Run(g, {Tensor::Zeros(tir::v1::DTYPE_F16, {2, 3}), Tensor::Zeros(F32, {2, 3})});
  EXPECT_THAT(std::string(dtype.status().message()), HasSubstr("dtype f16, expected f32"));
  auto runtime = Run(g, {Tensor::Zeros(F32, {2, 3}), Tensor::Zeros(F32, {3, 3})});
  EXPECT_THAT(std::string(runtime.status().message()), HasSubstr("do not broadcast at run time"));
}

TEST_F(InterpreterTest, EveryCorpusGraphEvaluates) {
  std::ifstream in("tests/graphs/every_op.mlir");
  std::stringstream ss;
  ss << in.rdbuf();
  auto module = parseTirModule(ss.str(), ctx_.get());
  ASSERT_TRUE(module);
  int graphs = 0;
  for (GraphOp graph : module->getOps<GraphOp>()) {
    SCOPED_TRACE(graph.getSymName().str());
    std::vector<Tensor> inputs;
    uint64_t seed = 1;
    for (mlir::Type t : graph.getArgumentTypes()) {
      if (auto tensor = t.dyn_cast<mlir::RankedTensorType>()) {
        inputs.push_back(RandomTensor(DTypeOf(tensor.getElementType()),
                                      std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end()), seed++));
      } else if (t.isIndex()) {
        inputs.push_back(Tensor::ScalarInt(tir::v1::DTYPE_INDEX, 3));
      } else {
        inputs.push_back(Tensor::Scalar(DTypeOf(t), 0.5));
      }
    }
    auto out = Evaluate(graph, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->size(), graph.getResultTypes().size());
    ++graphs;
  }
  EXPECT_EQ(graphs, 7);
}

TEST_F(InterpreterTest, AvgAndMulNoZerosAsTensorIrDefinesThem) {
  Tensor x = T(F32, {2, 4}, {1, 0, -2, 3, 0, -0.0, 0, 0});
  const std::string args = "%x: tensor<2x4xf32>";
  auto reduce = [&](const std::string &mode) {
    return One(args, "reduce(%x)<dimensions = [1], reduction_mode = <" + mode + ">> : tensor<2x4xf32> -> tensor<2x1xf32>",
               "tensor<2x1xf32>", {x});
  };
  EXPECT_THAT(reduce("avg"), ElementsAre(0.5, 0));
  EXPECT_THAT(reduce("mean"), ElementsAre(0.5, 0)) << "mean is avg's alias";
  // Zeros (+0 and -0) are skipped; a row of zeros is the empty product, 1.
  EXPECT_THAT(reduce("mul_no_zeros"), ElementsAre(-6, 1));
  EXPECT_THAT(reduce("mul"), ElementsAre(0, 0));
  Tensor n = T(F32, {1, 3}, {2, NAN, 0});
  std::vector<double> nan = One("%x: tensor<1x3xf32>",
                                "reduce(%x)<dimensions = [1], reduction_mode = <mul_no_zeros>> : tensor<1x3xf32> -> "
                                "tensor<1x1xf32>",
                                "tensor<1x1xf32>", {n});
  ASSERT_EQ(nan.size(), 1u);
  EXPECT_TRUE(std::isnan(nan[0])) << "NaN is not a zero";
  // Integers: avg truncates toward zero; mul_no_zeros skips exact zeros.
  Tensor i = I(tir::v1::DTYPE_SI32, {2, 3}, {-7, 0, 2, 0, 0, 5});
  EXPECT_THAT(One("%x: tensor<2x3xsi32>",
                  "reduce(%x)<dimensions = [1], reduction_mode = <avg>> : tensor<2x3xsi32> -> tensor<2x1xsi32>",
                  "tensor<2x1xsi32>", {i}),
              ElementsAre(-1, 1));
  EXPECT_THAT(One("%x: tensor<2x3xsi32>",
                  "reduce(%x)<dimensions = [1], reduction_mode = <mul_no_zeros>> : tensor<2x3xsi32> -> tensor<2x1xsi32>",
                  "tensor<2x1xsi32>", {i}),
              ElementsAre(-14, 5));
}

TEST_F(InterpreterTest, Float8ConversionsRoundToNearestEvenAndSaturate) {
  Tensor x = T(F32, {10}, {1.0625, 1.1875, 500, -1e6, INFINITY, NAN, 0.001, 57000, 61440, 240});
  auto to = [&](const std::string &f8) {
    return One("%x: tensor<10xf32>", "convert %x : tensor<10xf32> -> tensor<10x" + f8 + ">", "tensor<10x" + f8 + ">", {x});
  };
  std::vector<double> e4 = to("f8E4M3FN"), e5 = to("f8E5M2");
  ASSERT_EQ(e4.size(), 10u);
  ASSERT_EQ(e5.size(), 10u);
  // E4M3: 3 mantissa bits; 1.0625 is a tie between 1 and 1.125 (even: 1),
  // 1.1875 between 1.125 and 1.25 (even: 1.25); past 448 (and infinity)
  // saturates to 448; NaN stays NaN; 0.001 is the subnormal 2^-9 * 1.
  EXPECT_EQ(e4[0], 1.0);
  EXPECT_EQ(e4[1], 1.25);
  EXPECT_EQ(e4[2], 448);
  EXPECT_EQ(e4[3], -448);
  EXPECT_EQ(e4[4], 448);
  EXPECT_TRUE(std::isnan(e4[5]));
  EXPECT_EQ(e4[6], std::ldexp(1.0, -9));
  EXPECT_EQ(e4[9], 240);
  // E5M2: largest finite 57344; 61440 would round to infinity: saturates.
  EXPECT_EQ(e5[7], 57344);
  EXPECT_EQ(e5[8], 57344);
  EXPECT_EQ(e5[4], 57344);
  EXPECT_EQ(e5[3], -57344);
  EXPECT_TRUE(std::isnan(e5[5]));
  EXPECT_EQ(e5[0], 1.0);  // 2 mantissa bits: 1.0625 rounds to 1
  // And back to wider floats exactly.
  Tensor f8 = T(tir::v1::DTYPE_F8E4M3FN, {3}, {0.875, -448, 0.015625});
  EXPECT_THAT(One("%x: tensor<3xf8E4M3FN>", "convert %x : tensor<3xf8E4M3FN> -> tensor<3xbf16>", "tensor<3xbf16>", {f8}),
              ElementsAre(0.875, -448, 0.015625));
}

TEST_F(InterpreterTest, ConvertToI1IsNonZeroAndNaNIsTrue) {
  Tensor x = T(F32, {6}, {0.5, 0, -0.0, NAN, -3, INFINITY});
  EXPECT_THAT(One("%x: tensor<6xf32>", "convert %x : tensor<6xf32> -> tensor<6xi1>", "tensor<6xi1>", {x}),
              ElementsAre(1, 0, 0, 1, 1, 1));
  Tensor h = T(tir::v1::DTYPE_BF16, {3}, {0.25, 0, NAN});
  EXPECT_THAT(One("%x: tensor<3xbf16>", "convert %x : tensor<3xbf16> -> tensor<3xi1>", "tensor<3xi1>", {h}),
              ElementsAre(1, 0, 1));
}

TEST_F(InterpreterTest, ReduceUdBodiesAreBitExactOnSignlessIntegers) {
  // A ui32 tensor reduced with signless i32 ops: minui sees 0xffffffff as
  // the largest value (a signed min would pick it first).
  Tensor u = I(tir::v1::DTYPE_UI32, {1, 3}, {7, static_cast<int64_t>(0xffffffffu), 3});
  EXPECT_THAT(One("%x: tensor<1x3xui32>",
                  "reduce_ud(%x)<dimensions = [1], identity = [4294967295 : ui32]> (%a: i32, %v: i32) {\n"
                  "    %m = arith.minui %a, %v : i32\n    tir.yield %m : i32\n  } : tensor<1x3xui32> -> tensor<1x1xui32>",
                  "tensor<1x1xui32>", {u}),
              ElementsAre(3));
  EXPECT_THAT(One("%x: tensor<1x3xui32>",
                  "reduce_ud(%x)<dimensions = [1], identity = [0 : ui32]> (%a: i32, %v: i32) {\n"
                  "    %m = arith.maxsi %a, %v : i32\n    tir.yield %m : i32\n  } : tensor<1x3xui32> -> tensor<1x1xui32>",
                  "tensor<1x1xui32>", {u}),
              ElementsAre(7)) << "maxsi reads 0xffffffff as -1";
  // si8 wraps at its width; division by zero is 0 (tir's definition).
  Tensor s = I(tir::v1::DTYPE_SI8, {1, 3}, {100, 100, 0});
  EXPECT_THAT(One("%x: tensor<1x3xsi8>",
                  "reduce_ud(%x)<dimensions = [1], identity = [0 : si8]> (%a: i8, %v: i8) {\n"
                  "    %s = arith.addi %a, %v : i8\n    %d = arith.divsi %s, %v : i8\n"
                  "    %t = arith.addi %s, %d : i8\n    tir.yield %t : i8\n  } : tensor<1x3xsi8> -> tensor<1x1xsi8>",
                  "tensor<1x1xsi8>", {s}),
              ElementsAre(-55));  // 0+100 -> 100 + 100/100 = 101; 101+100 wraps to -55 (+ -55/100 = 0);
                                  // -55+0 = -55 (+ -55/0, which is 0)
}

TEST(SampleInputs, ReshapeSizesKeepTheElementCountAndRegroup) {
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(R"mlir(
tir.graph @g(%x: tensor<?x4x?xf32>, %rows: index, %cols: index, %n: index, %s: f32) -> tensor<?x?xf32> {
  %y = reshape %x dynamic_dims(%rows, %cols) : tensor<?x4x?xf32> -> tensor<?x?xf32>
  results %y : tensor<?x?xf32>
})mlir",
                              ctx.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::vector<Tensor> in = SampleInputs(loaded->graph, 5, 1);
  ASSERT_EQ(in.size(), 5u);
  EXPECT_EQ(in[0].shape, (std::vector<int64_t>{5, 4, 5}));
  EXPECT_EQ(in[1].GetI(0), 10);  // 100 elements as 10 x 10
  EXPECT_EQ(in[2].GetI(0), 10);
  EXPECT_EQ(in[3].GetI(0), 5);   // an index that sizes no reshape: the extent
  EXPECT_TRUE(in[4].scalar);
  auto out = Evaluate(loaded->graph, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{10, 10}));
}


TEST_F(InterpreterTest, GatherPicksRowsAndSlicesAlongItsAxis) {
  // An embedding lookup: rows of a 4x2 table by ids of rank 2.
  Tensor w = T(F32, {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Tensor ids = I(tir::v1::DTYPE_SI64, {2, 2}, {3, 0, 1, 3});
  EXPECT_THAT(One("%w: tensor<4x2xf32>, %i: tensor<2x2xsi64>",
                  "gather %w, %i axis = 0 : (tensor<4x2xf32>, tensor<2x2xsi64>) -> tensor<2x2x2xf32>",
                  "tensor<2x2x2xf32>", {w, ids}),
              ElementsAre(30, 31, 0, 1, 10, 11, 30, 31));
  // index_select along the middle axis, si32 ids, repeats allowed.
  Tensor x = T(F32, {2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor j = I(tir::v1::DTYPE_SI32, {3}, {2, 2, 0});
  EXPECT_THAT(One("%x: tensor<2x3x2xf32>, %j: tensor<3xsi32>",
                  "gather %x, %j axis = 1 : (tensor<2x3x2xf32>, tensor<3xsi32>) -> tensor<2x3x2xf32>",
                  "tensor<2x3x2xf32>", {x, j}),
              ElementsAre(4, 5, 4, 5, 0, 1, 10, 11, 10, 11, 6, 7));
  // A rank-0 index drops the axis.
  EXPECT_THAT(One("%w: tensor<4x2xf32>, %i: tensor<si64>",
                  "gather %w, %i axis = 0 : (tensor<4x2xf32>, tensor<si64>) -> tensor<2xf32>", "tensor<2xf32>",
                  {w, I(tir::v1::DTYPE_SI64, {}, {2})}),
              ElementsAre(20, 21));
}

TEST_F(InterpreterTest, GatherRefusesAnIndexOutsideTheAxisNamingIt) {
  const std::string g = R"mlir(
tir.graph @g(%w: tensor<4x2xf32>, %i: tensor<3xsi64>) -> tensor<3x2xf32> {
  %r = gather %w, %i axis = 0 : (tensor<4x2xf32>, tensor<3xsi64>) -> tensor<3x2xf32>
  results %r : tensor<3x2xf32>
}
)mlir";
  Tensor w = T(F32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  for (int64_t bad : {int64_t{4}, int64_t{-1}, int64_t{1} << 40}) {
    auto out = Run(g, {w, I(tir::v1::DTYPE_SI64, {3}, {0, bad, 1})});
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(ReasonOf(out.status()), "INDEX_OUT_OF_RANGE");
    EXPECT_THAT(std::string(out.status().message()),
                HasSubstr(absl::StrCat("index ", bad, " at [1] of the indices is outside [0, 4)")));
  }
}

TEST_F(InterpreterTest, SampleInputsDrawGatherIndicesInRange) {
  auto loaded = LoadGraphText(R"mlir(
tir.graph @g(%w: tensor<?x8xf32>, %i: tensor<64xsi32>) -> tensor<64x8xf32> {
  %wide = convert %i : tensor<64xsi32> -> tensor<64xsi64>
  %r = gather %w, %wide axis = 0 : (tensor<?x8xf32>, tensor<64xsi64>) -> tensor<64x8xf32>
  results %r : tensor<64x8xf32>
}
)mlir",
                              ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::vector<Tensor> in = SampleInputs(loaded->graph, 5, 3);
  std::set<int64_t> seen;
  for (int64_t k = 0; k < in[1].NumElements(); ++k) {
    EXPECT_GE(in[1].GetI(k), 0);
    EXPECT_LT(in[1].GetI(k), 5);
    seen.insert(in[1].GetI(k));
  }
  EXPECT_EQ(seen.size(), 5u) << "every row of the table is picked";
  EXPECT_TRUE(Evaluate(loaded->graph, in).ok());
}

TEST_F(InterpreterTest, ABroadcastToAnInferredExtentTakesItFromTheGraph) {
  // TensorIR's softmax: `?x1` broadcast to `?x?` without dynamic_dims; the
  // `sub` ties the `?` to %x's columns.
  const std::string g = R"mlir(
tir.graph @g(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x?xf32> -> tensor<?x1xf32>
  %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x?xf32>
  %s = sub %x, %mb : tensor<?x?xf32>
  results %s : tensor<?x?xf32>
}
)mlir";
  auto out = Run(g, {T(F32, {2, 3}, {1, 5, 2, 7, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape, ElementsAre(2, 3));
  EXPECT_THAT(Values((*out)[0]), ElementsAre(-4, 0, -3, 0, -4, -3));
  // An extent nothing ties is still refused.
  auto open = Run(R"mlir(
tir.graph @g(%x: tensor<?x1xf32>) -> tensor<?x?xf32> {
  %b = broadcast %x : tensor<?x1xf32> -> tensor<?x?xf32>
  results %b : tensor<?x?xf32>
}
)mlir",
                  {T(F32, {2, 1}, {1, 2})});
  EXPECT_THAT(std::string(open.status().message()), HasSubstr("dynamic result dimension 1 has no size"));
}

TEST_F(InterpreterTest, RoundingScalesFollowTheTermsOfSumsAndMeans) {
  auto loaded = LoadGraphText(R"mlir(
tir.graph @g(%x: tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>) {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<2x4xf32> -> tensor<2x1xf32>
  %m = reduce(%x)<dimensions = [1], reduction_mode = <avg>> : tensor<2x4xf32> -> tensor<2x1xf32>
  %mb = broadcast %m : tensor<2x1xf32> -> tensor<2x4xf32>
  %c = sub %x, %mb : tensor<2x4xf32>
  %mx = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<2x4xf32> -> tensor<2x1xf32>
  %twice = mul %c, %c : tensor<2x4xf32>
  results %s, %m, %c, %mx, %twice : tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>
}
)mlir",
                              ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // Row 0 cancels (sum 0 of terms of size 1..4), row 1 does not.
  auto ref = EvaluateWithRounding(loaded->graph, {T(F32, {2, 4}, {1, -2, 4, -3, 1, 2, 3, 4})});
  ASSERT_TRUE(ref.ok()) << ref.status();
  const double u = std::ldexp(1.0, -24);
  ASSERT_TRUE(HasRounding(ref->rounding[0]));
  EXPECT_THAT(Values(ref->rounding[0]), Pointwise(DoubleNear(1e-20), std::vector<double>{u * 2 * 10, u * 2 * 10}));
  EXPECT_THAT(Values(ref->rounding[1]), Pointwise(DoubleNear(1e-20), std::vector<double>{u * 2 * 10 / 4, u * 2 * 10 / 4}));
  // x - mean carries the mean's scale to every element of its row.
  EXPECT_THAT(Values(ref->rounding[2]), Pointwise(DoubleNear(1e-20), std::vector<double>(8, u * 5)));
  // A max rounds nothing and reads no rounded value.
  EXPECT_FALSE(HasRounding(ref->rounding[3]));
  // (x - mean)^2 moves by about 2 |x - mean| times its operand's scale.
  const Tensor &sq = ref->rounding[4];
  const std::vector<double> centred = Values(ref->outputs[2]);
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(sq.f[k], 2 * std::fabs(centred[k]) * u * 5, 1e-18) << k;
  // The scale loosens the bound of the cancelling row's output only as far
  // as its terms reach: the sum's bound is dtype + 4 ||e|| / ||want||.
  Tensor exact = ref->outputs[0];
  OutputCheck c = CheckOutput(exact, ref->outputs[0], ref->rounding[0], 4);
  EXPECT_EQ(c.error, 0);
  EXPECT_NEAR(c.bound, 1e-5 + kRoundingConfidence * std::sqrt(2.0) * u * 20 / 10, 1e-12);
  // Without a scale, the dtype's bound as before.
  EXPECT_EQ(CheckOutput(exact, ref->outputs[0], NoRounding(), 4).bound, RelativeL2Bound(F32, 4));
}

}  // namespace
}  // namespace tir::reference
