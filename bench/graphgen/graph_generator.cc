#include "bench/graphgen/graph_generator.h"

#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tir::bench {

std::string GenerateGraphText(int ops, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::string t = "tensor<64x128xf32>", row = "tensor<64x1xf32>", bias = "tensor<1x128xf32>",
                    sq = "tensor<128x128xf32>";
  std::string body;
  std::vector<std::string> live = {"%x", "%y"};
  int n = 0;
  auto pick = [&]() { return live[rng() % std::min<size_t>(live.size(), 8) + (live.size() > 8 ? live.size() - 8 : 0)]; };
  static const char *kBinary[] = {"add", "sub", "mul", "max", "min", "div"};
  static const char *kUnary[] = {"exp", "tanh_fwd", "gelu_approx_tanh_fwd", "sigmoid_fwd", "abs", "neg"};
  while (n < ops) {
    const std::string v = absl::StrCat("%v", n);
    const int kind = rng() % 20;
    if (kind < 8) {
      absl::StrAppend(&body, "  ", v, " = ", kBinary[rng() % 6], " ", pick(), ", ", pick(), " : ", t, "\n");
      n += 1;
    } else if (kind < 14) {
      absl::StrAppend(&body, "  ", v, " = ", kUnary[rng() % 6], " ", pick(), " : ", t, "\n");
      n += 1;
    } else if (kind < 16) {  // bias add through a broadcast
      absl::StrAppend(&body, "  ", v, "b = broadcast %b : ", bias, " -> ", t, "\n");
      absl::StrAppend(&body, "  ", v, " = add ", pick(), ", ", v, "b : ", t, "\n");
      n += 2;
    } else if (kind < 18) {  // row reduction broadcast back (softmax-like)
      absl::StrAppend(&body, "  ", v, "r = reduce(", pick(), ")<dimensions = [1], reduction_mode = <max>> : ", t,
                      " -> ", row, "\n");
      absl::StrAppend(&body, "  ", v, "rb = broadcast ", v, "r : ", row, " -> ", t, "\n");
      absl::StrAppend(&body, "  ", v, " = sub ", pick(), ", ", v, "rb : ", t, "\n");
      n += 3;
    } else {  // matmul with a weight
      absl::StrAppend(&body, "  ", v, " = matmul(", pick(), ", %w) : (", t, ", ", sq, ") -> ", t, "\n");
      n += 1;
    }
    live.push_back(v);
  }
  return absl::StrCat("tir.graph @generated(%x: ", t, ", %y: ", t, ", %b: ", bias, ", %w: ", sq, ") -> ", t,
                      " {\n", body, "  results ", live.back(), " : ", t, "\n}\n");
}

}  // namespace tir::bench
