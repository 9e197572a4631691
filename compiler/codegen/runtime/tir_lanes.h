// tir's lane-exact emulator: runs a GPU kernel's source on the host with the
// block size it was launched with (compiled with -DTIR_EMULATE=1; included by
// tir_runtime.h, never by NVRTC).
//
// Every thread of a block is a fiber with its own stack and threadIdx. A
// thread runs until it reaches a barrier or a warp collective, then parks:
//  - a barrier (__syncthreads) releases when every thread of the block that
//    has not exited has reached one;
//  - a warp collective (shfl, ldmatrix, mma.sync) runs when every lane of its
//    member mask has reached the same collective, with the data movement the
//    PTX ISA documents, and resumes them all; a lane of the mask that exits
//    or waits elsewhere instead is a divergence error.
// Shared memory is one arena per block, poisoned (0xff bytes) at block start.
// Every access through tir_sptr (tir_tiles.h) is checked: out of bounds is an
// error, and a race check keeps per byte the last writer and reader in the
// current barrier interval: two threads touching one byte, at least one of
// them writing, with no barrier between, is reported with the kernel, block,
// both threads and the offset. cp.async copies read global memory when
// issued and land in shared memory only at the cp.async.wait_group that
// covers their commit group; until then the bytes hold poison, and reading
// them is an error.
//
// Hopper's asynchronous pieces (sm_90a) follow the PTX ISA's rules:
//  - an mbarrier (mbarrier.init/arrive/expect_tx/try_wait.parity) counts
//    arrivals and transaction bytes per phase; try_wait.parity(P) succeeds
//    when the current phase's parity differs from P. A thread that spins on
//    a phase that never completes, with nothing else able to move, is an
//    MBARRIER_DEADLOCK;
//  - a TMA load (cp.async.bulk.tensor) decodes its tensor map, copies the
//    box (zeros outside the tensor) into shared memory in the map's swizzle
//    and completes its bytes on an mbarrier. Its bytes belong to that
//    barrier's phase: a thread that reads them (a load, or a wgmma) without
//    having seen the phase complete through try_wait is an
//    UNCOMPLETED_ASYNC_COPY;
//  - wgmma.mma_async reads A and B through shared-memory matrix
//    descriptors (start, leading and stride byte offsets, swizzle mode) in
//    the canonical layouts; reading bytes a TMA wrote in another swizzle
//    is a SWIZZLE_MISMATCH, bytes written by ordinary stores without a
//    fence.proxy.async of their writer is a MISSING_PROXY_FENCE. Its
//    accumulators hold poison until the wgmma.wait_group that covers its
//    commit group; reading them before is WGMMA_NOT_WAITED, handing
//    accumulators written by ordinary code to a wgmma without a wgmma.fence
//    in between, or a thread's first wgmma with no wgmma.fence before it,
//    is a MISSING_WGMMA_FENCE;
//  - a named barrier (bar.sync id, n) releases when n threads reached it,
//    and orders the accesses of those threads only; a bulk tensor store
//    (cp.async.bulk.tensor, shared::cta to global) reads its shared bytes
//    until the cp.async.bulk.wait_group.read that covers its bulk group:
//    see "named barriers and bulk tensor stores" below.
//
// mbarrier objects are shared memory to the race check too: an
// mbarrier.init is a store to its 8 bytes, and another thread's use of the
// barrier (arrive, try_wait, a TMA completing on it) that no barrier (or
// mbarrier phase) orders after the init is a SHARED_MEMORY_RACE.
//
// Schedules. Within a barrier interval the threads' segments may run in
// any order on a GPU; the emulator runs each runnable thread to its next
// park in an order a schedule gives: the natural order (thread 0 first),
// high thread ids first, or a seeded shuffle drawn anew every round. A
// launch runs blocks under several schedules (LaunchOptions): a block that
// explores runs under each in turn from the same global memory (the
// writable ranges are saved and restored) and must leave the same bytes
// under all of them, else SCHEDULE_DEPENDENT_RESULT (tir's kernels are
// deterministic: no float atomics); the other blocks take the schedules in
// turn. A result that depends on the order (a missing barrier around
// global memory, a barrier used before its init) shows that way.
//
// Errors are collected per launch; the first one is reported in full, with
// a count of the rest. A divergence (or a fault such as an out-of-bounds
// shared access) stops the launch.

#ifndef TIR_LANES_H_
#define TIR_LANES_H_

#include <sys/mman.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

// The emulator's machinery (the scheduler, launches, the race check, the
// TMA and wgmma models) is the same for every kernel. By default it is
// inline in each kernel's object; a kernel compiled with TIR_LANES_SPLIT
// leaves it out (only declared, in place; defined at the end of this
// header) and links the one object compiled from this header with
// TIR_LANES_RUNTIME as well (HostBuild does: a kernel then compiles only its
// own code).
#if defined(TIR_LANES_SPLIT)
#define TIR_LANES_OUTLINE
#else
#define TIR_LANES_OUTLINE inline
#endif

namespace tir_lanes {

// ---- fibers -----------------------------------------------------------------
// A fiber is a stack and a saved stack pointer. On x86-64 a switch saves the
// callee-saved registers on the current stack, stores its pointer and loads
// the other's (no system call, unlike swapcontext, which also saves the
// signal mask); elsewhere ucontext does it.
#if defined(__x86_64__)
extern "C" void tir_lanes_switch(void **from, void *to);
asm(".pushsection .text\n"
    ".weak tir_lanes_switch\n"
    ".hidden tir_lanes_switch\n"
    ".type tir_lanes_switch,@function\n"
    "tir_lanes_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size tir_lanes_switch, .-tir_lanes_switch\n"
    ".popsection\n");
struct Context {
  void *sp = nullptr;
};
// A context that starts `entry` (which never returns) on the stack [base, base + bytes).
inline void MakeContext(Context &c, void *base, size_t bytes, void (*entry)(), Context *) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(base) + bytes) & ~uintptr_t(15);
  void **sp = reinterpret_cast<void **>(top);
  *--sp = nullptr;                             // entry's (unused) return address
  *--sp = reinterpret_cast<void *>(entry);     // where the first switch returns to
  for (int r = 0; r < 6; ++r) *--sp = nullptr;  // rbp rbx r12 r13 r14 r15
  c.sp = sp;
}
inline void SwitchTo(Context &from, Context &to) { tir_lanes_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
};
inline void MakeContext(Context &c, void *base, size_t bytes, void (*entry)(), Context *link) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = base;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = &link->uc;
  makecontext(&c.uc, entry, 0);
}
inline void SwitchTo(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }
#endif

struct Dim3 {
  unsigned x, y, z;
};

enum class Park { kRunnable, kBarrier, kWarp, kSpin, kDone, kAborted, kNamedBarrier, kCluster };

enum Collective { kShflXor = 1, kShflDown, kShflIdx, kLdmatrix, kMmaBf16, kMmaF16, kMmaTf32 };

inline const char *CollectiveName(int op) {
  switch (op) {
    case kShflXor: return "shfl.sync.bfly";
    case kShflDown: return "shfl.sync.down";
    case kShflIdx: return "shfl.sync.idx";
    case kLdmatrix: return "ldmatrix";
    case kMmaBf16: return "mma.sync.m16n8k16.bf16";
    case kMmaF16: return "mma.sync.m16n8k16.f16";
    case kMmaTf32: return "mma.sync.m16n8k8.tf32";
  }
  return "collective";
}

struct AsyncCopy {
  size_t offset;  // in the arena
  unsigned char data[16];
  int group;
};

// A wgmma in flight: its result, landing in `d` at the wait_group that
// covers commit group `group`.
struct WgmmaPending {
  float *d;
  const float *future;
  int *group;
  int n;
};

struct Lane {
  Context ctx;
  void *stack = nullptr;
  Dim3 tid = {0, 0, 0};
  int id = 0;  // linear thread index in the block
  Park park = Park::kDone;
  // The collective this lane waits at.
  int op = 0, arg = 0;
  unsigned mask = 0;
  uint64_t in[10] = {};
  uint64_t out[4] = {};
  const unsigned char *addr = nullptr;
  // cp.async copies issued and not landed, and the commit-group count.
  std::vector<AsyncCopy> copies;
  int committed = 0;
  // Per mbarrier (by index), the phases this thread saw complete.
  std::vector<uint32_t> observed;
  uint32_t proxy_fences = 0;  // fence.proxy.async count
  uint32_t wgmma_fences = 0;  // wgmma.fence count
  int wgmma_committed = 0;    // wgmma.commit_group count
  std::vector<WgmmaPending> wgmma;
  // mbarrier arrivals made, and per thread of the block the arrivals of it
  // that completed phases this thread saw complete (what it synchronized with).
  uint32_t arrivals = 0;
  std::vector<uint32_t> synced;
  // wgmma commit groups retired (by wait_group), and at each of this
  // thread's mbarrier arrivals how many were.
  int wgmma_retired = 0;
  uint32_t retired_epoch = 0;  // the barrier interval of the last retirement
  std::vector<int> retired_at_arrival;
  // Named barriers passed, and per thread of the block its count at the
  // latest named barrier that orders it before this thread (transitively).
  uint32_t named_passed = 0;
  std::vector<uint32_t> named_seen;
  // The fence.proxy.async count when this thread arrived at each named
  // barrier it passed (by count - 1), at each of its mbarrier arrivals (by
  // count - 1), and at the block's latest barrier (TIR_SYNC).
  std::vector<uint32_t> fences_at_named, fences_at_arrival;
  uint32_t fences_at_block = 0;
  int bulk_committed = 0;  // cp.async.bulk.commit_group count
};

// An mbarrier: expected arrivals per phase, arrivals and transaction bytes
// still pending in the current phase, and the phases completed.
struct MBarrier {
  size_t offset = 0;
  int count = 0, pending = 0;
  long long tx = 0;
  uint32_t phase = 0;
  // The thread that initialized it, the barrier interval it did so in and
  // its mbarrier arrivals before (what orders the init before a use).
  int init_thread = -1;
  uint32_t init_epoch = 0, init_arrivals = 0;
  bool race_reported = false;
  // The cluster barriers its block had passed at the init (a peer CTA's use
  // must come after one more; see the cluster section).
  uint32_t init_cluster_epoch = 0;
  // Per thread: its latest arrival (1-based) in the open phase, and in the
  // phases completed so far.
  std::vector<uint32_t> open, completed;
};

// Per shared byte: the last writer and reader in the barrier interval of
// their epoch, and the lane whose cp.async to it has not landed (-1).
// For bytes a TMA wrote: the mbarrier (index) and the phase its copy
// completes in, and the swizzle mode it wrote them in (-1: ordinary stores);
// for bytes ordinary stores wrote: the writer's fence.proxy.async count then.
struct Shadow {
  uint32_t write_epoch, read_epoch;
  int16_t writer, reader;  // reader -2: several lanes read it
  int16_t pending;
  int16_t async_bar;
  uint32_t async_phase;
  uint32_t fence_at;
  uint32_t arrivals_at;  // the writer's mbarrier arrivals before the store
  int8_t swizzle;
  uint32_t writer_named;  // the writer's named barriers passed before the store
};
constexpr Shadow kFresh = {0, 0, -1, -1, -1, -1, 0, 0, 0, -1, 0};

// A bulk tensor store's read of shared bytes [offset, offset + bytes), by
// `issuer` in its bulk group `group`; once a wait_group.read covers it,
// the barrier interval and the issuer's named barriers passed then.
struct BulkStore {
  size_t offset = 0, bytes = 0;
  int issuer = 0, group = 0;
  bool retired = false;
  uint32_t retired_epoch = 0, retired_named = 0;
};

constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kArenaBytes = 256 * 1024 + 64 * 1024;  // Hopper's 227 KiB and the static arrays

struct Block {
  std::vector<Lane> lanes;
  int threads = 0;
  Context sched;
  Lane *cur = nullptr;
  std::vector<unsigned char> arena;
  std::vector<Shadow> shadow;
  size_t used = 0, high_water = 0, dynamic_bytes = 0;
  std::map<std::string, size_t> named;
  uint32_t epoch = 1;
  std::function<void()> body;
  const char *kernel = "tir_kernel";
  Dim3 block = {0, 0, 0};
  // The schedule the block runs under (Order), its seed, the lane order of
  // the current round and the shuffle's state.
  int order = 0;
  uint64_t seed = 0, rng = 0;
  std::vector<int> round;
  // Errors of this launch.
  std::string first_error;
  long errors = 0;
  bool fatal = false;
  uint64_t events = 0;  // lane events: shared accesses, collective and barrier arrivals
  bool in_scheduler = false;  // running a collective for its lanes
  std::vector<MBarrier> mbarriers;
  uint64_t mbarrier_changes = 0, woken_at = 0;  // spinners wake when barriers change
  // Per 16-byte chunk of shared memory and warpgroup: the newest wgmma
  // commit group that reads it (-1 none). A wgmma reads its operands until
  // the wait_group that retires its group, so a write to the chunk must
  // come after such a wait of the reading warpgroup and an mbarrier arrival
  // the writer saw complete.
  std::vector<std::array<int32_t, 8>> wgmma_reads;
  size_t wgmma_reads_dirty = 0;
  // Bulk tensor stores whose shared-memory reads may not be over (BulkStore).
  std::vector<BulkStore> bulk_stores;
  // Thread-block clusters (see the cluster section): the CTAs of this
  // block's cluster by rank (empty when it runs alone), its rank, the
  // cluster barriers passed, whether all its threads exited, and per peer
  // rank the cluster barriers passed (+1) at that peer's latest use of this
  // CTA's shared memory or mbarriers (0: none).
  std::vector<Block *> cluster;
  int cluster_rank = 0;
  uint32_t cluster_epoch = 0;
  bool exited = false;
  std::vector<uint32_t> peer_use;
};

