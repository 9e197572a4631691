#include "compiler/planning/Partition.h"

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mlir/IR/Verifier.h"

namespace tir::planning {
namespace {

using ::testing::HasSubstr;

class PartitionTest : public ::testing::Test {
 protected:
  // Partitions `text` for `arch`, checks the kernel count, and (when `run`)
  // checks that the partitioned module computes exactly what the graph does.
  Partition Check(const std::string &text, int kernels, const target::ArchInfo &arch, bool run = true) {
    auto loaded = LoadGraphText(text, ctx_.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return {};
    auto p = PartitionGraph(loaded->graph, arch);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    EXPECT_EQ(static_cast<int>(p->kernels.size()), kernels);
    std::string spaces;
    for (const auto &k : p->kernels) absl::StrAppend(&spaces, spaces.empty() ? "" : "; ", k.space.ToString());
    SCOPED_TRACE("kernel spaces: " + spaces);  // shown with any failure below
    mlir::OwningOpRef<mlir::ModuleOp> module = BuildPartitionedModule(loaded->graph, *p);
    EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
    if (run) {
      std::vector<reference::Tensor> inputs;
      uint64_t seed = 3;
      for (mlir::Type t : loaded->graph.getArgumentTypes()) {
        auto tensor = t.cast<mlir::RankedTensorType>();
        inputs.push_back(reference::RandomTensor(reference::DTypeOf(tensor.getElementType()),
                                                 {tensor.getShape().begin(), tensor.getShape().end()}, seed++));
      }
      auto want = reference::Evaluate(loaded->graph, inputs);
      GraphOp stitched;
      for (GraphOp g : module->getOps<GraphOp>()) {
        if (g.getSymName() == loaded->graph.getSymName()) stitched = g;
      }
      auto got = reference::Evaluate(stitched, inputs);
      EXPECT_TRUE(want.ok() && got.ok());
      if (want.ok() && got.ok()) {
        for (size_t i = 0; i < want->size(); ++i) {
          EXPECT_EQ(reference::RelativeL2Error((*got)[i], (*want)[i]), 0.0) << "output " << i;
        }
      }
    }
    modules_.push_back(std::move(loaded->module));
    modules_.push_back(std::move(module));
    return *p;
  }
  target::ArchInfo Arch(const std::string &name = "sm_90a") { return *target::LookupArch(name); }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
};

TEST_F(PartitionTest, PointwiseChainWithBroadcastAndTransposedInputIsOneKernel) {
  Partition p = Check(R"mlir(
tir.graph @pw(%x: tensor<32x64xf32>, %xt: tensor<64x32xf32>, %b: tensor<1x64xf32>) -> tensor<32x64xf32> {
  %t = transpose %xt permutation = [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %bb = broadcast %b : tensor<1x64xf32> -> tensor<32x64xf32>
  %a = add %x, %bb : tensor<32x64xf32>
  %m = mul %a, %t : tensor<32x64xf32>
  %g = gelu_fwd %m : tensor<32x64xf32>
  %s = sub %g, %b : (tensor<32x64xf32>, tensor<1x64xf32>) -> tensor<32x64xf32>
  results %s : tensor<32x64xf32>
}
)mlir", 1, Arch());
  EXPECT_EQ(p.kernels[0].space.kind, KernelKind::kPointwise);
  EXPECT_EQ(p.kernels[0].inputs.size(), 3u);
}

TEST_F(PartitionTest, AStagedOperandReadByTwoMatmulsIsWrittenOutFirst) {
  // RMS norm feeding a gated MLP: the normalized rows %y (computed from the
  // reduction's kernel output, so no leaf) are the A operand of two
  // matmuls. A staged operand is never stored, so %y gets a kernel of its
  // own instead of riding in one matmul's prologue and being read by the
  // other.
  Partition p = Check(R"mlir(
tir.graph @g(%x: tensor<6x16xf32>, %g: tensor<1x16xf32>, %wg: tensor<16x12xf32>, %wu: tensor<16x12xf32>) -> tensor<6x12xf32> {
  %sq = mul %x, %x : tensor<6x16xf32>
  %s = reduce(%sq)<dimensions = [1], reduction_mode = <add>> : tensor<6x16xf32> -> tensor<6x1xf32>
  %e = constant dense<1.0e-06> : tensor<1x1xf32>
  %v = add %s, %e : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %r = rsqrt %v : tensor<6x1xf32>
  %n = mul %x, %r : (tensor<6x16xf32>, tensor<6x1xf32>) -> tensor<6x16xf32>
  %y = mul %n, %g : (tensor<6x16xf32>, tensor<1x16xf32>) -> tensor<6x16xf32>
  %a = matmul(%y, %wg) : (tensor<6x16xf32>, tensor<16x12xf32>) -> tensor<6x12xf32>
  %u = matmul(%y, %wu) : (tensor<6x16xf32>, tensor<16x12xf32>) -> tensor<6x12xf32>
  %h = mul %a, %u : tensor<6x12xf32>
  results %h : tensor<6x12xf32>
}
)mlir", 3, Arch());
  // %y's kernel (the norm's reduction joins it, row-resident) writes %y out;
  // each matmul reads it as a kernel input.
  int staged = 0;
  for (const auto &k : p.kernels) {
    if (k.reason.find("staged operand") != std::string::npos) ++staged;
  }
  EXPECT_EQ(staged, 1);
  EXPECT_EQ(p.kernels[1].space.kind, KernelKind::kMatmul);
  EXPECT_EQ(p.kernels[2].space.kind, KernelKind::kMatmul);
}

TEST_F(PartitionTest, AReturnedTransposeAMatmulStagesIsWrittenOutFirst) {
  // What AOTAutograd hands a compiler in training: the transposed weight is
  // both the B operand and a result saved for the backward pass. A matmul
  // stages B per K tile and never stores it, so the transpose (a cheap leaf,
  // otherwise recomputed where it is read) gets a kernel of its own.
  Partition p = Check(R"mlir(
tir.graph @g(%w: tensor<24x8xf32>, %x: tensor<4x8xf32>) -> (tensor<8x24xf32>, tensor<4x24xf32>) {
  %t = transpose %w permutation = [1, 0] : tensor<24x8xf32> -> tensor<8x24xf32>
  %m = matmul(%x, %t) : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
  results %t, %m : tensor<8x24xf32>, tensor<4x24xf32>
}
)mlir", 2, Arch());
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("staged operand"));
  EXPECT_EQ(p.kernels[1].space.kind, KernelKind::kMatmul);
}

TEST_F(PartitionTest, AReshapeThatOnlyAddsUnitDimsJoinsTheKernelItFeeds) {
  // A LayerNorm's weight [16] brought to the activations' rank [1, 1, 16]
  // (what tir.aten writes for every 3-D LayerNorm and Linear) relabels
  // indices: it rides in the row-resident reduction's kernel instead of
  // being written out by a copy kernel of its own.
  Partition p = Check(R"mlir(
tir.graph @g(%x: tensor<2x4x16xf32>, %w: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %s = reduce(%x)<dimensions = [2], reduction_mode = <add>> : tensor<2x4x16xf32> -> tensor<2x4x1xf32>
  %d = sub %x, %s : (tensor<2x4x16xf32>, tensor<2x4x1xf32>) -> tensor<2x4x16xf32>
  %wr = reshape %w : tensor<16xf32> -> tensor<1x1x16xf32>
  %y = mul %d, %wr : (tensor<2x4x16xf32>, tensor<1x1x16xf32>) -> tensor<2x4x16xf32>
  results %y : tensor<2x4x16xf32>
}
)mlir", 1, Arch());
  EXPECT_EQ(p.kernels[0].space.kind, KernelKind::kReduction);
  // With a dynamic dim too: no linear index is needed to read through it.
  Check(R"mlir(
tir.graph @g(%x: tensor<2x?x16xf32>, %w: tensor<16xf32>) -> tensor<2x?x1x16xf32> {
  %e = exp %x : tensor<2x?x16xf32>
  %d = dim %x dimension = 1 : tensor<2x?x16xf32>
  %r = reshape %e dynamic_dims(%d) : tensor<2x?x16xf32> -> tensor<2x?x1x16xf32>
  %wr = reshape %w : tensor<16xf32> -> tensor<1x1x1x16xf32>
  %y = mul %r, %wr : (tensor<2x?x1x16xf32>, tensor<1x1x1x16xf32>) -> tensor<2x?x1x16xf32>
  results %y : tensor<2x?x1x16xf32>
}
)mlir", 1, Arch(), /*run=*/false);
}

TEST_F(PartitionTest, AMatmulResultTransposedIntoTheSameShapeIsNotItsEpilogue) {
  // Attention's att @ v, transposed back to [B, T, H, D]: with T == H (or
  // run-time extents) the transpose keeps the shape, and joining it to the
  // matmul as an epilogue would store C unpermuted. It is a kernel of its own.
  Partition p = Check(R"mlir(
tir.graph @g(%p: tensor<2x4x4x4xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %o = matmul(%p, %v) : (tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  %t = transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  results %t : tensor<2x4x4x8xf32>
}
)mlir", 2, Arch());
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("remaps its dims"));
  Check(R"mlir(
tir.graph @g(%p: tensor<?x?x?x?xf32>, %v: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %o = matmul(%p, %v) : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %t = transpose %o permutation = [0, 2, 1, 3] : tensor<?x?x?x?xf32> -> tensor<?x?x?x?xf32>
  results %t : tensor<?x?x?x?xf32>
}
)mlir", 2, Arch(), /*run=*/false);
}

TEST_F(PartitionTest, ADimThatSizesAReshapeIsReadAsAScalar) {
  // `dim` gives the reshape its run-time extent (what tir.fx writes for a
  // view of a dynamic dim); its index result is no tensor (this crashed).
  Partition p = Check(R"mlir(
tir.graph @g(%x: tensor<2x?x8xf32>) -> tensor<2x?x2x4xf32> {
  %e = exp %x : tensor<2x?x8xf32>
  %d = dim %x dimension = 1 : tensor<2x?x8xf32>
  %r = reshape %e dynamic_dims(%d) : tensor<2x?x8xf32> -> tensor<2x?x2x4xf32>
  %t = neg %r : tensor<2x?x2x4xf32>
  results %t : tensor<2x?x2x4xf32>
}
)mlir", 2, Arch(), /*run=*/false);  // dynamic: run at a shape by the e2e and Python tests
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("reshape with run-time extents"));
}

TEST_F(PartitionTest, AResultTwiceOrAnInputReturnedIsCopied) {
  // Each result is written by a kernel: the repeat of %y and the input %x
  // returned as it is become copies (same-type reshapes), and the
  // partitioned module computes all three.
  Partition p = Check(R"mlir(
tir.graph @g(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = exp %x : tensor<4x8xf32>
  results %y, %y, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
)mlir", 2, Arch());
  size_t outputs = 0;
  for (const auto &k : p.kernels) outputs += k.outputs.size();
  EXPECT_EQ(outputs, 3u);
}

TEST_F(PartitionTest, AViewSlicedIntoBothOperandsOfAMatmulIsWrittenOutByItsOwn) {
  // The transposed heads %p are sliced into q and k, the A and B of one
  // matmul: %p is written out once, by a kernel iterating all of it, and
  // each slice (with the reshape that drops its unit dim) is read as the
  // matmul's prologue.
  Partition p = Check(R"mlir(
tir.graph @g(%x: tensor<2x4x16xf32>, %w: tensor<1x16x48xf32>) -> tensor<2x2x4x4xf32> {
  %qkv = matmul(%x, %w) : (tensor<2x4x16xf32>, tensor<1x16x48xf32>) -> tensor<2x4x48xf32>
  %h = reshape %qkv : tensor<2x4x48xf32> -> tensor<2x4x3x2x8xf32>
  %p = transpose %h permutation = [2, 0, 3, 1, 4] : tensor<2x4x3x2x8xf32> -> tensor<3x2x2x4x8xf32>
  %q1 = slice %p starts = [0, 0, 0, 0, 0] limits = [1, 2, 2, 4, 8] strides = [1, 1, 1, 1, 1] : tensor<3x2x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %q = reshape %q1 : tensor<1x2x2x4x8xf32> -> tensor<2x2x4x8xf32>
  %k1 = slice %p starts = [1, 0, 0, 0, 0] limits = [2, 2, 2, 4, 8] strides = [1, 1, 1, 1, 1] : tensor<3x2x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %k = reshape %k1 : tensor<1x2x2x4x8xf32> -> tensor<2x2x4x8xf32>
  %kt = transpose %k permutation = [0, 1, 3, 2] : tensor<2x2x4x8xf32> -> tensor<2x2x8x4xf32>
  %s = matmul(%q, %kt) : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  results %s : tensor<2x2x4x4xf32>
}
)mlir", 3, Arch());
  int own = 0;
  for (const auto &k : p.kernels) {
    if (k.reason.find("two different iteration domains") != std::string::npos) {
      ++own;
      EXPECT_EQ(k.space.ToString(), "pointwise [3, 2, 2, 4, 8]");
    }
  }
  EXPECT_EQ(own, 1);
}

TEST_F(PartitionTest, MatmulBiasGeluResidualIsOneKernel) {
  Partition p = Check(R"mlir(
tir.graph @mlp(%x: tensor<64x128xbf16>, %w: tensor<128x96xbf16>, %b: tensor<1x96xf32>, %r: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %m = matmul(%x, %w) : (tensor<64x128xbf16>, tensor<128x96xbf16>) -> tensor<64x96xf32>
  %bb = broadcast %b : tensor<1x96xf32> -> tensor<64x96xf32>
  %y = add %m, %bb : tensor<64x96xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<64x96xf32>
  %o = add %g, %r : tensor<64x96xf32>
  results %o : tensor<64x96xf32>
}
)mlir", 1, Arch());
  EXPECT_EQ(p.kernels[0].space.kind, KernelKind::kMatmul);
  EXPECT_EQ(p.kernels[0].space.ToString(), "matmul batch [] M=64 N=96 K=128");
}

TEST_F(PartitionTest, LastDimReductionFedByPointwiseIsOneKernel) {
  Partition p = Check(R"mlir(
tir.graph @sumsq(%x: tensor<16x256xf32>, %y: tensor<16x256xf32>) -> tensor<16x1xf32> {
  %d = sub %x, %y : tensor<16x256xf32>
  %s = mul %d, %d : tensor<16x256xf32>
  %r = reduce(%s)<dimensions = [1], reduction_mode = <add>> : tensor<16x256xf32> -> tensor<16x1xf32>
  %q = sqrt %r : tensor<16x1xf32>
  results %q : tensor<16x1xf32>
}
)mlir", 1, Arch());
  EXPECT_EQ(p.kernels[0].space.kind, KernelKind::kReduction);
  EXPECT_FALSE(p.kernels[0].space.row_resident);
}

std::string Softmax(const std::string &rows, const std::string &cols) {
  const std::string t = "tensor<" + rows + "x" + cols + "xf32>", r = "tensor<" + rows + "x1xf32>";
  return "tir.graph @softmax(%x: " + t + ") -> " + t + " {\n"
         "  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : " + t + " -> " + r + "\n"
         "  %mb = broadcast %m : " + r + " -> " + t + "\n"
         "  %s = sub %x, %mb : " + t + "\n  %e = exp %s : " + t + "\n"
         "  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : " + t + " -> " + r + "\n"
         "  %zb = broadcast %z : " + r + " -> " + t + "\n"
         "  %y = div %e, %zb : " + t + "\n  results %y : " + t + "\n}\n";
}

std::string LayerNorm(const std::string &rows, const std::string &cols) {
  const std::string t = "tensor<" + rows + "x" + cols + "xf32>", r = "tensor<" + rows + "x1xf32>";
  return "tir.graph @layernorm(%x: " + t + ", %g: tensor<1x" + cols + "xf32>) -> " + t + " {\n"
         "  %mu = reduce(%x)<dimensions = [1], reduction_mode = <mean>> : " + t + " -> " + r + "\n"
         "  %mub = broadcast %mu : " + r + " -> " + t + "\n"
         "  %c = sub %x, %mub : " + t + "\n  %c2 = mul %c, %c : " + t + "\n"
         "  %var = reduce(%c2)<dimensions = [1], reduction_mode = <mean>> : " + t + " -> " + r + "\n"
         "  %eps = constant dense<1.0e-05> : " + r + "\n"
         "  %ve = add %var, %eps : " + r + "\n  %rs = rsqrt %ve : " + r + "\n"
         "  %rsb = broadcast %rs : " + r + " -> " + t + "\n"
         "  %n = mul %c, %rsb : " + t + "\n"
         "  %y = mul %n, %g : (" + t + ", tensor<1x" + cols + "xf32>) -> " + t + "\n  results %y : " + t + "\n}\n";
}

TEST_F(PartitionTest, SoftmaxAndLayerNormFitOnChipAsOneKernel) {
  Partition s = Check(Softmax("8", "1024"), 1, Arch());
  EXPECT_TRUE(s.kernels[0].space.row_resident);
  Partition l = Check(LayerNorm("8", "1024"), 1, Arch());
  EXPECT_TRUE(l.kernels[0].space.row_resident);
}

// Values computed by one kernel and read by another are per-row ([R, 1]):
// nothing row-sized moves between kernels.
void ExpectOnlyRowValuesBetweenKernels(const Partition &p) {
  for (const Kernel &k : p.kernels) {
    for (mlir::Value v : k.inputs) {
      if (v.isa<mlir::BlockArgument>()) continue;
      auto t = v.getType().cast<mlir::RankedTensorType>();
      EXPECT_EQ(t.getShape().back(), 1) << "kernel " << k.index << " reads a row-sized intermediate";
    }
  }
}

TEST_F(PartitionTest, RowsTooLargeForChipSplitIntoReduceAndNormalize) {
  // A 4M-wide softmax row on sm_90a: counted only (too big to interpret
  // here). The max and the sum of exp(x - max) are one online kernel; the
  // normalize recomputes exp(x - max) from x: two kernels, x read twice.
  Partition big = Check(Softmax("2", "4194304"), 2, Arch(), /*run=*/false);
  EXPECT_THAT(big.splits[0], HasSubstr("exceeds the 98304-byte on-chip row budget of sm_90a"));
  EXPECT_TRUE(big.kernels[0].space.online);
  EXPECT_THAT(big.kernels[0].space.ToString(), HasSubstr("online max and sum"));
  ExpectOnlyRowValuesBetweenKernels(big);
  // The same structure, numerically, on an arch with a tiny row budget.
  target::ArchInfo tiny = Arch();
  tiny.row_budget_bytes = 64;
  Partition s = Check(Softmax("4", "64"), 2, tiny);
  ExpectOnlyRowValuesBetweenKernels(s);
  // Layer norm: mean, then variance, then normalize, each reading x; the
  // centered value is recomputed where it is used rather than stored.
  Partition ln = Check(LayerNorm("4", "64"), 3, tiny);
  EXPECT_FALSE(ln.kernels[1].space.online);
  ExpectOnlyRowValuesBetweenKernels(ln);
}

TEST_F(PartitionTest, OnlineMaxAndSumNeedsTheSameValueAndType) {
  target::ArchInfo tiny = Arch();
  tiny.row_budget_bytes = 64;
  // exp(y - max(x)) with y != x: the running max of x does not bound y.
  Partition other = Check(R"mlir(
tir.graph @g(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> tensor<4x1xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x64xf32> -> tensor<4x1xf32>
  %s = sub %y, %m : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %e = exp %s : tensor<4x64xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4x64xf32> -> tensor<4x1xf32>
  results %z : tensor<4x1xf32>
}
)mlir", 2, tiny);
  for (const Kernel &k : other.kernels) EXPECT_FALSE(k.space.online);
  // bf16 arithmetic rounds x - max against the row's max: two passes.
  Partition narrow = Check(R"mlir(
tir.graph @g(%x: tensor<4x64xbf16>) -> tensor<4x1xbf16> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x64xbf16> -> tensor<4x1xbf16>
  %s = sub %x, %m : (tensor<4x64xbf16>, tensor<4x1xbf16>) -> tensor<4x64xbf16>
  %e = exp %s : tensor<4x64xbf16>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4x64xbf16> -> tensor<4x1xbf16>
  results %z : tensor<4x1xbf16>
}
)mlir", 2, tiny);
  for (const Kernel &k : narrow.kernels) EXPECT_FALSE(k.space.online);
  // exp(a - m) converted before the sum: another value is summed.
  Partition converted = Check(R"mlir(
tir.graph @g(%x: tensor<4x64xf32>) -> tensor<4x1xf64> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x64xf32> -> tensor<4x1xf32>
  %s = sub %x, %m : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %e = exp %s : tensor<4x64xf32>
  %ef = convert %e : tensor<4x64xf32> -> tensor<4x64xf64>
  %z = reduce(%ef)<dimensions = [1], reduction_mode = <add>> : tensor<4x64xf64> -> tensor<4x1xf64>
  results %z : tensor<4x1xf64>
}
)mlir", 2, tiny);
  for (const Kernel &k : converted.kernels) EXPECT_FALSE(k.space.online);
  // Log-sum-exp in f32: one kernel.
  Partition lse = Check(R"mlir(
tir.graph @g(%x: tensor<4x64xf32>) -> tensor<4x1xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x64xf32> -> tensor<4x1xf32>
  %s = sub %x, %m : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %e = exp %s : tensor<4x64xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4x64xf32> -> tensor<4x1xf32>
  %l = log %z : tensor<4x1xf32>
  %r = add %l, %m : tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}
)mlir", 1, tiny);
  EXPECT_TRUE(lse.kernels[0].space.online);
}

