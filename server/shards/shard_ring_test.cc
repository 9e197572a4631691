#include "server/shards/shard_ring.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::shards {
namespace {

std::vector<std::string> Shards(int n) {
  std::vector<std::string> s;
  for (int i = 0; i < n; ++i) s.push_back(absl::StrCat("tir-coordinator-", i, ".tir-coordinator:7070"));
  return s;
}

TEST(ShardRingTest, EveryShardAgreesOnTheOwnerAndKeysSpreadEvenly) {
  std::vector<ShardRing> rings;
  for (int self = 0; self < 3; ++self) rings.push_back(*ShardRing::Make(Shards(3), Shards(3)[self]));
  std::map<int, int> owned;
  for (int k = 0; k < 3000; ++k) {
    const std::string key = absl::StrCat("key", k);
    const int owner = rings[0].Owner(key);
    for (const ShardRing &r : rings) ASSERT_EQ(r.Owner(key), owner);
    ++owned[owner];
    EXPECT_EQ(rings[0].Order(key).size(), 3u);
  }
  for (const auto &[shard, n] : owned) EXPECT_NEAR(n, 1000, 150) << "shard " << shard;
}

TEST(ShardRingTest, AShardAddedTakesKeysOnlyFromTheOthersAndALostShardsKeysSpread) {
  ShardRing three = *ShardRing::Make(Shards(3), Shards(3)[0]);
  ShardRing four = *ShardRing::Make(Shards(4), Shards(4)[0]);
  int moved = 0;
  std::map<int, int> fallen;
  for (int k = 0; k < 4000; ++k) {
    const std::string key = absl::StrCat("key", k);
    const int before = three.Owner(key), after = four.Owner(key);
    if (before != after) {
      ++moved;
      EXPECT_EQ(after, 3) << "a key moves only to the shard added";
    }
    // Shard 0 lost: its keys fall to the next in their own order.
    const std::vector<int> order = three.Order(key);
    if (order[0] == 0) ++fallen[order[1]];
  }
  EXPECT_NEAR(moved, 1000, 150);
  EXPECT_EQ(fallen.count(0), 0u);
  EXPECT_NEAR(fallen[1], fallen[2], 200) << "a lost shard's keys spread over the others";
}

TEST(ShardRingTest, OperationNamesCarryTheirShardsTag) {
  ShardRing r = *ShardRing::Make(Shards(3), Shards(3)[1]);
  EXPECT_EQ(r.self(), 1);
  EXPECT_EQ(r.OfOperation("operations/" + r.tag(2) + "-0123456789abcdef"), 2);
  EXPECT_EQ(r.OfOperation("operations/0123456789abcdef"), -1);
  EXPECT_EQ(r.OfOperation("operations/cached.abc"), -1);
  EXPECT_EQ(r.OfOperation("operations/s00000000-01"), -1);
  EXPECT_NE(r.tag(0), r.tag(1));
}

TEST(ShardRingTest, BadShardListsAreRefused) {
  EXPECT_EQ(ReasonOf(ShardRing::Make({}, "a").status()), "INVALID_CONFIG");
  EXPECT_EQ(ReasonOf(ShardRing::Make({"a", "a"}, "a").status()), "INVALID_CONFIG");
  EXPECT_EQ(ReasonOf(ShardRing::Make({"a", "b"}, "c").status()), "INVALID_CONFIG");
  EXPECT_EQ(*ShardAddresses("c-{i}.c:7070", 2), (std::vector<std::string>{"c-0.c:7070", "c-1.c:7070"}));
  EXPECT_EQ(ReasonOf(ShardAddresses("c.c:7070", 2).status()), "INVALID_CONFIG");
  EXPECT_EQ(ReasonOf(ShardAddresses("c-{i}:7070", 0).status()), "INVALID_CONFIG");
}

}  // namespace
}  // namespace tir::shards