// Thrown (on the scheduler's stack only) to stop a launch.
struct Stop {};

inline thread_local Block *g_block = nullptr;

inline Block &B() { return *g_block; }
inline Lane &Current() { return *g_block->cur; }

TIR_LANES_OUTLINE std::string Tid(const Lane &l);
// The orders a block's runnable threads run in, round by round.
enum Order { kNaturalOrder = 0, kHighIdsFirst = 1, kShuffled = 2 };

TIR_LANES_OUTLINE std::string ScheduleName(int order, uint64_t seed);

TIR_LANES_OUTLINE std::string Where();

TIR_LANES_OUTLINE void Report(const std::string &reason, const std::string &message);

// Parks the current lane; the scheduler resumes it.
inline void Yield(Park p) {
  Lane &l = Current();
  l.park = p;
  SwitchTo(l.ctx, B().sched);
}

// Reports `message` and stops the launch: the current lane never resumes.
// Stops the launch after an error already reported.
[[noreturn]] inline void Abort() {
  B().fatal = true;
  if (B().in_scheduler) throw Stop();
  for (;;) Yield(Park::kAborted);
}

[[noreturn]] TIR_LANES_OUTLINE void Fault(const std::string &reason, const std::string &message);

// The arena offset of `p`, `n` bytes inside the allocated shared memory.
TIR_LANES_OUTLINE size_t OffsetOf(const void *p, size_t n);

TIR_LANES_OUTLINE std::string LaneName(int id);

TIR_LANES_OUTLINE void Race(size_t offset, const char *what, int other, const char *other_did);

// Checks and records an access of `n` bytes at arena offset `off` by lane
// `id` (a write when `write`).
inline bool SawPhase(const Lane &l, int bar, uint32_t phase) {
  return bar < static_cast<int>(l.observed.size()) && l.observed[bar] > phase;
}
TIR_LANES_OUTLINE void UnseenTma(size_t off, int id, const Shadow &s);

// Whether a write by lane `w` to chunk `chunk` is ordered after every wgmma
// that reads it (see Block::wgmma_reads); reports the first that is not.
// `memo` caches verdicts per (warpgroup, group) within one copy.
TIR_LANES_OUTLINE bool WgmmaReadsDone(size_t chunk, int w, std::map<std::pair<int, int>, bool> *memo = nullptr);

// Defined with the named barriers and bulk tensor stores below.
TIR_LANES_OUTLINE bool NamedOrdered(int reader, int writer, uint32_t writer_named);
TIR_LANES_OUTLINE bool BulkStoreWriteCheck(size_t off, size_t n, int id);

TIR_LANES_OUTLINE void Record(size_t off, size_t n, bool write, int id);

inline void Touch(const void *p, size_t n, bool write) {
  ++B().events;
  Record(OffsetOf(p, n), n, write, Current().id);
}

// A block-level static shared array: the first thread to reach the
// declaration allocates it (poisoned), the others get the same storage.
inline void *Shared(const char *name, size_t bytes) {
  Block &b = B();
  auto it = b.named.find(name);
  if (it == b.named.end()) {
    const size_t at = (b.used + 15) & ~size_t(15);
    if (at + bytes > b.arena.size()) {
      Fault("SHARED_OUT_OF_BOUNDS", std::string("shared array ") + name + " does not fit in the block's shared memory");
    }
    b.used = at + bytes;
    if (b.used > b.high_water) b.high_water = b.used;
    it = b.named.emplace(name, at).first;
  }
  return b.arena.data() + it->second;
}

// The dynamic shared memory (extern __shared__), `bytes` of which the kernel uses.
inline void *DynamicShared(size_t bytes) {
  Block &b = B();
  if (bytes > b.dynamic_bytes) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "the kernel uses %zu bytes of dynamic shared memory, the launch gives %zu", bytes,
                  b.dynamic_bytes);
    Fault("SHARED_OUT_OF_BOUNDS", buf);
  }
  return b.arena.data();
}

inline void Barrier() {
  ++B().events;
  Yield(Park::kBarrier);
}

// Waits at a warp collective with the lanes of `mask`; returns when it ran.
TIR_LANES_OUTLINE void Collective(int op, int arg, unsigned mask);

// ---- cp.async ----------------------------------------------------------------

TIR_LANES_OUTLINE void CpAsync16(void *dst, const void *src, int bytes);

inline void CpAsyncCommit() { ++Current().committed; }

// cp.async.wait_group n: the copies of every committed group but the newest
// n land now.
TIR_LANES_OUTLINE void CpAsyncWait(int n);

// ---- collectives -----------------------------------------------------------

