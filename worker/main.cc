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
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/support/cli.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "worker/backend_select.h"
#include "worker/runner_locator.h"
#include "worker/worker.h"

ABSL_FLAG(std::string, coordinator, "localhost:7070",
          "coordinator address HOST:PORT; a sharded fleet's shards, comma-separated (the worker leases from each)");
ABSL_FLAG(std::string, backend, "auto", "cuda, host, or auto (cuda when a driver and device are present, else host)");
ABSL_FLAG(int, device, 0, "CUDA device index");
ABSL_FLAG(int, compile_threads, 0, "compiles at once (0: one per core)");
ABSL_FLAG(std::string, token_file, "", "file holding the worker token");
ABSL_FLAG(std::string, tls_ca, "", "PEM CA certificate of a coordinator serving TLS (empty: plaintext)");
ABSL_FLAG(int, metrics_port, 0, "serve Prometheus metrics on this port (0: off)");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1", "address the metrics port binds to (0.0.0.0: every address)");
ABSL_FLAG(std::string, work_dir, "", "where compiled candidates go (default $XDG_CACHE_HOME/tir/worker)");
ABSL_FLAG(std::string, runner, "",
          "path of tir-worker-runner (default: found beside this binary, in ../libexec/tir, or in its Bazel "
          "output tree or runfiles)");
ABSL_FLAG(int, max_items, 1, "work items taken per lease call");

int main(int argc, char **argv) {
  const char *argv0 = argv[0];
  tir::ParseDashedFlags(argc, argv);
  // The runner is found and started once, before anything registers: a
  // worker that cannot run kernels refuses to start (exit 2) instead of
  // failing every candidate it is given.
  absl::StatusOr<std::string> runner = tir::worker::FindRunner(tir::worker::ThisProcessSearch(absl::GetFlag(FLAGS_runner), argv0));
  if (!runner.ok()) {
    std::fprintf(stderr, "tir-worker: %s\n", std::string(runner.status().message()).c_str());
    return 2;
  }
  std::string workDir = absl::GetFlag(FLAGS_work_dir);
  if (workDir.empty()) workDir = tir::CacheDir() + "/worker";
  auto backend = tir::worker::SelectBackend(absl::GetFlag(FLAGS_backend), absl::GetFlag(FLAGS_device), workDir);
  if (!backend.ok()) {
    std::fprintf(stderr, "tir-worker: %s\n", std::string(backend.status().message()).c_str());
    return 1;
  }
  tir::worker::WorkerOptions options;
  options.runner_path = *runner;
  options.reference_dir = workDir + "/reference";
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
    exposer = std::make_unique<prometheus::Exposer>(absl::StrCat(absl::GetFlag(FLAGS_metrics_address), ":", absl::GetFlag(FLAGS_metrics_port)));
    exposer->RegisterCollectable(registry);
  }
  std::fprintf(stderr, "tir-worker: %s backend (%s), coordinator %s\n", (*backend)->name().c_str(),
               (*backend)->Capabilities().device_name().c_str(), absl::GetFlag(FLAGS_coordinator).c_str());
  grpc::ChannelArguments channelArgs;
  channelArgs.SetMaxReceiveMessageSize(256 << 20);
  channelArgs.SetMaxSendMessageSize(256 << 20);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!absl::GetFlag(FLAGS_tls_ca).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_tls_ca));
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (ssl.pem_root_certs.empty()) {
      std::fprintf(stderr, "tir-worker: cannot read --tls-ca %s\n", absl::GetFlag(FLAGS_tls_ca).c_str());
      return 2;
    }
    creds = grpc::SslCredentials(ssl);
  }
  // A sharded fleet: a worker per coordinator, sharing this device (one
  // item measured at a time) and the metrics, labelled by coordinator.
  const std::vector<std::string> coordinators =
      absl::StrSplit(absl::GetFlag(FLAGS_coordinator), ',', absl::SkipWhitespace());
  if (coordinators.empty()) {
    std::fprintf(stderr, "tir-worker: --coordinator names no coordinator\n");
    return 2;
  }
  if (coordinators.size() > 1) options.device_lock = std::make_shared<absl::Mutex>();
  std::vector<std::unique_ptr<tir::worker::Worker>> workers;
  for (size_t i = 0; i < coordinators.size(); ++i) {
    std::unique_ptr<tir::worker::Backend> own;
    if (i == 0) {
      own = std::move(*backend);
    } else {
      auto another = tir::worker::SelectBackend(absl::GetFlag(FLAGS_backend), absl::GetFlag(FLAGS_device), workDir);
      if (!another.ok()) {
        std::fprintf(stderr, "tir-worker: %s\n", std::string(another.status().message()).c_str());
        return 1;
      }
      own = std::move(*another);
    }
    tir::worker::WorkerOptions o = options;
    if (coordinators.size() > 1) o.metric_labels = {{"coordinator", coordinators[i]}};
    workers.push_back(std::make_unique<tir::worker::Worker>(
        o, std::move(own), grpc::CreateCustomChannel(coordinators[i], creds, channelArgs), registry));
    if (absl::Status started = workers.back()->StartRunner(); !started.ok()) {
      std::fprintf(stderr, "tir-worker: %s\n", std::string(started.message()).c_str());
      return 2;
    }
  }
  std::fprintf(stderr, "tir-worker: runner %s\n", options.runner_path.c_str());
  {
    // SIGTERM / SIGINT drain.
    tir::SignalWatcher watcher([&] {
      std::fprintf(stderr, "tir-worker: draining\n");
      for (auto &w : workers) w->Stop();
    });
    std::vector<std::thread> threads;
    for (size_t i = 1; i < workers.size(); ++i) threads.emplace_back([w = workers[i].get()] { w->Run(); });
    workers[0]->Run();
    for (std::thread &t : threads) t.join();
  }
  std::fprintf(stderr, "tir-worker: drained, exiting\n");
  return 0;
}
