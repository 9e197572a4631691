// tir's tile library: the GPU pieces of a kernel that are more than scalar
// glue, each with its device implementation (the PTX), its emulated one
// (tir_lanes.h: the same data movement, lane by lane) and, where the plain
// host form uses it, a one-thread-per-block one. Included by tir_runtime.h.
//
//   tir_sptr<T>, TIR_SHARED_ARRAY, TIR_DYNAMIC_SHARED   shared-memory tiles
//   tir_swz<C>(r, c)                                    swizzled tile offsets
//   tir_cp_async16 / _commit / _wait<N>                 the cp.async pipeline
//   tir_ldmatrix_x1/x2/x4[_trans]                       ldmatrix
//   tir_mma_m16n8k16_bf16 / _f16, tir_mma_m16n8k8_tf32  warp MMA fragments (tir_to_tf32)
//   tir_shfl_xor, tir_warp_reduce, tir_group_reduce     warp and block reductions
//   tir_strided_reduce                                  reductions across warps (column layout)
//   tir_online<A>, tir_online_combine / _sum            online max and sum of exp (softmax)
//   tir_fence, tir_ticket, tir_volatile_load            two-phase work across blocks
//   tir_mbar_init / _arrive / _arrive_tx / _try_wait     mbarriers with phases (sm_90)
//   tir_tensor_map, tir_tma_load_2d                     TMA tile loads (sm_90)
//   tir_prefetch_tensormap                              tensor-map prefetch (sm_90)
//   tir_cluster_ctarank, tir_cluster_sync,              thread-block clusters: rank, barrier,
//   tir_mbar_arrive_cluster, tir_tma_load_2d_multicast  remote arrival, TMA multicast (sm_90)
//   tir_fence_proxy_async, tir_swz_bytes<S>             ordinary stores for the async proxy
//   tir_tma_store_2d, tir_bulk_commit / _wait_read<N>   TMA tile stores from shared memory (sm_90)
//   tir_named_barrier(id, n)                            bar.sync over n threads
//   tir_wgmma_desc, tir_wg_acc<N>, tir_wgmma_fence /    warpgroup MMA from shared memory (sm_90a)
//   _fence_operands
//   _commit / _wait<N>, tir_wgmma_m64k16_bf16/_f16<N>
//   tir_setmaxnreg_inc<R> / _dec<R>                     warpgroup register reallocation (sm_90a)

#ifndef TIR_TILES_H_
#define TIR_TILES_H_

// ---- shared memory -----------------------------------------------------------

// A pointer into shared memory. On a GPU and in the plain host form it is a
// plain pointer; emulated, every element access goes through the race check.
#if TIR_EMULATE
template <typename T>
struct tir_sref {
  T *p;
  operator T() const {
    ::tir_lanes::Touch(p, sizeof(T), false);
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  tir_sref &operator=(const T &v) {
    ::tir_lanes::Touch(p, sizeof(T), true);
    std::memcpy(p, &v, sizeof(T));
    return *this;
  }
  tir_sref &operator=(const tir_sref &o) { return *this = static_cast<T>(o); }
};
template <typename T>
struct tir_sptr {
  T *p = nullptr;
  tir_sptr() = default;
  explicit tir_sptr(T *q) : p(q) {}
  tir_sref<T> operator[](tir_i64 i) const { return tir_sref<T>{p + i}; }
  tir_sptr operator+(tir_i64 i) const { return tir_sptr(p + i); }
};
template <typename T, typename U>
static inline tir_sptr<T> tir_sptr_cast(tir_sptr<U> p) {
  return tir_sptr<T>(reinterpret_cast<T *>(p.p));
}
template <typename T> static inline T *tir_sraw(tir_sptr<T> p) { return p.p; }
// A static shared array of the block, and the dynamic shared memory the
// launch gives (`bytes` of it used).
#define TIR_SHARED_ARRAY(T, name, n) tir_sptr<T> name((T *)::tir_lanes::Shared(#name, sizeof(T) * (n)))
#define TIR_DYNAMIC_SHARED(name, bytes) \
  tir_sptr<unsigned char> name((unsigned char *)::tir_lanes::DynamicShared(bytes))
#else
template <typename T> using tir_sptr = T *;
template <typename T, typename U> TIR_FN T *tir_sptr_cast(U *p) { return reinterpret_cast<T *>(p); }
template <typename T> TIR_FN T *tir_sraw(T *p) { return p; }
#if TIR_DEVICE
#define TIR_SHARED_ARRAY(T, name, n) __shared__ __align__(16) T name[n]
#define TIR_DYNAMIC_SHARED(name, bytes) extern __shared__ __align__(16) unsigned char name[]
#else
#define TIR_SHARED_ARRAY(T, name, n) static thread_local T name[n] __attribute__((aligned(16)))
#define TIR_DYNAMIC_SHARED(name, bytes) static thread_local unsigned char name[bytes] __attribute__((aligned(16)))
#endif
#endif

// N consecutive elements stored to shared memory as one access of
// N * sizeof(T) bytes (`p` aligned to it): one st.shared.b32 for a bf16
// pair, .v2.b32 for an f32 pair.
template <int N, typename T>
TIR_FN void tir_sts_run(tir_sptr<T> p, const T *in) {
  typedef tir_chunk<N * (int)sizeof(T)> C;
  C c;
  tir_copy_bytes(&c, in, sizeof(C));
  tir_sptr_cast<C>(p)[0] = c;
}

// ---- swizzled shared-memory tiles --------------------------------------------

// Offset of element (r, c) in a shared tile of 16-bit elements with C columns
// (a power of two, at least 16). Rows are cut into 16-byte chunks and each
// chunk index is XORed with the row's position among the eight consecutive
// rows that share a set of banks, so the eight rows an ldmatrix (or a
// column of fragment loads) touches sit in eight distinct bank groups; chunks
// stay whole, so 16-byte cp.async copies and ldmatrix rows stay aligned. A
// bijection within each row, with no padding.
template <int C> TIR_FN int tir_swz(int r, int c) {
  constexpr int chunks = C / 8;
  constexpr int rows_per_line = chunks >= 8 ? 1 : 8 / chunks;
  constexpr int mask = chunks >= 8 ? 7 : chunks - 1;
  return r * C + ((((c >> 3) ^ ((r / rows_per_line) & mask))) << 3) + (c & 7);
}

// ---- the cp.async pipeline (sm_80+) ------------------------------------------

// Copies `bytes` (0 or 16) bytes from global `src` to shared `dst` and
// zero-fills the rest of the 16 (PTX ISA, "Data Movement and Conversion
// Instructions: cp.async"). It lands at the tir_cp_async_wait that
// covers the commit group it joined; the plain host form copies at once.
template <typename T>
TIR_FN void tir_cp_async16(tir_sptr<T> dst, const void *src, int bytes) {
#if TIR_DEVICE
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes));
#elif TIR_EMULATE
  ::tir_lanes::CpAsync16(tir_sraw(dst), src, bytes);
