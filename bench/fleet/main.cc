// bench/fleet: a discrete-event model of the tir fleet at internet scale,
// calibrated with tir's measured costs. Prints the inputs (measured or
// assumed) and the results table; writes table.txt, table.csv and PNG plots
// into --out.
//
//   bazel run -c opt //bench/fleet -- --out DIR [--quick] [--seed N]

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/fleet/calibration.h"
#include "bench/fleet/plots.h"
#include "bench/fleet/report.h"
#include "bench/fleet/scenarios.h"

ABSL_FLAG(std::string, out, "", "directory for table.txt, table.csv and the PNG plots (created)");
ABSL_FLAG(bool, quick, false, "a fleet a hundredth the size and fewer shard counts: a covering run");
ABSL_FLAG(uint64_t, seed, 1, "random seed of every scenario");
ABSL_FLAG(int, threads, 0, "scenarios run at once (0: one per core, at most 4)");

namespace {

bool WriteFile(const std::string &path, const std::string &text) {
  std::ofstream file(path);
  file << text;
  return static_cast<bool>(file);
}

}  // namespace

int main(int argc, char **argv) {
  absl::ParseCommandLine(argc, argv);
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::fprintf(stderr, "fleet: --out DIR is required\n");
    return 2;
  }
  // Under `bazel run` the working directory is the runfiles tree; a relative
  // --out means the caller's directory.
  if (const char *cwd = std::getenv("BUILD_WORKING_DIRECTORY"); cwd && out[0] != '/') out = absl::StrCat(cwd, "/", out);
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) {
    std::fprintf(stderr, "fleet: cannot create %s: %s\n", out.c_str(), error.message().c_str());
    return 1;
  }

  auto t0 = std::chrono::steady_clock::now();
  const bool quick = absl::GetFlag(FLAGS_quick);
  tir::fleet::Calibration calibration = quick ? tir::fleet::QuickCalibration() : tir::fleet::DefaultCalibration();
  tir::fleet::ScenarioOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  if (quick) {
    options.shard_counts = {1, 8};
    options.tuning_shard_counts = {8};
    options.steady_window_s = 120;
  }
  const std::string inputs = tir::fleet::FormatText(tir::fleet::InputsTable(calibration));
  std::printf("fleet model inputs:\n%s\n", inputs.c_str());
  std::fflush(stdout);

  std::vector<tir::fleet::RunSpec> specs = tir::fleet::ScenarioSpecs(calibration, options);
  int threads = absl::GetFlag(FLAGS_threads);
  if (threads <= 0) threads = std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
  int done = 0;
  std::vector<tir::fleet::RunResult> results =
      tir::fleet::RunScenarios(calibration, specs, threads, [&](const tir::fleet::RunResult &r) {
        std::fprintf(stderr, "fleet: %2d/%zu %-26s %2d shards: %.1f M events, %.1f s\n", ++done, specs.size(),
                     r.spec.name.c_str(), r.spec.shards, r.events / 1e6, r.wall_s);
      });

  tir::fleet::Table table = tir::fleet::ResultsTable(results);
  const std::string text = tir::fleet::FormatText(table);
  std::printf("fleet model results (%d hosts, %d GPUs, %ld processes; %d tuning workers; shard capacity %.0f hits/s, "
              "%d server(s) each):\n%s",
              calibration.shape.hosts, calibration.shape.hosts * calibration.shape.gpus_per_host,
              calibration.shape.processes, results.empty() ? 0 : results.front().tuning_workers,
              calibration.costs.shard_hits_per_s, results.empty() ? 0 : results.front().servers_per_shard,
              text.c_str());
  if (!WriteFile(out + "/table.txt", absl::StrCat("inputs:\n", inputs, "\nresults:\n", text)) ||
      !WriteFile(out + "/table.csv", tir::fleet::FormatCsv(tir::fleet::ResultsTable(results, /*numeric=*/true))) ||
      !WriteFile(out + "/inputs.csv", tir::fleet::FormatCsv(tir::fleet::InputsTable(calibration)))) {
    std::fprintf(stderr, "fleet: cannot write the tables into %s\n", out.c_str());
    return 1;
  }
  absl::StatusOr<std::vector<std::string>> plots = tir::fleet::WritePlots(results, out);
  if (!plots.ok()) {
    std::fprintf(stderr, "fleet: %s\n", std::string(plots.status().message()).c_str());
    return 1;
  }
  std::printf("\nwrote %s/table.txt, table.csv, inputs.csv", out.c_str());
  for (const std::string &p : *plots) std::printf(", %s", std::filesystem::path(p).filename().c_str());
  std::printf("\nsimulated in %.1f s on %d threads\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), threads);
  return 0;
}
