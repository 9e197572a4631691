#include "bench/fleet/rendezvous.h"

#include <algorithm>

namespace tir::fleet {

uint64_t RendezvousWeight(uint64_t key, int shard) {
  uint64_t z = key ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(shard + 1));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int RendezvousOwner(uint64_t key, int shards, uint64_t down_mask) {
  int best = -1;
  uint64_t best_weight = 0;
  for (int s = 0; s < shards; ++s) {
    if (down_mask >> s & 1) continue;
    uint64_t w = RendezvousWeight(key, s);
    if (best < 0 || w > best_weight) {
      best = s;
      best_weight = w;
    }
  }
  return best;
}

std::vector<int> RendezvousOrder(uint64_t key, int shards) {
  std::vector<int> order(shards);
  for (int s = 0; s < shards; ++s) order[s] = s;
  std::sort(order.begin(), order.end(), [key](int x, int y) {
    return RendezvousWeight(key, x) > RendezvousWeight(key, y);
  });
  return order;
}

}  // namespace tir::fleet