inline uint32_t Pack(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

inline float F32(uint64_t bits) {
  float f;
  const uint32_t u = static_cast<uint32_t>(bits);
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint64_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float HalfToFloat(uint16_t h, bool bf16) {
  if (bf16) return F32(uint64_t(h) << 16);
  const uint32_t sign = (uint32_t(h) & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0) {
    const float mag = float(man) * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return F32(sign | 0x7f800000u | (man << 13));
  return F32(sign | ((exp + 112) << 23) | (man << 13));
}

// ---- mbarriers (sm_90) -------------------------------------------------------

TIR_LANES_OUTLINE int MbarrierIndex(const void *p);

// A use of mbarrier `i` by the current thread (`what` it does): the init,
// a store to the barrier's bytes, must be ordered before it by a barrier,
// or by an mbarrier phase the initializer arrived at after the init and
// this thread saw complete (PTX ISA, "mbarrier.init": the init is not
// visible to other threads until then; fence.mbarrier_init alone does not
// order it).
TIR_LANES_OUTLINE void MbarrierUse(int i, const char *what);

TIR_LANES_OUTLINE void MbarrierInit(void *p, int count);

// Completes the current phase when its arrivals and bytes are all in.
inline void MbarrierSettle(MBarrier &m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phase;
    m.pending = m.count;
    for (size_t i = 0; i < m.open.size(); ++i) m.completed[i] = std::max(m.completed[i], m.open[i]);
  }
  ++B().mbarrier_changes;
}

// mbarrier.arrive (with expect_tx: `tx` more bytes this phase).
TIR_LANES_OUTLINE void MbarrierArrive(void *p, long long tx);

// mbarrier.try_wait.parity: true when the current phase's parity differs
// from `parity` (the phase of that parity completed); the thread then has
// seen every completed phase. False parks the thread until a barrier moves.
TIR_LANES_OUTLINE bool MbarrierTryWait(void *p, int parity);

// ---- TMA (cp.async.bulk.tensor) ----------------------------------------------

// What the launcher writes into a tensor-map argument for the emulator: the
// fields cuTensorMapEncodeTiled takes, for a 2D tile map.
constexpr uint64_t kTensorMapMagic = 0x50414d534e455454ull;  // "TTENSMAP"
struct TensorMapFields {
  uint64_t magic, base, dim0, dim1, stride1_bytes, box0, box1, elem_bytes, swizzle;
};

// The CU_TENSOR_MAP_SWIZZLE mode's span in bytes (0 none, 1 32B, 2 64B, 3 128B).
inline int SwizzleSpan(int mode) { return mode == 3 ? 128 : mode == 2 ? 64 : mode == 1 ? 32 : 0; }
// A shared byte address under swizzle `mode`: the 16-byte chunk index
// (bits 4..) XORed with the 128-byte line index (bits 7..) within the span.
inline size_t Swizzled(size_t addr, int mode) {
  const size_t mask = mode == 3 ? 7 : mode == 2 ? 3 : mode == 1 ? 1 : 0;
  return addr ^ (((addr >> 7) & mask) << 4);
}
inline const char *SwizzleName(int mode) {
  return mode == 3 ? "128B" : mode == 2 ? "64B" : mode == 1 ? "32B" : mode == 0 ? "none" : "?";
}

// A 2D tile load of the box at (c0 inner, c1 outer) into `dst`, completing
// its bytes on the mbarrier `bar`.
TIR_LANES_OUTLINE void TmaLoad2d(void *dst, const void *map, int c0, int c1, void *bar);

// prefetch.tensormap: only a map the launcher encoded may be prefetched
// (a GPU faults on anything else).
inline void PrefetchTensorMap(const void *map) {
  ++B().events;
  uint64_t magic;
  std::memcpy(&magic, map, sizeof(magic));
  if (magic != kTensorMapMagic) {
    Fault("INVALID_TENSOR_MAP", LaneName(Current().id) + " prefetches a tensor map the launcher did not encode");
  }
}

// fence.proxy.async: this thread's ordinary shared stores so far are visible
// to the async proxy (wgmma, TMA).
inline void ProxyFence() {
  ++B().events;
  ++Current().proxy_fences;
}

// ---- named barriers and bulk tensor stores (sm_90) ---------------------------
//
// bar.sync id, n (PTX ISA, "Parallel Synchronization and Communication
// Instructions: bar, barrier"): releases once n threads reached barrier id;
// it orders the accesses of those threads only. Each thread counts the named
// barriers it passed (Lane::named_passed) and keeps, per other thread, that
// thread's count at the latest named barrier ordering it before this one
// (Lane::named_seen, merged over the participants, so the order is
// transitive); a shared byte keeps its writer's count at the store
// (Shadow::writer_named), and the race check takes a later count as order.
// Each thread also keeps its fence.proxy.async count at each barrier it
// arrived at (named, block, mbarrier: Lane::fences_at_*): a byte the async
// proxy reads (a bulk store, a wgmma) is fenced when its writer fenced
// before a barrier that orders the store before the reader (FencesSeen),
// not merely before the read.
//
// cp.async.bulk.tensor.2d.global.shared::cta.bulk_group (PTX ISA, "Data
// Movement and Conversion Instructions: cp.async.bulk.tensor"): the box at
// (c0 inner, c1 outer) of the map's tensor is written from shared memory in
// the map's swizzle, elements outside the tensor skipped. The emulator
// writes global memory when the store issues and checks its reads then: a
// byte an ordinary store of another thread wrote with no barrier (block or
// named) between is a SHARED_MEMORY_RACE, a byte whose writer made no
// fence.proxy.async after the store a MISSING_PROXY_FENCE. The reads stay
// pending until the issuer's cp.async.bulk.wait_group.read covers the
// store's bulk group (cp.async.bulk.commit_group closes one); a write to
// those bytes before that wait, or by another thread no barrier orders
// after it, and a thread that exits with a store pending, are each a
// BULK_STORE_NOT_READ.

TIR_LANES_OUTLINE bool NamedOrdered(int reader, int writer, uint32_t writer_named);

TIR_LANES_OUTLINE void NamedBarrier(int id, int threads);

// Releases the named barriers whose thread counts arrived (Advance).
TIR_LANES_OUTLINE bool ReleaseNamedBarriers();

// The store of the box at (c0, c1) of `map` from shared `src`.
TIR_LANES_OUTLINE void TmaStore2d(const void *map, const void *src, int c0, int c1);

inline void BulkCommit() { ++Current().bulk_committed; }

// cp.async.bulk.wait_group.read n: the stores of every committed bulk group
// but the newest n are done reading shared memory.
TIR_LANES_OUTLINE void BulkWaitRead(int n);

// Whether lane `id` may write shared bytes [off, off + n): no bulk store
// may still read them; reports the first that may.
TIR_LANES_OUTLINE bool BulkStoreWriteCheck(size_t off, size_t n, int id);

TIR_LANES_OUTLINE void BulkStoresAtExit();

// ---- wgmma (sm_90a) -----------------------------------------------------------

// The descriptor's swizzle (layout type, bits 62-63: 0 none, 1 128B, 2 64B,
// 3 32B) as a CU_TENSOR_MAP_SWIZZLE mode.
inline int DescriptorSwizzle(uint64_t desc) {
  const int layout = static_cast<int>((desc >> 62) & 3);
  return layout == 1 ? 3 : layout == 2 ? 2 : layout == 3 ? 1 : 0;
}

// The shared byte of element (mn, k) (16-bit elements) of the matrix a
// descriptor describes, K-major or MN-major, in the canonical layouts of the
// PTX ISA ("Shared Memory Matrix Layout"; T = 8 elements = 16 bytes):
//   K-major  none ((8,m),(T,2k)):((1T,SBO),(1,LBO)); 32/64/128B ((8,m),(T,2k)):((2T|4T|8T,SBO),(1,T))
//   MN-major none ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)); 32/64/128B ((T,s,m),(8,k)):((1,T,LBO),(sT,SBO))
// then swizzled on the address bits.
TIR_LANES_OUTLINE size_t DescriptorByte(uint64_t desc, int mn, int k, bool mn_major);

// Reads the 16-bit element at shared byte `off` for a wgmma of lane `l`,
// with the async-proxy checks; false after the first error.
TIR_LANES_OUTLINE bool WgmmaRead(size_t off, const Lane &l, int mode, uint16_t *v);

// The accumulators of one wgmma: what the thread's registers hold, the
// result of the wgmma still in flight, its commit group (-1 none), and
// whether ordinary code wrote them since the thread's last wgmma.fence.
struct WgmmaAccumulators {
  float *d, *future;
  int *group;
  bool *touched;
  uint32_t *touched_at;
};

// wgmma.mma_async.m64nNk16 (f32 accumulators, bf16 or f16 operands, both
// from shared memory) for the calling thread's share: with w its warp in
// the warpgroup, g = lane/4 and t = lane%4, accumulator i is D(16w + g +
// 8((i/2)%2), 8(i/4) + 2t + i%2) (PTX ISA, "Register Fragments" of wgmma
// .m64nNk16 D). A (64 x 16) is read K-major (or M-major with trans_a), B
// (16 x N) K-major (or N-major with trans_b). The result lands at the
// wgmma.wait_group covering the commit group it joins; until then the
// registers hold NaN.
TIR_LANES_OUTLINE void Wgmma(bool bf16, int n, WgmmaAccumulators acc, uint64_t desc_a, uint64_t desc_b, int scale_d, int trans_a,
                  int trans_b);

inline void WgmmaFence() {
  ++B().events;
  ++Current().wgmma_fences;
}
inline void WgmmaCommit() {
  ++B().events;
  ++Current().wgmma_committed;
}
// wgmma.wait_group n: the wgmmas of every committed group but the newest n
// land in their registers.
TIR_LANES_OUTLINE void WgmmaWait(int n);
// A read of accumulator registers by ordinary code.
inline void WgmmaUse(const int *group) {
  if (*group >= 0) {
    Fault("WGMMA_NOT_WAITED", LaneName(Current().id) +
                                  " reads wgmma accumulators before a wgmma.wait_group covers the wgmma that writes them");
  }
}

// Runs the collective the lanes `members` (all parked at it) wait at.
TIR_LANES_OUTLINE void Execute(const std::vector<Lane *> &members);

// A fiber's first frame: runs the kernel, then parks for good.
inline void Entry() {
  Block &b = B();
  b.body();
  BulkStoresAtExit();
  b.cur->park = Park::kDone;
  for (;;) SwitchTo(b.cur->ctx, b.sched);
}

inline const char *ParkName(Park p) {
  switch (p) {
    case Park::kRunnable: return "runnable";
    case Park::kBarrier: return "at a barrier";
    case Park::kWarp: return "at a warp collective";
    case Park::kSpin: return "waiting on an mbarrier";
    case Park::kDone: return "exited";
    case Park::kAborted: return "stopped";
    case Park::kNamedBarrier: return "at a named barrier";
    case Park::kCluster: return "at a cluster barrier";
  }
  return "?";
}

// One scheduling step after every runnable lane ran: runs the warp
// collectives whose members all arrived, else releases a barrier every live
// lane reached; false (with an error when `report`) when the block cannot
// go on.
TIR_LANES_OUTLINE bool AdvanceBlock(bool report);
inline bool Advance() { return AdvanceBlock(true); }

// A pool of fiber stacks for this host thread, each with a guard page below.
inline void *StackFor(Lane &l) {
  if (l.stack == nullptr) {
    const size_t page = 4096;
    void *p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    mprotect(p, page, PROT_NONE);
    l.stack = static_cast<char *>(p) + page;
  }
  return l.stack;
}

struct Result {
  long errors = 0;
  std::string first_error;
  uint64_t events = 0;
  uint64_t lanes = 0;  // thread executions (blocks x threads, each schedule a block ran under)
};

// How a launch explores schedules.
struct LaunchOptions {
  // The schedules: 1 the natural order alone; 2 adds high thread ids
  // first; each one more a shuffle of seed `seed` + k.
  int schedules = 1;
  uint64_t seed = 0;
  // How many blocks run under every schedule, compared byte for byte
  // (the first, the last, then spread over the grid; < 0 every block); the
  // others take the schedules in turn.
  long explore_blocks = -1;
  // The global memory the kernel may write (outputs, workspace): saved
  // before an exploring block and restored before each further schedule.
  std::vector<std::pair<void *, size_t>> writable;
};

inline uint64_t SplitMix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The lane order of the next round under the block's schedule.
inline void NextRound(Block &b) {
  b.round.resize(b.threads);
  for (int i = 0; i < b.threads; ++i) b.round[i] = b.order == kHighIdsFirst ? b.threads - 1 - i : i;
  if (b.order == kShuffled) {
    for (int i = b.threads - 1; i > 0; --i) std::swap(b.round[i], b.round[SplitMix(b.rng) % uint64_t(i + 1)]);
  }
}

// Runs the current block (b.block) once from poisoned shared memory under
// schedule `order` (seed `seed` for a shuffle); false when the emulator had
// no memory for the threads' stacks.
TIR_LANES_OUTLINE bool PrepareBlock(Block &b, Dim3 block, int order, uint64_t seed, Result &result);

TIR_LANES_OUTLINE bool RunBlock(Block &b, Dim3 block, int order, uint64_t seed, Result &result);

// Whether block `index` of `count` runs under every schedule: the first,
// the last, then evenly spread, `budget` in all (< 0: every block).
inline bool Explores(uint64_t index, uint64_t count, long budget) {
  if (budget < 0 || uint64_t(budget) >= count) return true;
  if (budget == 0) return false;
  if (index == 0) return true;
  if (budget == 1) return false;
  if (index == count - 1) return true;
  // budget - 2 more at index k * count / (budget - 1), k = 1 .. budget - 2.
  const uint64_t slots = uint64_t(budget) - 1;
  for (uint64_t k = 1; k < slots; ++k) {
    if (index == k * count / slots) return true;
  }
  return false;
}

// Runs `body` (the kernel, reading threadIdx / blockIdx) for every block of
// `grid` with `block` threads each and `dynamic_bytes` of dynamic shared
// memory, under the schedules of `options`; `set_block` publishes the
// block's index before its threads start.
TIR_LANES_OUTLINE Result Launch(const char *kernel, Dim3 grid, Dim3 block, size_t dynamic_bytes,
                     const std::function<void(Dim3)> &set_block, std::function<void()> body,
                     const LaunchOptions &options = {});

// ==== thread-block clusters (sm_90) ===========================================
//
// A cluster's CTAs run together: all their threads are fibers of one
// scheduling domain, round by round (the CTAs in the schedule's order, each
// CTA's threads in its own), each CTA with its own shared arena, barriers
// (__syncthreads per CTA), mbarriers and blockIdx. Across the CTAs (PTX ISA,
// "Cluster of Cooperative Thread Arrays" and "Distributed Shared Memory"):
//  - %cluster_ctarank is the CTA's rank in its cluster, x fastest;
//  - barrier.cluster (arrive.release then wait.acquire) releases when every
//    live thread of every CTA of the cluster reached it, and orders all
//    that came before it in the cluster before all that comes after;
//  - mbarrier.arrive.release.cluster on a peer's mbarrier (an address from
//    mapa.shared::cluster) is an arrival at that peer's mbarrier at the
//    same offset;
//  - a TMA load with .multicast::cluster writes its box into the shared
//    memory of every CTA its 16-bit ctaMask names, at the same offset, and
//    completes its bytes on each one's mbarrier at the same offset.
// What the emulator catches, besides what it catches in one CTA:
//  - a ctaMask naming a CTA outside the cluster (or none):
//    INVALID_MULTICAST_MASK; a rank outside it: INVALID_CLUSTER_RANK;
//  - bytes landing on an mbarrier whose phase had all its arrivals and
//    expected fewer bytes, or more bytes landed on an mbarrier than its
//    phases expected by the time its CTA exits: MBARRIER_TX_OVERFLOW;
//    bytes that never land (a
//    CTA left out of a mask): the waiting thread's MBARRIER_DEADLOCK;
//  - a peer's use of an mbarrier (multicast completion, remote arrival)
//    that no barrier.cluster orders after its mbarrier.init:
//    SHARED_MEMORY_RACE;
//  - a CTA whose threads all exited while a peer's use of its shared
//    memory or mbarriers is not ordered before the exit by a
//    barrier.cluster, or any use of a CTA that exited: CLUSTER_PEER_EXITED.
// Not modelled: ordinary loads and stores to a peer's shared memory, and
// the check that a multicast into a peer's stage comes after that peer's
// wgmmas finished reading it (it is made for the issuing CTA's own stage).
// A launch without cluster dimensions does not come here; a kernel that
// calls barrier.cluster alone in its (implicit, one-CTA) cluster gets a
// barrier of its threads.

constexpr int kMaxCluster = 8;

inline int ClusterRank() { return B().cluster_rank; }
inline int ClusterSize() { return B().cluster.empty() ? 1 : static_cast<int>(B().cluster.size()); }

// barrier.cluster.arrive.release + barrier.cluster.wait.acquire.
TIR_LANES_OUTLINE void ClusterSync();

// The CTA of rank `rank` in the current thread's cluster, which the thread
// uses (`what` it does to it); a peer's use is recorded for the exit check.
TIR_LANES_OUTLINE Block &Peer(int rank, const char *what);

// The mbarrier at arena offset `off` of peer CTA `p`, used by the current
// thread of another CTA (`what` it does): its init must be ordered before
// the use by a barrier.cluster (PTX ISA, "mbarrier.init" and
// "barrier.cluster").
TIR_LANES_OUTLINE int PeerMbarrier(Block &p, size_t off, const char *what);

// mbarrier.arrive.release.cluster.shared::cluster on the mbarrier of CTA
// `rank` at the offset of `p` (mapa.shared::cluster of `p` to that CTA).
TIR_LANES_OUTLINE void MbarrierArriveCluster(void *p, int rank);

// cp.async.bulk.tensor.2d...multicast::cluster: the box at (c0, c1) of
// `map` lands at the offset of `dst` in every CTA of `mask` and completes
// its bytes on each one's mbarrier at the offset of `bar`.
TIR_LANES_OUTLINE void TmaLoad2dMulticast(void *dst, const void *map, int c0, int c1, void *bar, unsigned mask);

// After CTA `t`'s threads all exited: a peer's use of it not ordered
// before the exit by a barrier.cluster is reported.
TIR_LANES_OUTLINE void ClusterExitCheck(Block &t);

// Runs the CTAs of one cluster (`cl`, by rank; their `block` index set)
// together once from poisoned shared memory under schedule `order`.
TIR_LANES_OUTLINE bool RunCluster(std::vector<Block *> &cl, Dim3 block, int order, uint64_t seed, Result &result,
                       const std::function<void(Dim3)> &set_block);

// Launch for a grid of thread-block clusters of `cluster` CTAs (each
// dimension dividing the grid's): the CTAs of a cluster run together
// (RunCluster), clusters one after another under the schedules of
// `options`, exploring clusters as Launch explores blocks. A cluster of
// one CTA is Launch.
TIR_LANES_OUTLINE Result LaunchClusters(const char *kernel, Dim3 grid, Dim3 block, Dim3 cluster, size_t dynamic_bytes,
                             const std::function<void(Dim3)> &set_block, std::function<void()> body,
                             const LaunchOptions &options = {});

// ---- the machinery (see TIR_LANES_OUTLINE) ---------------------------------
#if !defined(TIR_LANES_SPLIT) || defined(TIR_LANES_RUNTIME)

TIR_LANES_OUTLINE std::string Tid(const Lane &l) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "(%u,%u,%u)", l.tid.x, l.tid.y, l.tid.z);
  return buf;
}

TIR_LANES_OUTLINE std::string ScheduleName(int order, uint64_t seed) {
  if (order == kNaturalOrder) return "the natural order";
  if (order == kHighIdsFirst) return "high thread ids first";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "the order of seed %llu", static_cast<unsigned long long>(seed));
  return buf;
}

TIR_LANES_OUTLINE std::string Where() {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "kernel %s block (%u,%u,%u)%s%s: ", B().kernel, B().block.x, B().block.y, B().block.z,
                B().order == kNaturalOrder ? "" : " under ",
                B().order == kNaturalOrder ? "" : ScheduleName(B().order, B().seed).c_str());
  return buf;
}

TIR_LANES_OUTLINE void Report(const std::string &reason, const std::string &message) {
  Block &b = B();
  if (b.errors++ == 0) b.first_error = reason + ": " + Where() + message;
}

[[noreturn]] TIR_LANES_OUTLINE void Fault(const std::string &reason, const std::string &message) {
  Report(reason, message);
  B().fatal = true;
  if (B().in_scheduler) throw Stop();
  for (;;) Yield(Park::kAborted);
}

TIR_LANES_OUTLINE size_t OffsetOf(const void *p, size_t n) {
  Block &b = B();
  const unsigned char *q = static_cast<const unsigned char *>(p);
  if (q < b.arena.data() || q + n > b.arena.data() + b.used) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "thread %s accesses %zu bytes at %p, outside the block's %zu bytes of shared memory",
                  Tid(Current()).c_str(), n, p, b.used);
    Fault("SHARED_OUT_OF_BOUNDS", buf);
  }
  return static_cast<size_t>(q - b.arena.data());
}

TIR_LANES_OUTLINE std::string LaneName(int id) {
  const Lane &l = B().lanes[id];
  return "thread " + Tid(l);
}

TIR_LANES_OUTLINE void Race(size_t offset, const char *what, int other, const char *other_did) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s %s shared byte %zu that %s %s with no barrier between",
                LaneName(Current().id).c_str(), what, offset,
                other >= 0 ? LaneName(other).c_str() : "several threads", other_did);
  Report("SHARED_MEMORY_RACE", buf);
}