#else
  std::memcpy(dst, src, bytes);
  std::memset((char *)dst + bytes, 0, 16 - bytes);
#endif
}
// Closes the thread's current group of copies.
TIR_FN void tir_cp_async_commit() {
#if TIR_DEVICE
  asm volatile("cp.async.commit_group;\n" ::);
#elif TIR_EMULATE
  ::tir_lanes::CpAsyncCommit();
#endif
}
// Waits until at most N of the thread's committed groups are in flight
// (PTX ISA, "cp.async.wait_group").
// Other threads see the copies only after a barrier that follows.
template <int N> TIR_FN void tir_cp_async_wait() {
#if TIR_DEVICE
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#elif TIR_EMULATE
  ::tir_lanes::CpAsyncWait(N);
#endif
}

#if TIR_LANES
// ---- warps -------------------------------------------------------------------

// The lanes of the calling thread's warp that the block has (all 32 unless
// the block ends inside the warp).
TIR_FN unsigned tir_warp_mask() {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned n = blockDim.x * blockDim.y * blockDim.z - (t / 32) * 32;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

// The value of lane (lane ^ offset) of the warp (PTX ISA, "shfl.sync",
// mode .bfly).
// `mask` is tir_warp_mask(), computed once by a caller that shuffles often.
template <typename T> TIR_FN T tir_shfl_xor(T v, int offset, unsigned mask) {
#if TIR_DEVICE
  return __shfl_xor_sync(mask, v, offset);
#else
  ::tir_lanes::Lane &l = ::tir_lanes::Current();
  static_assert(sizeof(T) <= 8, "shfl moves up to 8 bytes");
  l.in[0] = 0;
  std::memcpy(&l.in[0], &v, sizeof(T));
  ::tir_lanes::Collective(::tir_lanes::kShflXor, offset, mask);
  T r;
  std::memcpy(&r, &l.out[0], sizeof(T));
  return r;
#endif
}
template <typename T> TIR_FN T tir_shfl_xor(T v, int offset) { return tir_shfl_xor(v, offset, tir_warp_mask()); }

// ---- ldmatrix: 8x8 b16 matrices from shared memory -------------------------

// Lanes 8m..8m+7 give the addresses of rows 0-7 of matrix m (16 contiguous,
// 16-byte aligned bytes each); every lane receives, per matrix, one register
// holding elements (lane/4, 2(lane%4)) and (lane/4, 2(lane%4)+1), low half
// first, or with .trans (2(lane%4), lane/4) and (2(lane%4)+1, lane/4)
// (PTX ISA, "Warp-level matrix load instruction: ldmatrix").
#if TIR_DEVICE
#define TIR_LDMATRIX_ASM(n, trans, regs, ...)                                              \
  asm volatile("ldmatrix.sync.aligned.m8n8.x" #n trans ".shared.b16 " regs ", [%" #n "];\n" \
               : __VA_ARGS__                                                               \
               : "r"((unsigned)__cvta_generic_to_shared(p)))
TIR_FN void tir_ldmatrix_x1(tir_u32 &r0, tir_sptr<tir_u16> p) { TIR_LDMATRIX_ASM(1, "", "{%0}", "=r"(r0)); }
TIR_FN void tir_ldmatrix_x2(tir_u32 &r0, tir_u32 &r1, tir_sptr<tir_u16> p) {
  TIR_LDMATRIX_ASM(2, "", "{%0,%1}", "=r"(r0), "=r"(r1));
}
TIR_FN void tir_ldmatrix_x4(tir_u32 &r0, tir_u32 &r1, tir_u32 &r2, tir_u32 &r3, tir_sptr<tir_u16> p) {
  TIR_LDMATRIX_ASM(4, "", "{%0,%1,%2,%3}", "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3));
}
TIR_FN void tir_ldmatrix_x1_trans(tir_u32 &r0, tir_sptr<tir_u16> p) { TIR_LDMATRIX_ASM(1, ".trans", "{%0}", "=r"(r0)); }
TIR_FN void tir_ldmatrix_x2_trans(tir_u32 &r0, tir_u32 &r1, tir_sptr<tir_u16> p) {
  TIR_LDMATRIX_ASM(2, ".trans", "{%0,%1}", "=r"(r0), "=r"(r1));
}
TIR_FN void tir_ldmatrix_x4_trans(tir_u32 &r0, tir_u32 &r1, tir_u32 &r2, tir_u32 &r3, tir_sptr<tir_u16> p) {
  TIR_LDMATRIX_ASM(4, ".trans", "{%0,%1,%2,%3}", "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3));
}
#undef TIR_LDMATRIX_ASM
#else
static inline void tir_ldmatrix_n(int n, bool trans, tir_u32 *r, tir_sptr<tir_u16> p) {
  ::tir_lanes::Lane &l = ::tir_lanes::Current();
  l.addr = reinterpret_cast<const unsigned char *>(tir_sraw(p));
  ::tir_lanes::Collective(::tir_lanes::kLdmatrix, n | (trans ? 8 : 0), tir_warp_mask());
  for (int k = 0; k < n; ++k) r[k] = static_cast<tir_u32>(l.out[k]);
}
static inline void tir_ldmatrix_x1(tir_u32 &r0, tir_sptr<tir_u16> p) { tir_ldmatrix_n(1, false, &r0, p); }
static inline void tir_ldmatrix_x2(tir_u32 &r0, tir_u32 &r1, tir_sptr<tir_u16> p) {
  tir_u32 r[2];
  tir_ldmatrix_n(2, false, r, p);
  r0 = r[0], r1 = r[1];
}
static inline void tir_ldmatrix_x4(tir_u32 &r0, tir_u32 &r1, tir_u32 &r2, tir_u32 &r3, tir_sptr<tir_u16> p) {
  tir_u32 r[4];
  tir_ldmatrix_n(4, false, r, p);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
static inline void tir_ldmatrix_x1_trans(tir_u32 &r0, tir_sptr<tir_u16> p) { tir_ldmatrix_n(1, true, &r0, p); }
static inline void tir_ldmatrix_x2_trans(tir_u32 &r0, tir_u32 &r1, tir_sptr<tir_u16> p) {
  tir_u32 r[2];
  tir_ldmatrix_n(2, true, r, p);
  r0 = r[0], r1 = r[1];
}
static inline void tir_ldmatrix_x4_trans(tir_u32 &r0, tir_u32 &r1, tir_u32 &r2, tir_u32 &r3, tir_sptr<tir_u16> p) {
  tir_u32 r[4];
  tir_ldmatrix_n(4, true, r, p);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
#endif

// ---- warp MMA: m16n8k16, f32 accumulate ------------------------------------

// d += A * B for the warp's 16x16 A (row-major fragments a0..a3) and 16x8 B
// (column fragments b0, b1), with d the lane's four f32 accumulators: with
// g = lane/4 and t = lane%4, a0..a3 hold A(g, 2t..2t+1), A(g+8, 2t..),
// A(g, 2t+8..), A(g+8, 2t+8..); b0, b1 hold B(2t..2t+1, g), B(2t+8.., g);
// d holds D(g, 2t), D(g, 2t+1), D(g+8, 2t), D(g+8, 2t+1) (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type").
#if TIR_DEVICE
#define TIR_MMA(type)                                                                                         \
  TIR_FN void tir_mma_m16n8k16_##type(float *d, tir_u32 a0, tir_u32 a1, tir_u32 a2, tir_u32 a3, tir_u32 b0,   \
                                      tir_u32 b1) {                                                           \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." #type "." #type                                     \
                 ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                               \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                             \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                                     \
  }
TIR_MMA(bf16)
TIR_MMA(f16)
#undef TIR_MMA
// tf32: f32 rounded to 10 mantissa bits (to nearest, ties away, as
// cvt.rna.tf32.f32), kept in an f32 container.
TIR_FN tir_u32 tir_to_tf32(float x) {
  tir_u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
TIR_FN float tir_tf32_value(tir_u32 bits) { return __uint_as_float(bits); }
// m16n8k8 with tf32 operands: a0..a3 hold A(g, t), A(g+8, t), A(g, t+4),
// A(g+8, t+4); b0, b1 hold B(t, g), B(t+4, g); d as for m16n8k16 (PTX ISA,
// "Matrix Fragments for mma.m16n8k8" with .tf32).
TIR_FN void tir_mma_m16n8k8_tf32(float *d, tir_u32 a0, tir_u32 a1, tir_u32 a2, tir_u32 a3, tir_u32 b0, tir_u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#else
static inline void tir_mma_m16n8k16(int kind, float *d, tir_u32 a0, tir_u32 a1, tir_u32 a2, tir_u32 a3, tir_u32 b0,
                                    tir_u32 b1) {
  ::tir_lanes::Lane &l = ::tir_lanes::Current();
  const tir_u32 in[6] = {a0, a1, a2, a3, b0, b1};
  for (int i = 0; i < 6; ++i) l.in[i] = in[i];
  for (int q = 0; q < 4; ++q) l.in[6 + q] = ::tir_lanes::Bits(d[q]);
  ::tir_lanes::Collective(kind, 0, tir_warp_mask());
  for (int q = 0; q < 4; ++q) d[q] = ::tir_lanes::F32(l.out[q]);
}
static inline void tir_mma_m16n8k16_bf16(float *d, tir_u32 a0, tir_u32 a1, tir_u32 a2, tir_u32 a3, tir_u32 b0,
                                         tir_u32 b1) {
  tir_mma_m16n8k16(::tir_lanes::kMmaBf16, d, a0, a1, a2, a3, b0, b1);
}
static inline void tir_mma_m16n8k16_f16(float *d, tir_u32 a0, tir_u32 a1, tir_u32 a2, tir_u32 a3, tir_u32 b0,
                                        tir_u32 b1) {
  tir_mma_m16n8k16(::tir_lanes::kMmaF16, d, a0, a1, a2, a3, b0, b1);
}
static inline void tir_mma_m16n8k8_tf32(float *d, tir_u32 a0, tir_u32 a1, tir_u32 a2, tir_u32 a3, tir_u32 b0,
                                        tir_u32 b1) {
  tir_mma_m16n8k16(::tir_lanes::kMmaTf32, d, a0, a1, a2, a3, b0, b1);
}
#endif

// Reduces `v` over each group of `width` (a power of two <= 32) consecutive
// lanes of the warp by butterfly shuffles; every lane gets its group's result.
template <typename T, typename Op> TIR_FN T tir_warp_reduce(T v, int width, Op op) {
  const unsigned mask = tir_warp_mask();
  for (int offset = width / 2; offset > 0; offset /= 2) v = op(v, tir_shfl_xor(v, offset, mask));
  return v;
}
#endif  // TIR_LANES

#if !TIR_DEVICE
// tf32 rounding as cvt.rna.tf32.f32 does it: to nearest, ties away from zero
// (sign-magnitude), at mantissa bit 13; NaN stays NaN.
static inline tir_u32 tir_to_tf32(float x) {
  tir_u32 b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7f800000u) == 0x7f800000u) return (b & 0x007fffffu) ? (b | 0x00400000u) & 0xffffe000u : b;
  return (b + 0x1000u) & 0xffffe000u;
}
static inline float tir_tf32_value(tir_u32 b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
#endif

// ---- block reductions ------------------------------------------------------

// Reduces `v` over each group of `group` consecutive threads of the block
// (group is a power of two <= blockDim.x, the block a multiple of it); every
// thread of a group gets the result. Within a warp the lanes reduce by
// shuffles; a group of several warps then takes one shared-memory round:
// each warp's lane 0 stores its partial, the group's first warp reads the
// group's partials (lane l the partial of warp l), reduces them by shuffles
// and its lane 0 stores the result, which every thread of the group reads
// once after the second barrier. `scratch` holds a partial per warp of the
// block, then a result per group (warps + blockDim.x / group entries, the
// result slots apart from the partials, so the next call's partials need no
// third barrier). The plain host form has one thread per block: the value
// is returned as is.
template <typename T, typename Op>
TIR_FN T tir_group_reduce(T v, int group, tir_sptr<T> scratch, Op op) {
#if TIR_LANES
  v = tir_warp_reduce(v, group < 32 ? group : 32, op);
  if (group <= 32) return v;
  // Unsigned: divisions by the (power-of-two) group are shifts and masks.
  const unsigned t = threadIdx.x, warps = (blockDim.x + 31) / 32, n = (unsigned)group / 32;
  if (t % 32 == 0) scratch[t / 32] = v;
  TIR_SYNC();
  if (t % group < 32) {
    T p = scratch[(t - t % group) / 32 + t % n];
    p = tir_warp_reduce(p, (int)n, op);
    if (t % group == 0) scratch[warps + t / group] = p;
  }
  TIR_SYNC();
  return scratch[warps + t / group];
#else
  (void)group; (void)scratch; (void)op;
  return v;
#endif
}

// Reduces `v` over the `group` threads of the block that share
// threadIdx.x % stride (thread t is lane t / stride of slot t % stride: the
// column layout, where consecutive threads take consecutive kept elements).
// Each thread stores its value in `scratch` (group * stride entries), then
// every thread combines its slot's values in lane order between two
// barriers: the result is the same on every run. The plain host form has
// one thread per block: the value is returned as is.
template <typename T, typename Op>
TIR_FN T tir_strided_reduce(T v, int group, int stride, tir_sptr<T> scratch, Op op) {
#if TIR_LANES
  if (group <= 1) return v;
  const int t = threadIdx.x;
  scratch[t] = v;
  TIR_SYNC();
  const int slot = t % stride;
  T r = scratch[slot];
  for (int l = 1; l < group; ++l) r = op(r, scratch[l * stride + slot]);
  TIR_SYNC();
  return r;
#else
  (void)group; (void)stride; (void)scratch; (void)op;
  return v;
#endif
}

// ---- online max and sum (compiler/ir/OnlineSoftmax.h) ------------------------

// A row's online statistics: t the max of the elements seen (NaN when one
// is NaN), r a reference max (the largest finite-or-infinite element that
// exceeded the one before, from the lowest finite value) and s the sum of
// exp(a - r) over the elements. Two partials combine by rescaling both sums
// to the larger reference; tir_online_sum rescales s to t, the sum of
// exp(a - t) the two-pass form computes (NaN for a row of -inf, where
// exp(-inf - -inf) is NaN, as in that form).
template <typename A> struct tir_online {
  A t, r, s;
};
template <typename A> TIR_FN tir_online<A> tir_online_identity() {
  tir_online<A> o;
  o.t = -(A)TIR_INF;
  o.r = sizeof(A) == 4 ? (A)-3.40282347e+38f : (A)-1.7976931348623157e+308;
  o.s = 0;
  return o;
}
// exp(d) of a term of the sum (d = a - r <= 0, or NaN). f32 on a GPU: one
// ex2.approx.ftz of d * log2(e) (PTX ISA, "ex2": about 2 ulp; the product
// rounds to 2^-24 relative, so a term off by |d| * 2^-24 relative, and the
// terms that carry the sum have small |d|; a term below 2^-126 flushes to
// zero against a sum of at least 1), where expf takes about ten
// instructions; emulated and on the host, exp2 of the same product. f64:
// exp.
TIR_FN float tir_online_exp(float d) {
#if TIR_DEVICE
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d * 1.44269504088896341f));
  return y;
#else
  return exp2f(d * 1.44269504088896341f);
#endif
}
TIR_FN double tir_online_exp(double d) { return exp(d); }
// exp(from - to) of a rescale (from <= to), with the accurate exp: a
// thread's sum is rescaled at every rise of its running max, so the errors
// of an approximate one would compound; rises are rare (about ln n of n
// elements on unordered data), so its cost is not.
template <typename A> TIR_FN A tir_online_scale(A from, A to) { return from == to ? (A)1 : (A)exp(from - to); }
template <typename A> TIR_FN tir_online<A> tir_online_combine(tir_online<A> x, tir_online<A> y) {
  tir_online<A> o;
  o.t = tir_fmax(x.t, y.t);
  o.r = x.r > y.r ? x.r : y.r;
  o.s = x.s * tir_online_scale(x.r, o.r) + y.s * tir_online_scale(y.r, o.r);
  return o;
}
template <typename A> TIR_FN A tir_online_sum(tir_online<A> o) { return o.s * tir_online_scale(o.r, o.t); }
#if TIR_LANES
template <typename A> TIR_FN tir_online<A> tir_shfl_xor(tir_online<A> v, int offset, unsigned mask) {
  tir_online<A> o;
  o.t = tir_shfl_xor(v.t, offset, mask);
  o.r = tir_shfl_xor(v.r, offset, mask);
  o.s = tir_shfl_xor(v.s, offset, mask);
  return o;
}
#endif

// ---- Hopper: mbarriers, TMA, wgmma (sm_90 / sm_90a) ------------------------

// The shared-memory address of `p` (what PTX's shared state space takes;
// emulated: its offset in the block's arena).
template <typename T> TIR_FN tir_u32 tir_smem_u32(tir_sptr<T> p) {
#if TIR_DEVICE
  return (tir_u32)__cvta_generic_to_shared(p);
#elif TIR_EMULATE
  return (tir_u32)::tir_lanes::OffsetOf(tir_sraw(p), 0);
#else
  return (tir_u32)(reinterpret_cast<tir_u64>(p) & 0xffffffffu);
#endif
}

// A byte offset in a tile under the 16-byte-chunk swizzle of span S bytes
// (32, 64, 128): what a TMA with CU_TENSOR_MAP_SWIZZLE_<S>B writes and a
// wgmma descriptor with the same mode reads, for a tile whose base is
// aligned to 8 * S bytes.
template <int S> TIR_FN tir_u32 tir_swz_bytes(tir_u32 off) {
  return off ^ (((off >> 7) & (S / 16 - 1)) << 4);
}

// An mbarrier (a 64-bit shared word): init with the arrivals a phase takes;
// arrive, or arrive announcing `bytes` more bytes of TMA copies this phase;
// try_wait(parity) true once the phase of that parity completed (PTX ISA,
// "Parallel Synchronization and Communication Instructions: mbarrier").
TIR_FN void tir_mbar_init(tir_sptr<tir_u64> bar, unsigned count) {
#if TIR_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(tir_smem_u32(bar)), "r"(count) : "memory");
#elif TIR_EMULATE
  ::tir_lanes::MbarrierInit(tir_sraw(bar), (int)count);
#else
  (void)bar; (void)count;
#endif
}
// Makes initialized mbarriers visible to the other threads and the async
// proxy (with the barrier that follows).
TIR_FN void tir_mbar_init_fence() {
#if TIR_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
TIR_FN void tir_mbar_arrive(tir_sptr<tir_u64> bar) {
#if TIR_DEVICE
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(tir_smem_u32(bar)) : "memory");
#elif TIR_EMULATE
  ::tir_lanes::MbarrierArrive(tir_sraw(bar), 0);
#else
  (void)bar;
#endif
}
TIR_FN void tir_mbar_arrive_tx(tir_sptr<tir_u64> bar, unsigned bytes) {
#if TIR_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(tir_smem_u32(bar)), "r"(bytes)
               : "memory");
#elif TIR_EMULATE
  ::tir_lanes::MbarrierArrive(tir_sraw(bar), bytes);
#else
  (void)bar; (void)bytes;
#endif
}
TIR_FN bool tir_mbar_try_wait(tir_sptr<tir_u64> bar, unsigned parity) {
#if TIR_DEVICE
  tir_u32 ok;
  asm volatile(
      "{\n  .reg .pred p;\n  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n  selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(tir_smem_u32(bar)), "r"(parity)
      : "memory");
  return ok != 0;
#elif TIR_EMULATE
  return ::tir_lanes::MbarrierTryWait(tir_sraw(bar), (int)parity);
#else
  (void)bar; (void)parity;
  return true;
#endif
}
TIR_FN void tir_mbar_wait(tir_sptr<tir_u64> bar, unsigned parity) {
  while (!tir_mbar_try_wait(bar, parity)) {
  }
}

// A TMA tensor map (CUtensorMap, 128 bytes), passed in the kernel's
// parameter: the launcher encodes it with cuTensorMapEncodeTiled on a GPU
// and with the same fields (tir_lanes::TensorMapFields) for the emulator.
struct __attribute__((aligned(64))) tir_tensor_map {
  tir_u64 w[16];
};

// Loads the box at element (c0 inner, c1 outer) of `map`'s tensor into
// shared `dst` in the map's swizzle, zeros outside the tensor, completing
// its bytes on `bar` (PTX ISA, "cp.async.bulk.tensor", .tile, 2d).
template <typename T>
TIR_FN void tir_tma_load_2d(tir_sptr<T> dst, const tir_tensor_map *map, int c0, int c1, tir_sptr<tir_u64> bar) {
#if TIR_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          tir_smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(tir_smem_u32(bar))
      : "memory");
#elif TIR_EMULATE
  ::tir_lanes::TmaLoad2d(tir_sraw(dst), map, c0, c1, tir_sraw(bar));
#else
  (void)dst; (void)map; (void)c0; (void)c1; (void)bar;
#endif
}

// Brings a tensor map into the TMA unit's descriptor cache ahead of the
// first load through it (PTX ISA, "prefetch.tensormap"; the map lives in
// the __grid_constant__ parameter, addressed generically).
TIR_FN void tir_prefetch_tensormap(const tir_tensor_map *map) {
#if TIR_DEVICE
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
#elif TIR_EMULATE
  ::tir_lanes::PrefetchTensorMap(map);
#else
  (void)map;
#endif
}

// ---- thread-block clusters (sm_90) -------------------------------------------
// The launch gives the cluster dimensions (no __cluster_dims__); the
// emulator runs a cluster's CTAs together (tir_lanes.h, the cluster section).

// The CTA's rank in its cluster (%cluster_ctarank, x fastest).
TIR_FN unsigned tir_cluster_ctarank() {
#if TIR_DEVICE
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
#elif TIR_EMULATE
  return (unsigned)::tir_lanes::ClusterRank();
#else
  return 0u;
#endif
}
// A barrier of every thread of every CTA of the cluster, with release and
// acquire semantics at cluster scope (PTX ISA, "barrier.cluster"): after
// mbarrier.init before peers use the barriers, and before exit while peers
// may still write into the CTA's shared memory or arrive on its barriers.
TIR_FN void tir_cluster_sync() {
#if TIR_DEVICE
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#elif TIR_EMULATE
  ::tir_lanes::ClusterSync();
#endif
}
// Arrives at the mbarrier at `bar`'s offset in the shared memory of CTA
// `cta` of the cluster (mapa.shared::cluster, then
// mbarrier.arrive.release.cluster.shared::cluster; PTX ISA, "mapa" and
// "mbarrier.arrive").
TIR_FN void tir_mbar_arrive_cluster(tir_sptr<tir_u64> bar, unsigned cta) {
#if TIR_DEVICE
  asm volatile(
      "{\n  .reg .b32 remote;\n  mapa.shared::cluster.u32 remote, %0, %1;\n"
      "  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(tir_smem_u32(bar)),
      "r"(cta)
      : "memory");
#elif TIR_EMULATE
  ::tir_lanes::MbarrierArriveCluster(tir_sraw(bar), (int)cta);
#else
  (void)bar; (void)cta;
#endif
}
// tir_tma_load_2d into every CTA of the cluster that `cta_mask` names (bit
// r: rank r): the box lands at `dst`'s offset in each one's shared memory
// and completes its bytes on each one's mbarrier at `bar`'s offset (PTX ISA,
// "cp.async.bulk.tensor", .multicast::cluster).
template <typename T>
TIR_FN void tir_tma_load_2d_multicast(tir_sptr<T> dst, const tir_tensor_map *map, int c0, int c1, tir_sptr<tir_u64> bar,
                                      unsigned cta_mask) {
#if TIR_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(tir_smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(tir_smem_u32(bar)), "h"((unsigned short)cta_mask)
      : "memory");
#elif TIR_EMULATE
  ::tir_lanes::TmaLoad2dMulticast(tir_sraw(dst), map, c0, c1, tir_sraw(bar), cta_mask);
#else
  (void)dst; (void)map; (void)c0; (void)c1; (void)bar; (void)cta_mask;
#endif
}

// Orders this thread's ordinary shared stores before what the async proxy
// (wgmma, TMA) does after the next barrier or mbarrier arrival.
TIR_FN void tir_fence_proxy_async() {
#if TIR_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#elif TIR_EMULATE
  ::tir_lanes::ProxyFence();
#endif
}

// Stores the box at element (c0 inner, c1 outer) of `map`'s tensor from
// shared `src` (in the map's swizzle), skipping elements outside the
// tensor; it joins the thread's open bulk group (PTX ISA,
// "cp.async.bulk.tensor", .global.shared::cta, .bulk_group). The shared
// bytes must be ordered before it by fence.proxy.async and a barrier, and
// stay unchanged until a tir_bulk_wait_read covers its group. The plain
// host form stores nothing (it writes its outputs directly).
template <typename T>
TIR_FN void tir_tma_store_2d(const tir_tensor_map *map, tir_sptr<T> src, int c0, int c1) {
#if TIR_DEVICE
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map), "r"(c0),
               "r"(c1), "r"(tir_smem_u32(src))
               : "memory");
