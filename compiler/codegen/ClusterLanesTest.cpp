// Thread-block clusters emulated lane by lane: two CTAs of a cluster share
// the B operand of their tiles through TMA multicast (each loads half of the
// box into both CTAs' shared memory, completing both CTAs' mbarriers),
// release each stage to the producers of both CTAs with remote mbarrier
// arrivals, and meet at barrier.cluster after mbarrier.init and before
// exit; the result is exact under every schedule. Faults the emulator must
// catch: a ctaMask leaving a CTA out (its wait never completes), naming a
// CTA outside the cluster, sending bytes a CTA does not expect, no
// barrier.cluster after mbarrier.init, and no barrier.cluster before exit.
// Built with -DTIR_EMULATE=1.

#include <cmath>
#include <random>
#include <vector>

#include "compiler/codegen/runtime/tir_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;

uint16_t Bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);  // the test's values are exact in bf16
}
float FromBf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint16_t> Matrix(int rows, int cols, int seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<uint16_t> m(size_t(rows) * cols);
  for (auto &v : m) v = Bf16(d(gen) / 8.0f);
  return m;
}

// A 2D map of a row-major rows x cols bf16 matrix with a box0 x box1 box
// and the 128-byte swizzle.
tir_tensor_map Map(const std::vector<uint16_t> &m, int rows, int cols, int box0, int box1) {
  tir_lanes::TensorMapFields f{tir_lanes::kTensorMapMagic,
                               reinterpret_cast<uint64_t>(m.data()),
                               uint64_t(cols),
                               uint64_t(rows),
                               uint64_t(cols) * 2,
                               uint64_t(box0),
                               uint64_t(box1),
                               2,
                               3};
  tir_tensor_map t{};
  std::memcpy(&t, &f, sizeof(f));
  return t;
}

enum class Fault { kNone, kLeavesPeerOut, kMaskOutsideCluster, kNoClusterSyncAfterInit, kNoClusterSyncBeforeExit };

constexpr int kK = 256, kStages = 2;

// C (64 * ctas x 64) = A (64 * ctas x K) * B (K x 64) with clusters of two
// CTAs along x, 256 threads each: warpgroup 0's thread 0 produces (its own
// 64 rows of A by TMA, and half of B's 64 k rows multicast to both CTAs),
// warpgroup 1 consumes (4 wgmma k16 steps a stage) and each of its threads
// releases the stage to both CTAs' producers.
tir_lanes::Result Gemm(Fault fault, int ctas, std::vector<float> *out, const std::vector<uint16_t> &a,
                       const std::vector<uint16_t> &b, int schedules) {
  const tir_tensor_map ma = Map(a, 64 * ctas, kK, 64, 64);
  const tir_tensor_map mb = Map(b, kK, 64, 64, 32);  // half a stage's B: 32 k rows
  out->assign(size_t(64) * ctas * 64, NAN);
  constexpr int kStageBytes = 16384, kSmem = kStages * kStageBytes + 2 * kStages * 8;
  blockDim = {256, 1, 1};
  gridDim = {unsigned(ctas), 1, 1};
  tir_lanes::LaunchOptions options;
  options.schedules = schedules;
  options.seed = 7;
  options.writable = {{out->data(), out->size() * sizeof(float)}};
  return tir_lanes::LaunchClusters(
      "cluster_gemm", {unsigned(ctas), 1, 1}, {256, 1, 1}, {2, 1, 1}, kSmem,
      [](tir_lanes::Dim3 blk) { blockIdx = {blk.x, blk.y, blk.z}; },
      [&] {
        TIR_DYNAMIC_SHARED(smem, kSmem);
        tir_sptr<tir_u64> full = tir_sptr_cast<tir_u64>(smem + kStages * kStageBytes), empty = full + kStages;
        const int t = threadIdx.x;
        const unsigned rank = tir_cluster_ctarank();
        if (t == 0) {
          for (int s = 0; s < kStages; ++s) {
            tir_mbar_init(full + s, 1);
            tir_mbar_init(empty + s, 256);  // the consumer threads of both CTAs
          }
          tir_mbar_init_fence();
        }
        if (fault == Fault::kNoClusterSyncAfterInit) {
          TIR_SYNC();
        } else {
          tir_cluster_sync();
        }
        if (t == 0) {
          const unsigned mask = fault == Fault::kLeavesPeerOut        ? 1u << rank
                                : fault == Fault::kMaskOutsideCluster ? 0x5u
                                                                      : 0x3u;
          for (int kt = 0; kt < kK / 64; ++kt) {
            const int s = kt % kStages;
            tir_mbar_wait(empty + s, ((kt / kStages) & 1) ^ 1);
            tir_sptr<tir_u16> As = tir_sptr_cast<tir_u16>(smem + s * kStageBytes), Bs = As + 4096;
            tir_mbar_arrive_tx(full + s, kStageBytes);
            tir_tma_load_2d(As, &ma, kt * 64, int(blockIdx.x) * 64, full + s);
            tir_tma_load_2d_multicast(Bs + rank * 2048, &mb, 0, kt * 64 + int(rank) * 32, full + s, mask);
          }
        } else if (t >= 128) {
          const int c = t - 128, w = c / 32, g = (c % 32) / 4, q = c % 4;
          tir_wg_acc<64> acc;
          for (int i = 0; i < 32; ++i) acc.set(i, 0.f);
          for (int kt = 0; kt < kK / 64; ++kt) {
            const int s = kt % kStages;
            tir_mbar_wait(full + s, (kt / kStages) & 1);
            const tir_u32 sa = tir_smem_u32(smem + s * kStageBytes), sb = sa + 8192;
            tir_wgmma_fence_operands(acc);
            tir_wgmma_fence();
            for (int ks = 0; ks < 4; ++ks) {
              tir_wgmma_m64k16_bf16<64, 0, 1>(acc, tir_wgmma_desc(sa + 32 * ks, 16, 1024, 1),
                                              tir_wgmma_desc(sb + 2048 * ks, 8192, 1024, 1), 1);
            }
            tir_wgmma_commit();
            tir_wgmma_wait<0>();
            tir_wgmma_fence_operands(acc);
            for (unsigned peer = 0; peer < 2; ++peer) tir_mbar_arrive_cluster(empty + s, peer);
          }
          for (int i = 0; i < 32; ++i) {
            const int r = 16 * w + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * q + (i % 2);
            (*out)[(blockIdx.x * 64 + r) * 64 + col] = acc.get(i);
          }
        }
        if (fault != Fault::kNoClusterSyncBeforeExit) tir_cluster_sync();
      },
      options);
}