TIR_LANES_OUTLINE void UnseenTma(size_t off, int id, const Shadow &s) {
  char buf[240];
  std::snprintf(buf, sizeof(buf),
                "%s reads shared byte %zu before it saw the mbarrier at byte %zu complete the phase of the TMA "
                "copy that writes it (no try_wait on that phase)",
                LaneName(id).c_str(), off, B().mbarriers[s.async_bar].offset);
  Report("UNCOMPLETED_ASYNC_COPY", buf);
}

TIR_LANES_OUTLINE bool WgmmaReadsDone(size_t chunk, int w, std::map<std::pair<int, int>, bool> *memo) {
  Block &b = B();
  if (chunk >= b.wgmma_reads.size()) return true;
  std::array<int32_t, 8> &r = b.wgmma_reads[chunk];
  const Lane &writer = b.lanes[w];
  for (int g = 0; g < 8; ++g) {
    const int group = r[g];
    if (group < 0) continue;
    bool ordered = false;
    auto cached = memo ? memo->find({g, group}) : decltype(memo->end()){};
    if (memo && cached != memo->end()) {
      ordered = cached->second;
    } else if (w / 128 == g) {
      ordered = writer.wgmma_retired > group;  // its own warpgroup: its own wait
    } else {
      // A lane of the reading warpgroup retired the group and then arrived at
      // an mbarrier phase the writer saw complete, or a barrier came since.
      for (int l = g * 128; l < (g + 1) * 128 && l < b.threads && !ordered; ++l) {
        const Lane &reader = b.lanes[l];
        const uint32_t a = l < static_cast<int>(writer.synced.size()) ? writer.synced[l] : 0;
        ordered = (a > 0 && reader.retired_at_arrival[a - 1] > group) ||
                  (reader.wgmma_retired > group && reader.retired_epoch < b.epoch);
      }
      if (memo) (*memo)[{g, group}] = ordered;
    }
    if (!ordered) {
      char buf[300];
      std::snprintf(buf, sizeof(buf),
                    "%s writes shared byte %zu, which a wgmma of warpgroup %d (commit group %d) may still read: no "
                    "wgmma.wait_group retiring it, then an mbarrier arrival this thread saw complete, came between",
                    LaneName(w).c_str(), chunk * 16, g, group);
      Report("SHARED_MEMORY_RACE", buf);
      return false;
    }
    r[g] = -1;
  }
  return true;
}

TIR_LANES_OUTLINE void Record(size_t off, size_t n, bool write, int id) {
  Block &b = B();
  bool reported = false;
  if (write && !b.bulk_stores.empty()) reported = !BulkStoreWriteCheck(off, n, id);
  for (size_t k = 0; k < n; ++k) {
    Shadow &s = b.shadow[off + k];
    if (!reported && !write && s.async_bar >= 0 && !SawPhase(b.lanes[id], s.async_bar, s.async_phase)) {
      UnseenTma(off + k, id, s);
      reported = true;
    }
    if (!reported && s.pending >= 0 && !write) {
      char buf[200];
      std::snprintf(buf, sizeof(buf), "%s reads shared byte %zu before the cp.async of %s to it completed (no cp.async.wait_group covers it)",
                    LaneName(id).c_str(), off + k, LaneName(s.pending).c_str());
      Report("UNCOMPLETED_ASYNC_COPY", buf);
      reported = true;
    }
    if (!reported && s.write_epoch == b.epoch && s.writer != id && !NamedOrdered(id, s.writer, s.writer_named)) {
      Race(off + k, write ? "writes" : "reads", s.writer, "wrote");
      reported = true;
    }
    if (write) {
      if (!reported && ((off + k) % 16 == 0 || k == 0) && !WgmmaReadsDone((off + k) / 16, id)) reported = true;
      if (!reported && s.read_epoch == b.epoch && s.reader != id) {
        Race(off + k, "writes", s.reader, "read");
        reported = true;
      }
      s.write_epoch = b.epoch;
      s.writer = static_cast<int16_t>(id);
      s.async_bar = -1;
      s.swizzle = -1;
      s.fence_at = b.lanes[id].proxy_fences;
      s.arrivals_at = b.lanes[id].arrivals;
      s.writer_named = b.lanes[id].named_passed;
    } else if (s.read_epoch != b.epoch) {
      s.read_epoch = b.epoch;
      s.reader = static_cast<int16_t>(id);
    } else if (s.reader != id) {
      s.reader = -2;
    }
  }
}

TIR_LANES_OUTLINE void Collective(int op, int arg, unsigned mask) {
  Lane &l = Current();
  ++B().events;
  if (!(mask & (1u << (l.id % 32)))) {
    Fault("WARP_DIVERGENCE", LaneName(l.id) + " calls " + CollectiveName(op) + " with a member mask that leaves it out");
  }
  l.op = op;
  l.arg = arg;
  l.mask = mask;
  Yield(Park::kWarp);
}

TIR_LANES_OUTLINE void CpAsync16(void *dst, const void *src, int bytes) {
  Lane &l = Current();
  ++B().events;
  if (reinterpret_cast<uintptr_t>(dst) % 16 != 0) {
    Fault("MISALIGNED_ADDRESS", LaneName(l.id) + " issues cp.async of 16 bytes to a shared address not 16-byte aligned");
  }
  const size_t off = OffsetOf(dst, 16);
  // The copy writes its bytes later: whoever read or wrote them in this
  // barrier interval races with it.
  Record(off, 16, true, l.id);
  AsyncCopy c;
  c.offset = off;
  std::memset(c.data, 0, 16);
  if (bytes > 0) std::memcpy(c.data, src, bytes > 16 ? 16 : bytes);
  c.group = l.committed;
  Block &b = B();
  for (size_t k = 0; k < 16; ++k) {
    b.arena[off + k] = 0xff;
    b.shadow[off + k].pending = static_cast<int16_t>(l.id);
  }
  l.copies.push_back(c);
}

TIR_LANES_OUTLINE void CpAsyncWait(int n) {
  Lane &l = Current();
  Block &b = B();
  ++b.events;
  std::vector<AsyncCopy> rest;
  for (const AsyncCopy &c : l.copies) {
    if (c.group < l.committed - n) {
      std::memcpy(&b.arena[c.offset], c.data, 16);
      for (size_t k = 0; k < 16; ++k) {
        Shadow &s = b.shadow[c.offset + k];
        if (s.pending == l.id) s.pending = -1;
        s.write_epoch = b.epoch;
        s.writer = static_cast<int16_t>(l.id);
      }
    } else {
      rest.push_back(c);
    }
  }
  // A copy still in flight to bytes an older one just filled keeps them poisoned.
  for (const AsyncCopy &c : rest) {
    for (size_t k = 0; k < 16; ++k) {
      b.arena[c.offset + k] = 0xff;
      b.shadow[c.offset + k].pending = static_cast<int16_t>(l.id);
    }
  }
  l.copies.swap(rest);
}

TIR_LANES_OUTLINE int MbarrierIndex(const void *p) {
  Block &b = B();
  const size_t off = OffsetOf(p, 8);
  for (size_t i = 0; i < b.mbarriers.size(); ++i) {
    if (b.mbarriers[i].offset == off) return static_cast<int>(i);
  }
  char buf[240];
  std::snprintf(buf, sizeof(buf),
                "%s uses shared byte %zu as an mbarrier that no mbarrier.init set up (yet: another thread's init "
                "needs a barrier between it and this use)",
                LaneName(Current().id).c_str(), off);
  Fault("MBARRIER_UNINITIALIZED", buf);
}

TIR_LANES_OUTLINE void MbarrierUse(int i, const char *what) {
  Block &b = B();
  MBarrier &m = b.mbarriers[i];
  const Lane &l = Current();
  if (m.init_thread < 0 || m.init_thread == l.id || m.init_epoch != b.epoch || m.race_reported) return;
  if (size_t(m.init_thread) < l.synced.size() && l.synced[m.init_thread] > m.init_arrivals) return;
  m.race_reported = true;
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "%s %s the mbarrier at shared byte %zu that %s initialized (mbarrier.init) with no barrier between: "
                "the init is not ordered before other threads' use (__syncthreads after mbarrier.init and "
                "fence.mbarrier_init)",
                LaneName(l.id).c_str(), what, m.offset, LaneName(m.init_thread).c_str());
  Report("SHARED_MEMORY_RACE", buf);
}

TIR_LANES_OUTLINE void MbarrierInit(void *p, int count) {
  Block &b = B();
  ++b.events;
  const size_t off = OffsetOf(p, 8);
  if (off % 8 != 0) Fault("MISALIGNED_ADDRESS", LaneName(Current().id) + " initializes an mbarrier not 8-byte aligned");
  // The init stores the barrier's 8 bytes.
  Record(off, 8, true, Current().id);
  MBarrier m;
  m.offset = off;
  m.count = m.pending = count;
  m.init_thread = Current().id;
  m.init_epoch = b.epoch;
  m.init_arrivals = Current().arrivals;
  m.init_cluster_epoch = b.cluster_epoch;
  m.open.assign(b.threads, 0);
  m.completed.assign(b.threads, 0);
  for (MBarrier &o : b.mbarriers) {
    if (o.offset == off) {
      o = m;
      ++b.mbarrier_changes;
      return;
    }
  }
  b.mbarriers.push_back(m);
  ++b.mbarrier_changes;
}

TIR_LANES_OUTLINE void MbarrierArrive(void *p, long long tx) {
  Block &b = B();
  ++b.events;
  const int i = MbarrierIndex(p);
  MbarrierUse(i, "arrives at");
  MBarrier &m = b.mbarriers[i];
  Lane &l = Current();
  m.open[l.id] = ++l.arrivals;
  l.retired_at_arrival.push_back(l.wgmma_retired);
  l.fences_at_arrival.push_back(l.proxy_fences);
  m.tx += tx;
  if (--m.pending < 0) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%s arrives at the mbarrier at byte %zu once more than its count of %d in one phase",
                  LaneName(Current().id).c_str(), m.offset, m.count);
    Report("MBARRIER_OVERFLOW", buf);
    m.pending = 0;
  }
  MbarrierSettle(m);
}

TIR_LANES_OUTLINE bool MbarrierTryWait(void *p, int parity) {
  Block &b = B();
  Lane &l = Current();
  ++b.events;
  const int i = MbarrierIndex(p);
  MbarrierUse(i, "waits on");
  MBarrier &m = b.mbarriers[i];
  if ((m.phase & 1u) != (static_cast<unsigned>(parity) & 1u)) {
    if (l.observed.size() <= size_t(i)) l.observed.resize(i + 1, 0);
    if (l.observed[i] < m.phase) l.observed[i] = m.phase;
    if (l.synced.size() < m.completed.size()) l.synced.resize(m.completed.size(), 0);
    for (size_t t = 0; t < m.completed.size(); ++t) l.synced[t] = std::max(l.synced[t], m.completed[t]);
    return true;
  }
  l.arg = i;
  l.op = parity;
  Yield(Park::kSpin);
  return false;
}

// A TMA load's map (`f`, copied from `map`) and its destination's offset
// in shared memory, checked: a map the launcher encoded, a box row equal to
// its swizzle span, a destination aligned to the swizzle's repeat.
inline size_t TmaLoadBox(const void *map, void *dst, TensorMapFields *f) {
  const Lane &l = Current();
  std::memcpy(f, map, sizeof(*f));
  if (f->magic != kTensorMapMagic) {
    Fault("INVALID_TENSOR_MAP", LaneName(l.id) + " issues a TMA load through a tensor map the launcher did not encode "
                                                 "(the operand's layout does not allow one)");
  }
  const size_t row = f->box0 * f->elem_bytes;
  const int span = SwizzleSpan(static_cast<int>(f->swizzle));
  if (span != 0 && row != size_t(span)) {
    Fault("INVALID_TENSOR_MAP", "a box row of " + std::to_string(row) + " bytes under the " + std::to_string(span) +
                                    "-byte swizzle (tir's tensor maps keep them equal)");
  }
  const size_t off = OffsetOf(dst, row * f->box1);
  const size_t align = span ? span * 8 : 128;
  if (off % align != 0) {
    Fault("MISALIGNED_ADDRESS", LaneName(l.id) + " issues a TMA load to a shared address not " + std::to_string(align) +
                                    "-byte aligned (its swizzle repeats every " + std::to_string(align) + " bytes)");
  }
  return off;
}

// Lands the box at (c0 inner, c1 outer) of `f`'s tensor (zeros outside it)
// in block `t`'s shared memory at `off`, in the map's swizzle, its bytes
// belonging to the current phase of `t`'s mbarrier `bi`.
inline void LandTmaBox(Block &t, const TensorMapFields &f, size_t off, int c0, int c1, int bi) {
  const unsigned char *base = reinterpret_cast<const unsigned char *>(f.base);
  const size_t row = f.box0 * f.elem_bytes;
  const uint32_t phase = t.mbarriers[bi].phase;
  for (uint64_t r = 0; r < f.box1; ++r) {
    const int64_t gr = int64_t(c1) + int64_t(r);
    for (uint64_t c = 0; c < f.box0; ++c) {
      const int64_t gc = int64_t(c0) + int64_t(c);
      const bool inside = gr >= 0 && gr < int64_t(f.dim1) && gc >= 0 && gc < int64_t(f.dim0);
      const size_t at = Swizzled(off + r * row + c * f.elem_bytes, static_cast<int>(f.swizzle));
      for (uint64_t k = 0; k < f.elem_bytes; ++k) {
        t.arena[at + k] = inside ? base[gr * int64_t(f.stride1_bytes) + gc * int64_t(f.elem_bytes) + int64_t(k)] : 0;
        Shadow &s = t.shadow[at + k];
        s.async_bar = static_cast<int16_t>(bi);
        s.async_phase = phase;
        s.swizzle = static_cast<int8_t>(f.swizzle);
        s.writer = -1;
        s.write_epoch = 0;
        s.pending = -1;
      }
    }
  }
}

