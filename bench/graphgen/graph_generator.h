// Synthetic graphs of a given size for benchmarks: a DAG that mixes the op
// kinds real models use (pointwise chains with broadcasts, row reductions,
// matmuls, transposes), so parsing, verification and planning see realistic
// operand fan-in and shape variety.

#ifndef TIR_BENCH_GRAPHGEN_GRAPH_GENERATOR_H_
#define TIR_BENCH_GRAPHGEN_GRAPH_GENERATOR_H_

#include <cstdint>
#include <string>

namespace tir::bench {

// MLIR text of one tir.graph with about `ops` ops (deterministic for a seed).
std::string GenerateGraphText(int ops, uint64_t seed = 1);

}  // namespace tir::bench

#endif  // TIR_BENCH_GRAPHGEN_GRAPH_GENERATOR_H_
