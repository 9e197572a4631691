// The host backend: a generated kernel built by the system C++ compiler into
// a shared object, loaded with dlopen and run on the CPU, in one of two
// forms (tir_runtime.h): the plain host form (a block is one thread; what
// the host target tunes and times) or the GPU form emulated lane by lane
// (tir_lanes.h: the block size of the launch, warp collectives, cp.async
// groups, a shared-memory race check; what verifies GPU kernels on a CPU).

#ifndef TIR_COMPILER_CODEGEN_HOSTBUILD_H_
#define TIR_COMPILER_CODEGEN_HOSTBUILD_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <new>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/reference/Tensor.h"

namespace tir::codegen {

enum class HostForm {
  kPlain,  // a block is one thread
  kLanes,  // the GPU form, lane by lane (-DTIR_EMULATE=1)
};

// How an emulated launch explores schedules (tir_lanes.h, LaunchOptions):
// the natural order and high thread ids first, then seeded shuffles; the
// blocks that run under every schedule (`explore_blocks` of them: the
// first, then the last, then spread over the grid; -1 every block) must
// leave the same global bytes under each, the others take the schedules in
// turn. By default the first block explores (what each verification adds
// is one block's run) and the others alternate.
struct LaneSchedules {
  int schedules = 2;
  uint64_t seed = 1;
  long explore_blocks = 1;
};

// What one emulated launch did.
struct LaneStats {
  uint64_t events = 0;  // lane events: shared accesses, collective and barrier arrivals
  uint64_t threads = 0; // thread executions (blocks x threads per block)
};

class HostKernel {
 public:
  using CallFn = void (*)(void **fields, unsigned gx, unsigned gy, unsigned gz);
  using LanesFn = int (*)(const void *params, unsigned long params_bytes, const unsigned *grid, const unsigned *block,
                          unsigned long dynamic_smem, void *const *writable, const unsigned long *writable_bytes,
                          int writable_count, const long long *schedule, char *error, unsigned long error_bytes,
                          unsigned long long *stats);
  HostKernel(void *handle, CallFn call, LanesFn lanes, std::string path)
      : handle_(handle), call_(call), lanes_(lanes), path_(std::move(path)) {}
  ~HostKernel();
  HostKernel(const HostKernel &) = delete;
  HostKernel &operator=(const HostKernel &) = delete;

  HostForm form() const { return lanes_ ? HostForm::kLanes : HostForm::kPlain; }
  void Call(void **fields, unsigned gx, unsigned gy, unsigned gz) const { call_(fields, gx, gy, gz); }
  // The lane-exact launch on `params` (tir_args packed as a GPU receives
  // it: ParamPacking.h), with `writable` the global memory it may write:
  // errors carry the emulator's reason (SHARED_MEMORY_RACE,
  // SCHEDULE_DEPENDENT_RESULT, UNCOMPLETED_ASYNC_COPY, WARP_DIVERGENCE,
  // BARRIER_DIVERGENCE, SHARED_OUT_OF_BOUNDS, MISALIGNED_ADDRESS,
  // INVALID_LAUNCH) and its report.
  absl::Status CallLanes(const void *params, size_t params_bytes, const unsigned *grid, const unsigned *block,
                         uint64_t dynamic_smem, const std::vector<std::pair<void *, size_t>> &writable,
                         const LaneSchedules &schedules, LaneStats *stats = nullptr) const;
  const std::string &path() const { return path_; }