TIR_LANES_OUTLINE void TmaLoad2d(void *dst, const void *map, int c0, int c1, void *bar) {
  Block &b = B();
  Lane &l = Current();
  ++b.events;
  TensorMapFields f;
  const size_t off = TmaLoadBox(map, dst, &f);
  const size_t row = f.box0 * f.elem_bytes;
  const int bi = MbarrierIndex(bar);
  MbarrierUse(bi, "completes a TMA load on");
  {
    std::map<std::pair<int, int>, bool> memo;
    for (size_t c = off / 16; c < (off + row * f.box1 + 15) / 16; ++c) {
      if (!WgmmaReadsDone(c, l.id, &memo)) Abort();
    }
  }
  LandTmaBox(b, f, off, c0, c1, bi);
  MBarrier &m = b.mbarriers[bi];
  m.tx -= static_cast<long long>(row * f.box1);
  MbarrierSettle(m);
}

TIR_LANES_OUTLINE bool NamedOrdered(int reader, int writer, uint32_t writer_named) {
  const Lane &r = B().lanes[reader];
  return writer >= 0 && size_t(writer) < r.named_seen.size() && r.named_seen[writer] > writer_named;
}

TIR_LANES_OUTLINE void NamedBarrier(int id, int threads) {
  Lane &l = Current();
  ++B().events;
  if (id < 0 || id > 15 || threads < 32 || threads % 32 != 0 || threads > B().threads) {
    Fault("INVALID_BARRIER", LaneName(l.id) + " calls bar.sync " + std::to_string(id) + ", " + std::to_string(threads) +
                                 " (ids 0-15, a thread count that is a multiple of 32 up to the block's)");
  }
  l.arg = id;
  l.op = threads;
  Yield(Park::kNamedBarrier);
}

TIR_LANES_OUTLINE bool ReleaseNamedBarriers() {
  Block &b = B();
  bool released = false;
  for (int id = 0; id < 16; ++id) {
    std::vector<Lane *> at;
    for (int i = 0; i < b.threads; ++i) {
      Lane &l = b.lanes[i];
      if (l.park == Park::kNamedBarrier && l.arg == id) at.push_back(&l);
    }
    if (at.empty()) continue;
    for (Lane *l : at) {
      if (l->op != at[0]->op) {
        b.cur = l;
        Report("BARRIER_DIVERGENCE", LaneName(l->id) + " waits at named barrier " + std::to_string(id) + " for " +
                                         std::to_string(l->op) + " threads, " + LaneName(at[0]->id) + " for " +
                                         std::to_string(at[0]->op));
        b.fatal = true;
        throw Stop();
      }
    }
    if (int(at.size()) < at[0]->op) continue;
    if (int(at.size()) > at[0]->op) {
      Report("BARRIER_DIVERGENCE", std::to_string(at.size()) + " threads wait at named barrier " + std::to_string(id) +
                                       " for " + std::to_string(at[0]->op));
      b.fatal = true;
      throw Stop();
    }
    std::vector<uint32_t> seen(b.threads, 0);
    for (Lane *l : at) {
      for (size_t q = 0; q < l->named_seen.size(); ++q) seen[q] = std::max(seen[q], l->named_seen[q]);
    }
    for (Lane *l : at) {
      seen[l->id] = ++l->named_passed;
      l->fences_at_named.push_back(l->proxy_fences);
    }
    for (Lane *l : at) {
      l->named_seen = seen;
      l->park = Park::kRunnable;
    }
    released = true;
  }
  return released;
}

// The fence.proxy.async count of the writer of `s` that orders its store
// before `reader`: the writer's own (program order), or, when only a named
// barrier of this barrier interval orders them, its count at the latest of
// its named barriers the reader saw.
inline uint32_t FencesSeen(const Lane &reader, const Shadow &s) {
  const Block &b = B();
  const Lane &w = b.lanes[s.writer];
  if (s.writer == reader.id) return w.proxy_fences;
  bool ordered = false;
  uint32_t seen = 0;
  if (s.write_epoch != b.epoch) {  // a block barrier since the store
    ordered = true;
    seen = std::max(seen, w.fences_at_block);
  }
  if (size_t(s.writer) < reader.named_seen.size()) {  // a named barrier since it
    const uint32_t k = reader.named_seen[s.writer];
    if (k > s.writer_named && k <= w.fences_at_named.size()) {
      ordered = true;
      seen = std::max(seen, w.fences_at_named[k - 1]);
    }
  }
  if (size_t(s.writer) < reader.synced.size()) {  // an mbarrier arrival since it
    const uint32_t a = reader.synced[s.writer];
    if (a > s.arrivals_at && a <= w.fences_at_arrival.size()) {
      ordered = true;
      seen = std::max(seen, w.fences_at_arrival[a - 1]);
    }
  }
  return ordered ? seen : w.proxy_fences;  // unordered: the race check speaks
}

TIR_LANES_OUTLINE void TmaStore2d(const void *map, const void *src, int c0, int c1) {
  Block &b = B();
  Lane &l = Current();
  ++b.events;
  TensorMapFields f;
  std::memcpy(&f, map, sizeof(f));
  if (f.magic != kTensorMapMagic) {
    Fault("INVALID_TENSOR_MAP", LaneName(l.id) + " issues a bulk tensor store through a tensor map the launcher did not "
                                                 "encode (the output's layout does not allow one)");
  }
  const size_t row = f.box0 * f.elem_bytes;
  const int span = SwizzleSpan(static_cast<int>(f.swizzle));
  if (span != 0 && row != size_t(span)) {
    Fault("INVALID_TENSOR_MAP", "a box row of " + std::to_string(row) + " bytes under the " + std::to_string(span) +
                                    "-byte swizzle (tir's tensor maps keep them equal)");
  }
  const size_t off = OffsetOf(src, row * f.box1);
  const size_t align = span ? span * 8 : 128;
  if (off % align != 0) {
    Fault("MISALIGNED_ADDRESS", LaneName(l.id) + " issues a bulk tensor store from a shared address not " +
                                    std::to_string(align) + "-byte aligned");
  }
  unsigned char *base = reinterpret_cast<unsigned char *>(f.base);
  bool reported = false;
  for (uint64_t r = 0; r < f.box1; ++r) {
    const int64_t gr = int64_t(c1) + int64_t(r);
    for (uint64_t c = 0; c < f.box0; ++c) {
      const int64_t gc = int64_t(c0) + int64_t(c);
      if (gr < 0 || gr >= int64_t(f.dim1) || gc < 0 || gc >= int64_t(f.dim0)) continue;
      const size_t at = Swizzled(off + r * row + c * f.elem_bytes, static_cast<int>(f.swizzle));
      for (uint64_t k = 0; k < f.elem_bytes && !reported; ++k) {
        const Shadow &s = b.shadow[at + k];
        if (s.pending >= 0) {
          char buf[200];
          std::snprintf(buf, sizeof(buf), "a bulk tensor store of %s reads shared byte %zu before the cp.async of %s to it completed",
                        LaneName(l.id).c_str(), at + k, LaneName(s.pending).c_str());
          Report("UNCOMPLETED_ASYNC_COPY", buf);
          reported = true;
        } else if (s.writer >= 0 && s.write_epoch == b.epoch && s.writer != l.id &&
                   !NamedOrdered(l.id, s.writer, s.writer_named)) {
          Race(at + k, "reads (a bulk tensor store)", s.writer, "wrote");
          reported = true;
        } else if (s.writer >= 0 && s.async_bar < 0 && FencesSeen(l, s) <= s.fence_at) {
          char buf[260];
          std::snprintf(buf, sizeof(buf),
                        "a bulk tensor store of %s reads shared byte %zu, which %s stored with no fence.proxy.async after "
                        "the store and before the barrier that orders it",
                        LaneName(l.id).c_str(), at + k, LaneName(s.writer).c_str());
          Report("MISSING_PROXY_FENCE", buf);
          reported = true;
        }
      }
      std::memcpy(base + gr * int64_t(f.stride1_bytes) + gc * int64_t(f.elem_bytes), &b.arena[at], f.elem_bytes);
    }
  }
  // A retired store of this thread over these bytes needs no more checks:
  // every write to them since was checked against it.
  const size_t bytes = row * f.box1;
  b.bulk_stores.erase(std::remove_if(b.bulk_stores.begin(), b.bulk_stores.end(),
                                     [&](const BulkStore &o) {
                                       return o.retired && (o.retired_epoch < b.epoch ||
                                                            (o.issuer == l.id && o.offset < off + bytes &&
                                                             off < o.offset + o.bytes));
                                     }),
                      b.bulk_stores.end());
  BulkStore st;
  st.offset = off;
  st.bytes = bytes;
  st.issuer = l.id;
  st.group = l.bulk_committed;
  b.bulk_stores.push_back(st);
}

TIR_LANES_OUTLINE void BulkWaitRead(int n) {
  Block &b = B();
  Lane &l = Current();
  ++b.events;
  for (BulkStore &st : b.bulk_stores) {
    if (st.issuer != l.id || st.retired || st.group >= l.bulk_committed - n) continue;
    st.retired = true;
    st.retired_epoch = b.epoch;
    st.retired_named = l.named_passed;
  }
}

TIR_LANES_OUTLINE bool BulkStoreWriteCheck(size_t off, size_t n, int id) {
  Block &b = B();
  for (const BulkStore &st : b.bulk_stores) {
    if (st.offset >= off + n || off >= st.offset + st.bytes) continue;
    if (st.retired && (st.issuer == id || st.retired_epoch < b.epoch || NamedOrdered(id, st.issuer, st.retired_named))) {
      continue;
    }
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  "%s writes shared byte %zu, which a bulk tensor store of %s may still read: %s",
                  LaneName(id).c_str(), std::max(off, st.offset), LaneName(st.issuer).c_str(),
                  st.retired ? "no barrier orders the issuer's cp.async.bulk.wait_group.read before this write"
                             : "no cp.async.bulk.wait_group.read covering it came before");
    Report("BULK_STORE_NOT_READ", buf);
    return false;
  }
  return true;
}

TIR_LANES_OUTLINE void BulkStoresAtExit() {
  Block &b = B();
  for (const BulkStore &st : b.bulk_stores) {
    if (st.issuer != b.cur->id || st.retired) continue;
    Report("BULK_STORE_NOT_READ", LaneName(st.issuer) + " exits while its bulk tensor store from shared byte " +
                                      std::to_string(st.offset) +
                                      " may still read (no cp.async.bulk.wait_group.read covers it)");
    return;
  }
}

TIR_LANES_OUTLINE size_t DescriptorByte(uint64_t desc, int mn, int k, bool mn_major) {
  const size_t start = (desc & 0x3fff) << 4, lbo = ((desc >> 16) & 0x3fff) << 4, sbo = ((desc >> 32) & 0x3fff) << 4;
  const int mode = DescriptorSwizzle(desc);
  const size_t span = static_cast<size_t>(SwizzleSpan(mode));
  size_t a;
  if (!mn_major) {
    if (span == 0) {
      a = start + size_t(mn % 8) * 16 + size_t(mn / 8) * sbo + size_t(k % 8) * 2 + size_t(k / 8) * lbo;
    } else {
      a = start + size_t(mn % 8) * span + size_t(mn / 8) * sbo + size_t(k) * 2;
    }
  } else {
    if (span == 0) {
      a = start + size_t(mn % 8) * 2 + size_t(mn / 8) * sbo + size_t(k % 8) * 16 + size_t(k / 8) * lbo;
    } else {
      const int per = static_cast<int>(span / 2);
      a = start + size_t(mn % per) * 2 + size_t(mn / per) * lbo + size_t(k % 8) * span + size_t(k / 8) * sbo;
    }
  }
  return Swizzled(a, mode);
}

