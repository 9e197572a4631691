// The tile library's Hopper pieces, emulated lane by lane: mbarrier phases,
// TMA tile loads through tensor maps (swizzled, zero-filled outside the
// tensor), wgmma.mma_async from shared-memory descriptors in every
// canonical layout, and the faults the emulator must catch: a wgmma before
// the TMA's mbarrier phase completed, accumulators read before
// wgmma.wait_group, a descriptor in another swizzle than the TMA wrote, a
// parity that flips wrong, ordinary stores without fence.proxy.async, an
// mbarrier used by other threads before its init is ordered (a race).
// Bulk tensor stores from shared memory (clipped at the tensor's edge)
// behind named barriers, and their faults: no proxy fence, no barrier
// before the store, the staging rewritten before wait_group.read or by a
// thread no barrier orders after it, an exit with the store pending.
// Built with -DTIR_EMULATE=1.

#include <cmath>
#include <random>
#include <vector>

#include "compiler/codegen/runtime/tir_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;

tir_lanes::Result Launch(unsigned threads, std::function<void()> body, size_t dynamic) {
  blockDim = {threads, 1, 1};
  gridDim = {1, 1, 1};
  return tir_lanes::Launch("test_kernel", {1, 1, 1}, {threads, 1, 1}, dynamic,
                           [](tir_lanes::Dim3 b) { blockIdx = {b.x, b.y, b.z}; }, std::move(body));
}

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

// A rows x cols row-major bf16 matrix of small integers / 8 (exact in bf16).
std::vector<uint16_t> Matrix(int rows, int cols, int seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<uint16_t> m(size_t(rows) * cols);
  for (auto &v : m) v = Bf16(d(gen) / 8.0f);
  return m;
}

tir_tensor_map Map(const std::vector<uint16_t> &m, int rows, int cols, int box0, int box1, int swizzle) {
  tir_lanes::TensorMapFields f{tir_lanes::kTensorMapMagic,
                               reinterpret_cast<uint64_t>(m.data()),
                               uint64_t(cols),
                               uint64_t(rows),
                               uint64_t(cols) * 2,
                               uint64_t(box0),
                               uint64_t(box1),
                               2,
                               uint64_t(swizzle)};
  tir_tensor_map t{};
  std::memcpy(&t, &f, sizeof(f));
  return t;
}

// What can go wrong in the test kernel.
enum class Fault { kNone, kNoWait, kNoWgmmaWait, kWrongSwizzle, kWrongParity, kWrongParityLateProducer, kNeverArrives };

// One warpgroup computes a 64x64 tile of A (64 x K) * B (K x 64) with K =
// 64: thread 0 loads A (K-major) and B (N-major) by TMA with the 128-byte
// swizzle, everyone waits on the mbarrier, then 4 wgmma k16 steps.
tir_lanes::Result TmaWgmma(Fault fault, std::vector<float> *out, const std::vector<uint16_t> &a,
                           const std::vector<uint16_t> &b, int m_rows) {
  const tir_tensor_map ma = Map(a, m_rows, 64, 64, 64, 3);
  const tir_tensor_map mb = Map(b, 64, 64, 64, 64, 3);
  out->assign(64 * 64, NAN);
  return Launch(
      128,
      [&] {
        TIR_DYNAMIC_SHARED(smem, 16384 + 8);
        tir_sptr<tir_u16> As = tir_sptr_cast<tir_u16>(smem), Bs = tir_sptr_cast<tir_u16>(smem + 8192);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem + 16384);
        const int t = threadIdx.x;
        if (t == 0) {
          tir_mbar_init(bar, 1);
          tir_mbar_init_fence();
        }
        TIR_SYNC();
        const int producer = fault == Fault::kWrongParityLateProducer ? 127 : 0;
        if (t == producer && fault != Fault::kNeverArrives) {
          tir_mbar_arrive_tx(bar, 16384);
          tir_tma_load_2d(As, &ma, 0, 0, bar);
          tir_tma_load_2d(Bs, &mb, 0, 0, bar);
        }
        const bool flipped = fault == Fault::kWrongParity || fault == Fault::kWrongParityLateProducer;
        if (fault != Fault::kNoWait) tir_mbar_wait(bar, flipped ? 1 : 0);
        tir_wg_acc<64> acc;
        for (int i = 0; i < 32; ++i) acc.set(i, 0.f);
        tir_wgmma_fence();
        const int layout = fault == Fault::kWrongSwizzle ? 2 : 1;
        for (int s = 0; s < 4; ++s) {
          const tir_u64 da = tir_wgmma_desc(tir_smem_u32(As) + 32 * s, 16, 1024, layout);
          const tir_u64 db = tir_wgmma_desc(tir_smem_u32(Bs) + 2048 * s, 8192, 1024, layout);
          tir_wgmma_m64k16_bf16<64, 0, 1>(acc, da, db, 1);
        }
        tir_wgmma_commit();
        if (fault != Fault::kNoWgmmaWait) tir_wgmma_wait<0>();
        const int w = t / 32, g = (t % 32) / 4, q = t % 4;
        for (int i = 0; i < 32; ++i) {
          const int r = 16 * w + g + 8 * ((i / 2) % 2), c = 8 * (i / 4) + 2 * q + (i % 2);
          (*out)[r * 64 + c] = acc.get(i);
        }
      },
      16384 + 8);
}

