#include "worker/runner/prepared_item.h"

#include <filesystem>
#include <fstream>

#include "compiler/reference/Tensor.h"
#include "gtest/gtest.h"

namespace tir::runner {
namespace {

// A kernel graph as tir-partition writes it: a matmul and its epilogue.
constexpr char kKernel[] = R"mlir(
"tir.graph"() ({
^bb0(%arg0: tensor<16x24xbf16>, %arg1: tensor<24x8xbf16>, %arg2: tensor<1x8xf32>):
  %0 = "tir.matmul"(%arg0, %arg1) {tir.access = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<16x24xbf16>, tensor<24x8xbf16>) -> tensor<16x8xf32>
  %1 = "tir.add"(%0, %arg2) {tir.access = affine_map<(d0, d1, d2) -> (d0, d1)>} : (tensor<16x8xf32>, tensor<1x8xf32>) -> tensor<16x8xf32>
  "tir.results"(%1) : (tensor<16x8xf32>) -> ()
}) {arg_attrs = [{tir.iter_space_map = affine_map<(d0, d1, d2) -> (d0, d2)>}, {tir.iter_space_map = affine_map<(d0, d1, d2) -> (d2, d1)>}, {tir.iter_space_map = affine_map<(d0, d1, d2) -> (0, d1)>}], function_type = (tensor<16x24xbf16>, tensor<24x8xbf16>, tensor<1x8xf32>) -> tensor<16x8xf32>, sym_name = "k0", tir.iteration_domain = array<i64: 16, 8, 24>, tir.iteration_space = "matmul batch [] M=16 N=8 K=24", tir.kernel_kind = "matmul"} : () -> ()
)mlir";

tir::v1::WorkItem Item(uint64_t seed) {
  tir::v1::WorkItem item;
  item.set_kernel_mlir(kKernel);
  item.mutable_policy()->set_seed(seed);
  return item;
}

void ExpectSame(const std::vector<reference::Tensor> &a, const std::vector<reference::Tensor> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].shape, b[k].shape);
    EXPECT_EQ(a[k].f, b[k].f);
    EXPECT_EQ(a[k].i, b[k].i);
  }
}

TEST(PreparedItemTest, TheReferenceCacheServesARepeatAndSurvivesABadFile) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/ref";
  SetReferenceCacheDir(dir);
  auto first = PrepareItem(Item(3));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE((*first)->reference_cached);
  // A restarted runner preparing the same item reads what the first wrote.
  auto again = PrepareItem(Item(3));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)->reference_cached);
  ExpectSame((*again)->inputs, (*first)->inputs);
  ExpectSame((*again)->expected, (*first)->expected);
  // Another seed is another reference.
  auto other = PrepareItem(Item(4));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*other)->reference_cached);
  // A truncated or foreign file is computed again, never trusted.
  for (const auto &e : std::filesystem::directory_iterator(dir)) {
    std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) / 2);
  }
  auto truncated = PrepareItem(Item(3));
  ASSERT_TRUE(truncated.ok());
  EXPECT_FALSE((*truncated)->reference_cached);
  ExpectSame((*truncated)->expected, (*first)->expected);
  for (const auto &e : std::filesystem::directory_iterator(dir)) std::ofstream(e.path()) << "not a reference";
  auto foreign = PrepareItem(Item(3));
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE((*foreign)->reference_cached);
  // Without a directory nothing is cached.
  SetReferenceCacheDir("");
  auto none = PrepareItem(Item(3));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->reference_cached);
}

TEST(PreparedItemTest, HintedSizesAreUsedAndMustFitBeforeAnythingIsAllocated) {
  // A dynamic pointwise kernel: rows from the hint.
  const char *kernel = R"mlir(
tir.graph @k0(%x: tensor<?x8xf32>) -> tensor<?x8xf32>
    attributes {tir.kernel_kind = "pointwise", tir.iteration_domain = array<i64: -1, 8>,
                tir.iteration_space = "pointwise [?, 8]"} {
  %y = exp %x : tensor<?x8xf32>
  results %y : tensor<?x8xf32>
})mlir";
  tir::v1::WorkItem item;
  item.set_kernel_mlir(kernel);
  tir::v1::ShapeHint *h = item.add_shapes();
  h->set_input(0);
  h->add_shape(5);
  h->add_shape(8);
  auto p = PrepareItem(item);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->inputs[0].shape, (std::vector<int64_t>{5, 8}));
  EXPECT_EQ((*p)->expected[0].shape, (std::vector<int64_t>{5, 8}));
  // 2^32 x 8 f32 rows: refused by the memory check, not allocated.
  h->set_shape(0, int64_t{1} << 32);
  auto huge = PrepareItem(item);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(std::string(huge.status().message()).find("needs about"), std::string::npos) << huge.status();
}

}  // namespace
}  // namespace tir::runner