TIR_LANES_OUTLINE bool WgmmaRead(size_t off, const Lane &l, int mode, uint16_t *v) {
  Block &b = B();
  if (off / 16 < b.wgmma_reads.size()) {
    int32_t &r = b.wgmma_reads[off / 16][(l.id / 128) & 7];
    r = std::max(r, l.wgmma_committed);
    b.wgmma_reads_dirty = std::max(b.wgmma_reads_dirty, off / 16 + 1);
  }
  if (off + 2 > b.used) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s: a wgmma descriptor reaches shared byte %zu, outside the block's %zu bytes",
                  LaneName(l.id).c_str(), off, b.used);
    Report("SHARED_OUT_OF_BOUNDS", buf);
    return false;
  }
  for (size_t k = 0; k < 2; ++k) {
    const Shadow &s = b.shadow[off + k];
    char buf[260];
    if (s.pending >= 0) {
      std::snprintf(buf, sizeof(buf), "%s: a wgmma reads shared byte %zu before the cp.async of %s to it completed",
                    LaneName(l.id).c_str(), off + k, LaneName(s.pending).c_str());
      Report("UNCOMPLETED_ASYNC_COPY", buf);
      return false;
    }
    if (s.async_bar >= 0) {
      if (!SawPhase(l, s.async_bar, s.async_phase)) {
        UnseenTma(off + k, l.id, s);
        return false;
      }
      if (s.swizzle != mode) {
        std::snprintf(buf, sizeof(buf),
                      "%s: a wgmma descriptor with the %s swizzle reads shared byte %zu, which a TMA wrote with the %s "
                      "swizzle",
                      LaneName(l.id).c_str(), SwizzleName(mode), off + k, SwizzleName(s.swizzle));
        Report("SWIZZLE_MISMATCH", buf);
        return false;
      }
    } else if (s.writer >= 0) {
      // Ordered by a barrier since the store, or by an mbarrier phase the
      // writer arrived at after it and this thread saw complete.
      const bool ordered = s.writer == l.id || s.write_epoch != b.epoch ||
                           (size_t(s.writer) < l.synced.size() && l.synced[s.writer] > s.arrivals_at);
      if (!ordered) {
        std::snprintf(buf, sizeof(buf),
                      "%s: a wgmma reads shared byte %zu, which %s stored with no barrier or completed mbarrier phase "
                      "between",
                      LaneName(l.id).c_str(), off + k, LaneName(s.writer).c_str());
        Report("SHARED_MEMORY_RACE", buf);
        return false;
      }
      if (FencesSeen(l, s) <= s.fence_at) {
        std::snprintf(buf, sizeof(buf),
                      "%s: a wgmma reads shared byte %zu, which %s stored with no fence.proxy.async after the store "
                      "and before the barrier or mbarrier arrival that orders it",
                      LaneName(l.id).c_str(), off + k, LaneName(s.writer).c_str());
        Report("MISSING_PROXY_FENCE", buf);
        return false;
      }
    } else {
      std::snprintf(buf, sizeof(buf), "%s: a wgmma reads shared byte %zu, which nothing wrote in this block",
                    LaneName(l.id).c_str(), off + k);
      Report("UNINITIALIZED_SHARED_READ", buf);
      return false;
    }
  }
  std::memcpy(v, &b.arena[off], 2);
  return true;
}

TIR_LANES_OUTLINE void Wgmma(bool bf16, int n, WgmmaAccumulators acc, uint64_t desc_a, uint64_t desc_b, int scale_d, int trans_a,
                  int trans_b) {
  Block &b = B();
  Lane &l = Current();
  ++b.events;
  if (b.threads % 128 != 0) {
    Fault("WARP_DIVERGENCE", LaneName(l.id) + " issues wgmma in a block whose warpgroups are not whole");
  }
  if (((desc_a >> 49) & 7) != 0 || ((desc_b >> 49) & 7) != 0) {
    Fault("INVALID_DESCRIPTOR", LaneName(l.id) + " gives wgmma a descriptor with a matrix base offset (tir keeps tiles aligned)");
  }
  // PTX ISA, "wgmma.fence": required before a warpgroup's first wgmma, and
  // between ordinary accesses of its registers and a wgmma using them.
  if (l.wgmma_fences == 0) {
    Fault("MISSING_WGMMA_FENCE", LaneName(l.id) + " issues its first wgmma with no wgmma.fence before it");
  }
  if (*acc.group < 0 && *acc.touched && l.wgmma_fences <= *acc.touched_at) {
    Fault("MISSING_WGMMA_FENCE", LaneName(l.id) + " hands wgmma accumulators that ordinary code wrote with no wgmma.fence after");
  }
  const int t = l.id % 128, w = t / 32, g = (t % 32) / 4, q = t % 4;
  const int mode_a = DescriptorSwizzle(desc_a), mode_b = DescriptorSwizzle(desc_b);
  float av[2][16];
  std::vector<float> bv(static_cast<size_t>(n / 4) * 16);
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 16; ++k) {
      uint16_t v;
      if (!WgmmaRead(DescriptorByte(desc_a, 16 * w + g + 8 * h, k, trans_a != 0), l, mode_a, &v)) Abort();
      av[h][k] = HalfToFloat(v, bf16);
    }
  }
  for (int c = 0; c < n / 4; ++c) {
    const int col = 8 * (c / 2) + 2 * q + (c % 2);
    for (int k = 0; k < 16; ++k) {
      uint16_t v;
      if (!WgmmaRead(DescriptorByte(desc_b, col, k, trans_b != 0), l, mode_b, &v)) Abort();
      bv[size_t(c) * 16 + k] = HalfToFloat(v, bf16);
    }
  }
  const float *in = *acc.group >= 0 ? acc.future : acc.d;
  std::vector<float> out(static_cast<size_t>(n / 2));
  for (int i = 0; i < n / 2; ++i) {
    float s = scale_d ? in[i] : 0.f;
    const float *a = av[(i / 2) % 2];
    const float *bc = &bv[size_t((i / 4) * 2 + i % 2) * 16];
    for (int k = 0; k < 16; ++k) s += a[k] * bc[k];
    out[i] = s;
  }
  for (int i = 0; i < n / 2; ++i) {
    acc.future[i] = out[i];
    acc.d[i] = std::numeric_limits<float>::quiet_NaN();
  }
  *acc.group = l.wgmma_committed;
  *acc.touched = false;
  for (const WgmmaPending &p : l.wgmma) {
    if (p.d == acc.d) return;
  }
  l.wgmma.push_back({acc.d, acc.future, acc.group, n / 2});
}

TIR_LANES_OUTLINE void WgmmaWait(int n) {
  Lane &l = Current();
  ++B().events;
  if (l.wgmma_committed - n > l.wgmma_retired) {
    l.wgmma_retired = l.wgmma_committed - n;
    l.retired_epoch = B().epoch;
  }
  std::vector<WgmmaPending> rest;
  for (const WgmmaPending &p : l.wgmma) {
    if (*p.group < l.wgmma_committed - n) {
      std::memcpy(p.d, p.future, sizeof(float) * p.n);
      *p.group = -1;
    } else {
      rest.push_back(p);
    }
  }
  l.wgmma.swap(rest);
}

