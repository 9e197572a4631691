// Rendezvous (highest random weight) hashing over the shard list, as the
// fleet's coordinators place cache keys (DESIGN.md, "Scale-out"): a key's
// owner is the live shard with the highest hash(key, shard); when a shard is
// down its keys fall to the next shard in their own hash order, and no other
// key moves.

#ifndef TIR_BENCH_FLEET_RENDEZVOUS_H_
#define TIR_BENCH_FLEET_RENDEZVOUS_H_

#include <cstdint>
#include <vector>

namespace tir::fleet {

// A 64-bit mix of (key, shard) (splitmix64's finalizer over both): any
// well-mixed function will do; the fleet only needs every shard's weight for
// a key to be independent of the others'.
uint64_t RendezvousWeight(uint64_t key, int shard);

// The owner of `key` among shards 0..shards-1 whose bit in `down_mask` is
// clear (at most 64 shards); -1 when every shard is down.
int RendezvousOwner(uint64_t key, int shards, uint64_t down_mask = 0);

// All shards in `key`'s preference order (owner first).
std::vector<int> RendezvousOrder(uint64_t key, int shards);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_RENDEZVOUS_H_
