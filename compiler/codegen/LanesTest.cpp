// The tile library's emulated implementation, piece by piece, against the
// data movement the PTX ISA documents (ldmatrix, mma.sync.m16n8k16, shfl.bfly,
// cp.async groups), and the emulator's checks: barriers, the shared-memory
// race check, poisoned and uncompleted reads, divergent warp collectives,
// and the schedules a block runs under (natural, high ids first, seeded).
// Built with -DTIR_EMULATE=1, as `tirctl emit --verify` builds GPU kernels.

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "compiler/codegen/runtime/tir_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;

tir_lanes::Result Launch(unsigned threads, std::function<void()> body, unsigned blocks = 1, size_t dynamic = 0) {
  blockDim = {threads, 1, 1};
  gridDim = {blocks, 1, 1};
  return tir_lanes::Launch("test_kernel", {blocks, 1, 1}, {threads, 1, 1}, dynamic,
                           [](tir_lanes::Dim3 b) { blockIdx = {b.x, b.y, b.z}; }, std::move(body));
}

TEST(Lanes, EveryThreadHasItsOwnIndexAndBarriersOrderTheBlock) {
  std::vector<int> seen(256, -1);
  std::vector<int> after(256, -1);
  auto r = Launch(256, [&] {
    TIR_SHARED_ARRAY(int, flags, 256);
    const int t = threadIdx.x;
    seen[t] = t;
    flags[t] = t * 2;
    TIR_SYNC();
    after[t] = flags[(t + 1) % 256];  // written by another thread before the barrier
  });
  EXPECT_EQ(r.errors, 0) << r.first_error;
  for (int t = 0; t < 256; ++t) {
    EXPECT_EQ(seen[t], t);
    EXPECT_EQ(after[t], ((t + 1) % 256) * 2);
  }
  EXPECT_EQ(r.lanes, 256u);
}

TEST(Lanes, SharedMemoryStartsPoisonedInEveryBlock) {
  std::vector<unsigned> first(2, 0);
  auto r = Launch(
      32,
      [&] {
        TIR_SHARED_ARRAY(unsigned, s, 32);
        if (threadIdx.x == 0) {
          first[blockIdx.x] = s[5];
          s[5] = 7;
        }
      },
      2);
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_EQ(first[0], 0xffffffffu);
  EXPECT_EQ(first[1], 0xffffffffu);  // block 1 does not see block 0's write
}

TEST(Lanes, ShflXorReadsTheButterflyPartner) {
  std::vector<long long> got(64);
  auto r = Launch(64, [&] {
    const long long mine = 1000 + threadIdx.x;
    got[threadIdx.x] = tir_shfl_xor(mine, 5);
  });
  EXPECT_EQ(r.errors, 0) << r.first_error;
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], 1000 + ((t & ~31) | ((t % 32) ^ 5))) << t;
}

TEST(Lanes, GroupReduceSumsEachGroupForEveryGroupSize) {
  for (int group : {1, 2, 8, 32, 64, 256}) {
    std::vector<double> got(256);
    auto r = Launch(256, [&] {
      TIR_SHARED_ARRAY(double, scratch, 256);
      const double v = threadIdx.x;
      got[threadIdx.x] = tir_group_reduce(v, group, scratch, [](double x, double y) { return x + y; });
    });
    EXPECT_EQ(r.errors, 0) << r.first_error;
    for (int t = 0; t < 256; ++t) {
      const int first = t - t % group;
      EXPECT_EQ(got[t], group * first + group * (group - 1) / 2.0) << "group " << group << " thread " << t;
    }
  }
}

// The scratch a row reduction gets: a partial per warp, then a result per
// group. Back-to-back reductions in it (as a kernel's passes do) need no
// barrier between them: the race check sees none, and every group gets its
// own sum each time.
TEST(Lanes, GroupReducesBackToBackInWarpsPlusGroupsScratch) {
  for (int group : {64, 256, 1024}) {
    const int threads = 1024, warps = threads / 32, groups = threads / group;
    std::vector<double> first(threads), second(threads);
    auto r = Launch(threads, [&] {
      TIR_SHARED_ARRAY(double, scratch, warps + groups);
      const double v = threadIdx.x;
      const auto add = [](double x, double y) { return x + y; };
      first[threadIdx.x] = tir_group_reduce(v, group, scratch, add);
      second[threadIdx.x] = tir_group_reduce(2 * v + 1, group, scratch, add);
    });
    EXPECT_EQ(r.errors, 0) << r.first_error;
    for (int t = 0; t < threads; ++t) {
      const double base = t - t % group, sum = group * base + group * (group - 1) / 2.0;
      EXPECT_EQ(first[t], sum) << "group " << group << " thread " << t;
      EXPECT_EQ(second[t], 2 * sum + group) << "group " << group << " thread " << t;
    }
  }
}

