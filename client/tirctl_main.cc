// tirctl: the command line of tir. Flags are parsed here; the work lives in
// client/ libraries.
//
// Exit codes: 0 ok, 1 failure, 2 usage error.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "client/client.h"
#include "client/doctor.h"
#include "client/local_daemon.h"
#include "client/local_service.h"
#include "client/local_service_command.h"
#include "client/emit_command.h"
#include "client/plan_command.h"
#include "client/service_commands.h"
#include "compiler/support/cli.h"
#include "compiler/support/status.h"

namespace {

constexpr char kUsage[] = R"(usage: tirctl VERB [args] [flags]

verbs:
  compile FILE [--arch A] [--server ADDR] [--wait|--heuristic-now] [-o bundle.pb] [--verify]
               [--shape INPUT=AxB ...]
                           compile and tune a graph (tir or TensorIR text); without
                           --server, through the local service (see `service`); the
                           bundle (tir.v1.KernelBundle) goes to -o, else the cache dir;
                           --verify (host) runs the bundle here against the reference;
                           a graph with dynamic dims needs --shape for each dynamic input
                           (an index input: INPUT=VALUE); one bundle per shape bucket,
                           verified at each shape before it is served; repeating an
                           input's --shape starts another shape, compiled (and
                           verified) in turn
  plan FILE [--arch A] [--precision ieee|tf32] [--explain]
                           partition a graph into kernels and rank each kernel's tile
                           candidates (default arch sm_90a); --explain fits the cost
                           model's corrections to the trials in the local store, shows
                           the fit and its error on held-out trials, and ranks with it
  emit FILE [--arch A] [--candidate default|N|KEY=VALUE,...] [-o DIR] [--verify] [--report [--device D]]
                           write each kernel's CUDA C++, kernel graph, launch rule and binary
                           (cubin, or a host shared object for --arch host); --verify checks
                           every kernel against the reference interpreter: for a GPU arch the
                           GPU kernel runs lane by lane on the CPU (block size, warps, shared
                           memory race check), for host the plain host form runs; --report
                           prints each kernel's performance report from the compiled artifacts
                           (registers, occupancy, CTAs and waves, bytes and bytes in flight,
                           instructions per element by class, tensor time, the bound and the
                           predicted time against its roofline) for --device (h100-sxm, h200,
                           h100-pcie, a100-sxm, ...: the arch's part by default); -o json
                           (or --output=json) prints it as JSON
  verify DIR [--arch A]    re-run the kernels `emit -o DIR` wrote, from the files as they are
                           now (edit a .cu or the runtime headers there and check it); the
                           arch defaults to the one each kernel was emitted for
  get KEY                  a stored bundle's kernels and tuning (metadata)
  ls [--arch A]            stored bundles
  rm KEY                   delete a stored bundle
  ops get|wait|watch|cancel ID
                           a compile operation
  workers                  registered workers
  service status|start|stop
                           the local service: one per user and cache dir, shared by every
                           process of the user (tirctl, Python, C++); the first that needs
                           it starts it (a coordinator and a worker, detached, on a Unix
                           socket in <cache>/service, store <cache>/store); it exits after
                           --idle-timeout seconds without calls or running jobs (default
                           $TIR_SERVICE_IDLE_TIMEOUT, else 900; 0: never); status exits 1
                           when none runs; `service serve` is the service itself, in the
                           foreground (what start runs detached)
  doctor                   check NVRTC, the CUDA driver, the host compiler, the local store
                           and the local service
  help                     print this help

flags:
  -o, --output=text|json   output format (default text); for compile, the bundle file; for
                           emit, the output directory
  --arch=A                 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_120 sm_120a host;
                           compile defaults to the local service worker's arch, or sm_90a with
                           --server
  --server=ADDR            a coordinator (HOST:PORT); compile/get/ls/rm/ops/workers without
                           it use the local service, started if none runs
  --cache-dir=DIR          the cache (default $XDG_CACHE_HOME/tir, else ~/.cache/tir)
  --idle-timeout=SECONDS   a local service started by this command exits after this long
                           without calls or running jobs (0: never)
  --upstream=ADDR          a local service started by this command asks this coordinator (the
                           fleet) on a miss and keeps what it tuned; down, it tunes here
                           (default $TIR_UPSTREAM)
  --upstream-token-file=F, --upstream-bundle-key-file=F, --upstream-ca-file=F
                           the fleet's client token, bundle key (its bundles must be signed
                           with it) and TLS CA (defaults $TIR_UPSTREAM_TOKEN_FILE,
                           $TIR_UPSTREAM_BUNDLE_KEY_FILE, $TIR_UPSTREAM_CA_FILE)
  --token-file=F           client token for a coordinator that requires one
  --bundle-key-file=F      the coordinator's bundle key: refuse bundles not signed with it
  --tls-ca=F               PEM CA certificate of a coordinator serving TLS
  --backend=auto|cuda|host the local service's worker backend when it starts (default auto;
                           a running service of another backend is an error)
  --budget=N               candidates measured per kernel in the first round
  --timeout=SECONDS        how long the command may take in all, the local service's start
                           and every call included (compile and ops: 3600, else 60)
  --wait                   wait for the tuned bundle (default)
  --heuristic-now          return the default candidates at once; tuning goes on behind
  --precision=ieee|tf32    compile, emit, plan: f32 matmuls as written (ieee, the default) or
                           with operands rounded to tf32 on tensor cores (sm_80 and later);
                           part of the cache key