std::vector<float> Reference(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b, int rows) {
  std::vector<float> c(size_t(rows) * 64, 0.f);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < 64; ++j) {
      float s = 0.f;
      for (int k = 0; k < kK; ++k) s += FromBf16(a[size_t(i) * kK + k]) * FromBf16(b[size_t(k) * 64 + j]);
      c[size_t(i) * 64 + j] = s;
    }
  }
  return c;
}

void ExpectNear(const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-3f * (1.f + std::fabs(want[i]))) << "element " << i;
  }
}

TEST(ClusterLanes, MulticastSharesTheOperandAcrossTheClusterUnderEverySchedule) {
  const int ctas = 4;  // two clusters
  const auto a = Matrix(64 * ctas, kK, 1), b = Matrix(kK, 64, 2);
  std::vector<float> out;
  const auto r = Gemm(Fault::kNone, ctas, &out, a, b, 4);
  ASSERT_EQ(r.errors, 0) << r.first_error;
  ExpectNear(out, Reference(a, b, 64 * ctas));
  EXPECT_EQ(r.lanes, uint64_t(ctas) * 256 * 4);  // every cluster under all four schedules
}

TEST(ClusterLanes, AMaskLeavingAPeerOutIsADeadlock) {
  const auto a = Matrix(128, kK, 3), b = Matrix(kK, 64, 4);
  std::vector<float> out;
  const auto r = Gemm(Fault::kLeavesPeerOut, 2, &out, a, b, 1);
  EXPECT_THAT(r.first_error, HasSubstr("MBARRIER_DEADLOCK"));
  EXPECT_THAT(r.first_error, HasSubstr("transaction bytes missing"));
}

TEST(ClusterLanes, AMaskNamingACtaOutsideTheClusterIsRefused) {
  const auto a = Matrix(128, kK, 5), b = Matrix(kK, 64, 6);
  std::vector<float> out;
  const auto r = Gemm(Fault::kMaskOutsideCluster, 2, &out, a, b, 1);
  EXPECT_THAT(r.first_error, HasSubstr("INVALID_MULTICAST_MASK"));
  EXPECT_THAT(r.first_error, HasSubstr("ctaMask 0x5"));
}

