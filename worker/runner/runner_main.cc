// tir-worker-runner: the child process a tir-worker starts to run kernels.
// It reads RunnerRequests on fd 3 and answers on fd 4 (see runner.proto);
// not meant to be started by hand.
//
//   tir-worker-runner --backend=host [--reference_dir=DIR]
//   tir-worker-runner --backend=cuda --device=N [--reference_dir=DIR]

#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "worker/runner/cuda_runner.h"
#include "worker/runner/host_runner.h"
#include "worker/runner/prepared_item.h"
#include "worker/runner/runner.h"

ABSL_FLAG(std::string, backend, "host", "host or cuda");
ABSL_FLAG(int, device, 0, "CUDA device index (cuda backend)");
ABSL_FLAG(std::string, reference_dir, "", "where prepared inputs and reference outputs are kept across restarts");

int main(int argc, char **argv) {
  absl::ParseCommandLine(argc, argv);
  // Never outlive the daemon.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  tir::runner::SetReferenceCacheDir(absl::GetFlag(FLAGS_reference_dir));
  std::unique_ptr<tir::runner::Runner> runner;
  if (absl::GetFlag(FLAGS_backend) == "host") {
    runner = std::make_unique<tir::runner::HostRunner>();
  } else if (absl::GetFlag(FLAGS_backend) == "cuda") {
    runner = std::make_unique<tir::runner::CudaRunner>(absl::GetFlag(FLAGS_device));
  } else {
    std::fprintf(stderr, "tir-worker-runner: unknown backend %s\n", absl::GetFlag(FLAGS_backend).c_str());
    return 2;
  }
  return tir::runner::ServeRunner(*runner, 3, 4);
}