TIR_LANES_OUTLINE void Execute(const std::vector<Lane *> &members) {
  Lane &first = *members[0];
  const int op = first.op;
  Lane *by_lane[32] = {};
  for (Lane *l : members) by_lane[l->id % 32] = l;
  switch (op) {
    case kShflXor: case kShflDown: case kShflIdx: {
      for (Lane *l : members) {
        const int me = l->id % 32;
        const int src = op == kShflXor ? (me ^ l->arg) : op == kShflDown ? me + l->arg : l->arg;
        if (op == kShflDown && src >= 32) {
          l->out[0] = l->in[0];  // down past the warp: own value, as PTX
        } else if (src < 0 || src >= 32 || by_lane[src] == nullptr) {
          char buf[160];
          std::snprintf(buf, sizeof(buf), " reads lane %d, outside the member mask 0x%08x", src, l->mask);
          Fault("WARP_DIVERGENCE", LaneName(l->id) + " in " + CollectiveName(op) + buf);
        } else {
          l->out[0] = by_lane[src]->in[0];
        }
      }
      break;
    }
    case kLdmatrix: {
      // .x1/.x2/.x4: lanes 8m..8m+7 give the rows of matrix m; thread l
      // receives of each matrix the elements (l/4, 2(l%4)) and
      // (l/4, 2(l%4)+1), or with .trans (2(l%4), l/4) and (2(l%4)+1, l/4).
      const int count = first.arg & 7;
      const bool trans = (first.arg & 8) != 0;
      uint16_t m[4][8][8];
      Block &b = B();
      for (int k = 0; k < count; ++k) {
        for (int r = 0; r < 8; ++r) {
          Lane *l = by_lane[k * 8 + r];
          if (l == nullptr) Fault("WARP_DIVERGENCE", "ldmatrix needs the row addresses of lanes 0-" + std::to_string(count * 8 - 1));
          b.cur = l;
          if (reinterpret_cast<uintptr_t>(l->addr) % 16 != 0) {
            Fault("MISALIGNED_ADDRESS", LaneName(l->id) + " gives ldmatrix a row address not 16-byte aligned");
          }
          const size_t off = OffsetOf(l->addr, 16);
          Record(off, 16, false, l->id);
          std::memcpy(m[k][r], &b.arena[off], 16);
        }
      }
      for (Lane *l : members) {
        const int me = l->id % 32, g = me / 4, t = me % 4;
        for (int k = 0; k < count; ++k) {
          l->out[k] = trans ? Pack(m[k][2 * t][g], m[k][2 * t + 1][g]) : Pack(m[k][g][2 * t], m[k][g][2 * t + 1]);
        }
      }
      break;
    }
    case kMmaBf16: case kMmaF16: case kMmaTf32: {
      // Row-major A, column-major B, f32 C/D; groupID g = lane/4, t = lane%4.
      // m16n8k16 (bf16/f16): A regs {(g, 2t..), (g+8, 2t..), (g, 2t+8..),
      // (g+8, 2t+8..)}, B regs {(k 2t.., n g), (k 2t+8.., n g)}.
      // m16n8k8 (tf32, the low 13 bits of each f32 container ignored): A regs
      // {(g, t), (g+8, t), (g, t+4), (g+8, t+4)}, B regs {(k t, n g), (k t+4, n g)}.
      // C/D {(g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)} for both.
      if (members.size() != 32) Fault("WARP_DIVERGENCE", "mma.sync needs all 32 lanes of the warp");
      const bool bf16 = op == kMmaBf16, tf32 = op == kMmaTf32;
      const int depth = tf32 ? 8 : 16;
      float A[16][16], Bm[16][8], C[16][8];
      for (Lane *l : members) {
        const int me = l->id % 32, g = me / 4, t = me % 4;
        if (tf32) {
          auto value = [](uint64_t r) { return F32(r & 0xffffe000u); };
          const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {t, t, t + 4, t + 4};
          for (int r = 0; r < 4; ++r) A[rows[r]][cols[r]] = value(l->in[r]);
          Bm[t][g] = value(l->in[4]);
          Bm[t + 4][g] = value(l->in[5]);
        } else {
          auto lo = [](uint64_t r) { return uint16_t(r & 0xffff); };
          auto hi = [](uint64_t r) { return uint16_t((r >> 16) & 0xffff); };
          const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
          for (int r = 0; r < 4; ++r) {
            A[rows[r]][cols[r]] = HalfToFloat(lo(l->in[r]), bf16);
            A[rows[r]][cols[r] + 1] = HalfToFloat(hi(l->in[r]), bf16);
          }
          for (int r = 0; r < 2; ++r) {
            Bm[2 * t + 8 * r][g] = HalfToFloat(lo(l->in[4 + r]), bf16);
            Bm[2 * t + 8 * r + 1][g] = HalfToFloat(hi(l->in[4 + r]), bf16);
          }
        }
        C[g][2 * t] = F32(l->in[6]);
        C[g][2 * t + 1] = F32(l->in[7]);
        C[g + 8][2 * t] = F32(l->in[8]);
        C[g + 8][2 * t + 1] = F32(l->in[9]);
      }
      for (Lane *l : members) {
        const int me = l->id % 32, g = me / 4, t = me % 4;
        const int rs[4] = {g, g, g + 8, g + 8}, cs[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
        for (int q = 0; q < 4; ++q) {
          float acc = C[rs[q]][cs[q]];
          for (int k = 0; k < depth; ++k) acc += A[rs[q]][k] * Bm[k][cs[q]];
          l->out[q] = Bits(acc);
        }
      }
      break;
    }
  }
  for (Lane *l : members) l->park = Park::kRunnable;
}

TIR_LANES_OUTLINE bool AdvanceBlock(bool report) {
  Block &b = B();
  bool progressed = false;
  for (int w = 0; w * 32 < b.threads; ++w) {
    const int begin = w * 32, end = begin + 32 < b.threads ? begin + 32 : b.threads;
    for (int i = begin; i < end; ++i) {
      Lane &l = b.lanes[i];
      if (l.park != Park::kWarp) continue;
      std::vector<Lane *> members;
      bool ready = true;
      for (int j = 0; j < 32; ++j) {
        if (!(l.mask & (1u << j))) continue;
        if (begin + j >= end) {
          b.cur = &l;
          Fault("WARP_DIVERGENCE", LaneName(l.id) + " calls " + CollectiveName(l.op) + " with lane " +
                                       std::to_string(j) + " in its mask, which the block does not have");
        }
        Lane &m = b.lanes[begin + j];
        if (m.park == Park::kRunnable) { ready = false; break; }
        if (m.park != Park::kWarp || m.op != l.op || m.mask != l.mask) {
          ready = false;
          if (m.park == Park::kWarp && (m.op != l.op || m.mask != l.mask)) {
            b.cur = &l;
            Fault("WARP_DIVERGENCE", LaneName(l.id) + " waits at " + CollectiveName(l.op) + " while lane " +
                                         std::to_string(j) + " of its mask waits at " + CollectiveName(m.op));
          }
          break;
        }
        members.push_back(&m);
      }
      if (ready) {
        Execute(members);
        progressed = true;
      }
    }
  }
  if (progressed) return true;
  if (ReleaseNamedBarriers()) return true;
  // Threads spinning on mbarriers try again once a barrier moved.
  bool spinning = false;
  for (int i = 0; i < b.threads; ++i) spinning = spinning || b.lanes[i].park == Park::kSpin;
  if (spinning && b.mbarrier_changes != b.woken_at) {
    b.woken_at = b.mbarrier_changes;
    for (int i = 0; i < b.threads; ++i) {
      if (b.lanes[i].park == Park::kSpin) b.lanes[i].park = Park::kRunnable;
    }
    return true;
  }
  // Every live lane at a barrier: release it.
  int live = 0, waiting = 0;
  for (int i = 0; i < b.threads; ++i) {
    const Park p = b.lanes[i].park;
    if (p == Park::kDone) continue;
    ++live;
    if (p == Park::kBarrier) ++waiting;
  }
  if (live == 0) return false;
  if (waiting == live) {
    ++b.epoch;
    for (int i = 0; i < b.threads; ++i) {
      b.lanes[i].fences_at_block = b.lanes[i].proxy_fences;  // an exited lane's are all it made
      if (b.lanes[i].park == Park::kBarrier) b.lanes[i].park = Park::kRunnable;
    }
    return true;
  }
  if (!report) return false;
  // Stuck: a warp collective some lanes of its mask never reach.
  for (int i = 0; i < b.threads; ++i) {
    Lane &l = b.lanes[i];
    if (l.park != Park::kWarp) continue;
    for (int j = 0; j < 32; ++j) {
      const int other = (i / 32) * 32 + j;
      if (!(l.mask & (1u << j)) || other >= b.threads) continue;
      Lane &m = b.lanes[other];
      if (m.park != Park::kWarp) {
        Report("WARP_DIVERGENCE", LaneName(l.id) + " waits at " + CollectiveName(l.op) + " for " + LaneName(m.id) +
                                      " of its member mask, which is " + ParkName(m.park));
        b.fatal = true;
        return false;
      }
    }
  }
  for (int i = 0; i < b.threads; ++i) {
    const Lane &l = b.lanes[i];
    if (l.park != Park::kSpin) continue;
    char buf[240];
    std::snprintf(buf, sizeof(buf),
                  "%s waits on the mbarrier at shared byte %zu for the phase of parity %d, which never completes "
                  "(%d of %d arrivals and %lld transaction bytes missing)",
                  LaneName(l.id).c_str(), b.mbarriers[l.arg].offset, l.op, b.mbarriers[l.arg].pending,
                  b.mbarriers[l.arg].count, b.mbarriers[l.arg].tx);
    Report("MBARRIER_DEADLOCK", buf);
    b.fatal = true;
    return false;
  }
  for (int i = 0; i < b.threads; ++i) {
    const Lane &l = b.lanes[i];
    if (l.park != Park::kNamedBarrier) continue;
    Report("BARRIER_DIVERGENCE", LaneName(l.id) + " waits at named barrier " + std::to_string(l.arg) + " for " +
                                     std::to_string(l.op) + " threads, which never all arrive");
    b.fatal = true;
    return false;
  }
  Report("BARRIER_DIVERGENCE", "threads wait at a barrier that the others never reach");
  b.fatal = true;
  return false;
}

TIR_LANES_OUTLINE bool PrepareBlock(Block &b, Dim3 block, int order, uint64_t seed, Result &result) {
  b.order = order;
  b.seed = b.rng = seed;
  // Poison what the last block used; the dynamic part comes first.
  const size_t dirty = b.high_water > b.dynamic_bytes ? b.high_water : b.dynamic_bytes;
  std::memset(b.arena.data(), 0xff, dirty);
  std::fill(b.shadow.begin(), b.shadow.begin() + dirty, kFresh);
  b.used = (b.dynamic_bytes + 15) & ~size_t(15);
  b.high_water = b.used;
  b.named.clear();
  b.epoch = 1;
  b.mbarriers.clear();
  b.mbarrier_changes = b.woken_at = 0;
  b.cluster_epoch = 0;
  b.exited = false;
  b.peer_use.assign(b.cluster.size(), 0);
  if (b.wgmma_reads.empty()) b.wgmma_reads.assign(kArenaBytes / 16, std::array<int32_t, 8>{-1, -1, -1, -1, -1, -1, -1, -1});
  std::fill(b.wgmma_reads.begin(), b.wgmma_reads.begin() + b.wgmma_reads_dirty,
            std::array<int32_t, 8>{-1, -1, -1, -1, -1, -1, -1, -1});
  b.wgmma_reads_dirty = 0;
  b.bulk_stores.clear();
  for (int i = 0; i < b.threads; ++i) {
    Lane &l = b.lanes[i];
    l.id = i;
    l.tid = {unsigned(i % block.x), unsigned((i / block.x) % block.y), unsigned(i / (block.x * block.y))};
    l.copies.clear();
    l.committed = 0;
    l.observed.clear();
    l.proxy_fences = l.wgmma_fences = 0;
    l.wgmma_committed = 0;
    l.wgmma.clear();
    l.arrivals = 0;
    l.synced.clear();
    l.wgmma_retired = 0;
    l.retired_epoch = 0;
    l.retired_at_arrival.clear();
    l.named_passed = 0;
    l.fences_at_named.clear();
    l.fences_at_arrival.clear();
    l.fences_at_block = 0;
    l.named_seen.clear();
    l.bulk_committed = 0;
    void *stack = StackFor(l);
    if (stack == nullptr) return false;
    MakeContext(l.ctx, stack, kStackBytes, Entry, &b.sched);
    l.park = Park::kRunnable;
  }
  result.lanes += b.threads;
  return true;
}

TIR_LANES_OUTLINE bool RunBlock(Block &b, Dim3 block, int order, uint64_t seed, Result &result) {
  if (!PrepareBlock(b, block, order, seed, result)) return false;
  for (;;) {
    bool ran = false;
    NextRound(b);
    for (int k = 0; k < b.threads && !b.fatal; ++k) {
      Lane &l = b.lanes[b.round[k]];
      if (l.park != Park::kRunnable) continue;
      b.cur = &l;
      SwitchTo(b.sched, l.ctx);
      ran = true;
    }
    if (b.fatal) break;
    if (ran) continue;
    bool more = false;
    b.in_scheduler = true;
    try {
      more = Advance();
    } catch (const Stop &) {
    }
    b.in_scheduler = false;
    if (!more) break;
  }
  return true;
}

// The blocks a thread's launches run in: their fiber stacks and arenas
// serve launch after launch. Inline variables, so one set per thread in
// the process however many kernel objects are loaded (GCC makes them
// unique symbols, which the dynamic linker binds once).
inline thread_local Block g_launch_block;
inline thread_local Block g_cluster_blocks[kMaxCluster];

TIR_LANES_OUTLINE Result Launch(const char *kernel, Dim3 grid, Dim3 block, size_t dynamic_bytes,
                     const std::function<void(Dim3)> &set_block, std::function<void()> body,
                     const LaunchOptions &options) {
  Block &b = g_launch_block;
  Result result;
  const long threads = long(block.x) * block.y * block.z;
  g_block = &b;
  b.kernel = kernel;
  b.errors = 0;
  b.first_error.clear();
  b.fatal = false;
  b.events = 0;
  b.order = kNaturalOrder;
  if (threads < 1 || threads > kMaxThreads) {
    result.errors = 1;
    result.first_error = "INVALID_LAUNCH: kernel " + std::string(kernel) + ": " + std::to_string(threads) +
                         " threads per block (1 to 1024)";
    return result;
  }
  if (dynamic_bytes + 64 * 1024 > kArenaBytes) {
    result.errors = 1;
    result.first_error = "INVALID_LAUNCH: kernel " + std::string(kernel) + ": " + std::to_string(dynamic_bytes) +
                         " bytes of dynamic shared memory";
    return result;
  }
  b.threads = static_cast<int>(threads);
  if (b.lanes.size() < size_t(threads)) b.lanes.resize(threads);
  if (b.arena.empty()) {
    b.arena.assign(kArenaBytes, 0xff);
    b.shadow.assign(kArenaBytes, kFresh);
  }
  b.body = std::move(body);
  b.dynamic_bytes = dynamic_bytes;
  const int schedules = options.schedules < 1 ? 1 : options.schedules;
  auto seedOf = [&](int k) { return k < 2 ? uint64_t(0) : options.seed + uint64_t(k - 2); };
  const uint64_t count = uint64_t(grid.x) * grid.y * grid.z;
  // Global memory before an exploring block, and after its first schedule.
  std::vector<std::vector<unsigned char>> before, after;
  uint64_t index = 0;
  bool stacks = true;
  for (unsigned z = 0; z < grid.z && !b.fatal && stacks; ++z) {
    for (unsigned y = 0; y < grid.y && !b.fatal && stacks; ++y) {
      for (unsigned x = 0; x < grid.x && !b.fatal && stacks; ++x, ++index) {
        b.block = {x, y, z};
        set_block(b.block);
        if (schedules == 1 || !Explores(index, count, options.explore_blocks)) {
          const int k = int(index % uint64_t(schedules));
          stacks = RunBlock(b, block, k < 2 ? k : kShuffled, seedOf(k), result);
          continue;
        }
        before.resize(options.writable.size());
        for (size_t w = 0; w < options.writable.size(); ++w) {
          const unsigned char *p = static_cast<const unsigned char *>(options.writable[w].first);
          before[w].assign(p, p + options.writable[w].second);
        }
        stacks = RunBlock(b, block, kNaturalOrder, 0, result);
        if (!stacks || b.fatal || b.errors) continue;
        after.resize(options.writable.size());
        for (size_t w = 0; w < options.writable.size(); ++w) {
          const unsigned char *p = static_cast<const unsigned char *>(options.writable[w].first);
          after[w].assign(p, p + options.writable[w].second);
        }
        for (int k = 1; k < schedules && stacks && !b.fatal && !b.errors; ++k) {
          for (size_t w = 0; w < options.writable.size(); ++w) {
            std::memcpy(options.writable[w].first, before[w].data(), before[w].size());
          }
          set_block(b.block);
          stacks = RunBlock(b, block, k < 2 ? k : kShuffled, seedOf(k), result);
          if (!stacks || b.fatal || b.errors) break;
          for (size_t w = 0; w < options.writable.size(); ++w) {
            const unsigned char *p = static_cast<const unsigned char *>(options.writable[w].first);
            if (std::memcmp(p, after[w].data(), after[w].size()) == 0) continue;
            size_t at = 0;
            while (p[at] == after[w][at]) ++at;
            char buf[400];
            std::snprintf(buf, sizeof(buf),
                          "the block leaves byte %zu of writable global buffer %zu as 0x%02x under the natural order "
                          "and as 0x%02x: its result depends on the order its threads run in (a barrier missing "
                          "between threads' global or shared accesses)",
                          at, w, after[w][at], p[at]);
            Report("SCHEDULE_DEPENDENT_RESULT", buf);
            break;
          }
        }
      }
    }
  }
  if (!stacks) {
    result.errors = 1;
    result.first_error = "INVALID_LAUNCH: no memory for the emulator's thread stacks";
  } else {
    result.errors = b.errors;
    result.first_error = b.first_error;
  }
  result.events = b.events;
  b.body = nullptr;
  b.order = kNaturalOrder;
  g_block = nullptr;
  return result;
}

TIR_LANES_OUTLINE void ClusterSync() {
  ++B().events;
  Yield(B().cluster.empty() ? Park::kBarrier : Park::kCluster);
}

TIR_LANES_OUTLINE Block &Peer(int rank, const char *what) {
  Block &b = B();
  const int size = ClusterSize();
  if (rank < 0 || rank >= size) {
    Fault("INVALID_CLUSTER_RANK", LaneName(Current().id) + " " + what + " CTA " + std::to_string(rank) +
                                      " of a cluster of " + std::to_string(size));
  }
  if (b.cluster.empty()) return b;
  Block &p = *b.cluster[rank];
  if (&p != &b) {
    if (p.exited) {
      Fault("CLUSTER_PEER_EXITED", LaneName(Current().id) + " " + what + " CTA " + std::to_string(rank) +
                                       " of its cluster, which exited (a barrier.cluster before the exit keeps a "
                                       "CTA until its peers are done with its shared memory)");
    }
    p.peer_use[b.cluster_rank] = b.cluster_epoch + 1;
  }
  return p;
}

TIR_LANES_OUTLINE int PeerMbarrier(Block &p, size_t off, const char *what) {
  char buf[400];
  for (size_t i = 0; i < p.mbarriers.size(); ++i) {
    MBarrier &m = p.mbarriers[i];
    if (m.offset != off) continue;
    if (m.init_cluster_epoch == p.cluster_epoch && !m.race_reported) {
      m.race_reported = true;
      std::snprintf(buf, sizeof(buf),
                    "%s %s the mbarrier at shared byte %zu of CTA %d of its cluster, whose init no barrier.cluster "
                    "orders before this use (barrier.cluster after mbarrier.init and fence.mbarrier_init)",
                    LaneName(Current().id).c_str(), what, off, p.cluster_rank);
      Report("SHARED_MEMORY_RACE", buf);
    }
    return static_cast<int>(i);
  }
  std::snprintf(buf, sizeof(buf),
                "%s %s shared byte %zu of CTA %d of its cluster, where no mbarrier.init set up an mbarrier before "
                "this use (barrier.cluster after mbarrier.init orders it)",
                LaneName(Current().id).c_str(), what, off, p.cluster_rank);
  Fault("SHARED_MEMORY_RACE", buf);
}

TIR_LANES_OUTLINE void MbarrierArriveCluster(void *p, int rank) {
  Block &b = B();
  const size_t off = OffsetOf(p, 8);
  Block &t = Peer(rank, "arrives at an mbarrier of");
  if (&t == &b) {
    MbarrierArrive(p, 0);
    return;
  }
  ++b.events;
  MBarrier &m = t.mbarriers[PeerMbarrier(t, off, "arrives at")];
  if (--m.pending < 0) {
    char buf[240];
    std::snprintf(buf, sizeof(buf),
                  "%s arrives at the mbarrier at byte %zu of CTA %d once more than its count of %d in one phase",
                  LaneName(Current().id).c_str(), m.offset, rank, m.count);
    Report("MBARRIER_OVERFLOW", buf);
    m.pending = 0;
  }
  MbarrierSettle(m);
  ++t.mbarrier_changes;
}

TIR_LANES_OUTLINE void TmaLoad2dMulticast(void *dst, const void *map, int c0, int c1, void *bar, unsigned mask) {
  Block &b = B();
  Lane &l = Current();
  ++b.events;
  const int size = ClusterSize();
  if (mask == 0 || (mask >> size) != 0) {
    char buf[240];
    std::snprintf(buf, sizeof(buf), "%s multicasts a TMA load with ctaMask 0x%x, which %s a cluster of %d CTAs",
                  LaneName(l.id).c_str(), mask, mask == 0 ? "names no CTA of" : "names a CTA outside", size);
    Fault("INVALID_MULTICAST_MASK", buf);
  }
  TensorMapFields f;
  const size_t off = TmaLoadBox(map, dst, &f), bar_off = OffsetOf(bar, 8);
  const size_t bytes = f.box0 * f.elem_bytes * f.box1;
  for (int r = 0; r < size; ++r) {
    if (!((mask >> r) & 1u)) continue;
    Block &t = Peer(r, "multicasts a TMA load into");
    int bi;
    if (&t == &b) {
      bi = MbarrierIndex(bar);
      MbarrierUse(bi, "completes a TMA load on");
      std::map<std::pair<int, int>, bool> memo;
      for (size_t c = off / 16; c < (off + bytes + 15) / 16; ++c) {
        if (!WgmmaReadsDone(c, l.id, &memo)) Abort();
      }
    } else {
      bi = PeerMbarrier(t, bar_off, "completes a multicast TMA load on");
      for (size_t c = off / 16; c < (off + bytes + 15) / 16 && c < t.wgmma_reads.size(); ++c) {
        t.wgmma_reads[c] = std::array<int32_t, 8>{-1, -1, -1, -1, -1, -1, -1, -1};
      }
    }
    LandTmaBox(t, f, off, c0, c1, bi);
    MBarrier &m = t.mbarriers[bi];
    m.tx -= static_cast<long long>(bytes);
    if (m.pending == 0 && m.tx < 0) {
      char buf[300];
      std::snprintf(buf, sizeof(buf),
                    "%s multicasts %zu bytes onto the mbarrier at byte %zu of CTA %d, whose phase had all its "
                    "arrivals and expected %lld bytes fewer (a ctaMask naming a CTA that does not expect them)",
                    LaneName(l.id).c_str(), bytes, bar_off, r, -m.tx);
      Report("MBARRIER_TX_OVERFLOW", buf);
    }
    MbarrierSettle(m);
    ++t.mbarrier_changes;
  }
}

TIR_LANES_OUTLINE void ClusterExitCheck(Block &t) {
  t.exited = true;
  for (const MBarrier &m : t.mbarriers) {
    if (m.tx >= 0) continue;
    Block *saved = g_block;
    g_block = &t;
    char buf[300];
    std::snprintf(buf, sizeof(buf),
                  "the CTA (rank %d) exits with %lld bytes more landed on its mbarrier at shared byte %zu than its "
                  "phases expected (a multicast ctaMask naming a CTA that does not expect them)",
                  t.cluster_rank, -m.tx, m.offset);
    Report("MBARRIER_TX_OVERFLOW", buf);
    t.fatal = true;
    g_block = saved;
    return;
  }
  for (size_t p = 0; p < t.peer_use.size(); ++p) {
    if (t.peer_use[p] == 0 || t.peer_use[p] <= t.cluster_epoch) continue;
    Block *saved = g_block;
    g_block = &t;
    char buf[300];
    std::snprintf(buf, sizeof(buf),
                  "the CTA (rank %d) exits while CTA %zu of its cluster used its shared memory or mbarriers "
                  "(multicast, remote arrival) with no barrier.cluster between that use and the exit",
                  t.cluster_rank, p);
    Report("CLUSTER_PEER_EXITED", buf);
    t.fatal = true;
    g_block = saved;
    return;
  }
}

TIR_LANES_OUTLINE bool RunCluster(std::vector<Block *> &cl, Dim3 block, int order, uint64_t seed, Result &result,
                       const std::function<void(Dim3)> &set_block) {
  const int n = static_cast<int>(cl.size());
  for (int r = 0; r < n; ++r) {
    g_block = cl[r];
    if (!PrepareBlock(*cl[r], block, order, seed + 0x9e3779b97f4a7c15ull * uint64_t(r), result)) return false;
  }
  uint64_t rng = seed ^ 0x2545f4914f6cdd1dull;
  std::vector<int> ctas(n);
  auto fatal = [&] {
    for (Block *b : cl) {
      if (b->fatal) return true;
    }
    return false;
  };
  for (;;) {
    bool ran = false;
    for (int i = 0; i < n; ++i) ctas[i] = order == kHighIdsFirst ? n - 1 - i : i;
    if (order == kShuffled) {
      for (int i = n - 1; i > 0; --i) std::swap(ctas[i], ctas[SplitMix(rng) % uint64_t(i + 1)]);
    }
    for (int c : ctas) {
      Block &b = *cl[c];
      if (b.exited) continue;
      g_block = &b;
      set_block(b.block);
      NextRound(b);
      for (int k = 0; k < b.threads && !b.fatal; ++k) {
        Lane &l = b.lanes[b.round[k]];
        if (l.park != Park::kRunnable) continue;
        b.cur = &l;
        SwitchTo(b.sched, l.ctx);
        ran = true;
      }
      if (b.fatal) break;
      bool live = false;
      for (int i = 0; i < b.threads && !live; ++i) live = b.lanes[i].park != Park::kDone;
      if (!live) ClusterExitCheck(b);
    }
    if (fatal()) break;
    if (ran) continue;
    bool more = false;
    for (Block *b : cl) {
      g_block = b;
      b->in_scheduler = true;
      try {
        more = AdvanceBlock(false) || more;
      } catch (const Stop &) {
      }
      b->in_scheduler = false;
      if (b->fatal) break;
    }
    if (fatal()) break;
    if (more) continue;
    // Every live thread of the cluster at barrier.cluster: release it.
    int live = 0;
    Block *stuck = nullptr;
    for (Block *b : cl) {
      for (int i = 0; i < b->threads; ++i) {
        const Park p = b->lanes[i].park;
        if (p == Park::kDone) continue;
        ++live;
        if (p != Park::kCluster && stuck == nullptr) stuck = b;
      }
    }
    if (live == 0) break;
    if (stuck == nullptr) {
      for (Block *b : cl) {
        ++b->cluster_epoch;
        ++b->epoch;
        for (int i = 0; i < b->threads; ++i) {
          if (b->lanes[i].park == Park::kCluster) b->lanes[i].park = Park::kRunnable;
        }
      }
      continue;
    }
    // Stuck: the first CTA with a thread elsewhere than barrier.cluster says why.
    g_block = stuck;
    stuck->in_scheduler = true;
    try {
      AdvanceBlock(true);
    } catch (const Stop &) {
    }
    stuck->in_scheduler = false;
    stuck->fatal = true;
    break;
  }
  return true;
}

TIR_LANES_OUTLINE Result LaunchClusters(const char *kernel, Dim3 grid, Dim3 block, Dim3 cluster, size_t dynamic_bytes,
                             const std::function<void(Dim3)> &set_block, std::function<void()> body,
                             const LaunchOptions &options) {
  const long size = long(cluster.x) * cluster.y * cluster.z;
  if (size == 1) return Launch(kernel, grid, block, dynamic_bytes, set_block, std::move(body), options);
  Result result;
  const long threads = long(block.x) * block.y * block.z;
  if (size < 1 || size > kMaxCluster || grid.x % cluster.x || grid.y % cluster.y || grid.z % cluster.z) {
    result.errors = 1;
    result.first_error = "INVALID_LAUNCH: kernel " + std::string(kernel) + ": a cluster of " +
                         std::to_string(cluster.x) + "x" + std::to_string(cluster.y) + "x" + std::to_string(cluster.z) +
                         " CTAs for a grid of " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                         std::to_string(grid.z) + " (at most 8 CTAs, each dimension dividing the grid's)";
    return result;
  }
  if (threads < 1 || threads > kMaxThreads || dynamic_bytes + 64 * 1024 > kArenaBytes) {
    result.errors = 1;
    result.first_error = "INVALID_LAUNCH: kernel " + std::string(kernel) + ": " + std::to_string(threads) +
                         " threads per block and " + std::to_string(dynamic_bytes) +
                         " bytes of dynamic shared memory";
    return result;
  }
  std::vector<Block *> cl;
  for (long r = 0; r < size; ++r) {
    Block &b = g_cluster_blocks[r];
    cl.push_back(&b);
    b.kernel = kernel;
    b.errors = 0;
    b.first_error.clear();
    b.fatal = false;
    b.events = 0;
    b.order = kNaturalOrder;
    b.threads = static_cast<int>(threads);
    if (b.lanes.size() < size_t(threads)) b.lanes.resize(threads);
    if (b.arena.empty()) {
      b.arena.assign(kArenaBytes, 0xff);
      b.shadow.assign(kArenaBytes, kFresh);
    }
    b.body = body;
    b.dynamic_bytes = dynamic_bytes;
    b.cluster_rank = static_cast<int>(r);
  }
  for (Block *b : cl) b->cluster = cl;
  auto anyError = [&] {
    for (Block *b : cl) {
      if (b->fatal || b->errors) return true;
    }
    return false;
  };
  const int schedules = options.schedules < 1 ? 1 : options.schedules;
  auto seedOf = [&](int k) { return k < 2 ? uint64_t(0) : options.seed + uint64_t(k - 2); };
  const uint64_t count = uint64_t(grid.x / cluster.x) * (grid.y / cluster.y) * (grid.z / cluster.z);
  std::vector<std::vector<unsigned char>> before, after;
  uint64_t index = 0;
  bool stacks = true;
  for (unsigned z = 0; z < grid.z && stacks && !anyError(); z += cluster.z) {
    for (unsigned y = 0; y < grid.y && stacks && !anyError(); y += cluster.y) {
      for (unsigned x = 0; x < grid.x && stacks && !anyError(); x += cluster.x, ++index) {
        for (long r = 0; r < size; ++r) {
          cl[r]->block = {x + unsigned(r % cluster.x), y + unsigned((r / cluster.x) % cluster.y),
                          z + unsigned(r / (long(cluster.x) * cluster.y))};
        }
        if (schedules == 1 || !Explores(index, count, options.explore_blocks)) {
          const int k = int(index % uint64_t(schedules));
          stacks = RunCluster(cl, block, k < 2 ? k : kShuffled, seedOf(k), result, set_block);
          continue;
        }
        before.resize(options.writable.size());
        for (size_t w = 0; w < options.writable.size(); ++w) {
          const unsigned char *p = static_cast<const unsigned char *>(options.writable[w].first);
          before[w].assign(p, p + options.writable[w].second);
        }
        stacks = RunCluster(cl, block, kNaturalOrder, 0, result, set_block);
        if (!stacks || anyError()) continue;
        after.resize(options.writable.size());
        for (size_t w = 0; w < options.writable.size(); ++w) {
          const unsigned char *p = static_cast<const unsigned char *>(options.writable[w].first);
          after[w].assign(p, p + options.writable[w].second);
        }
        for (int k = 1; k < schedules && stacks && !anyError(); ++k) {
          for (size_t w = 0; w < options.writable.size(); ++w) {
            std::memcpy(options.writable[w].first, before[w].data(), before[w].size());
          }
          stacks = RunCluster(cl, block, k < 2 ? k : kShuffled, seedOf(k), result, set_block);
          if (!stacks || anyError()) break;
          for (size_t w = 0; w < options.writable.size(); ++w) {
            const unsigned char *p = static_cast<const unsigned char *>(options.writable[w].first);
            if (std::memcmp(p, after[w].data(), after[w].size()) == 0) continue;
            size_t at = 0;
            while (p[at] == after[w][at]) ++at;
            g_block = cl[0];
            char buf[400];
            std::snprintf(buf, sizeof(buf),
                          "the cluster leaves byte %zu of writable global buffer %zu as 0x%02x under the natural "
                          "order and as 0x%02x: its result depends on the order its threads run in",
                          at, w, after[w][at], p[at]);
            Report("SCHEDULE_DEPENDENT_RESULT", buf);
            break;
          }
        }
      }
    }
  }
  if (!stacks) {
    result.errors = 1;
    result.first_error = "INVALID_LAUNCH: no memory for the emulator's thread stacks";
  } else {
    for (Block *b : cl) {
      if (b->errors && result.first_error.empty()) result.first_error = b->first_error;
      result.errors += b->errors;
    }
  }
  for (Block *b : cl) {
    result.events += b->events;
    b->body = nullptr;
    b->order = kNaturalOrder;
    b->cluster.clear();
    b->cluster_rank = 0;
  }
  g_block = nullptr;
  return result;
}

#endif  // !TIR_LANES_SPLIT || TIR_LANES_RUNTIME

}  // namespace tir_lanes

#endif  // TIR_LANES_H_