// A bf16 store of a value that skipped its rounding would be truncated on
// the GPU (the store takes the high half): the emulator reports it.
TEST(Lanes, UnroundedBf16StoreIsReported) {
  std::vector<tir_u16> got(32);
  auto r = Launch(32, [&] {
    const float rounded = tir_round_bf16(1.0f + threadIdx.x / 1024.0f);
    got[threadIdx.x] = tir_bf16_of_rounded(rounded).bits;
    if (threadIdx.x == 3) (void)tir_bf16_of_rounded(1.0f + 1.0f / 1024.0f);
  });
  EXPECT_EQ(r.errors, 1u);
  EXPECT_THAT(r.first_error, HasSubstr("UNROUNDED_BF16_STORE"));
  for (int t = 0; t < 32; ++t) EXPECT_EQ(got[t], tir_to_bf16(1.0f + t / 1024.0f).bits) << t;
}

// Shared matrix m (0..3) of 8x8 b16 elements; element (r, c) = m*64 + r*8 + c.
void FillMatrices(tir_sptr<tir_u16> s) {
  for (int e = threadIdx.x; e < 4 * 64; e += blockDim.x) s[e] = static_cast<tir_u16>(e);
}

TEST(Lanes, LdmatrixGivesEachLaneItsRowAndColumnPair) {
  for (int count : {1, 2, 4}) {
    for (bool trans : {false, true}) {
      std::vector<tir_u32> got(32 * 4, 0);
      auto r = Launch(32, [&] {
        TIR_SHARED_ARRAY(tir_u16, s, 256);
        FillMatrices(s);
        TIR_SYNC();
        const int l = threadIdx.x;
        // Lane 8m + i gives row i of matrix m (rows of other lanes unused).
        tir_sptr<tir_u16> row = s + ((l / 8) % count) * 64 + (l % 8) * 8;
        tir_u32 *out = &got[l * 4];
        if (count == 1) trans ? tir_ldmatrix_x1_trans(out[0], row) : tir_ldmatrix_x1(out[0], row);
        if (count == 2) trans ? tir_ldmatrix_x2_trans(out[0], out[1], row) : tir_ldmatrix_x2(out[0], out[1], row);
        if (count == 4) {
          trans ? tir_ldmatrix_x4_trans(out[0], out[1], out[2], out[3], row)
                : tir_ldmatrix_x4(out[0], out[1], out[2], out[3], row);
        }
      });
      ASSERT_EQ(r.errors, 0) << r.first_error;
      // Written out from the ISA's figure: lane 5 holds row 1, columns 2-3
      // (elements 10, 11); with .trans, column 1 of rows 2-3 (17, 25).
      EXPECT_EQ(got[5 * 4], trans ? (17u | (25u << 16)) : (10u | (11u << 16)));
      for (int l = 0; l < 32; ++l) {
        for (int m = 0; m < count; ++m) {
          // PTX ISA, ldmatrix: thread l holds (row l/4, cols 2(l%4), 2(l%4)+1); .trans swaps row and column.
          const int row = trans ? 2 * (l % 4) : l / 4, col = trans ? l / 4 : 2 * (l % 4);
          const tir_u16 lo = static_cast<tir_u16>(m * 64 + row * 8 + col);
          const tir_u16 hi = static_cast<tir_u16>(trans ? m * 64 + (row + 1) * 8 + col : lo + 1);
          EXPECT_EQ(got[l * 4 + m], tir_u32(lo) | (tir_u32(hi) << 16))
              << "x" << count << (trans ? ".trans" : "") << " lane " << l << " matrix " << m;
        }
      }
    }
  }
}