exit codes: 0 ok, 1 failure (the reason is printed on stderr), 2 usage error
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

std::string Resolve(const std::string &path) {
  const char *cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  return cwd && !path.empty() && path[0] != '/' ? std::string(cwd) + "/" + path : path;
}

std::string Absolute(const std::string &path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(Resolve(path), ec);
  return ec ? Resolve(path) : p.lexically_normal().string();
}

// This binary, which the local service runs as (`tirctl service serve`).
std::string SelfBinary() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : self.string();
}

int Usage(const std::string &why) {
  if (!why.empty()) std::fprintf(stderr, "tirctl: %s\n\n", why.c_str());
  std::fputs(kUsage, stderr);
  return 2;
}

int Fail(const absl::Status &s) {
  std::fprintf(stderr, "tirctl: %s: %s\n", tir::ReasonOf(s).c_str(), std::string(s.message()).c_str());
  return 1;
}

int Print(const absl::StatusOr<std::string> &out) {
  if (!out.ok()) return Fail(out.status());
  std::fputs(out->c_str(), stdout);
  if (!out->empty() && out->back() != '\n') std::fputs("\n", stdout);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  static const std::set<std::string> kValueFlags = {
      "--arch",      "--server", "--token-file", "--bundle-key-file", "--tls-ca", "--backend",   "--budget",
      "--timeout",   "--candidate", "--output",  "--precision",       "--shape",  "--device",    "--cache-dir",
      "--idle-timeout", "--lock-fd", "--ready-fd", "--upstream", "--upstream-token-file",
      "--upstream-bundle-key-file", "--upstream-ca-file"};
  static const std::set<std::string> kBoolFlags = {"--verify", "--wait", "--heuristic-now", "--explain", "--report",
                                                   "--detach"};
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;
  std::vector<std::string> shapeFlags;  // --shape may repeat
  std::string dashO;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "-o") {
      if (i + 1 >= argc) return Usage("-o needs a value");
      dashO = argv[++i];
      continue;
    }
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (kBoolFlags.count(name) && eq == std::string::npos) {
        flags[name] = "1";
      } else if (kValueFlags.count(name)) {
        if (eq != std::string::npos) {
          flags[name] = a.substr(eq + 1);
        } else if (i + 1 < argc) {
          flags[name] = argv[++i];
        } else {
          return Usage(name + " needs a value");
        }
        if (name == "--shape") shapeFlags.push_back(flags[name]);
      } else {
        return Usage("unknown flag " + a);
      }
      continue;
    }
    if (!a.empty() && a[0] == '-') return Usage("unknown flag " + a);
    positional.push_back(a);
  }
  if (positional.empty()) return Usage("missing verb");
  const std::string verb = positional[0];
  auto flag = [&](const std::string &n, const std::string &d = "") { return flags.count(n) ? flags[n] : d; };
  // -o is the output format except where a verb writes a file or a directory.
  const bool oIsPath = verb == "emit" || verb == "compile";
  std::string output = flag("--output", !oIsPath && !dashO.empty() ? dashO : "text");
  if (output != "text" && output != "json") return Usage("--output must be text or json");
  const bool json = output == "json";
  const std::string arch = flag("--arch");
  if (verb == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string cacheDir = flags.count("--cache-dir") ? Absolute(flags["--cache-dir"]) : tir::client::DefaultCacheDir();
  double timeout = verb == "compile" || verb == "ops" ? 3600 : 60;
  if (flags.count("--timeout") && (!absl::SimpleAtod(flags["--timeout"], &timeout) || timeout <= 0)) {
    return Usage("--timeout must be a positive number of seconds");
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(timeout);
  tir::client::LocalServiceOptions lo;
  lo.cache_dir = cacheDir;
  lo.backend = flag("--backend", "auto");
  lo.binary = SelfBinary();
  if (flags.count("--idle-timeout")) {
    int64_t idle = 0;
    if (!absl::SimpleAtoi(flags["--idle-timeout"], &idle) || idle < 0) {
      return Usage("--idle-timeout must be a number of seconds (0: none)");
    }
    lo.idle_timeout = absl::Seconds(idle);
  }
  // The fleet a local service started here asks on a miss: the flags, else
  // the environment's (UpstreamFromEnvironment).
  if (flags.count("--upstream")) lo.upstream.address = flags["--upstream"];
  for (auto [name, field] : {std::pair{"--upstream-token-file", &lo.upstream.token_file},
                             std::pair{"--upstream-bundle-key-file", &lo.upstream.bundle_key_file},
                             std::pair{"--upstream-ca-file", &lo.upstream.ca_file}}) {
    if (flags.count(name)) *field = flags[name].empty() ? "" : Absolute(flags[name]);
  }
  if (verb == "service") {
    if (positional.size() != 2) return Usage("service takes status, start, stop (or serve)");
    if (positional[1] == "serve") {
      // The service itself (what `start` runs detached).
      tir::client::ServeOptions so;
      so.cache_dir = cacheDir;
      so.backend = lo.backend;
      so.idle_timeout = lo.idle_timeout;
      so.binary = lo.binary;
      so.upstream = lo.upstream;
      so.detach = flags.count("--detach") > 0;
      if ((flags.count("--lock-fd") && !absl::SimpleAtoi(flags["--lock-fd"], &so.lock_fd)) ||
          (flags.count("--ready-fd") && !absl::SimpleAtoi(flags["--ready-fd"], &so.ready_fd))) {
        return Usage("--lock-fd and --ready-fd take descriptor numbers");
      }
      const absl::Status served = tir::client::ServeLocalService(so);
      return served.ok() ? 0 : Fail(served);
    }
    tir::client::ServiceCommandOptions so;
    so.service = lo;
    so.json = json;
    so.timeout = absl::Seconds(timeout);
    return Print(tir::client::ServiceCommand(positional[1], so));
  }
  if (verb == "doctor") {
    if (positional.size() != 1) return Usage("doctor takes no arguments");
    const auto checks = tir::client::RunDoctor(cacheDir);
    std::fputs(tir::client::FormatChecks(checks, json).c_str(), stdout);
    // The CUDA driver is optional (the host backend stands in); the rest is not.
    for (const auto &c : checks) {
      if (!c.ok && c.name != "cuda") return 1;
    }
    return 0;
  }
  if (verb == "emit") {
    if (positional.size() != 2) return Usage("emit takes one FILE");
    std::string text;
    if (!ReadInput(positional[1], text)) return 1;
    // With --report, -o text|json is the report's format (the files go to
    // the default directory); any other -o value is the directory.
    const bool report = flags.count("--report") > 0;
    const bool oIsFormat = report && (dashO == "json" || dashO == "text");
    tir::client::EmitOptions options{arch.empty() ? "sm_90a" : arch, flag("--candidate", "default"),
                                     oIsFormat ? "" : Resolve(dashO), flags.count("--verify") > 0,
                                     cacheDir.empty() ? "" : cacheDir + "/nvrtc"};
    options.precision = flag("--precision");
    options.report = report;
    options.report_json = report && (dashO == "json" || flag("--output") == "json");
    options.device = flag("--device");
    return Print(tir::client::EmitCommand(text, options));
  }
  if (verb == "verify") {
    if (positional.size() != 2) return Usage("verify takes one DIR");
    return Print(tir::client::VerifyCommand(positional[1], tir::client::VerifyOptions{arch}));
  }
  if (verb == "plan") {
    if (positional.size() != 2) return Usage("plan takes one FILE");
    std::string text;
    if (!ReadInput(positional[1], text)) return 1;
    tir::client::PlanOptions po;
    po.arch = arch.empty() ? "sm_90a" : arch;
    po.json = json;
    po.precision = flag("--precision");
    // --explain: the corrections learnt from the local store's trials.
    if (flags.count("--explain")) {
      if (cacheDir.empty()) return Fail(tir::UserCacheDir().status());
      po.store_dir = cacheDir + "/store";
    }
    return Print(tir::client::PlanCommand(text, po));
  }
  static const std::map<std::string, size_t> kArity = {{"compile", 2}, {"get", 2}, {"ls", 1},
                                                       {"rm", 2},      {"ops", 3}, {"workers", 1}};
  auto arity = kArity.find(verb);
  if (arity == kArity.end()) return Usage("unknown verb '" + verb + "'");
  if (positional.size() != arity->second) {
    return Usage(verb + " takes " + std::to_string(arity->second - 1) + " argument(s)");
  }
  if (flags.count("--wait") && flags.count("--heuristic-now")) return Usage("--wait and --heuristic-now exclude each other");
  uint32_t budget = 0;
  if (flags.count("--budget") && (!absl::SimpleAtoi(flags["--budget"], &budget) || budget == 0)) {
    return Usage("--budget must be a positive number");
  }
  std::string text;
  if (verb == "compile" && !ReadInput(positional[1], text)) return 1;

  // A coordinator: --server, or the local service (started if none runs).
  tir::ClientOptions co;
  co.address = flag("--server");
  co.call_timeout = std::min(co.call_timeout, absl::Seconds(timeout));
  std::string localArch;
  if (co.address.empty()) {
    absl::StatusOr<tir::v1::LocalService> service = tir::client::EnsureLocalService(lo, deadline);
    if (!service.ok()) return Fail(service.status());
    if (lo.backend != "auto" && service->backend() != lo.backend) {
      return Fail(tir::MakeError(absl::StatusCode::kFailedPrecondition, "SERVICE_MISMATCH",
                                 "the local service (pid " + std::to_string(service->pid()) + ") runs the " +
                                     service->backend() + " backend, not " + lo.backend +
                                     "; `tirctl service stop` first to start one with --backend=" + lo.backend));
    }
    absl::StatusOr<tir::ClientOptions> local = tir::client::LocalClientOptions(*service, co);
    if (!local.ok()) return Fail(local.status());
    co = *local;
    localArch = service->arch();
  }
  if (flags.count("--tls-ca")) {
    std::ifstream in(Resolve(flags["--tls-ca"]));
    co.tls_root_certs.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (co.tls_root_certs.empty()) return Usage("cannot read --tls-ca " + flags["--tls-ca"]);
  }
  if (flags.count("--token-file")) {
    std::ifstream in(Resolve(flags["--token-file"]));
    if (!in) return Usage("cannot read --token-file " + flags["--token-file"]);
    std::getline(in, co.token);
  }
  if (flags.count("--bundle-key-file")) {
    std::ifstream in(Resolve(flags["--bundle-key-file"]));
    if (!in) return Usage("cannot read --bundle-key-file " + flags["--bundle-key-file"]);
    co.bundle_key.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    co.bundle_key = std::string(absl::StripAsciiWhitespace(co.bundle_key));
    if (co.bundle_key.empty()) return Usage("--bundle-key-file " + flags["--bundle-key-file"] + " is empty");
  }
  auto client = tir::Client::Connect(co);
  if (!client.ok()) return Fail(client.status());
  tir::Client &c = **client;
  // Every call ends by the command's deadline, connecting included.
  c.set_deadline(deadline);
  if (verb == "compile") {
    tir::client::CompileCommandOptions o;
    o.arch = !arch.empty() ? arch : !localArch.empty() ? localArch : "sm_90a";
    o.heuristic_now = flags.count("--heuristic-now") > 0;
    o.out_path = Resolve(dashO);
    o.cache_dir = cacheDir;
    o.max_candidates_per_kernel = budget;
    o.json = json;
    o.progress = !json && isatty(2);
    o.timeout = deadline - absl::Now();
    o.verify = flags.count("--verify") > 0;
    o.precision = flag("--precision");
    absl::StatusOr<std::vector<std::vector<tir::v1::ShapeHint>>> shapes = tir::client::GroupShapes(shapeFlags);
    if (!shapes.ok()) return Usage(std::string(shapes.status().message()));
    o.shapes = *std::move(shapes);
    if (!json) {
      // The plan first: what is about to be tuned.
      tir::client::PlanOptions po;
      po.arch = o.arch;
      po.precision = o.precision;
      absl::StatusOr<std::string> plan = tir::client::PlanCommand(text, po);
      if (!plan.ok()) return Fail(plan.status());
      std::fputs(plan->c_str(), stdout);
      std::fflush(stdout);
    }
    return Print(tir::client::CompileCommand(c, text, o));
  }
  if (verb == "get") return Print(tir::client::GetCommand(c, positional[1], json));
  if (verb == "ls") return Print(tir::client::ListCommand(c, arch, json));
  if (verb == "rm") return Print(tir::client::RemoveCommand(c, positional[1]));
  if (verb == "ops") return Print(tir::client::OperationCommand(c, positional[1], positional[2], json, !json && isatty(2)));
  return Print(tir::client::WorkersCommand(c, json));
}
