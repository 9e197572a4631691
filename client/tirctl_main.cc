// tirctl: the command line of tir. Flags are parsed here; the work lives in
// client/ libraries.
//
// Exit codes: 0 ok, 1 failure, 2 usage error.

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "client/doctor.h"

namespace {

constexpr char kUsage[] = R"(usage: tirctl VERB [args] [-o text|json]

verbs:
  doctor        check NVRTC, the CUDA driver, the host compiler and the local store
  help          print this help

flags:
  -o, --output=text|json   output format (default text)

exit codes: 0 ok, 1 failure, 2 usage error
)";

int Usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "tirctl: %s\n\n", why);
  std::fputs(kUsage, stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "-o" || a == "--output") {
      if (i + 1 >= argc) return Usage("-o needs a value");
      a = std::string("--output=") + argv[++i];
    }
    if (a.rfind("--output=", 0) == 0) {
      const std::string v = a.substr(9);
      if (v != "text" && v != "json") return Usage("--output must be text or json");
      json = v == "json";
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
  return Usage(("unknown verb '" + verb + "'").c_str());
}