TEST_F(PartitionTest, ColumnSumBroadcastBackOverMillionRowsSplits) {
  Partition p = Check(R"mlir(
tir.graph @colnorm(%x: tensor<1048576x8xf32>) -> tensor<1048576x8xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<1048576x8xf32> -> tensor<1x8xf32>
  %sb = broadcast %s : tensor<1x8xf32> -> tensor<1048576x8xf32>
  %y = div %x, %sb : tensor<1048576x8xf32>
  results %y : tensor<1048576x8xf32>
}
)mlir", 2, Arch(), /*run=*/false);
  EXPECT_EQ(p.kernels[0].space.kind, KernelKind::kReduction);
  EXPECT_EQ(p.kernels[1].space.kind, KernelKind::kPointwise);
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("broadcast back"));
}

TEST_F(PartitionTest, ChainedMatmulsAreTwoKernels) {
  Partition p = Check(R"mlir(
tir.graph @mm2(%a: tensor<32x64xf32>, %b: tensor<64x48xf32>, %c: tensor<48x16xf32>) -> tensor<32x16xf32> {
  %ab = matmul(%a, %b) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %r = relu_fwd %ab : tensor<32x48xf32>
  %abc = matmul(%r, %c) : (tensor<32x48xf32>, tensor<48x16xf32>) -> tensor<32x16xf32>
  results %abc : tensor<32x16xf32>
}
)mlir", 2, Arch());
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("operand of another matmul"));
  EXPECT_EQ(p.kernels[0].space.kind, KernelKind::kMatmul);
}

