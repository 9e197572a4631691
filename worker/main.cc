// tir-worker: one per GPU (or one host worker). Flags only; the daemon is
// //worker:worker.
//
//   tir-worker --coordinator=HOST:PORT [--backend=cuda|host|auto] [--device=N]
//              [--compile-threads=N] [--token-file=F] [--metrics-port=N]

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "worker/backend_select.h"
#include "worker/worker.h"

ABSL_FLAG(std::string, coordinator, "localhost:7070", "coordinator address HOST:PORT");
ABSL_FLAG(std::string, backend, "auto", "cuda, host, or auto (cuda when a driver and device are present, else host)");
ABSL_FLAG(int, device, 0, "CUDA device index");
ABSL_FLAG(int, compile_threads, 0, "compiles at once (0: one per core)");
ABSL_FLAG(std::string, token_file, "", "file holding the worker token");
ABSL_FLAG(int, metrics_port, 0, "serve Prometheus metrics on this port (0: off)");
ABSL_FLAG(std::string, work_dir, "", "where compiled candidates go (default $XDG_CACHE_HOME/tir/worker)");
ABSL_FLAG(std::string, runner, "", "path of tir-worker-runner (default: beside this binary)");
ABSL_FLAG(int, max_items, 1, "work items taken per lease call");

namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  const char c = 1;
  (void)!write(g_signal_pipe[1], &c, 1);
}

}  // namespace

int main(int argc, char **argv) {
  // Flags are spelled with dashes (--compile-threads); the parser wants
  // underscores, so names are rewritten before parsing (values untouched).
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char *> args;
  for (std::string &a : spelled) {
    if (a.rfind("--", 0) == 0) {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin() + 2, a.begin() + end, '-', '_');
    }
    args.push_back(a.data());
  }
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  std::string workDir = absl::GetFlag(FLAGS_work_dir);
  if (workDir.empty()) {
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    const char *home = std::getenv("HOME");
    workDir = xdg && *xdg ? absl::StrCat(xdg, "/tir/worker") : absl::StrCat(home ? home : "/tmp", "/.cache/tir/worker");
  }
  auto backend = tir::worker::SelectBackend(absl::GetFlag(FLAGS_backend), absl::GetFlag(FLAGS_device), workDir);
  if (!backend.ok()) {
    std::fprintf(stderr, "tir-worker: %s\n", std::string(backend.status().message()).c_str());
    return 1;
  }
  tir::worker::WorkerOptions options;
  options.runner_path = absl::GetFlag(FLAGS_runner);
  if (options.runner_path.empty()) {
    options.runner_path = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tir-worker-runner").string();
  }
  const int threads = absl::GetFlag(FLAGS_compile_threads);
  options.max_items = std::max(1, absl::GetFlag(FLAGS_max_items));
  options.compile_threads = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_token_file));
    std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && token.empty()) {
      std::fprintf(stderr, "tir-worker: cannot read --token-file %s\n", absl::GetFlag(FLAGS_token_file).c_str());
      return 2;
    }
    options.token = std::string(absl::StripAsciiWhitespace(token));
  }
  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<prometheus::Exposer> exposer;
  if (absl::GetFlag(FLAGS_metrics_port) > 0) {
    exposer = std::make_unique<prometheus::Exposer>(absl::StrCat("0.0.0.0:", absl::GetFlag(FLAGS_metrics_port)));
    exposer->RegisterCollectable(registry);
  }
  std::fprintf(stderr, "tir-worker: %s backend (%s), coordinator %s\n", (*backend)->name().c_str(),
               (*backend)->Capabilities().device_name().c_str(), absl::GetFlag(FLAGS_coordinator).c_str());
  grpc::ChannelArguments channelArgs;
  channelArgs.SetMaxReceiveMessageSize(256 << 20);
  channelArgs.SetMaxSendMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_coordinator), grpc::InsecureChannelCredentials(), channelArgs);
  tir::worker::Worker worker(options, std::move(*backend), channel, registry);
  // SIGTERM / SIGINT drain: the handler only wakes this thread.
  if (pipe(g_signal_pipe) != 0) return 1;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::thread watcher([&] {
    char c = 0;
    while (read(g_signal_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    if (c == 1) {
      std::fprintf(stderr, "tir-worker: draining\n");
      worker.Stop();
    }
  });
  worker.Run();
  // Run returned (drained, or the coordinator refused registration): end the watcher.
  const char c = 0;
  (void)!write(g_signal_pipe[1], &c, 1);
  watcher.join();
  std::fprintf(stderr, "tir-worker: drained, exiting\n");
  return 0;
}