std::vector<float> Reference(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b, int m_rows) {
  std::vector<float> c(64 * 64, 0.f);
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) {
      double s = 0;
      for (int k = 0; k < 64; ++k) {
        const float av = i < m_rows ? FromBf16(a[i * 64 + k]) : 0.f;
        s += double(av) * FromBf16(b[k * 64 + j]);
      }
      c[i * 64 + j] = float(s);
    }
  }
  return c;
}

TEST(HopperLanes, TmaAndWgmmaComputeTheTile) {
  const auto a = Matrix(64, 64, 1), b = Matrix(64, 64, 2);
  std::vector<float> out;
  auto r = TmaWgmma(Fault::kNone, &out, a, b, 64);
  ASSERT_EQ(r.errors, 0) << r.first_error;
  const std::vector<float> want = Reference(a, b, 64);
  for (int e = 0; e < 64 * 64; ++e) ASSERT_EQ(out[e], want[e]) << "element " << e;  // exact: sums of k/64
}

TEST(HopperLanes, TmaZeroFillsRowsPastTheTensor) {
  // A has 40 rows: the box's rows 40-63 are zeros.
  const auto a = Matrix(40, 64, 3), b = Matrix(64, 64, 4);
  std::vector<float> out;
  auto r = TmaWgmma(Fault::kNone, &out, a, b, 40);
  ASSERT_EQ(r.errors, 0) << r.first_error;
  const std::vector<float> want = Reference(a, b, 40);
  for (int e = 0; e < 64 * 64; ++e) ASSERT_EQ(out[e], want[e]) << "element " << e;
}

TEST(HopperLanes, AWgmmaBeforeTheMbarrierPhaseCompletedIsCaught) {
  const auto a = Matrix(64, 64, 1), b = Matrix(64, 64, 2);
  std::vector<float> out;
  auto r = TmaWgmma(Fault::kNoWait, &out, a, b, 64);
  EXPECT_THAT(r.first_error, HasSubstr("UNCOMPLETED_ASYNC_COPY"));
  EXPECT_THAT(r.first_error, HasSubstr("before it saw the mbarrier"));
}

TEST(HopperLanes, AccumulatorsReadBeforeWgmmaWaitAreCaught) {
  const auto a = Matrix(64, 64, 1), b = Matrix(64, 64, 2);
  std::vector<float> out;
  auto r = TmaWgmma(Fault::kNoWgmmaWait, &out, a, b, 64);
  EXPECT_THAT(r.first_error, HasSubstr("WGMMA_NOT_WAITED"));
}

