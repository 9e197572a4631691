// Which coordinator of a sharded fleet owns a cache key: rendezvous (highest
// random weight) hashing over the shard list, as Buildbarn shards blobs.
// Each shard scores every key (SHA-256 of its address and the key); the
// highest score owns it, and when that shard is down its keys fall to the
// next in their own order, so a lost shard's keys spread over the others
// and a shard added takes about 1/N of every other's keys, no more.
//
// Operation names carry their shard's tag ("operations/<tag>-<id>"), so a
// shard answering for an operation knows where it lives.

#ifndef TIR_SERVER_SHARDS_SHARD_RING_H_
#define TIR_SERVER_SHARDS_SHARD_RING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tir::shards {

class ShardRing {
 public:
  // `shards`: every shard's address, in any order (each shard given the
  // same set); `self`: this shard's address, one of them. Errors:
  // INVALID_CONFIG (no shards, a duplicate, self not among them).
  static absl::StatusOr<ShardRing> Make(std::vector<std::string> shards, const std::string &self);

  // Shard indices by the key's score: its owner first, then where its keys
  // fall while the shards before are down.
  std::vector<int> Order(absl::string_view key) const;
  int Owner(absl::string_view key) const { return Order(key).front(); }
  int self() const { return self_; }
  size_t size() const { return shards_.size(); }
  const std::string &address(int shard) const { return shards_[shard]; }
  // The tag in shard `shard`'s operation names.
  const std::string &tag(int shard) const { return tags_[shard]; }
  // The shard whose tag `operation` ("operations/<tag>-...") carries; -1
  // for a name without one of this ring's tags.
  int OfOperation(absl::string_view operation) const;

 private:
  ShardRing() = default;
  std::vector<std::string> shards_;
  std::vector<std::string> tags_;
  int self_ = 0;
};

// "s" and 8 hex digits of SHA-256(address): an operation name's shard tag.
std::string ShardTag(absl::string_view address);

// The shard list of a StatefulSet: `pattern` with "{i}" replaced by 0 ..
// count-1 ("tir-coordinator-{i}.tir-coordinator:7070"). Errors:
// INVALID_CONFIG (no "{i}", count 0).
absl::StatusOr<std::vector<std::string>> ShardAddresses(const std::string &pattern, int count);

}  // namespace tir::shards

#endif  // TIR_SERVER_SHARDS_SHARD_RING_H_
