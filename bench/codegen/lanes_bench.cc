// Lane-exact emulation speed: `tirctl emit --verify` over the codegen corpus
// (every graph, every kernel, its default candidate), for --arch sm_90a (the
// GPU form run lane by lane on the CPU, NVRTC compile included) against
// --arch host (the plain host form, one thread per block) in the same run,
// and the emulator's rate in lane events per second (a lane event: one
// shared-memory access, warp-collective arrival or barrier arrival of one
// thread), read from emit's report. Emulation is for correctness, not speed:
// the figure says how much verification a CI minute buys.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include "client/emit_command.h"
#include "compiler/codegen/testing/CodegenCorpus.h"

int main() {
  const std::string tmp = (std::filesystem::temp_directory_path() / "tir-lanes-bench").string();
  double wall[2] = {0, 0}, laneSeconds = 0, events = 0;
  int graphs = 0, failed[2] = {0, 0};
  const char *archs[2] = {"host", "sm_90a"};
  const std::regex laneLine(R"(lane by lane on the CPU: [^\n]* ([0-9]+) lane events in ([0-9.]+) ms)");
  for (const auto &c : tir::codegen::testing_corpus::Corpus()) {
    ++graphs;
    for (int a = 0; a < 2; ++a) {
      tir::client::EmitOptions options;
      options.arch = archs[a];
      options.out_dir = tmp + "/" + c.name + "-" + archs[a];
      options.verify = true;
      const auto start = std::chrono::steady_clock::now();
      auto report = tir::client::EmitCommand(c.text, options);
      wall[a] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!report.ok()) {
        ++failed[a];
        std::fprintf(stderr, "%s --arch %s: %s\n", c.name.c_str(), archs[a], report.status().ToString().c_str());
        continue;
      }
      for (std::sregex_iterator it(report->begin(), report->end(), laneLine), end; it != end; ++it) {
        events += std::atof((*it)[1].str().c_str());
        laneSeconds += std::atof((*it)[2].str().c_str()) / 1e3;
      }
    }
  }
  // One kernel big enough to measure the emulator itself: a 512^3 bf16
  // matmul on the mma path (tiled as its default candidate tiles it).
  const std::string big = R"mlir(
tir.graph @mm(%a: tensor<512x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<512x512xf32> {
  %c = matmul(%a, %b) : (tensor<512x512xbf16>, tensor<512x512xbf16>) -> tensor<512x512xf32>
  results %c : tensor<512x512xf32>
})mlir";
  double bigEvents = 0, bigSeconds = 0;
  std::string bigLine;
  {
    tir::client::EmitOptions options;
    options.arch = "sm_90a";
    options.out_dir = tmp + "/matmul512";
    options.verify = true;
    auto report = tir::client::EmitCommand(big, options);
    if (!report.ok()) {
      ++failed[1];
      std::fprintf(stderr, "matmul 512: %s\n", report.status().ToString().c_str());
    } else {
      for (std::sregex_iterator it(report->begin(), report->end(), laneLine), end; it != end; ++it) {
        bigEvents += std::atof((*it)[1].str().c_str());
        bigSeconds += std::atof((*it)[2].str().c_str()) / 1e3;
        bigLine = (*it)[0].str();
      }
    }
  }
  std::filesystem::remove_all(tmp);
  std::printf("emit --verify over %d corpus graphs (default candidates; sm_90a includes NVRTC compiles and the\n"
              "lane-by-lane build of each kernel, both include planning and the reference interpreter)\n",
              graphs);
  std::printf("  --arch host   (plain host form): %7.1f s, %d failed  [baseline]\n", wall[0], failed[0]);
  std::printf("  --arch sm_90a (lane by lane):    %7.1f s, %d failed  (%.2fx the host run)\n", wall[1], failed[1],
              wall[1] / wall[0]);
  std::printf("emulated lane events: %.0f in %.2f s of kernel runs = %.2f million lane events/s\n", events,
              laneSeconds, laneSeconds > 0 ? events / laneSeconds / 1e6 : 0.0);
  std::printf("512x512x512 bf16 matmul, default candidate: %s\n  = %.2f million lane events/s\n", bigLine.c_str(),
              bigSeconds > 0 ? bigEvents / bigSeconds / 1e6 : 0.0);
  return failed[0] + failed[1] == 0 ? 0 : 1;
}