TEST(HopperLanes, ADescriptorInAnotherSwizzleThanTheTmaIsCaught) {
  const auto a = Matrix(64, 64, 1), b = Matrix(64, 64, 2);
  std::vector<float> out;
  auto r = TmaWgmma(Fault::kWrongSwizzle, &out, a, b, 64);
  EXPECT_THAT(r.first_error, HasSubstr("SWIZZLE_MISMATCH"));
  EXPECT_THAT(r.first_error, HasSubstr("64B swizzle"));
}

TEST(HopperLanes, AParityThatFlipsWrongIsCaught) {
  const auto a = Matrix(64, 64, 1), b = Matrix(64, 64, 2);
  std::vector<float> out;
  // Parity 1 passes at once while phase 0 is open (it names the phase
  // "before" it): threads that wait before the copies were issued read the
  // tiles before anything wrote them.
  auto early = TmaWgmma(Fault::kWrongParityLateProducer, &out, a, b, 64);
  EXPECT_THAT(early.first_error, HasSubstr("UNINITIALIZED_SHARED_READ"));
  // A thread that waits on it after phase 0 completed waits for phase 1,
  // which never comes: on a GPU a hang, here a report.
  auto late = TmaWgmma(Fault::kWrongParity, &out, a, b, 64);
  EXPECT_THAT(late.first_error, HasSubstr("MBARRIER_DEADLOCK"));
  EXPECT_THAT(late.first_error, HasSubstr("parity 1"));
}

TEST(HopperLanes, APhaseThatNeverCompletesIsADeadlockNotAHang) {
  const auto a = Matrix(64, 64, 1), b = Matrix(64, 64, 2);
  std::vector<float> out;
  auto r = TmaWgmma(Fault::kNeverArrives, &out, a, b, 64);
  EXPECT_THAT(r.first_error, HasSubstr("MBARRIER_DEADLOCK"));
  EXPECT_THAT(r.first_error, HasSubstr("1 of 1 arrivals"));
}

TEST(HopperLanes, MbarrierPhasesAlternateAndCountTransactionBytes) {
  std::vector<int> seen;
  std::vector<uint32_t> blocked;
  auto r = Launch(
      64,
      [&] {
        TIR_DYNAMIC_SHARED(smem, 8);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem);
        if (threadIdx.x == 0) tir_mbar_init(bar, 2);
        TIR_SYNC();
        for (int phase = 0; phase < 3; ++phase) {
          if (threadIdx.x == 0) tir_mbar_arrive(bar);
          if (threadIdx.x == 32) tir_mbar_arrive(bar);
          tir_mbar_wait(bar, phase & 1);
          if (threadIdx.x == 5) seen.push_back(phase);
          TIR_SYNC();
        }
        // One arrival of two, and two arrivals with 16 announced bytes that
        // never come: the phase holds.
        if (threadIdx.x == 0) {
          tir_mbar_arrive(bar);
          blocked.push_back(tir_lanes::B().mbarriers[0].phase);
        }
        TIR_SYNC();
        if (threadIdx.x == 32) tir_mbar_arrive_tx(bar, 16);
        TIR_SYNC();
        if (threadIdx.x == 0) blocked.push_back(tir_lanes::B().mbarriers[0].phase);
      },
      8);
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(blocked, (std::vector<uint32_t>{3, 3}));
}

// Every canonical layout: ordinary stores put A (64 x 16) and B (16 x 64)
// where the descriptor's layout says, fence.proxy.async, then one wgmma.
struct Layout {
  int layout;     // descriptor layout type: 0 none, 1 128B, 2 64B, 3 32B
  bool mn_major;  // B N-major (trans_b) instead of K-major
};

