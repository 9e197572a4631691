// tir-coordinator: flags and the config file only; the service is
// //server/api:server.
//
//   tir-coordinator [--config=FILE] [--listen=HOST:PORT] [--db=DIR] [--metrics-port=N] [--dashboard-port=N]
//                   [--insecure] [--verify-store] [--repair-store]

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "compiler/support/cli.h"
#include "server/config/config.h"
#include "server/config/config_help.h"
#include "server/api/server.h"
#include "server/store/rocksdb_kernel_store.h"

ABSL_FLAG(std::string, config, "", "JSON configuration file (tir.v1.CoordinatorConfig)");
ABSL_FLAG(std::string, listen, "", "gRPC address HOST:PORT (default 127.0.0.1:7070)");
ABSL_FLAG(bool, insecure, false, "serve off loopback without a worker token (anyone reaching the port can be a worker)");
ABSL_FLAG(std::string, db, "", "RocksDB directory of the kernel store");
ABSL_FLAG(int, metrics_port, -1, "Prometheus /metrics port (0: off)");
ABSL_FLAG(int, dashboard_port, -1, "dashboard and /api/status port (0: off)");
ABSL_FLAG(bool, verify_store, false,
          "read the store (--db) whole without changing it, every block and record, report what is damaged and "
          "exit: 0 when sound, 1 when damaged (the report says what), 2 when it cannot be read (no store, in use)");
ABSL_FLAG(bool, repair_store, false,
          "salvage a damaged store (--db) and say what was lost, then exit: a copy of every file as it was goes to "
          "DIR.lost+found/TIME/ first; a sound store is left alone; a coordinator refuses to start on a damaged one");

int main(int argc, char **argv) {
  absl::SetProgramUsageMessage(absl::StrCat(
      "the tir coordinator: tir-coordinator [--config=FILE] [flags]\n\n", tir::config::ConfigHelp(),
      "\nLimits, quotas and budgets are the entries above; 0 or absent is the default named."));
  tir::ParseDashedFlags(argc, argv);
  tir::v1::CoordinatorConfig config;
  if (!absl::GetFlag(FLAGS_config).empty()) {
    auto json = tir::config::ReadConfigFile(absl::GetFlag(FLAGS_config), "--config", 1 << 20);
    if (!json.ok()) {
      std::fprintf(stderr, "tir-coordinator: %s\n", std::string(json.status().message()).c_str());
      return 2;
    }
    auto parsed = tir::config::ParseConfig(*json);
    if (!parsed.ok()) {
      std::fprintf(stderr, "tir-coordinator: %s: %s\n", absl::GetFlag(FLAGS_config).c_str(),
                   std::string(parsed.status().message()).c_str());
      return 2;
    }
    config = *parsed;
  }
  if (!absl::GetFlag(FLAGS_listen).empty()) config.set_listen(absl::GetFlag(FLAGS_listen));
  if (!absl::GetFlag(FLAGS_db).empty()) config.set_db(absl::GetFlag(FLAGS_db));
  if (absl::GetFlag(FLAGS_insecure)) config.set_insecure(true);
  if (absl::GetFlag(FLAGS_metrics_port) >= 0) config.set_metrics_port(absl::GetFlag(FLAGS_metrics_port));
  if (absl::GetFlag(FLAGS_dashboard_port) >= 0) config.set_dashboard_port(absl::GetFlag(FLAGS_dashboard_port));
  if (config.db().empty()) config.set_db(tir::CacheDir() + "/store");
  if (absl::GetFlag(FLAGS_verify_store)) {
    auto check = tir::store::RocksDbKernelStore::Verify(config.db());
    if (!check.ok()) {
      std::fprintf(stderr, "tir-coordinator: %s\n", std::string(check.status().message()).c_str());
      return 2;
    }
    std::printf("%s\n", check->report.c_str());
    return check->sound ? 0 : 1;
  }
  if (absl::GetFlag(FLAGS_repair_store)) {
    auto report = tir::store::RocksDbKernelStore::Repair(config.db());
    if (!report.ok()) {
      std::fprintf(stderr, "tir-coordinator: %s\n", std::string(report.status().message()).c_str());
      return 1;
    }
    std::printf("%s\n", report->c_str());
    return 0;
  }
  auto server = tir::api::CoordinatorServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "tir-coordinator: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "tir-coordinator: serving on port %d, store %s\n", (*server)->port(), config.db().c_str());
  tir::SignalWatcher watcher([&] { (*server)->Shutdown(); });
  (*server)->Wait();
  return 0;
}