TEST_F(PartitionTest, MatmulReducedOverNSplits) {
  Partition p = Check(R"mlir(
tir.graph @mmsum(%a: tensor<32x64xf32>, %b: tensor<64x48xf32>) -> tensor<32x1xf32> {
  %ab = matmul(%a, %b) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %s = reduce(%ab)<dimensions = [1], reduction_mode = <add>> : tensor<32x48xf32> -> tensor<32x1xf32>
  results %s : tensor<32x1xf32>
}
)mlir", 2, Arch());
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("reduced over its N dimension"));
}

TEST_F(PartitionTest, ReshapeRemappingReducedDimsSplits) {
  Partition p = Check(R"mlir(
tir.graph @rs(%x: tensor<8x64xf32>) -> tensor<16x1xf32> {
  %e = exp %x : tensor<8x64xf32>
  %r = reshape %e : tensor<8x64xf32> -> tensor<16x32xf32>
  %s = reduce(%r)<dimensions = [1], reduction_mode = <add>> : tensor<16x32xf32> -> tensor<16x1xf32>
  results %s : tensor<16x1xf32>
}
)mlir", 2, Arch());
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("reshape remaps"));
}

TEST_F(PartitionTest, AReductionOrMatmulReadDirectlyAndTransposedIsWrittenOutFirst) {
  // The "diamond": one kernel cannot index a reduction's (or a matmul's)
  // result under two maps, so it becomes its own kernel and the pointwise
  // kernel reads it from memory both ways.
  Partition r = Check(R"mlir(
tir.graph @diamond(%in: tensor<32x32xf32> {tir.stride = "(1,32)"}) -> (tensor<32x32xf32> {tir.stride = "(1,32)"}) {
  %r = reduce(%in)<dimensions = [1], reduction_mode = <add>> : tensor<32x32xf32> -> tensor<32x1xf32>
  %b = broadcast %r : tensor<32x1xf32> -> tensor<32x32xf32>
  %t = transpose %b permutation = [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>
  %a = add %b, %t : tensor<32x32xf32>
  results %a : tensor<32x32xf32>
}
)mlir", 2, Arch());
  EXPECT_EQ(r.kernels[0].space.kind, KernelKind::kReduction);
  EXPECT_EQ(r.kernels[1].space.kind, KernelKind::kPointwise);
  EXPECT_THAT(r.kernels[0].reason, HasSubstr("read under two different index maps"));
  Partition m = Check(R"mlir(
tir.graph @mmdiamond(%in: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %m = matmul(%in, %in) : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %t = transpose %m permutation = [1, 0] : tensor<16x16xf32> -> tensor<16x16xf32>
  %a = add %m, %t : tensor<16x16xf32>
  results %a : tensor<16x16xf32>
}
)mlir", 2, Arch());
  EXPECT_EQ(m.kernels[0].space.kind, KernelKind::kMatmul);
}

TEST_F(PartitionTest, ADynamicReshapeOfAComputedValueReadsItFromMemory) {
  Partition p = Check(R"mlir(
tir.graph @rs(%x: tensor<?x3xf32>, %cols: index) -> tensor<3x?xf32> {
  %e = exp %x : tensor<?x3xf32>
  %r = reshape %e dynamic_dims(%cols) : tensor<?x3xf32> -> tensor<3x?xf32>
  %n = neg %r : tensor<3x?xf32>
  results %n : tensor<3x?xf32>
}
)mlir", 2, Arch(), /*run=*/false);
  EXPECT_THAT(p.kernels[0].reason, HasSubstr("reshape with run-time extents"));
}

TEST_F(PartitionTest, ReshapeInsidePointwiseChainFuses) {
  Check(R"mlir(
tir.graph @rs(%x: tensor<8x64xf32>) -> tensor<16x32xf32> {
  %e = exp %x : tensor<8x64xf32>
  %r = reshape %e : tensor<8x64xf32> -> tensor<16x32xf32>
  %n = neg %r : tensor<16x32xf32>
  results %n : tensor<16x32xf32>
}
)mlir", 1, Arch());
}

TEST_F(PartitionTest, PointwiseThroughTransposeAndSliceOfComputedValuesFuses) {
  Check(R"mlir(
tir.graph @views(%x: tensor<16x32xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = exp %x : tensor<16x32xf32>
  %t = transpose %e permutation = [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %s = slice %t starts = [1, 2] limits = [9, 10] strides = [2, 1] : tensor<32x16xf32> -> tensor<4x8xf32>
  %o = add %s, %y : tensor<4x8xf32>
  results %o : tensor<4x8xf32>
}
)mlir", 1, Arch());
}

TEST_F(PartitionTest, ConcatOfIndependentReductionsSplits) {
  Partition p = Check(R"mlir(
tir.graph @cat(%x: tensor<8x64xf32>, %y: tensor<8x32xf32>) -> tensor<8x2xf32> {
  %a = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<8x64xf32> -> tensor<8x1xf32>
  %b = reduce(%y)<dimensions = [1], reduction_mode = <max>> : tensor<8x32xf32> -> tensor<8x1xf32>
  %c = concatenate %a, %b dimension = 1 : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x2xf32>
  results %c : tensor<8x2xf32>
}
)mlir", 3, Arch());
  for (const Kernel &k : p.kernels) EXPECT_FALSE(k.reason.empty());
}

TEST_F(PartitionTest, PartitionIsDeterministicAndRecordedInIr) {
  const std::string text = Softmax("4", "64");
  target::ArchInfo tiny = Arch();
  tiny.row_budget_bytes = 64;
  auto a = LoadGraphText(text, ctx_.get());
  auto pa = PartitionGraph(a->graph, tiny);
  auto pb = PartitionGraph(a->graph, tiny);
  ASSERT_TRUE(pa.ok() && pb.ok());
  auto ma = BuildPartitionedModule(a->graph, *pa), mb = BuildPartitionedModule(a->graph, *pb);
  std::string sa, sb;
  llvm::raw_string_ostream oa(sa), ob(sb);
  ma->print(oa);
  mb->print(ob);
  EXPECT_EQ(oa.str(), ob.str());
  EXPECT_THAT(oa.str(), HasSubstr("tir.split_reason"));
  EXPECT_THAT(oa.str(), HasSubstr("launch @softmax_k0"));
}

}  // namespace
}  // namespace tir::planning