// fence: 0 none, 1 fence.proxy.async before the barrier, 2 after it (too
// late: the barrier is what orders the stores before the wgmma).
tir_lanes::Result StoredWgmma(Layout lay, int fence, std::vector<float> *out, const std::vector<uint16_t> &a,
                              const std::vector<uint16_t> &b) {
  out->assign(64 * 64, NAN);
  const int mode = tir_lanes::DescriptorSwizzle(uint64_t(lay.layout) << 62);
  const int span = tir_lanes::SwizzleSpan(mode);
  // Offsets and descriptors: A K-major; B K-major or N-major. With no
  // swizzle, core matrices (8 rows x 16 bytes) in K-major order of 8-row
  // groups; swizzled, rows of `span` bytes.
  const uint32_t a_lbo = 128 * 8, a_sbo = span ? span * 8 : 128;  // none: LBO steps K chunks, SBO 8-row groups
  auto a_byte = [&](int m, int k) -> uint32_t {
    if (!span) return uint32_t((m % 8) * 16 + (m / 8) * a_sbo + (k % 8) * 2 + (k / 8) * a_lbo);
    return uint32_t((m % 8) * span + (m / 8) * a_sbo + k * 2);
  };
  const uint32_t b_base = 16384;
  uint32_t b_lbo, b_sbo;
  std::function<uint32_t(int, int)> b_byte;
  if (!lay.mn_major) {
    b_lbo = 128 * 8;
    b_sbo = span ? span * 8 : 128;
    b_byte = [=](int n, int k) -> uint32_t {
      if (!span) return uint32_t((n % 8) * 16 + (n / 8) * b_sbo + (k % 8) * 2 + (k / 8) * b_lbo);
      return uint32_t((n % 8) * span + (n / 8) * b_sbo + k * 2);
    };
  } else if (!span) {
    b_sbo = 128 * 2;   // 8-column groups
    b_lbo = 128 * 16;  // 8-k groups
    b_byte = [=](int n, int k) -> uint32_t {
      return uint32_t((n % 8) * 2 + (n / 8) * b_sbo + (k % 8) * 16 + (k / 8) * b_lbo);
    };
  } else {
    const int per = span / 2;
    b_lbo = span * 16;  // the next `per` columns
    b_sbo = span * 8;   // the next 8 k
    b_byte = [=](int n, int k) -> uint32_t {
      return uint32_t((n % per) * 2 + (n / per) * b_lbo + (k % 8) * span + (k / 8) * b_sbo);
    };
  }
  return Launch(
      128,
      [&] {
        TIR_DYNAMIC_SHARED(smem, 32768);
        tir_sptr<tir_u16> s16 = tir_sptr_cast<tir_u16>(smem);
        const int t = threadIdx.x;
        for (int e = t; e < 64 * 16; e += 128) {
          const int m = e / 16, k = e % 16;
          s16[tir_lanes::Swizzled(a_byte(m, k), mode) / 2] = a[m * 64 + k];
        }
        for (int e = t; e < 16 * 64; e += 128) {
          const int k = e / 64, n = e % 64;
          s16[tir_lanes::Swizzled(b_base + b_byte(n, k), mode) / 2] = b[k * 64 + n];
        }
        if (fence == 1) tir_fence_proxy_async();
        TIR_SYNC();
        if (fence == 2) tir_fence_proxy_async();
        tir_wg_acc<64> acc;
        tir_wgmma_fence();
        const tir_u64 da = tir_wgmma_desc(0, a_lbo, a_sbo, lay.layout), db = tir_wgmma_desc(b_base, b_lbo, b_sbo, lay.layout);
        if (lay.mn_major) {
          tir_wgmma_m64k16_bf16<64, 0, 1>(acc, da, db, 0);
        } else {
          tir_wgmma_m64k16_bf16<64, 0, 0>(acc, da, db, 0);
        }
        tir_wgmma_commit();
        tir_wgmma_wait<0>();
        const int w = t / 32, g = (t % 32) / 4, q = t % 4;
        for (int i = 0; i < 32; ++i) {
          const int r = 16 * w + g + 8 * ((i / 2) % 2), c = 8 * (i / 4) + 2 * q + (i % 2);
          (*out)[r * 64 + c] = acc.get(i);
        }
      },
      32768);
}