// A 16x16 A and 16x8 B in bf16, fragments loaded by the PTX ISA's table, one
// mma: every lane's D entries equal the matmul at their (row, col).
TEST(Lanes, MmaM16n8k16MatchesTheMatmulAtEachLanesFragment) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);
  float A[16][16], Bm[16][8], C[16][8];
  for (auto &row : A) for (float &x : row) x = small(rng) * 0.5f;
  for (auto &row : Bm) for (float &x : row) x = small(rng) * 0.25f;
  for (auto &row : C) for (float &x : row) x = small(rng);
  auto bf = [](float x) { return tir_to_bf16(x).bits; };
  std::vector<float> d(32 * 4);
  for (bool f16 : {false, true}) {
    auto h = [&](float x) { return f16 ? tir_to_f16(x).bits : bf(x); };
    auto r = Launch(32, [&] {
      const int l = threadIdx.x, g = l / 4, t = l % 4;
      auto pack = [&](float lo, float hi) { return tir_u32(h(lo)) | (tir_u32(h(hi)) << 16); };
      float acc[4] = {C[g][2 * t], C[g][2 * t + 1], C[g + 8][2 * t], C[g + 8][2 * t + 1]};
      const tir_u32 a0 = pack(A[g][2 * t], A[g][2 * t + 1]), a1 = pack(A[g + 8][2 * t], A[g + 8][2 * t + 1]);
      const tir_u32 a2 = pack(A[g][2 * t + 8], A[g][2 * t + 9]), a3 = pack(A[g + 8][2 * t + 8], A[g + 8][2 * t + 9]);
      const tir_u32 b0 = pack(Bm[2 * t][g], Bm[2 * t + 1][g]), b1 = pack(Bm[2 * t + 8][g], Bm[2 * t + 9][g]);
      if (f16) {
        tir_mma_m16n8k16_f16(acc, a0, a1, a2, a3, b0, b1);
      } else {
        tir_mma_m16n8k16_bf16(acc, a0, a1, a2, a3, b0, b1);
      }
      for (int q = 0; q < 4; ++q) d[l * 4 + q] = acc[q];
    });
    ASSERT_EQ(r.errors, 0) << r.first_error;
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
      for (int q = 0; q < 4; ++q) {
        float want = C[rows[q]][cols[q]];
        for (int k = 0; k < 16; ++k) want += A[rows[q]][k] * Bm[k][cols[q]];
        EXPECT_EQ(d[l * 4 + q], want) << (f16 ? "f16" : "bf16") << " lane " << l << " d" << q;
      }
    }
  }
}

// cp.async lands at the wait that covers its group; other threads see it
// after a barrier.
TEST(Lanes, CpAsyncLandsAtItsWaitGroup) {
  alignas(16) static tir_u16 global[2][8];
  for (int i = 0; i < 8; ++i) global[0][i] = i, global[1][i] = 100 + i;
  std::vector<tir_u16> seen(32);
  auto r = Launch(32, [&] {
    TIR_SHARED_ARRAY(tir_u16, s, 16);
    if (threadIdx.x < 2) {
      tir_cp_async16(s + threadIdx.x * 8, global[threadIdx.x], 16);
      tir_cp_async_commit();
    }
    tir_cp_async_wait<0>();
    TIR_SYNC();
    seen[threadIdx.x] = s[(threadIdx.x % 2) * 8 + 3];
  });
  EXPECT_EQ(r.errors, 0) << r.first_error;
  for (int t = 0; t < 32; ++t) EXPECT_EQ(seen[t], (t % 2) * 100 + 3);
}