#elif TIR_EMULATE
  ::tir_lanes::TmaStore2d(map, tir_sraw(src), c0, c1);
#else
  (void)map; (void)src; (void)c0; (void)c1;
#endif
}
// Closes the thread's open bulk group (cp.async.bulk.commit_group).
TIR_FN void tir_bulk_commit() {
#if TIR_DEVICE
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#elif TIR_EMULATE
  ::tir_lanes::BulkCommit();
#endif
}
// Waits until at most N of the thread's bulk groups may still read shared
// memory (cp.async.bulk.wait_group.read N).
template <int N> TIR_FN void tir_bulk_wait_read() {
#if TIR_DEVICE
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#elif TIR_EMULATE
  ::tir_lanes::BulkWaitRead(N);
#endif
}
// bar.sync id, n: waits until n threads (a multiple of 32) reached named
// barrier `id` (1-15; 0 is __syncthreads'); orders their accesses only.
TIR_FN void tir_named_barrier(int id, int n) {
#if TIR_DEVICE
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
#elif TIR_EMULATE
  ::tir_lanes::NamedBarrier(id, n);
#else
  (void)id; (void)n;
#endif
}

// A wgmma shared-memory matrix descriptor: start address, leading and
// stride byte offsets (each >> 4, 14 bits), base offset 0, and the layout
// type (bits 62-63): 0 none, 1 128B, 2 64B, 3 32B swizzle.
TIR_FN tir_u64 tir_wgmma_desc(tir_u32 addr, tir_u32 lbo, tir_u32 sbo, int layout) {
  return (tir_u64)((addr & 0x3ffff) >> 4) | ((tir_u64)((lbo & 0x3ffff) >> 4) << 16) |
         ((tir_u64)((sbo & 0x3ffff) >> 4) << 32) | ((tir_u64)layout << 62);
}