TEST(HopperLanes, WgmmaReadsEveryCanonicalLayout) {
  const auto a = Matrix(64, 64, 5), b = Matrix(64, 64, 6);
  std::vector<float> want(64 * 64, 0.f);
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) {
      double s = 0;
      for (int k = 0; k < 16; ++k) s += double(FromBf16(a[i * 64 + k])) * FromBf16(b[k * 64 + j]);
      want[i * 64 + j] = float(s);
    }
  }
  for (int layout : {0, 1, 2, 3}) {
    for (bool mn : {false, true}) {
      SCOPED_TRACE(testing::Message() << "layout " << layout << (mn ? " N-major" : " K-major"));
      std::vector<float> out;
      auto r = StoredWgmma({layout, mn}, 1, &out, a, b);
      ASSERT_EQ(r.errors, 0) << r.first_error;
      for (int e = 0; e < 64 * 64; ++e) ASSERT_EQ(out[e], want[e]) << "element " << e;
    }
  }
}

TEST(HopperLanes, OrdinaryStoresWithoutAProxyFenceAreCaught) {
  const auto a = Matrix(64, 64, 5), b = Matrix(64, 64, 6);
  std::vector<float> out;
  auto r = StoredWgmma({1, true}, 0, &out, a, b);
  EXPECT_THAT(r.first_error, HasSubstr("MISSING_PROXY_FENCE"));
  // Every thread fences after the barrier: too late, whichever thread's
  // fence runs before the wgmma reads (the barrier is what orders the
  // stores before it).
  r = StoredWgmma({1, true}, 2, &out, a, b);
  EXPECT_THAT(r.first_error, HasSubstr("MISSING_PROXY_FENCE"));
  EXPECT_THAT(r.first_error, HasSubstr("before the barrier or mbarrier arrival that orders it"));
}

TEST(HopperLanes, TmaThroughAMapTheLauncherDidNotEncodeIsRefused) {
  tir_tensor_map none{};
  auto r = Launch(
      32,
      [&] {
        TIR_DYNAMIC_SHARED(smem, 8192 + 8);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem + 8192);
        if (threadIdx.x == 0) {
          tir_mbar_init(bar, 1);
          tir_tma_load_2d(smem, &none, 0, 0, bar);
        }
      },
      8192 + 8);
  EXPECT_THAT(r.first_error, HasSubstr("INVALID_TENSOR_MAP"));
}

// Thread 0 initializes an mbarrier for 64 arrivals; every thread arrives
// and waits for the phase. `barrier`: a TIR_SYNC orders the init first.
tir_lanes::Result InitThenUse(bool barrier, int schedules) {
  blockDim = {64, 1, 1};
  gridDim = {1, 1, 1};
  tir_lanes::LaunchOptions options;
  options.schedules = schedules;
  return tir_lanes::Launch(
      "test_kernel", {1, 1, 1}, {64, 1, 1}, 64, [](tir_lanes::Dim3 b) { blockIdx = {b.x, b.y, b.z}; },
      [barrier] {
        TIR_DYNAMIC_SHARED(smem, 64);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem + 8);
        if (threadIdx.x == 0) {
          tir_mbar_init(bar, 64);
          tir_mbar_init_fence();
        }
        if (barrier) TIR_SYNC();
        tir_mbar_arrive(bar);
        tir_mbar_wait(bar, 0);
      },
      options);
}

TEST(HopperLanes, AnMbarrierInitNotOrderedBeforeAnotherThreadsUseIsARace) {
  // In the natural order thread 0 inits before the others run: the race
  // check, not the order, has to see it.
  auto r = InitThenUse(false, 1);
  ASSERT_GE(r.errors, 1);
  EXPECT_THAT(r.first_error,
              ::testing::StartsWith("SHARED_MEMORY_RACE: kernel test_kernel block (0,0,0): thread (1,0,0) arrives at "
                                    "the mbarrier at shared byte 8 that thread (0,0,0) initialized (mbarrier.init) "
                                    "with no barrier between"));
}

TEST(HopperLanes, AnMbarrierInitBeforeABarrierIsCleanUnderEverySchedule) {
  auto r = InitThenUse(true, 3);
  EXPECT_EQ(r.errors, 0) << r.first_error;
  EXPECT_EQ(r.lanes, 3u * 64);
}