 private:
  void *handle_;
  CallFn call_;
  LanesFn lanes_;
  std::string path_;
};

struct HostBuildOptions {
  HostForm form = HostForm::kPlain;
  // The runtime headers (name, text); empty for RuntimeHeaders().
  std::vector<std::pair<std::string, std::string>> headers;
};

// Compiles a generated kernel source with the system C++ compiler (`c++`, or
// $TIR_HOST_CXX) into a shared object under `work_dir` (one directory per
// source, form, headers and compiler: its path, version and flags; an
// existing object is reused) and returns its path. Errors:
// HOST_COMPILE_FAILED with the compiler's output.
absl::StatusOr<std::string> CompileHostObject(const std::string &source, const std::string &work_dir,
                                              const HostBuildOptions &options = {});

// Emulated kernels this process compiled whole after they failed to link
// with their header directory's shared emulator object (each such failure
// also has that directory rebuilt). Tests check it stays put where the
// shared object should serve.
int64_t HostLinkFallbacks();

// Loads a shared object from CompileHostObject. Errors: INTERNAL (dlopen).
absl::StatusOr<std::unique_ptr<HostKernel>> LoadHostKernel(const std::string &path);

// CompileHostObject + LoadHostKernel.
absl::StatusOr<std::unique_ptr<HostKernel>> BuildHostKernel(const EmittedKernel &kernel, const std::string &work_dir,
                                                             const HostBuildOptions &options = {});

// The arguments of one kernel laid out for host calls, in `copies` separate
// sets (inputs with the graph's strides, outputs, sizes and strides), so that
// timed runs can rotate over a working set larger than the caches. Dynamic
// extents are resolved from the inputs. Every tensor is laid out to keep
// what the graph declares (LaunchContract.h: alignment, strides and their
// divisibility; a stride of 0 on an output), and checked against it.
// The extents of kernel graph `kernel`'s iteration domain
// (tir.iteration_domain, -1 where dynamic) when its arguments have `args`
// (per argument: a tensor's shape, an index argument's value as {v}).
// Errors: INVALID_ARGUMENT when an extent cannot be resolved.
absl::StatusOr<std::vector<int64_t>> ResolveDomain(GraphOp kernel, const std::vector<std::vector<int64_t>> &args);

class HostLaunch {
 public:
  // Buffer bytes, 256-byte aligned (every alignment a graph may declare up
  // to that is kept; more is refused at Prepare).
  template <typename T>
  struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U> &) {}
    T *allocate(size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t(256))); }
    void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t(256)); }
    bool operator==(const AlignedAllocator &) const { return true; }
    bool operator!=(const AlignedAllocator &) const { return false; }
  };
  using Bytes = std::vector<uint8_t, AlignedAllocator<uint8_t>>;

  // `field_names` and `launch` as emitted for the kernel (any candidate).
  static absl::StatusOr<std::unique_ptr<HostLaunch>> Prepare(GraphOp kernel,
                                                             const std::vector<std::string> &field_names,
                                                             const tir::v1::LaunchRule &launch,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             int copies = 1);
  int copies() const { return static_cast<int>(sets_.size()); }
  // Computes the grid from another candidate's launch rule (the argument
  // sets stay). Errors: INVALID_ARGUMENT when it reads a missing domain dim.
  absl::Status SetLaunch(const tir::v1::LaunchRule &launch);
  // Grows the kernel's workspace (zeroed) to what `launch` needs; SetLaunch
  // does it too. A launcher that copies the sets elsewhere calls it for
  // every candidate first.
  absl::Status ReserveWorkspace(const tir::v1::LaunchRule &launch);
  // Bytes of inputs and outputs in one set.
  int64_t bytes_per_set() const { return bytes_per_set_; }
  // Sets every output byte of set `s` to 0xff, so an unwritten element shows.
  void Poison(int s);
  // Runs `kernel` on set `s` (lane by lane for an emulated kernel, with the
  // launch rule's block and dynamic shared memory, on set `s`'s parameter
  // struct packed by PackParams, under the schedules of SetSchedules).
  // Errors: the emulator's (HostKernel::CallLanes).
  absl::Status Run(const HostKernel &kernel, int s, LaneStats *stats = nullptr);
  void SetSchedules(const LaneSchedules &schedules) { schedules_ = schedules; }
  // The global memory a kernel may write in set `s`: outputs and workspace.
  std::vector<std::pair<void *, size_t>> Writable(int s);
  // The outputs of set `s`, read back through their strides.
  std::vector<reference::Tensor> Outputs(int s) const;

  // The layout, for launchers that copy the sets elsewhere (a GPU): field i
  // of tir_args is either buffer `buffer` (a pointer) or `bytes` bytes of
  // value at `value` (sizes and strides, scalars).
  // A TMA tensor map over input or output buffer `buffer` (rank 2): dims and box
  // inner first, the outer stride in bytes; `encodable` when the layout
  // allows one (TensorMapEncodable), else the field stays zero bytes.
  struct TensorMapView {
    int buffer = -1;
    uint64_t dims[2] = {0, 0};
    uint64_t stride_bytes = 0;
    uint32_t box[2] = {0, 0};
    int elem_bytes = 2;
    bool bf16 = true;
    bool f32 = false;  // else f16 unless bf16
    bool encodable = false;
  };
  // `map`: a tensor-map field (128 bytes, 64-byte aligned) that a GPU
  // launcher encodes with the driver; `value` holds the emulator's encoding.
  // `align`: the field's alignment in tir_args (its C type's).
  struct FieldView {
    int buffer = -1;
    const void *value = nullptr;
    size_t bytes = 0;
    size_t align = 8;
    const TensorMapView *map = nullptr;
  };
  std::vector<FieldView> Fields(int s) const;
  int buffer_count() const { return static_cast<int>(sets_[0].buffers.size()); }
  Bytes &buffer(int s, int b) { return sets_[s].buffers[b]; }
  // Buffer index of the workspace, or -1.
  int workspace_buffer() const { return sets_[0].workspace_buffer; }
  // Buffer indices of the outputs.
  const std::vector<size_t> &output_buffers() const { return sets_[0].out_buffer; }
  const unsigned *grid() const { return grid_.data(); }
  // The iteration domain at the inputs' shapes.
  const std::vector<int64_t> &domain() const { return domain_; }

 private:
  struct Set {
    std::vector<Bytes> buffers;
    std::vector<void *> pointers;
    std::vector<std::vector<int64_t>> arrays;
    std::vector<std::array<uint8_t, 8>> scalars;
    std::vector<void *> fields;
    std::vector<size_t> out_buffer;  // per output, index into buffers
    std::vector<int> field_buffer;   // per field: buffer index, or -1 for a value
    std::vector<size_t> field_bytes; // per value field: its size
    std::vector<size_t> field_align; // per field: its alignment
    std::vector<int> field_map;      // per field: index into maps, or -1
    std::vector<std::array<uint64_t, 16>> map_bytes;
    std::vector<TensorMapView> maps;
    int workspace_buffer = -1, workspace_pointer = -1;
  };
  std::vector<Set> sets_;
  std::vector<std::vector<int64_t>> out_shapes_, out_strides_;
  std::vector<reference::DType> out_dtypes_;
  std::vector<bool> out_scalar_;
  std::vector<int64_t> domain_;
  std::array<unsigned, 3> grid_ = {1, 1, 1};
  std::array<unsigned, 3> block_ = {1, 1, 1};
  uint64_t dynamic_smem_ = 0;
  int64_t bytes_per_set_ = 0;
  LaneSchedules schedules_;
};

