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
#include <functional>
#include <map>
#include <string>
#include <vector>

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

enum class Park { kRunnable, kBarrier, kWarp, kDone, kAborted };

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
};

// Per shared byte: the last writer and reader in the barrier interval of
// their epoch, and the lane whose cp.async to it has not landed (-1).
struct Shadow {
  uint32_t write_epoch, read_epoch;
  int16_t writer, reader;  // reader -2: several lanes read it
  int16_t pending;
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
  // Errors of this launch.
  std::string first_error;
  long errors = 0;
  bool fatal = false;
  uint64_t events = 0;  // lane events: shared accesses, collective and barrier arrivals
  bool in_scheduler = false;  // running a collective for its lanes
};

// Thrown (on the scheduler's stack only) to stop a launch.
struct Stop {};

inline thread_local Block *g_block = nullptr;

inline Block &B() { return *g_block; }
inline Lane &Current() { return *g_block->cur; }

inline std::string Tid(const Lane &l) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "(%u,%u,%u)", l.tid.x, l.tid.y, l.tid.z);
  return buf;
}
inline std::string Where() {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "kernel %s block (%u,%u,%u): ", B().kernel, B().block.x, B().block.y, B().block.z);
  return buf;
}

inline void Report(const std::string &reason, const std::string &message) {
  Block &b = B();
  if (b.errors++ == 0) b.first_error = reason + ": " + Where() + message;
}

// Parks the current lane; the scheduler resumes it.
inline void Yield(Park p) {
  Lane &l = Current();
  l.park = p;
  SwitchTo(l.ctx, B().sched);
}

// Reports `message` and stops the launch: the current lane never resumes.
[[noreturn]] inline void Fault(const std::string &reason, const std::string &message) {
  Report(reason, message);
  B().fatal = true;
  if (B().in_scheduler) throw Stop();
  for (;;) Yield(Park::kAborted);
}

// The arena offset of `p`, `n` bytes inside the allocated shared memory.
inline size_t OffsetOf(const void *p, size_t n) {
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

inline std::string LaneName(int id) {
  const Lane &l = B().lanes[id];
  return "thread " + Tid(l);
}

inline void Race(size_t offset, const char *what, int other, const char *other_did) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s %s shared byte %zu that %s %s with no barrier between",
                LaneName(Current().id).c_str(), what, offset,
                other >= 0 ? LaneName(other).c_str() : "several threads", other_did);
  Report("SHARED_MEMORY_RACE", buf);
}

