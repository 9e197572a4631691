// tirctl: the command line of tir. Flags are parsed here; the work lives in
// client/ libraries.
//
// Exit codes: 0 ok, 1 failure, 2 usage error.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fstream>
#include <sstream>

#include "client/doctor.h"
#include "client/emit_command.h"
#include "client/plan_command.h"
#include "compiler/support/status.h"

namespace {

constexpr char kUsage[] = R"(usage: tirctl VERB [args] [-o text|json]

verbs:
  plan FILE [--arch ARCH]  partition a graph (tir or TensorIR text) into kernels and
                           rank each kernel's tile candidates (default arch sm_90a)
  emit FILE [--arch ARCH] [--candidate default|N] [-o DIR] [--verify]
                           write each kernel's CUDA C++, launch rule and binary (cubin, or a
                           host shared object for --arch host); --verify (host) checks every
                           kernel against the reference interpreter
  doctor                   check NVRTC, the CUDA driver, the host compiler and the local store
  help                     print this help

flags:
  -o, --output=text|json   output format (default text); for emit, the output directory
  --arch=ARCH              sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_120 sm_120a host

exit codes: 0 ok, 1 failure, 2 usage error
)";

// Reads FILE; under `bazel run`, relative paths are relative to where it was invoked.
bool ReadInput(const std::string &name, std::string &text) {
  std::string path = name;
  if (const char *cwd = std::getenv("BUILD_WORKING_DIRECTORY"); cwd && !path.empty() && path[0] != '/') {
    path = std::string(cwd) + "/" + path;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "tirctl: cannot read %s\n", path.c_str());
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

int Usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "tirctl: %s\n\n", why);
  std::fputs(kUsage, stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  bool json = false;
  std::string arch = "sm_90a";
  std::string candidate = "default", out_dir;
  bool verify = false;
  const bool emitVerb = argc > 1 && std::string(argv[1]) == "emit";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "-o" || a == "--output") {
      if (i + 1 >= argc) return Usage("-o needs a value");
      if (emitVerb) {
        out_dir = argv[++i];
        continue;
      }
      a = std::string("--output=") + argv[++i];
    }
    if (a == "--verify") {
      verify = true;
      continue;
    }
    if (a == "--candidate") {
      if (i + 1 >= argc) return Usage("--candidate needs a value");
      candidate = argv[++i];
      continue;
    }
    if (a.rfind("--output=", 0) == 0) {
      const std::string v = a.substr(9);
      if (v != "text" && v != "json") return Usage("--output must be text or json");
      json = v == "json";
      continue;
    }
    if (a == "--arch") {
      if (i + 1 >= argc) return Usage("--arch needs a value");
      a = std::string("--arch=") + argv[++i];
    }
    if (a.rfind("--arch=", 0) == 0) {
      arch = a.substr(7);
      continue;
    }
    if (!a.empty() && a[0] == '-') return Usage(("unknown flag " + a).c_str());
    positional.push_back(a);
  }
  if (positional.empty()) return Usage("missing verb");
  const std::string& verb = positional[0];
  if (verb == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (verb == "doctor") {
    if (positional.size() != 1) return Usage("doctor takes no arguments");
    const auto checks = tir::client::RunDoctor(tir::client::DefaultCacheDir());
    std::fputs(tir::client::FormatChecks(checks, json).c_str(), stdout);
    // The CUDA driver is optional (the host backend stands in); the rest is not.
    for (const auto& c : checks) {
      if (!c.ok && c.name != "cuda") return 1;
    }
    return 0;
  }
  if (verb == "emit") {
    if (positional.size() != 2) return Usage("emit takes one FILE");
    const char *cwd = std::getenv("BUILD_WORKING_DIRECTORY");
    if (cwd && !out_dir.empty() && out_dir[0] != '/') out_dir = std::string(cwd) + "/" + out_dir;
    std::string text;
    if (!ReadInput(positional[1], text)) return 1;
    tir::client::EmitOptions options{arch, candidate, out_dir, verify,
                                     tir::client::DefaultCacheDir() + "/nvrtc"};
    absl::StatusOr<std::string> report = tir::client::EmitCommand(text, options);
    if (!report.ok()) {
      std::fprintf(stderr, "tirctl: %s: %s\n", tir::ReasonOf(report.status()).c_str(),
                   std::string(report.status().message()).c_str());
      return 1;
    }
    std::fputs(report->c_str(), stdout);
    return 0;
  }
  if (verb == "plan") {
    if (positional.size() != 2) return Usage("plan takes one FILE");
    std::string text;
    if (!ReadInput(positional[1], text)) return 1;
    absl::StatusOr<std::string> plan = tir::client::PlanCommand(text, arch, json);
    if (!plan.ok()) {
      std::fprintf(stderr, "tirctl: %s: %s\n", tir::ReasonOf(plan.status()).c_str(),
                   std::string(plan.status().message()).c_str());
      return 1;
    }
    std::fputs(plan->c_str(), stdout);
    if (json) std::fputs("\n", stdout);
    return 0;
  }
  return Usage(("unknown verb '" + verb + "'").c_str());
}