// The grid (x, y, z) a launch rule gives for the iteration domain `domain`.
// Errors: INVALID_ARGUMENT when the rule reads a dim the domain lacks.
absl::StatusOr<std::array<unsigned, 3>> LaunchGrid(const tir::v1::LaunchRule &launch,
                                                   const std::vector<int64_t> &domain);

// Elements each output value of `kernel` is reduced over at the iteration
// domain `domain` (the reduced extents' product; matmul: K; 1 for
// pointwise kernels): what the verification bound grows with.
int64_t ReductionLength(GraphOp kernel, const std::vector<int64_t> &domain);

// Whether a rank-2 tensor at `base` with `shape` and `strides` (elements)
// of `elem_bytes` elements can be a TMA tensor map: inner stride 1, base and
// outer stride 16-byte aligned, the outer stride positive and below 2^40
// bytes, extents from 1 to 2^31 - 1. The kernel tests the same.
bool TensorMapEncodable(uint64_t base, const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                        int elem_bytes);

// Bytes of workspace a launch rule asks for at the iteration domain `domain`
// (0 without one).
absl::StatusOr<int64_t> LaunchWorkspaceBytes(const tir::v1::LaunchRule &launch, const std::vector<int64_t> &domain);

// Runs a host-built kernel graph once on `inputs` (dense tensors, one per
// kernel argument) with poisoned outputs and returns the outputs read back.
// Errors: INVALID_ARGUMENT for mismatched inputs.
absl::StatusOr<std::vector<reference::Tensor>> RunOnHost(GraphOp kernel, const EmittedKernel &emitted,
                                                         const HostKernel &built,
                                                         const std::vector<reference::Tensor> &inputs,
                                                         LaneStats *stats = nullptr);

}  // namespace tir::codegen

#endif  // TIR_COMPILER_CODEGEN_HOSTBUILD_H_