TEST(Lanes, AReadBeforeTheCoveringWaitIsReportedAndSeesPoison) {
  alignas(16) static tir_u16 global[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  tir_u16 seen = 0;
  auto r = Launch(32, [&] {
    TIR_SHARED_ARRAY(tir_u16, s, 8);
    if (threadIdx.x == 0) {
      tir_cp_async16(s, global, 16);
      tir_cp_async_commit();
      tir_cp_async16(s, global, 16);  // a second group to the same bytes
      tir_cp_async_commit();
      tir_cp_async_wait<1>();  // the first group lands
      tir_cp_async_wait<1>();
      seen = s[2];             // the second has not: poison
    }
  });
  EXPECT_THAT(r.first_error, HasSubstr("UNCOMPLETED_ASYNC_COPY"));
  EXPECT_THAT(r.first_error, HasSubstr("thread (0,0,0)"));
  EXPECT_EQ(seen, 0xffff);
}

TEST(Lanes, PlantedRaceIsReportedWithBothThreadsAndTheOffset) {
  auto r = Launch(64, [&] {
    TIR_SHARED_ARRAY(float, s, 64);
    if (threadIdx.x == 2) s[1] = 1.0f;
    // No barrier: thread 3 reads what thread 2 wrote (threads run in index order).
    if (threadIdx.x == 3) {
      const float v = s[1];
      (void)v;
    }
  });
  ASSERT_EQ(r.errors, 1);
  EXPECT_EQ(r.first_error,
            "SHARED_MEMORY_RACE: kernel test_kernel block (0,0,0): thread (3,0,0) reads shared byte 4 that thread "
            "(2,0,0) wrote with no barrier between");
}

TEST(Lanes, AWriteAfterAnotherThreadsReadWithoutABarrierIsARace) {
  auto r = Launch(32, [&] {
    TIR_SHARED_ARRAY(int, s, 32);
    s[threadIdx.x] = 1;
    TIR_SYNC();
    if (threadIdx.x == 0) {
      const int v = s[5];
      (void)v;
    }
    if (threadIdx.x == 9) s[5] = 2;  // thread 0 may still be reading it
  });
  EXPECT_THAT(r.first_error, HasSubstr("SHARED_MEMORY_RACE"));
  EXPECT_THAT(r.first_error, HasSubstr("thread (9,0,0) writes shared byte 20 that thread (0,0,0) read"));
}

TEST(Lanes, CorrectKernelWithBarriersIsClean) {
  auto r = Launch(128, [&] {
    TIR_SHARED_ARRAY(int, s, 128);
    for (int round = 0; round < 4; ++round) {
      s[threadIdx.x] = round;
      TIR_SYNC();
      const int v = s[127 - threadIdx.x];
      TIR_SYNC();
      s[threadIdx.x] = v;
      TIR_SYNC();
    }
  });
  EXPECT_EQ(r.errors, 0) << r.first_error;
}

TEST(Lanes, AWarpCollectiveSomeLanesOfTheMaskSkipIsDivergence) {
  auto r = Launch(32, [&] {
    float v = threadIdx.x;
    if (threadIdx.x < 16) v = tir_shfl_xor(v, 1);  // full mask, half the warp
    (void)v;
  });
  EXPECT_THAT(r.first_error, HasSubstr("WARP_DIVERGENCE"));
  EXPECT_THAT(r.first_error, HasSubstr("which is exited"));
}

TEST(Lanes, OutOfBoundsSharedAccessStopsTheLaunch) {
  auto r = Launch(32, [&] {
    TIR_SHARED_ARRAY(int, s, 8);
    s[threadIdx.x * 1024] = 1;
  });
  EXPECT_THAT(r.first_error, HasSubstr("SHARED_OUT_OF_BOUNDS"));
}

TEST(Lanes, DynamicSharedMemoryBeyondTheLaunchIsRefused) {
  auto r = Launch(
      32, [&] { TIR_DYNAMIC_SHARED(smem, 4096); (void)smem; }, 1, 1024);
  EXPECT_THAT(r.first_error, HasSubstr("uses 4096 bytes of dynamic shared memory, the launch gives 1024"));
}

tir_lanes::Result LaunchWith(unsigned threads, unsigned blocks, const tir_lanes::LaunchOptions &options,
                             std::function<void()> body) {
  blockDim = {threads, 1, 1};
  gridDim = {blocks, 1, 1};
  return tir_lanes::Launch("test_kernel", {blocks, 1, 1}, {threads, 1, 1}, 0,
                           [](tir_lanes::Dim3 b) { blockIdx = {b.x, b.y, b.z}; }, std::move(body), options);
}

// Thread t writes g[t], then (with `barrier`) syncs, then reads its
// neighbour's g[t + 1] into out[t]. Without the barrier the value read
// depends on whether thread t + 1 ran first.
tir_lanes::Result Neighbours(bool barrier, int schedules, std::vector<int> *out) {
  static std::vector<int> g;
  g.assign(64, 0);
  out->assign(64, -1);
  tir_lanes::LaunchOptions options;
  options.schedules = schedules;
  options.writable = {{g.data(), g.size() * sizeof(int)}, {out->data(), out->size() * sizeof(int)}};
  return LaunchWith(64, 1, options, [out, barrier] {
    const int t = threadIdx.x;
    g[t] = t + 1;
    if (barrier) TIR_SYNC();
    (*out)[t] = g[(t + 1) % 64];
  });
}

TEST(LanesSchedules, AResultThatDependsOnTheOrderIsCaught) {
  std::vector<int> out;
  // One schedule: the natural order alone passes (every thread reads its
  // neighbour's 0, bar the last).
  auto once = Neighbours(false, 1, &out);
  EXPECT_EQ(once.errors, 0) << once.first_error;
  EXPECT_EQ(out[0], 0);
  auto r = Neighbours(false, 2, &out);
  ASSERT_EQ(r.errors, 1);
  EXPECT_EQ(r.first_error,
            "SCHEDULE_DEPENDENT_RESULT: kernel test_kernel block (0,0,0) under high thread ids first: the block leaves "
            "byte 0 of writable global buffer 1 as 0x00 under the natural order and as 0x02: its result depends on "
            "the order its threads run in (a barrier missing between threads' global or shared accesses)");
}

TEST(LanesSchedules, WithTheBarrierEveryScheduleAgrees) {
  std::vector<int> out;
  auto r = Neighbours(true, 4, &out);
  EXPECT_EQ(r.errors, 0) << r.first_error;
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t + 1) % 64 + 1);
  EXPECT_EQ(r.lanes, 4u * 64) << "the block ran under each of the 4 schedules";
}