TEST(HopperLanes, AStoreToAnMbarrierAnotherThreadInitsIsARace) {
  blockDim = {64, 1, 1};
  gridDim = {1, 1, 1};
  auto r = tir_lanes::Launch(
      "test_kernel", {1, 1, 1}, {64, 1, 1}, 64, [](tir_lanes::Dim3 b) { blockIdx = {b.x, b.y, b.z}; }, [] {
        TIR_DYNAMIC_SHARED(smem, 64);
        tir_sptr<tir_u64> bar = tir_sptr_cast<tir_u64>(smem + 8);
        if (threadIdx.x == 0) tir_mbar_init(bar, 1);
        if (threadIdx.x == 5) bar[0] = tir_u64(0);  // e.g. clearing shared memory
        TIR_SYNC();
      });
  EXPECT_THAT(r.first_error, HasSubstr("SHARED_MEMORY_RACE"));
  EXPECT_THAT(r.first_error, HasSubstr("thread (5,0,0) writes shared byte 8 that thread (0,0,0) wrote"));
}

// ---- bulk tensor stores and named barriers -----------------------------------

enum class StoreFault {
  kNone,
  kNoFence,
  kFenceAfterBarrier,
  kFenceAfterBlockBarrier,
  kNoBarrier,
  kNoWaitBeforeReuse,
  kNoBarrierAfterWait,
  kNoWaitAtExit
};

// Threads 64-127 (named barrier 1, 64 threads) write a 64 x 64 bf16 tile
// (((r * 64 + c) % 256 + round) / 16, exact in bf16) into a 128-byte
// swizzled staging tile and thread 64 stores it by TMA into a 50 x
// 40 tensor (rows of 48 elements: clipped at rows and columns), twice:
// the second round rewrites the staging (values + 1). Threads 0-63 meet at
// named barrier 2 meanwhile. With kFenceAfterBarrier the writers fence
// after the barrier and thread 127 stores: under the natural order every
// other writer has fenced by the time it issues, yet no fence came before
// the barrier that orders their bytes before the store;
// kFenceAfterBlockBarrier is the same with a block barrier (TIR_SYNC).
tir_lanes::Result StoreTile(StoreFault fault, std::vector<uint16_t> *out) {
  out->assign(50 * 48, 0xabcd);
  tir_lanes::TensorMapFields f{tir_lanes::kTensorMapMagic, reinterpret_cast<uint64_t>(out->data()), 40, 50, 48 * 2, 64, 64,
                               2, 3};
  tir_tensor_map map{};
  std::memcpy(&map, &f, sizeof(f));
  return Launch(
      128,
      [&, fault] {
        TIR_DYNAMIC_SHARED(smem, 8192);
        tir_sptr<tir_u16> staging = tir_sptr_cast<tir_u16>(smem);
        const int t = threadIdx.x;
        if (t < 64) {
          tir_named_barrier(2, 64);
          return;
        }
        const int me = t - 64;
        const bool block = fault == StoreFault::kFenceAfterBlockBarrier;
        const int issuer = fault == StoreFault::kFenceAfterBarrier || block ? 63 : 0;
        for (int round = 0; round < 2; ++round) {
          const bool last = round == 1;
          if (round > 0) {
            if (me == issuer && fault != StoreFault::kNoWaitBeforeReuse) tir_bulk_wait_read<0>();
            if (fault != StoreFault::kNoBarrierAfterWait) tir_named_barrier(1, 64);
          }
          for (int e = me; e < 64 * 64; e += 64) {
            const int r = e / 64, c = e % 64;
            staging[tir_swz_bytes<128>(r * 128 + c * 2) / 2] = Bf16(float((r * 64 + c) % 256 + round) / 16.f);
          }
          const bool late = fault == StoreFault::kFenceAfterBarrier || block;
          if (fault != StoreFault::kNoFence && !late) tir_fence_proxy_async();
          if (block) {
            TIR_SYNC();  // threads 0-63 have exited: the barrier waits for the live ones
          } else if (fault != StoreFault::kNoBarrier) {
            tir_named_barrier(1, 64);
          }
          if (late) tir_fence_proxy_async();
          if (me == issuer) {
            tir_tma_store_2d(&map, staging, 0, 0);
            tir_bulk_commit();
          }
          if (last && me == issuer && fault != StoreFault::kNoWaitAtExit) tir_bulk_wait_read<0>();
        }
      },
      8192);
}