// The accumulators of an m64nNk16 wgmma: N/2 f32 per thread, in the order of
// the PTX ISA's D fragment (tir_lanes::Wgmma). Ordinary code reads and
// writes them through get/set, which the emulator checks against wgmmas in
// flight.
template <int N> struct tir_wg_acc {
#if TIR_EMULATE
  float d[N / 2];
  float future_[N / 2];
  int group_ = -1;
  bool touched_ = false;
  uint32_t touched_at_ = 0;
  float get(int i) const {
    ::tir_lanes::WgmmaUse(&group_);
    return d[i];
  }
  void set(int i, float v) {
    ::tir_lanes::WgmmaUse(&group_);
    d[i] = v;
    touched_ = true;
    touched_at_ = ::tir_lanes::Current().wgmma_fences;
  }
  ::tir_lanes::WgmmaAccumulators view() { return {d, future_, &group_, &touched_, &touched_at_}; }
#else
  float d[N / 2];
  TIR_FN_MEMBER float get(int i) const { return d[i]; }
  TIR_FN_MEMBER void set(int i, float v) { d[i] = v; }
#endif
};

// Keeps the compiler from moving ordinary accesses of the accumulators
// across the asynchronous wgmma (each register is "used and redefined"
// here); emitted around the fence, the commit and the waits.
template <int N> TIR_FN void tir_wgmma_fence_operands(tir_wg_acc<N> &acc) {
#if TIR_DEVICE
#pragma unroll
  for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(acc.d[i])::"memory");
