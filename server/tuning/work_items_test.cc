#include "server/tuning/work_items.h"

#include <set>

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "gtest/gtest.h"

namespace tir::tuning {
namespace {

constexpr char kSoftmax[] = R"mlir(
tir.graph @softmax(%x: tensor<128x1024xf32>) -> tensor<128x1024xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<128x1024xf32> -> tensor<128x1xf32>
  %s = sub %x, %m : (tensor<128x1024xf32>, tensor<128x1xf32>) -> tensor<128x1024xf32>
  %e = exp %s : tensor<128x1024xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<128x1024xf32> -> tensor<128x1xf32>
  %y = div %e, %z : (tensor<128x1024xf32>, tensor<128x1xf32>) -> tensor<128x1024xf32>
  results %y : tensor<128x1024xf32>
})mlir";

// Round 0: the width's places hold the model's top picks, candidates of
// other tile families and the default; every candidate is its own kernel.
TEST(WorkItems, FirstRoundHoldsTopPicksOtherFamiliesAndTheDefault) {
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(kSoftmax, ctx.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  tir::v1::MeasurementPolicy policy;
  auto items = BuildWorkItems(loaded->graph, *target::LookupArch("sm_90a"), 8, policy, nullptr, nullptr, 1.0);
  ASSERT_TRUE(items.ok()) << items.status();
  ASSERT_EQ(items->size(), 1u);
  const KernelWork &w = (*items)[0];
  EXPECT_LE(w.item.candidates_size(), 8);
  EXPECT_GE(w.item.candidates_size(), 6);
  ASSERT_GE(w.default_position, 0);
  EXPECT_TRUE(w.item.candidates(w.default_position).candidate().is_default());
  // Some pick lies beyond the model's top eight: a diverse one.
  bool beyond = false;
  std::set<std::string> hashes;
  for (const tir::v1::CandidateWork &c : w.item.candidates()) {
    beyond |= c.candidate_index() >= 8 && !c.candidate().is_default();
    EXPECT_EQ(c.source_hash().size(), 64u);
    EXPECT_TRUE(hashes.insert(c.source_hash()).second) << "candidate " << c.candidate_index();
  }
  EXPECT_TRUE(beyond);
  // At a tenth of the space: at most that many (and at least two).
  auto capped = BuildWorkItems(loaded->graph, *target::LookupArch("sm_90a"), 1000, policy, nullptr, nullptr, 0.10);
  ASSERT_TRUE(capped.ok());
  EXPECT_LE(static_cast<size_t>((*capped)[0].item.candidates_size()),
            std::max<size_t>(2, (*capped)[0].space_size / 10));
}

}  // namespace
}  // namespace tir::tuning
