#include "worker/cuda/cupti_timer.h"

#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::cuda {
namespace {

struct CuptiApi {
  CUptiResult (*registerCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*flushAll)(uint32_t);
  CUptiResult (*getNextRecord)(uint8_t *, size_t, CUpti_Activity **);
};

// Process-wide: CUPTI calls the buffer callbacks from its own threads.
CuptiApi g_api;
std::mutex g_mu;
std::vector<std::pair<std::string, double>> g_records;  // kernel name, seconds

void CUPTIAPI BufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, *size));
  *maxRecords = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t validSize) {
  CUpti_Activity *record = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  while (g_api.getNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    // The kernel record layout of the CUPTI major version this was built with.
    auto *k = reinterpret_cast<CUpti_ActivityKernel10 *>(record);
    g_records.emplace_back(k->name ? k->name : "", static_cast<double>(k->end - k->start) * 1e-9);
  }
  std::free(buffer);
}

absl::Status Unavailable(const std::string &m) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "CUPTI_UNAVAILABLE", m);
}

template <typename F>
bool Resolve(void *h, const char *name, F &out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  return out != nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CuptiTimer>> CuptiTimer::Start() {
  static std::once_flag once;
  static absl::Status loaded;
  std::call_once(once, [] {
    const char *env = std::getenv("TIR_CUPTI_LIBRARY");
    void *h = nullptr;
    for (const char *lib : {env, "libcupti.so.13", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so"}) {
      if (lib != nullptr && *lib && (h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (h == nullptr) {
      loaded = Unavailable("libcupti could not be loaded; kernel times come from CUDA events");
      return;
    }
    if (!Resolve(h, "cuptiActivityRegisterCallbacks", g_api.registerCallbacks) ||
        !Resolve(h, "cuptiActivityEnable", g_api.enable) || !Resolve(h, "cuptiActivityDisable", g_api.disable) ||
        !Resolve(h, "cuptiActivityFlushAll", g_api.flushAll) ||
        !Resolve(h, "cuptiActivityGetNextRecord", g_api.getNextRecord)) {
      loaded = Unavailable("libcupti lacks the activity API");
      return;
    }
    if (g_api.registerCallbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS) {
      loaded = Unavailable("cuptiActivityRegisterCallbacks failed");
    }
  });
  if (!loaded.ok()) return loaded;
  if (const CUptiResult r = g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS) {
    return Unavailable(absl::StrCat("cuptiActivityEnable failed with CUPTI error ", static_cast<int>(r)));
  }
  return std::unique_ptr<CuptiTimer>(new CuptiTimer());
}

CuptiTimer::~CuptiTimer() {
  g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  g_api.flushAll(0);
}

std::vector<double> CuptiTimer::Collect(const std::string &name) {
  g_api.flushAll(0);
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<double> out;
  for (const auto &[kernel, seconds] : g_records) {
    if (kernel == name) out.push_back(seconds);
  }
  g_records.clear();
  return out;
}

}  // namespace tir::cuda