#else
  (void)acc;
#endif
}

// wgmma.fence (before a wgmma whose accumulators ordinary code wrote),
// commit_group, wait_group N.
TIR_FN void tir_wgmma_fence() {
#if TIR_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#elif TIR_EMULATE
  ::tir_lanes::WgmmaFence();
#endif
}
TIR_FN void tir_wgmma_commit() {
#if TIR_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#elif TIR_EMULATE
  ::tir_lanes::WgmmaCommit();
#endif
}
template <int N> TIR_FN void tir_wgmma_wait() {
#if TIR_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#elif TIR_EMULATE
  ::tir_lanes::WgmmaWait(N);
#endif
}

// setmaxnreg: the warpgroup's registers per thread raised to / lowered to R
// (sm_90a; needs the kernel's register cap at entry).
template <int R> TIR_FN void tir_setmaxnreg_inc() {
#if TIR_DEVICE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}
template <int R> TIR_FN void tir_setmaxnreg_dec() {
#if TIR_DEVICE
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

// d (+)= A * B for the warpgroup: A 64x16 and B 16xN from shared memory
// through descriptors, K-major unless TA / TB (M- / N-major); scale_d 0
// ignores d. The device form of each shape is generated beside the kernel
// (the operand list grows with N); the emulated one is here.
#if TIR_DEVICE
template <int N, int TA, int TB>
__device__ __forceinline__ void tir_wgmma_m64k16_bf16(tir_wg_acc<N> &acc, tir_u64 da, tir_u64 db, int scale_d);
template <int N, int TA, int TB>
__device__ __forceinline__ void tir_wgmma_m64k16_f16(tir_wg_acc<N> &acc, tir_u64 da, tir_u64 db, int scale_d);
#elif TIR_EMULATE
template <int N, int TA, int TB>
static inline void tir_wgmma_m64k16_bf16(tir_wg_acc<N> &acc, tir_u64 da, tir_u64 db, int scale_d) {
  ::tir_lanes::Wgmma(true, N, acc.view(), da, db, scale_d, TA, TB);
}
template <int N, int TA, int TB>
static inline void tir_wgmma_m64k16_f16(tir_wg_acc<N> &acc, tir_u64 da, tir_u64 db, int scale_d) {
  ::tir_lanes::Wgmma(false, N, acc.view(), da, db, scale_d, TA, TB);
}
#endif

// ---- work across blocks -----------------------------------------------------

// Orders this thread's global writes before its later ones, for every block
// (__threadfence); blocks of the host forms run one after another.
TIR_FN void tir_fence() {
#if TIR_DEVICE
  __threadfence();
#endif
}
// Takes the next ticket of the counter at `p` (an integer atomic): the
// block that takes ticket n - 1 of n knows all the others are done.
TIR_FN unsigned tir_ticket(unsigned *p) {
#if TIR_DEVICE
  return atomicAdd(p, 1u);
#else
  const unsigned t = *p;
  *p = t + 1;
  return t;
#endif
}
// A global read that bypasses the non-coherent caches (another block's
// write made visible by tir_fence).
template <typename T> TIR_FN T tir_volatile_load(const T *p) {
#if TIR_DEVICE
  return *(const volatile T *)p;
#else
  return *p;
#endif
}
template <typename A> TIR_FN tir_online<A> tir_online_volatile_load(const tir_online<A> *p) {
  tir_online<A> o;
  o.t = tir_volatile_load(&p->t);
  o.r = tir_volatile_load(&p->r);
  o.s = tir_volatile_load(&p->s);
  return o;
}

#endif  // TIR_TILES_H_
