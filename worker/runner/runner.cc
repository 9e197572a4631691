#include "worker/runner/runner.h"

#include <unistd.h>

#include <chrono>

#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "worker/runner/framing.h"

namespace tir::runner {

int ServeRunner(Runner &runner, int in_fd, int out_fd) {
  {
    tir::v1::RunnerResponse hello;
    hello.mutable_hello()->set_pid(getpid());
    hello.mutable_hello()->set_backend(runner.backend());
    hello.mutable_hello()->set_tir_version(kTirVersion);
    const absl::Status started = runner.Start();
    if (!started.ok()) {
      hello.set_error_reason(ReasonOf(started));
      hello.set_error_message(std::string(started.message()));
    }
    if (!WriteFrame(out_fd, hello).ok() || !started.ok()) return started.ok() ? 0 : 1;
  }
  for (;;) {
    tir::v1::RunnerRequest request;
    const absl::Status read = ReadFrame(in_fd, &request);
    if (absl::IsUnavailable(read)) return 0;  // the daemon closed the pipe
    if (!read.ok()) return 3;
    tir::v1::RunnerResponse response;
    auto fail = [&](const absl::Status &s) {
      response.set_error_reason(ReasonOf(s));
      response.set_error_message(std::string(s.message()));
    };
    if (request.has_prepare()) {
      const auto start = std::chrono::steady_clock::now();
      if (absl::Status s = runner.Prepare(request.prepare()); !s.ok()) fail(s);
      response.set_prepare_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    } else if (!request.exit()) {
      absl::StatusOr<tir::v1::CandidateResult> r = runner.Measure(request.candidate(), request.binary_path());
      if (r.ok()) {
        *response.mutable_result() = *std::move(r);
      } else {
        fail(r.status());
      }
    }
    if (runner.MustExit()) response.set_runner_exiting(true);
    if (!WriteFrame(out_fd, response).ok()) return 0;
    if (request.exit() || runner.MustExit()) return 0;
  }
}

}  // namespace tir::runner
