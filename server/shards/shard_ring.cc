#include "server/shards/shard_ring.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "compiler/support/digest.h"
#include "compiler/support/status.h"

namespace tir::shards {
namespace {

absl::Status Invalid(const std::string &why) { return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG", why); }

uint64_t Score(absl::string_view shard, absl::string_view key) {
  const std::array<uint8_t, 32> d = Sha256(absl::StrCat(shard, std::string(1, '\0'), key));
  uint64_t s = 0;
  for (int i = 0; i < 8; ++i) s = (s << 8) | d[i];
  return s;
}

}  // namespace

std::string ShardTag(absl::string_view address) { return "s" + Sha256Hex(address).substr(0, 8); }

absl::StatusOr<ShardRing> ShardRing::Make(std::vector<std::string> shards, const std::string &self) {
  if (shards.empty()) return Invalid("the shard list is empty");
  ShardRing r;
  std::set<std::string> seen;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].empty()) return Invalid("the shard list has an empty address");
    if (!seen.insert(shards[i]).second) return Invalid("shard " + shards[i] + " is listed twice");
  }
  auto it = std::find(shards.begin(), shards.end(), self);
  if (it == shards.end()) return Invalid("this shard's address " + self + " is not in the shard list");
  r.self_ = static_cast<int>(it - shards.begin());
  r.shards_ = std::move(shards);
  for (const std::string &s : r.shards_) r.tags_.push_back(ShardTag(s));
  return r;
}

std::vector<int> ShardRing::Order(absl::string_view key) const {
  std::vector<std::pair<uint64_t, int>> scored;
  scored.reserve(shards_.size());
  for (size_t i = 0; i < shards_.size(); ++i) scored.emplace_back(Score(shards_[i], key), static_cast<int>(i));
  // Highest score first; a tie (never, in practice) by address.
  std::sort(scored.begin(), scored.end(), [&](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : shards_[a.second] < shards_[b.second];
  });
  std::vector<int> order;
  order.reserve(scored.size());
  for (const auto &[score, i] : scored) order.push_back(i);
  return order;
}

int ShardRing::OfOperation(absl::string_view operation) const {
  if (!absl::ConsumePrefix(&operation, "operations/")) return -1;
  const size_t dash = operation.find('-');
  if (dash == absl::string_view::npos) return -1;
  const absl::string_view tag = operation.substr(0, dash);
  for (size_t i = 0; i < tags_.size(); ++i) {
    if (tags_[i] == tag) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<std::vector<std::string>> ShardAddresses(const std::string &pattern, int count) {
  if (!absl::StrContains(pattern, "{i}")) return Invalid("the shard address pattern " + pattern + " has no {i}");
  if (count <= 0 || count > 1024) return Invalid(absl::StrCat("the shard count must be 1 to 1024, got ", count));
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(absl::StrReplaceAll(pattern, {{"{i}", absl::StrCat(i)}}));
  return out;
}

}  // namespace tir::shards