// The order threads start in, block by block: exploring blocks run under
// every schedule, the others take them in turn.
TEST(LanesSchedules, BlocksRunInTheNaturalHighFirstAndSeededOrders) {
  std::vector<std::pair<unsigned, int>> log;
  tir_lanes::LaunchOptions options;
  options.schedules = 3;
  options.seed = 5;
  options.explore_blocks = 2;  // blocks 0 and 4 of 5
  auto r = LaunchWith(8, 5, options, [&] { log.push_back({blockIdx.x, int(threadIdx.x)}); });
  ASSERT_EQ(r.errors, 0) << r.first_error;
  std::map<unsigned, std::vector<int>> starts;
  for (const auto &[b, t] : log) starts[b].push_back(t);
  const std::vector<int> natural = {0, 1, 2, 3, 4, 5, 6, 7}, high = {7, 6, 5, 4, 3, 2, 1, 0};
  auto runs = [&](unsigned b, int k) { return std::vector<int>(starts[b].begin() + 8 * k, starts[b].begin() + 8 * k + 8); };
  for (unsigned b : {0u, 4u}) {
    SCOPED_TRACE(b);
    ASSERT_EQ(starts[b].size(), 24u) << "an exploring block runs under all 3 schedules";
    EXPECT_EQ(runs(b, 0), natural);
    EXPECT_EQ(runs(b, 1), high);
    std::vector<int> seeded = runs(b, 2), sorted = seeded;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, natural) << "a shuffle runs every thread once";
    EXPECT_NE(seeded, natural);
    EXPECT_NE(seeded, high);
  }
  EXPECT_EQ(runs(0, 2), runs(4, 2)) << "the shuffle is seeded";
  // Blocks 1, 2, 3 once each, under schedules 1, 2, 0.
  ASSERT_EQ(starts[1].size(), 8u);
  ASSERT_EQ(starts[2].size(), 8u);
  ASSERT_EQ(starts[3].size(), 8u);
  EXPECT_EQ(starts[1], high);
  EXPECT_EQ(starts[2], runs(0, 2));
  EXPECT_EQ(starts[3], natural);
  EXPECT_EQ(r.lanes, (3u * 2 + 3) * 8);
}

// The second schedule starts from the global memory the block found: a
// block that increments a counter once is not told it depends on the order.
TEST(LanesSchedules, EachScheduleStartsFromTheSameGlobalMemory) {
  std::vector<unsigned> counter(1, 0);
  tir_lanes::LaunchOptions options;
  options.schedules = 3;
  options.writable = {{counter.data(), sizeof(unsigned)}};
  auto r = LaunchWith(32, 1, options, [&] {
    if (threadIdx.x == 31) counter[0] += 1;
  });
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_EQ(counter[0], 1u);
}

}  // namespace
