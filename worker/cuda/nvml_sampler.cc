#include "worker/cuda/nvml_sampler.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::cuda {
namespace {

// The few NVML entry points used, by their C ABI (nvml.h is not needed):
// results are ints (0 = success), devices are opaque handles.
constexpr int kNvmlClockSm = 1;        // NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0; // NVML_TEMPERATURE_GPU
struct NvmlApi {
  int (*init)();
  int (*byPci)(const char *, void **);
  int (*clock)(void *, int, unsigned *);
  int (*temperature)(void *, int, unsigned *);
};
NvmlApi g_api;

template <typename F>
bool Resolve(void *h, const char *name, F &out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  return out != nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(const std::string &pci_bus_id) {
  static std::once_flag once;
  static absl::Status loaded;
  std::call_once(once, [] {
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr || !Resolve(h, "nvmlInit_v2", g_api.init) ||
        !Resolve(h, "nvmlDeviceGetHandleByPciBusId_v2", g_api.byPci) ||
        !Resolve(h, "nvmlDeviceGetClockInfo", g_api.clock) || !Resolve(h, "nvmlDeviceGetTemperature", g_api.temperature)) {
      loaded = MakeError(absl::StatusCode::kFailedPrecondition, "NVML_UNAVAILABLE",
                         "libnvidia-ml.so.1 is not loadable; clocks and temperature are not recorded");
      return;
    }
    if (const int r = g_api.init(); r != 0) {
      loaded = MakeError(absl::StatusCode::kFailedPrecondition, "NVML_UNAVAILABLE", absl::StrCat("nvmlInit failed: ", r));
    }
  });
  if (!loaded.ok()) return loaded;
  auto s = std::unique_ptr<NvmlSampler>(new NvmlSampler());
  if (const int r = g_api.byPci(pci_bus_id.c_str(), &s->device_); r != 0) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "NVML_UNAVAILABLE",
                     absl::StrCat("NVML does not know the device at ", pci_bus_id, " (", r, ")"));
  }
  return s;
}

NvmlSampler::Sample NvmlSampler::Now() const {
  Sample s;
  if (g_api.clock(device_, kNvmlClockSm, &s.sm_clock_mhz) != 0) s.sm_clock_mhz = 0;
  if (g_api.temperature(device_, kNvmlTemperatureGpu, &s.temperature_c) != 0) s.temperature_c = 0;
  return s;
}

}  // namespace tir::cuda
