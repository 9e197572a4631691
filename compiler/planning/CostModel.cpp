#include "compiler/planning/CostModel.h"

#include <algorithm>
#include <cmath>

namespace tir::planning {
namespace {

double CeilDiv(double a, double b) { return std::ceil(a / b); }

int BlocksPerSm(const TileCandidate &c, const target::ArchInfo &arch) {
  int n = arch.max_blocks_per_sm;
  n = std::min(n, arch.max_threads_per_sm / std::max(1, c.threads));
  if (c.shared_bytes > 0) n = std::min(n, arch.shared_bytes_per_sm / c.shared_bytes);
  const int64_t regs = int64_t{c.registers_per_thread} * c.threads;
  if (regs > 0) n = std::min<int64_t>(n, arch.registers_per_sm / regs);
  return std::max(n, arch.is_gpu ? 0 : 1);
}

// DRAM bytes of A and B for the Hopper form, from its raster order. The
// tiles resident at once (a wave: one block per SM) are consecutive in
// that order. Raster 0 and 2 walk bands of `group_m` tile rows across the
// tile columns (A is the band's operand, B the crossed one); 1 and 3 bands
// of tile columns across the rows (the other way round). A wave spans
// h = max(group, tiles across it) lines of its band, so the crossed
// operand is read once per h lines, unless it fits in half the L2 (then
// once); the band's own operand is read once when h lines of it fit
// there, else once per wave. (Serpentine walks are priced as their plain
// order: what they save at a band's turn is not modelled.)
double HopperOperandTraffic(const KernelFacts &f, const TileCandidate &c, const target::ArchInfo &arch) {
  const auto param = [&](const char *name, double fallback) {
    auto it = c.params.find(name);
    return it == c.params.end() ? fallback : static_cast<double>(it->second);
  };
  double batch = 1;
  for (int64_t b : f.space.batch) batch *= b;
  const double m = std::max<int64_t>(1, f.space.m), n = std::max<int64_t>(1, f.space.n),
               k = std::max<int64_t>(1, f.space.k);
  const double bm = param("block_m", 128), bn = param("block_n", 128), split = param("split_k", 1);
  const double raster = param("raster", 0), group = std::max(1.0, param("group_m", 1));
  const bool alongN = raster == 1 || raster == 3;
  const double tilesM = CeilDiv(m, bm), tilesN = CeilDiv(n, bn);
  const double lines = alongN ? tilesN : tilesM, across = alongN ? tilesM : tilesN;
  const double lineRowBytes = (alongN ? bn : bm) * k * f.operand_bytes;    // one band line of its operand
  const double lineBytes = (alongN ? n : m) * k * f.operand_bytes * batch;  // the band operand, whole
  const double crossedBytes = (alongN ? m : n) * k * f.operand_bytes * batch;
  // Tiles resident at once (split-K's parts of a tile are consecutive units).
  const double wave = std::max(1.0, std::min(tilesM * tilesN, double(arch.sm_count) / std::max(1.0, split)));
  const double h = std::min(lines, std::max(std::min(group, lines), CeilDiv(wave, across)));
  const double halfL2 = 0.5 * arch.l2_bytes;
  const double crossedReads = crossedBytes / batch <= halfL2 ? 1.0 : CeilDiv(lines, h);
  const double lineReads = h * lineRowBytes <= halfL2 ? 1.0 : std::max(1.0, CeilDiv(tilesM * tilesN, wave) * h / lines);
  return lineBytes * lineReads + crossedBytes * crossedReads;
}

}  // namespace

Prediction AnalyticCostModel::Predict(const KernelFacts &f, const TileCandidate &c,
                                      const target::ArchInfo &arch, bool explain) const {
  Prediction p;
  const auto param = [&](const char *name, double fallback) {
    auto it = c.params.find(name);
    return it == c.params.end() ? fallback : static_cast<double>(it->second);
  };
  double bytes = f.bytes_in + f.bytes_out;
  double l2FeedRatio = 0;  // wgmma: L2-to-SM operand demand at the math rate over the feed rate
  double flops = 0, rate = arch.fp32_tflops * 1e12, edge = 1.0;
  switch (f.space.kind) {
    case KernelKind::kPointwise: {
      flops = f.flops_per_point * f.points;
      const double perBlock = param("threads", 256) * param("elements_per_thread", 1);
      edge = CeilDiv(f.points, perBlock) * perBlock / std::max(1.0, double(f.points));
      // Narrow accesses issue more transactions: charge 1/vector of a 16-byte
      // line (of the elements that move: bf16 computed in f32 moves 2 bytes).
      const double vec = param("vector_width", 1);
      bytes *= 1.0 + 0.25 * (1.0 - std::min(1.0, vec * f.io_bytes / 16.0));
      break;
    }
    case KernelKind::kReduction: {
      flops = f.flops_per_point * f.points;
      const double strategy = param("strategy", 1), split = param("split", 1);
      double rows = 1, extent = 1;
      for (int64_t d : f.space.Parallel()) rows *= d;
      for (int64_t d : f.space.Reduced()) extent *= d;
      // Streaming re-reads the row's inputs in every pass (softmax: 3 reads,
      // 1 write; an online max and sum is one pass); row_resident reads
      // them once. On the host a block's rows
      // that fit its cache are re-read from there, and the row cache is a
      // copy the streaming kernel does not make.
      const double rowBytes = extent * f.element_bytes * param("rows_per_block", 1);
      if (arch.is_gpu || rowBytes > arch.l2_bytes / 2) {
        if (strategy != 0) bytes += f.bytes_in * (f.RowPasses() - 1);
      } else if (strategy == 0) {
        bytes += f.bytes_in;
      }
      // Partials out and back in: 8 bytes, an online max and sum's three values.
      if (strategy == 2) bytes += 2.0 * rows * split * (f.online ? 3 * std::max(4, f.element_bytes) : 8);
      // reduce_ud rows go one element at a time in one thread.
      if (f.ordered_reduction) flops *= 4;
      const double tpr = param("threads_per_row", 128), vec = param("vector_width", 1);
      const double perRowPass = tpr * vec;
      edge = CeilDiv(extent, perRowPass) * perRowPass / std::max(1.0, extent);
      bytes *= 1.0 + 0.25 * (1.0 - std::min(1.0, vec * f.io_bytes / 16.0));
      // Warp-shuffle and block reductions: log2(threads) steps per row.
      flops += rows * std::log2(std::max(2.0, tpr)) * 32;
      break;
    }
    case KernelKind::kMatmul: {
      double batch = 1;
      for (int64_t b : f.space.batch) batch *= b;
      const double m = f.space.m, n = f.space.n, k = f.space.k;
      const double bm = param("block_m", 128), bn = param("block_n", 128), bk = param("block_k", 32);
      const double splitK = param("split_k", 1), group = param("group_m", 1), stages = param("stages", 2);
      const double warps = param("warps", 4);
      flops = 2.0 * batch * m * n * k;
      const double aBytes = batch * m * k * f.operand_bytes, bBytes = batch * k * n * f.operand_bytes;
      const double cBytes = batch * m * n * f.element_bytes;
      // Re-reads: A for every N tile column, B for every M tile row; L2 absorbs
      // part of it, more with grouped rasterization or when operands fit L2.
      double l2 = group > 1 ? 6.0 : 2.0;
      if (aBytes + bBytes < 0.5 * arch.l2_bytes) l2 *= 4;
      // A cluster of two CTAs along M (N) loads each B (A) tile once for
      // both, multicast: half the L2-to-SM traffic of that operand (DRAM
      // traffic is the wave footprint's either way).
      const double clusterM = param("cluster_m", 1), clusterN = param("cluster_n", 1);
      const double reread = (aBytes * CeilDiv(n, bn) / clusterN + bBytes * CeilDiv(m, bm) / clusterM) / l2;
      double operandBytes = std::max(aBytes + bBytes, reread);
      if (arch.is_gpu && param("wgmma", 0) > 0) operandBytes = HopperOperandTraffic(f, c, arch);
      bytes = operandBytes + cBytes * (splitK > 1 ? 2 * splitK : 1) +
              (f.bytes_in - aBytes - bBytes > 0 ? f.bytes_in - aBytes - bBytes : 0);
      // Tiles padded to whole clusters compute too.
      edge = CeilDiv(CeilDiv(m, bm), clusterM) * clusterM * bm * CeilDiv(CeilDiv(n, bn), clusterN) * clusterN * bn *
             CeilDiv(k, bk * splitK) * bk * splitK / (m * n * k);
      if (!f.tensor_core) {
        // Shared tiles staged per block and K step; each thread's register
        // tile reuses every shared read tm * tn / (tm + tn) times.
        const double threads = arch.is_gpu ? warps * 32 : 1;
        const double per = bm * bn / threads;
        const double tn = std::min(8.0, per), tm = per / std::max(1.0, tn);
        const double reuse = arch.is_gpu ? tm * tn / (tm + tn) : 1.0;
        rate *= std::clamp(reuse / 4.0, 0.1, 1.0) * (stages >= 2 ? 1.0 : 0.85);
        const double staged = batch * CeilDiv(m, bm) * CeilDiv(n, bn) * CeilDiv(k, bk) * (bm * bk + bk * bn);
        // The host stages element by element (about 1 ns each); a block whose
        // tiles outgrow a 32 KiB L1 pays for it.
        if (!arch.is_gpu) {
          flops += staged * 2;
          if ((bm * bn + bm * bk + bk * bn) * 4 > 32 * 1024) edge *= 1.3;
        }
      }
      if (splitK > 1 && param("wgmma", 0) > 0) {
        // Split-K partials: every split writes its f32 tile and the last
        // reads them all back (L2-resident: charged at DRAM rates, a bound).
        bytes += batch * CeilDiv(m, bm) * bm * CeilDiv(n, bn) * bn * 4.0 * 2 * splitK - cBytes * 2 * splitK;
      }
      if (arch.is_gpu && f.tensor_core && param("wgmma", 0) > 0) {
        // wgmma from TMA-fed shared tiles: each consumer warpgroup's tile
        // (64-row wgmma tiles x block_n) sets how often B is re-read from
        // shared memory; two consumers overlap one's epilogue and waits with
        // the other's math; stages hide the load latency.
        const double consumers = param("consumers", 2), persistent = param("persistent", 1);
        rate = arch.wgmma_bf16_tflops * 1e12;
        const double wgTile = bm / consumers * bn;  // C elements a warpgroup
        double eff = std::min(1.0, std::sqrt(wgTile / (128.0 * 128.0)));
        eff *= consumers >= 2 ? 0.85 : 0.7;
        eff *= stages >= 4 ? 1.0 : stages >= 3 ? 0.95 : 0.8;
        // A persistent block overlaps a tile's epilogue with the next
        // tile's loads; one block a tile pays for it when tiles come in
        // waves (with one wave the two grids are the same).
        const double tiles = double(c.Units());
        eff *= persistent > 0 || tiles <= arch.sm_count ? 1.0 : 0.93;
        // The factors above include the epilogue's direct global stores,
        // which keep the consumer off the tensor cores (half as long with two
        // consumers, whose math covers part). Its share of a tile: output
        // bytes against the operand bytes its K steps load (a lead). With
        // tma_store a persistent block's consumers only write shared memory
        // and the TMA store overlaps the next tile's main loop: nine tenths
        // of that share come back.
        if (param("tma_store", 0) > 0) {
          const double outTile = bm * bn * std::max(1, f.tma_store_bytes);
          const double inTile = (bm + bn) * 64.0 * f.operand_bytes * std::max(1.0, CeilDiv(k, 64.0 * splitK));
          const double share = outTile / (outTile + inTile) * (consumers >= 2 ? 0.5 : 1.0);
          eff = std::min(1.0, eff / (1.0 - 0.9 * share));
        }
        rate *= std::max(0.05, eff);
        // The operands each SM pulls from L2 per flop: a K step of the tile
        // loads (block_m + block_n) x 64 elements for 2 x block_m x block_n
        // x 64 flops, the shared operand's half with a cluster. Near the L2
        // feed rate the loads' latency grows and stalls the pipeline: the
        // time is a smooth maximum (4-norm) of the math at `rate` and the
        // feed, the plain maximum far from it.
        if (arch.l2_feed_gbps > 0) {
          const double perFlop = (bm / clusterN + bn / clusterM) * 64.0 * f.operand_bytes / (2.0 * bm * bn * 64.0);
          const double ratio = rate * perFlop / (arch.l2_feed_gbps * 1e9);
          rate /= std::pow(1.0 + std::pow(ratio, 4.0), 0.25);
          l2FeedRatio = ratio;
        }
      } else if (arch.is_gpu && f.tensor_core) {
        rate = (f.tf32 ? arch.mma_tf32_tflops : arch.mma_bf16_tflops) * 1e12;
        const double warpTile = bm * bn / warps;  // elements of C per warp
        double eff = std::min(1.0, std::sqrt(warpTile / 4096.0));
        eff *= stages >= 3 ? 1.0 : 0.75;
        eff *= bk >= 32 ? 1.0 : 0.85;
        rate *= std::max(0.05, eff);
      }
      break;
    }
  }
  const int bps = BlocksPerSm(c, arch);
  const double capacity = std::max(1.0, double(arch.sm_count) * std::max(1, bps));
  // Waves of work units (a persistent grid's blocks loop over them).
  const double units = double(c.Units());
  const double waves = std::max(1.0, CeilDiv(units, capacity));
  const double quantization = waves / std::max(1e-9, units / capacity);
  const double residentThreads = double(std::max(1, bps)) * c.threads;
  double occupancy = arch.is_gpu ? std::min(1.0, residentThreads / (0.5 * arch.max_threads_per_sm)) : 1.0;
  // Blocks resident at once, and the SMs they keep busy. One SM draws at
  // most kSmShare times its share of DRAM bandwidth (a lead: memory-bound
  // kernels on H100-class parts reach the peak only with nearly every SM
  // busy; 120 of 132 SMs is where this reaches it).
  constexpr double kSmShare = 1.1;
  const double resident = arch.is_gpu ? std::min(double(c.blocks), capacity) : 1.0;
  const double activeSms = arch.is_gpu ? std::min(1.0, kSmShare * std::ceil(resident / std::max(1, bps)) / arch.sm_count) : 1.0;
  double bw = arch.dram_gbps * 1e9 * std::max(0.1, occupancy) * std::max(0.01, activeSms);
  double inFlight = 0;
  if (arch.is_gpu && f.space.kind == KernelKind::kMatmul && param("wgmma", 0) > 0) {
    // Little's law: TMA keeps stages - 1 stages in flight per block whatever
    // its thread count; only bytes of rows that exist move (a box row past
    // M or N is zero-filled on chip). DRAM delivers at most what is in
    // flight over its latency, and at most its peak.
    const double bm = param("block_m", 128), bn = param("block_n", 128);
    const double rowsA = std::min(bm, double(std::max<int64_t>(1, f.space.m)));
    const double colsB = std::min(bn, double(std::max<int64_t>(1, f.space.n)));
    inFlight = (param("stages", 4) - 1) * (rowsA + colsB) * 64 * f.operand_bytes;
    const double latency = std::max(1.0, arch.dram_latency_ns) * 1e-9;
    bw = std::min(arch.dram_gbps * 1e9 * activeSms, resident * inFlight / latency);
    occupancy = std::min(1.0, resident * inFlight / latency / (arch.dram_gbps * 1e9));
  }
  const double memory = bytes / bw;
  const double compute = flops * edge / rate;
  // On a GPU the math of a partial last wave (or of fewer units than the
  // machine holds) runs on the SMs that have work: quantization scales it
  // in full. Memory time already counts the SMs that draw bandwidth.
  const double core = arch.is_gpu ? std::max(memory, compute * quantization)
                                  : std::max(memory, compute) * std::min(quantization, 2.0);
  // Block scheduling: about 5 ns per block per SM, overlapped with nothing.
  // (The host runs blocks one after another: about 50 ns each.)
  const double scheduling = (arch.is_gpu ? 5e-9 : 5e-8) * c.blocks / arch.sm_count;
  p.seconds = arch.launch_overhead_us * 1e-6 + core + scheduling;
  if (bps == 0) p.seconds = 1.0;  // cannot be resident: never preferred
  if (!explain) return p;
  p.inputs = {{"bytes", bytes},        {"flops", flops},           {"blocks", double(c.blocks)},
              {"blocks_per_sm", double(bps)}, {"waves", waves},     {"quantization", quantization},
              {"edge_waste", edge},    {"occupancy", occupancy},   {"active_sm_fraction", activeSms},
              {"scheduling_seconds", scheduling}, {"memory_seconds", memory}, {"work_units", units},
              {"bytes_in_flight_per_block", inFlight}, {"achieved_bytes_per_second", bw},
              {"compute_seconds", compute}, {"launch_seconds", arch.launch_overhead_us * 1e-6}};
  if (l2FeedRatio > 0) p.inputs["l2_feed_demand_ratio"] = l2FeedRatio;
  return p;
}

}  // namespace tir::planning