TEST(HopperLanes, ABulkTensorStoreWritesTheTileInsideTheTensor) {
  std::vector<uint16_t> out;
  auto r = StoreTile(StoreFault::kNone, &out);
  ASSERT_EQ(r.errors, 0) << r.first_error;
  for (int row = 0; row < 50; ++row) {
    for (int c = 0; c < 48; ++c) {
      SCOPED_TRACE(testing::Message() << "row " << row << " column " << c);
      if (c < 40) {
        EXPECT_EQ(FromBf16(out[row * 48 + c]), float((row * 64 + c) % 256 + 1) / 16.f);
      } else {
        EXPECT_EQ(out[row * 48 + c], 0xabcd) << "past the tensor's 40 columns: untouched";
      }
    }
  }
}

TEST(HopperLanes, BulkTensorStoreFaultsAreCaught) {
  const std::pair<StoreFault, const char *> faults[] = {
      {StoreFault::kNoFence, "MISSING_PROXY_FENCE: kernel test_kernel block (0,0,0): a bulk tensor store of thread (64,0,0) "
                             "reads shared byte"},
      {StoreFault::kFenceAfterBarrier, "MISSING_PROXY_FENCE: kernel test_kernel block (0,0,0): a bulk tensor store of "
                                       "thread (127,0,0) reads shared byte"},
      {StoreFault::kFenceAfterBlockBarrier, "MISSING_PROXY_FENCE: kernel test_kernel block (0,0,0): a bulk tensor store "
                                            "of thread (127,0,0) reads shared byte"},
      // The store may issue before the others wrote (then they write under
      // it) or after (then it reads their bytes unordered).
      {StoreFault::kNoBarrier, "BULK_STORE_NOT_READ: kernel test_kernel block (0,0,0): thread (65,0,0) writes shared "
                               "byte 2, which a bulk tensor store of thread (64,0,0) may still read"},
      {StoreFault::kNoWaitBeforeReuse, "BULK_STORE_NOT_READ: kernel test_kernel block (0,0,0): thread (64,0,0) writes "
                                       "shared byte 0, which a bulk tensor store of thread (64,0,0) may still read: no "
                                       "cp.async.bulk.wait_group.read covering it came before"},
      {StoreFault::kNoBarrierAfterWait, "no barrier orders the issuer's cp.async.bulk.wait_group.read before this write"},
      {StoreFault::kNoWaitAtExit, "BULK_STORE_NOT_READ: kernel test_kernel block (0,0,0): thread (64,0,0) exits while its "
                                  "bulk tensor store"},
  };
  for (const auto &[fault, want] : faults) {
    SCOPED_TRACE(want);
    std::vector<uint16_t> out;
    auto r = StoreTile(fault, &out);
    ASSERT_GE(r.errors, 1);
    EXPECT_THAT(r.first_error, HasSubstr(want));
  }
}

TEST(HopperLanes, ANamedBarrierOrdersOnlyItsThreads) {
  // Thread 0 writes, threads 0-31 meet at named barrier 1, thread 32 (not
  // among them) and thread 1 (among them) read: thread 32 races.
  for (int reader : {1, 32}) {
    auto r = Launch(
        64,
        [reader] {
          TIR_DYNAMIC_SHARED(smem, 16);
          tir_sptr<tir_u32> x = tir_sptr_cast<tir_u32>(smem);
          if (threadIdx.x == 0) x[0] = 7u;
          if (threadIdx.x < 32) tir_named_barrier(1, 32);
          if (threadIdx.x == unsigned(reader)) (void)tir_u32(x[0]);
        },
        16);
    if (reader == 1) {
      EXPECT_EQ(r.errors, 0) << r.first_error;
    } else {
      EXPECT_THAT(r.first_error, HasSubstr("SHARED_MEMORY_RACE"));
    }
  }
}

}  // namespace