TEST(ClusterLanes, NoClusterBarrierAfterMbarrierInitIsARace) {
  const auto a = Matrix(128, kK, 7), b = Matrix(kK, 64, 8);
  for (int schedules : {1, 2}) {
    std::vector<float> out;
    const auto r = Gemm(Fault::kNoClusterSyncAfterInit, 2, &out, a, b, schedules);
    EXPECT_THAT(r.first_error, HasSubstr("SHARED_MEMORY_RACE"));
    EXPECT_THAT(r.first_error, HasSubstr("barrier.cluster after mbarrier.init"));
  }
}

TEST(ClusterLanes, ACtaLeavingWhilePeersStillUseItIsCaught) {
  const auto a = Matrix(128, kK, 9), b = Matrix(kK, 64, 10);
  std::vector<float> out;
  const auto r = Gemm(Fault::kNoClusterSyncBeforeExit, 2, &out, a, b, 2);
  EXPECT_THAT(r.first_error, HasSubstr("CLUSTER_PEER_EXITED"));
}

// Each CTA expects only its own half of a box that both multicast to both.
TEST(ClusterLanes, BytesACtaDoesNotExpectAreCaught) {
  const auto b = Matrix(64, 64, 11);
  const tir_tensor_map mb = Map(b, 64, 64, 64, 32);
  blockDim = {32, 1, 1};
  gridDim = {2, 1, 1};
  const auto r = tir_lanes::LaunchClusters(
      "extra_bytes", {2, 1, 1}, {32, 1, 1}, {2, 1, 1}, 8192 + 8,
      [](tir_lanes::Dim3 blk) { blockIdx = {blk.x, blk.y, blk.z}; },
      [&] {
        TIR_DYNAMIC_SHARED(smem, 8192 + 8);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem + 8192);
        const unsigned rank = tir_cluster_ctarank();
        if (threadIdx.x == 0) {
          tir_mbar_init(bar, 1);
          tir_mbar_init_fence();
        }
        tir_cluster_sync();
        if (threadIdx.x == 0) {
          tir_mbar_arrive_tx(bar, 4096);
          tir_tma_load_2d_multicast(tir_sptr_cast<tir_u16>(smem) + rank * 2048, &mb, 0, int(rank) * 32, bar, 0x3u);
        }
        tir_mbar_wait(bar, 0);
        tir_cluster_sync();
      });
  EXPECT_THAT(r.first_error, HasSubstr("MBARRIER_TX_OVERFLOW"));
}

TEST(ClusterLanes, ARemoteArrivalCompletesThePeersPhase) {
  std::vector<int> seen(2, -1);
  blockDim = {32, 1, 1};
  gridDim = {2, 1, 1};
  const auto r = tir_lanes::LaunchClusters(
      "remote_arrive", {2, 1, 1}, {32, 1, 1}, {2, 1, 1}, 16,
      [](tir_lanes::Dim3 blk) { blockIdx = {blk.x, blk.y, blk.z}; },
      [&] {
        TIR_DYNAMIC_SHARED(smem, 16);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem);
        const unsigned rank = tir_cluster_ctarank();
        if (threadIdx.x == 0) {
          tir_mbar_init(bar, 32);  // every thread of the other CTA
          tir_mbar_init_fence();
        }
        tir_cluster_sync();
        tir_mbar_arrive_cluster(bar, rank ^ 1u);
        tir_mbar_wait(bar, 0);
        if (threadIdx.x == 0) seen[blockIdx.x] = int(rank);
        tir_cluster_sync();
      });
  ASSERT_EQ(r.errors, 0) << r.first_error;
  EXPECT_EQ(seen, (std::vector<int>{0, 1}));
}

TEST(ClusterLanes, AGridThatTheClusterDoesNotDivideIsRefused) {
  const auto r = tir_lanes::LaunchClusters(
      "odd_grid", {3, 1, 1}, {32, 1, 1}, {2, 1, 1}, 0, [](tir_lanes::Dim3) {}, [] {});
  EXPECT_THAT(r.first_error, HasSubstr("INVALID_LAUNCH"));
  EXPECT_THAT(r.first_error, HasSubstr("dividing the grid"));
}

}  // namespace