// Checks and records an access of `n` bytes at arena offset `off` by lane
// `id` (a write when `write`).
inline void Record(size_t off, size_t n, bool write, int id) {
  Block &b = B();
  bool reported = false;
  for (size_t k = 0; k < n; ++k) {
    Shadow &s = b.shadow[off + k];
    if (!reported && s.pending >= 0 && !write) {
      char buf[200];
      std::snprintf(buf, sizeof(buf), "%s reads shared byte %zu before the cp.async of %s to it completed (no cp.async.wait_group covers it)",
                    LaneName(id).c_str(), off + k, LaneName(s.pending).c_str());
      Report("UNCOMPLETED_ASYNC_COPY", buf);
      reported = true;
    }
    if (!reported && s.write_epoch == b.epoch && s.writer != id) {
      Race(off + k, write ? "writes" : "reads", s.writer, "wrote");
      reported = true;
    }
    if (write) {
      if (!reported && s.read_epoch == b.epoch && s.reader != id) {
        Race(off + k, "writes", s.reader, "read");
        reported = true;
      }
      s.write_epoch = b.epoch;
      s.writer = static_cast<int16_t>(id);
    } else if (s.read_epoch != b.epoch) {
      s.read_epoch = b.epoch;
      s.reader = static_cast<int16_t>(id);
    } else if (s.reader != id) {
      s.reader = -2;
    }
  }
}

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
inline void Collective(int op, int arg, unsigned mask) {
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

// ---- cp.async ----------------------------------------------------------------

inline void CpAsync16(void *dst, const void *src, int bytes) {
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

inline void CpAsyncCommit() { ++Current().committed; }

// cp.async.wait_group n: the copies of every committed group but the newest
// n land now.
inline void CpAsyncWait(int n) {
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

// Runs the collective the lanes `members` (all parked at it) wait at.
inline void Execute(const std::vector<Lane *> &members) {
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

// A fiber's first frame: runs the kernel, then parks for good.
inline void Entry() {
  Block &b = B();
  b.body();
  b.cur->park = Park::kDone;
  for (;;) SwitchTo(b.cur->ctx, b.sched);
}

inline const char *ParkName(Park p) {
  switch (p) {
    case Park::kRunnable: return "runnable";
    case Park::kBarrier: return "at a barrier";
    case Park::kWarp: return "at a warp collective";
    case Park::kDone: return "exited";
    case Park::kAborted: return "stopped";
  }
  return "?";
}

// One scheduling step after every runnable lane ran: runs the warp
// collectives whose members all arrived, else releases a barrier every live
// lane reached; false (with an error) when the block cannot go on.
inline bool Advance() {
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
      if (b.lanes[i].park == Park::kBarrier) b.lanes[i].park = Park::kRunnable;
    }
    return true;
  }
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
  Report("BARRIER_DIVERGENCE", "threads wait at a barrier that the others never reach");
  b.fatal = true;
  return false;
}

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
  uint64_t lanes = 0;  // thread executions (blocks x threads)
};

// Runs `body` (the kernel, reading threadIdx / blockIdx) for every block of
// `grid` with `block` threads each and `dynamic_bytes` of dynamic shared
// memory; `set_block` publishes the block's index before its threads start.
inline Result Launch(const char *kernel, Dim3 grid, Dim3 block, size_t dynamic_bytes,
                     const std::function<void(Dim3)> &set_block, std::function<void()> body) {
  static thread_local Block storage;
  Block &b = storage;
  Result result;
  const long threads = long(block.x) * block.y * block.z;
  g_block = &b;
  b.kernel = kernel;
  b.errors = 0;
  b.first_error.clear();
  b.fatal = false;
  b.events = 0;
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
    b.shadow.assign(kArenaBytes, Shadow{0, 0, -1, -1, -1});
  }
  b.body = std::move(body);
  b.dynamic_bytes = dynamic_bytes;
  for (unsigned z = 0; z < grid.z && !b.fatal; ++z) {
    for (unsigned y = 0; y < grid.y && !b.fatal; ++y) {
      for (unsigned x = 0; x < grid.x && !b.fatal; ++x) {
        b.block = {x, y, z};
        set_block(b.block);
        // Poison what the last block used; the dynamic part comes first.
        const size_t dirty = b.high_water > dynamic_bytes ? b.high_water : dynamic_bytes;
        std::memset(b.arena.data(), 0xff, dirty);
        std::fill(b.shadow.begin(), b.shadow.begin() + dirty, Shadow{0, 0, -1, -1, -1});
        b.used = (dynamic_bytes + 15) & ~size_t(15);
        b.high_water = b.used;
        b.named.clear();
        b.epoch = 1;
        for (int i = 0; i < b.threads; ++i) {
          Lane &l = b.lanes[i];
          l.id = i;
          l.tid = {unsigned(i % block.x), unsigned((i / block.x) % block.y), unsigned(i / (block.x * block.y))};
          l.copies.clear();
          l.committed = 0;
          void *stack = StackFor(l);
          if (stack == nullptr) {
            result.errors = 1;
            result.first_error = "INVALID_LAUNCH: no memory for the emulator's thread stacks";
            return result;
          }
          MakeContext(l.ctx, stack, kStackBytes, Entry, &b.sched);
          l.park = Park::kRunnable;
        }
        result.lanes += b.threads;
        for (;;) {
          bool ran = false;
          for (int i = 0; i < b.threads && !b.fatal; ++i) {
            Lane &l = b.lanes[i];
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
      }
    }
  }
  result.errors = b.errors;
  result.first_error = b.first_error;
  result.events = b.events;
  b.body = nullptr;
  g_block = nullptr;
  return result;
}

}  // namespace tir_lanes

#endif  // TIR_LANES_H_
