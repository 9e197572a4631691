#include "client/emit_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/conversion/DTypes.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/compile_cache.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/perf/Report.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/private_dir.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

namespace tir::client {
namespace {

using planning::KernelKindName;

// Each file is written whole by rename: a link planted at its name is
// replaced, never written through.
absl::Status Write(const std::filesystem::path &path, const std::string &data, mode_t mode = 0644) {
  return WriteFileReplacing(path.string(), data, mode);
}

// The kernel graph in MLIR's generic form, which keeps every attribute the
// partitioner set (iteration domain, access maps) exactly.
std::string PrintGraphText(GraphOp kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel->print(os, mlir::OpPrintingFlags().printGenericOpForm());
  os << "\n";
  return os.str();
}

absl::StatusOr<std::string> Read(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "cannot read " + path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Verification computes every iteration point in the reference interpreter
// and, lane by lane, runs every thread of every block as a fiber: past these
// limits it would run for hours, so it is refused at once with the figures.
// "launch: grid (X, Y, Z) block (X, Y, Z) smem N[ workspace W]" at the
// iteration domain `domain` (dynamic extents: the grid is left to run time).
std::string LaunchLine(const tir::v1::LaunchRule &launch, const std::vector<int64_t> &domain) {
  unsigned block[3] = {1, 1, 1};
  for (int i = 0; i < launch.block_size() && i < 3; ++i) block[i] = launch.block(i);
  const std::string blockText = absl::StrFormat("block (%u, %u, %u) smem %u", block[0], block[1], block[2],
                                                launch.dynamic_shared_memory_bytes());
  for (int64_t d : domain) {
    if (d < 0) return "launch: grid from the run-time extents, " + blockText;
  }
  absl::StatusOr<std::array<unsigned, 3>> grid = codegen::LaunchGrid(launch, domain);
  if (!grid.ok()) return "launch: " + std::string(grid.status().message());
  std::string line = absl::StrFormat("launch: grid (%u, %u, %u) %s", (*grid)[0], (*grid)[1], (*grid)[2], blockText);
  absl::StatusOr<int64_t> ws = codegen::LaunchWorkspaceBytes(launch, domain);
  if (ws.ok() && *ws > 0) absl::StrAppendFormat(&line, " workspace %d", *ws);
  return line;
}

absl::Status CheckVerificationWork(GraphOp kernel, const tir::v1::LaunchRule &launch, bool lanes) {
  auto limit = [](const char *env, double fallback) {
    const char *v = std::getenv(env);
    return v && *v ? std::atof(v) : fallback;
  };
  auto domainAttr = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  std::vector<int64_t> domain;
  double points = 1;
  for (int64_t e : domainAttr) {
    domain.push_back(e < 0 ? 8 : e);  // dynamic extents are verified at 8
    points *= domain.back();
  }
  const double maxPoints = limit("TIR_VERIFY_MAX_POINTS", double(int64_t{1} << 32));
  if (points > maxPoints) {
    return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                     absl::StrFormat("verifying this kernel means %.3g iteration points in the reference "
                                     "interpreter, past the limit of %.3g (TIR_VERIFY_MAX_POINTS); verify the "
                                     "graph at a smaller shape",
                                     points, maxPoints));
  }
  if (!lanes) return absl::OkStatus();
  TIR_ASSIGN_OR_RETURN(auto grid, codegen::LaunchGrid(launch, domain));
  double threads = double(grid[0]) * grid[1] * grid[2];
  for (int d = 0; d < launch.block_size(); ++d) threads *= launch.block(d);
  const double maxThreads = limit("TIR_EMULATE_MAX_THREADS", double(1 << 24));
  if (threads > maxThreads) {
    return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                     absl::StrFormat("emulating this kernel lane by lane means %.3g thread executions, past the "
                                     "limit of %.3g (TIR_EMULATE_MAX_THREADS); verify the graph at a smaller "
                                     "shape, or its host form with --arch host",
                                     threads, maxThreads));
  }
  return absl::OkStatus();
}

// The names of tir_args' fields from a layout's "fields" declarations
// ("const tir_bf16 *in0", "tir_i64 dim[3]", "tir_tensor_map tmap0_64x128").
absl::StatusOr<std::vector<std::string>> FieldNamesOf(const llvm::json::Object *top, const std::string &file) {
  const llvm::json::Array *decls = top != nullptr ? top->getArray("fields") : nullptr;
  auto bad = [&](const std::string &why) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", file + ": " + why);
  };
  if (decls == nullptr || decls->empty()) return bad("has no \"fields\" list (the parameter struct's declarations)");
  std::vector<std::string> names;
  for (const llvm::json::Value &d : *decls) {
    std::optional<llvm::StringRef> text = d.getAsString();
    if (!text) return bad("a \"fields\" entry is not a string");
    llvm::StringRef decl = text->trim();
    decl = decl.take_until([](char c) { return c == '['; }).rtrim();
    const size_t cut = decl.find_last_of(" *");
    llvm::StringRef name = cut == llvm::StringRef::npos ? llvm::StringRef() : decl.substr(cut + 1);
    if (name.empty() || !llvm::all_of(name, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
      return bad("field declaration \"" + text->str() + "\" names no field");
    }
    names.push_back(name.str());
  }
  return names;
}

}  // namespace

namespace {

// The verification itself, in this process (VerifyKernel runs it in a child).
absl::StatusOr<std::string> VerifyInProcess(GraphOp kernel, const std::vector<std::string> &field_names,
                                            const tir::v1::LaunchRule &launch, const codegen::HostKernel &built,
                                            bool &allPassed, bool tf32_operands) {
  // Dynamic extents are verified at 8.
  TIR_RETURN_IF_ERROR(reference::CheckVerificationFits(kernel, 8));
  const bool lanes = built.form() == codegen::HostForm::kLanes;
  TIR_RETURN_IF_ERROR(CheckVerificationWork(kernel, launch, lanes));
  std::vector<reference::Tensor> inputs = reference::SampleInputs(kernel, 8, 1);
  TIR_ASSIGN_OR_RETURN(reference::Reference ref, reference::EvaluateWithRounding(kernel, inputs));
  // A stride-0 output dim stores index 0 only.
  const std::vector<reference::Tensor> want = codegen::AsStoredOutputs(kernel, std::move(ref.outputs));
  const std::vector<reference::Tensor> rounding = codegen::AsStoredOutputs(kernel, std::move(ref.rounding));
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<codegen::HostLaunch> run,
                       codegen::HostLaunch::Prepare(kernel, field_names, launch, inputs));
  run->Poison(0);
  codegen::LaneStats stats;
  const auto start = std::chrono::steady_clock::now();
  const absl::Status ran = run->Run(built, 0, &stats);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string report;
  if (lanes) {
    const unsigned *g = run->grid();
    absl::StrAppendFormat(&report, "  lane by lane on the CPU: grid (%u,%u,%u) x %d threads, %d lane events in %.3f ms\n",
                          g[0], g[1], g[2], launch.block_size() ? launch.block(0) : 1, stats.events, seconds * 1e3);
  }
  if (!ran.ok()) {
    allPassed = false;
    absl::StrAppendFormat(&report, "  %s: %s\n", ReasonOf(ran), ran.message());
    return report;
  }
  std::vector<reference::Tensor> got = run->Outputs(0);
  for (size_t o = 0; o < want.size(); ++o) {
    const int64_t length = codegen::ReductionLength(kernel, run->domain());
    const reference::OutputCheck check = reference::CheckOutput(got[o], want[o], rounding[o], length, tf32_operands);
    const double err = check.error, bound = check.bound;
    const bool ok = check.passed();
    allPassed &= ok;
    absl::StrAppendFormat(&report, "  output %d %s: relative L2 error %.3g (bound %.2g%s) %s\n", o,
                          want[o].ShapeString(), err, bound,
                          length > 1 ? absl::StrFormat(" for %s reduced over %d", DTypeName(want[o].dtype), length) : "",
                          ok ? "ok" : "WRONG");
  }
  return report;
}

bool WriteAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Seconds a kernel's verification may take before its process is killed
// (TIR_VERIFY_TIMEOUT_S, default 600).
int VerifyTimeoutSeconds() {
  int seconds = 600;
  if (const char *v = std::getenv("TIR_VERIFY_TIMEOUT_S"); v != nullptr && absl::SimpleAtoi(v, &seconds) &&
                                                           seconds > 0) {
    return seconds;
  }
  return 600;
}

}  // namespace

// The verification runs in a child process, as the worker runs candidates
// (its runner): a kernel that faults, traps (SIGILL) or hangs ends that
// process, and tirctl reports it as the kernel's failure instead of dying
// with it. The child hands its report and verdict back on a pipe.
absl::StatusOr<std::string> VerifyKernel(GraphOp kernel, const std::vector<std::string> &field_names,
                                         const tir::v1::LaunchRule &launch, const codegen::HostKernel &built,
                                         bool &allPassed, bool tf32_operands) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    bool passed = true;
    const absl::StatusOr<std::string> r = VerifyInProcess(kernel, field_names, launch, built, passed, tf32_operands);
    const std::string message =
        r.ok() ? absl::StrCat(passed ? "P" : "F", *r)
               : absl::StrCat("E", static_cast<int>(r.status().code()), "\n", ReasonOf(r.status()), "\n",
                              r.status().message());
    _exit(WriteAll(fds[1], message) ? 0 : 3);
  }
  close(fds[1]);
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(VerifyTimeoutSeconds());
  bool timedOut = false;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timedOut) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) {
    allPassed = false;
    return absl::StrFormat("  KERNEL_TIMEOUT: the kernel did not finish within %d s (TIR_VERIFY_TIMEOUT_S); its "
                           "process was killed\n",
                           VerifyTimeoutSeconds());
  }
  if (WIFSIGNALED(status)) {
    allPassed = false;
    return absl::StrFormat("  KERNEL_CRASHED: the kernel ended its process with signal %d (%s)\n", WTERMSIG(status),
                           strsignal(WTERMSIG(status)));
  }
  if (got.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    allPassed = false;
    return absl::StrFormat("  KERNEL_CRASHED: the kernel's process exited with status %d and no report\n",
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  if (got[0] == 'E') {
    std::vector<std::string> parts = absl::StrSplit(got.substr(1), absl::MaxSplits('\n', 2));
    int code = static_cast<int>(absl::StatusCode::kInternal);
    if (parts.size() < 3 || !absl::SimpleAtoi(parts[0], &code)) {
      return MakeError(absl::StatusCode::kInternal, "INTERNAL", "an unreadable report from the verifying process");
    }
    return MakeError(static_cast<absl::StatusCode>(code), parts[1], parts[2]);
  }
  if (got[0] == 'F') allPassed = false;
  return got.substr(1);
}

namespace {

// Emits (and verifies) one graph; `allPassed` is cleared when a kernel is wrong.
absl::StatusOr<std::string> EmitGraph(GraphOp graph, const target::ArchInfo &arch, const EmitOptions &options,
                                      bool &allPassed, llvm::json::Array &reports) {
  planning::AnalyticCostModel model;
  TIR_ASSIGN_OR_RETURN(planning::PlannedGraph planned,
                       planning::PlanGraph(graph, arch, model, 5, planning::PlanOptions{options.precision}));
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(graph, planned.partition);
  const std::string name = graph.getSymName().str();
  std::filesystem::path dir = options.out_dir.empty() ? std::filesystem::path("tir-" + name)
                                                      : std::filesystem::path(options.out_dir);
  // This user's (levels made here 0700), not writable by anyone else, and
  // under directories nobody else can change: a directory another user
  // made (in /tmp, say) is refused, never built in.
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(dir.string(), DirAccess::kOwned));
  for (const auto &[header, text] : codegen::RuntimeHeaders()) TIR_RETURN_IF_ERROR(Write(dir / header, text));
  std::string report = absl::StrFormat("@%s for %s: %d kernel(s) in %s\n", name, arch.name,
                                       planned.partition.kernels.size(), dir.string());
  nvrtc::CompileCache cache(options.compile_cache_dir);
  for (size_t k = 0; k < planned.partition.kernels.size(); ++k) {
    GraphOp kernel;
    for (GraphOp g : module->getOps<GraphOp>()) {
      if (g.getSymName() == absl::StrCat(name, "_k", k)) kernel = g;
    }
    const auto &space = planned.spaces[k].kept;
    size_t pick = 0;
    if (options.candidate == "default") {
      for (size_t i = 0; i < space.size(); ++i) {
        if (space[i].is_default) pick = i;
      }
    } else if (absl::StrContains(options.candidate, '=')) {
      // KEY=VALUE[,KEY=VALUE...]: the best-ranked candidate with those parameters.
      std::map<std::string, int64_t> want;
      for (absl::string_view pair : absl::StrSplit(options.candidate, ',')) {
        std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
        int64_t v = 0;
        if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &v)) {
          return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                           absl::StrCat("--candidate ", options.candidate, ": '", pair, "' is not KEY=INTEGER"));
        }
        want[kv.first] = v;
      }
      pick = space.size();
      for (size_t i = 0; i < space.size() && pick == space.size(); ++i) {
        bool all = true;
        for (const auto &[key, v] : want) {
          auto it = space[i].params.find(key);
          // A parameter a candidate leaves out has its emitter's value: 1
          // for the cluster's extents and split-K, 0 (off) for the rest.
          const int64_t absent = key == "cluster_m" || key == "cluster_n" || key == "split_k" ? 1 : 0;
          all = all && (it != space[i].params.end() ? it->second == v : v == absent);
        }
        if (all) pick = i;
      }
      if (pick == space.size()) {
        return MakeError(absl::StatusCode::kNotFound, "NO_SUCH_CANDIDATE",
                         absl::StrCat("--candidate ", options.candidate, ": no candidate of kernel ", k, " (of ",
                                      space.size(), ") has those parameters"));
      }
    } else if (!absl::SimpleAtoi(options.candidate, &pick) || pick >= space.size()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                       absl::StrCat("--candidate must be 'default', a rank below ", space.size(),
                                    " or KEY=VALUE[,KEY=VALUE...] for kernel ", k));
    }
    TIR_ASSIGN_OR_RETURN(codegen::EmittedKernel emitted, codegen::EmitKernel(kernel, space[pick].params));
    const std::string stem = absl::StrCat(name, "_k", k);
    TIR_RETURN_IF_ERROR(Write(dir / (stem + ".cu"), emitted.source));
    // The kernel graph: what `tirctl verify` checks the kernel against.
    TIR_RETURN_IF_ERROR(Write(dir / (stem + ".mlir"), PrintGraphText(kernel)));
    std::string launch;
    google::protobuf::util::JsonPrintOptions json;
    json.add_whitespace = true;
    (void)google::protobuf::util::MessageToJsonString(emitted.launch, &launch, json);
    // What a launcher needs without MLIR: the parameter struct's fields, each
    // argument's dtype, shape and strides, the outputs, the iteration domain
    // (-1 dynamic), the arch, the kind and the launch rule.
    auto typeJson = [](mlir::Type t, mlir::DictionaryAttr attrs) {
      auto r = t.dyn_cast<mlir::RankedTensorType>();
      mlir::Type e = r ? r.getElementType() : t;
      llvm::json::Array shape;
      if (r) {
        for (int64_t d = 0; d < r.getRank(); ++d) shape.push_back(r.isDynamicDim(d) ? -1 : r.getDimSize(d));
      }
      llvm::json::Object o{{"dtype", DTypeName(*ToDType(e))}, {"shape", std::move(shape)}};
      if (attrs) {
        if (auto s = attrs.getAs<mlir::StringAttr>("tir.stride")) o["stride"] = s.getValue().str();
      }
      if (!r) o["scalar"] = true;
      return o;
    };
    llvm::json::Array fields, inputs, outputs, domainJson;
    for (const std::string &f : emitted.fields) fields.push_back(f);
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
      inputs.push_back(typeJson(kernel.getArgumentTypes()[i], kernel.getArgAttrDict(i)));
    }
    for (unsigned i = 0; i < kernel.getNumResults(); ++i) outputs.push_back(typeJson(kernel.getResultTypes()[i], {}));
    auto domain = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
    for (int64_t d : domain) domainJson.push_back(d);
    llvm::json::Object top{{"entry", "tir_kernel"},
                           {"params", "one struct tir_args by value"},
                           {"fields", std::move(fields)},
                           {"inputs", std::move(inputs)},
                           {"outputs", std::move(outputs)},
                           {"domain", std::move(domainJson)},
                           {"arch", arch.name},
                           {"kind", KernelKindName(planned.partition.kernels[k].space.kind)}};
    // The verification bound of tf32 products (tirctl verify reads it).
    if (space[pick].params.count("tf32")) top["precision"] = "tf32";
    llvm::Expected<llvm::json::Value> rule = llvm::json::parse(launch);
    if (!rule) {
      return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                       "the launch rule's JSON does not parse: " + llvm::toString(rule.takeError()));
    }
    top["launch"] = *std::move(rule);
    const std::string layout = llvm::formatv("{0:2}\n", llvm::json::Value(std::move(top))).str();
    TIR_RETURN_IF_ERROR(Write(dir / (stem + ".launch.json"), layout));
    std::string params;
    for (const auto &[p, v] : space[pick].params) absl::StrAppend(&params, params.empty() ? "" : " ", p, "=", v);
    absl::StrAppendFormat(&report, "kernel %d: %s, candidate #%d%s (%s)\n", k, planned.partition.kernels[k].space.ToString(),
                          pick, space[pick].is_default ? " (default)" : "", params);
    absl::StrAppend(&report, "  ", LaunchLine(emitted.launch, std::vector<int64_t>(domain.begin(), domain.end())), "\n");
    perf::Artifact artifact;
    bool haveArtifact = false;
    if (arch.is_gpu) {
      nvrtc::CompileOptions copts;
      copts.arch = arch.name;
      copts.headers = codegen::RuntimeHeaders();
      bool hit = false;
      TIR_ASSIGN_OR_RETURN(nvrtc::CompiledKernel cubin, cache.Compile(emitted.source, copts, &hit));
      TIR_RETURN_IF_ERROR(Write(dir / (stem + "." + arch.name + ".cubin"), cubin.cubin));
      absl::StrAppendFormat(&report, "  %s.%s.cubin: %d bytes, %d registers, %d spill bytes, %s\n", stem, arch.name,
                            cubin.cubin.size(), cubin.registers, cubin.spill_bytes,
                            hit ? "from the compile cache" : absl::StrFormat("compiled in %.0f ms", cubin.seconds * 1e3));
      artifact = perf::Artifact{cubin.registers, cubin.spill_bytes, cubin.shared_bytes, cubin.ptx};
      haveArtifact = true;
      // The PTX beside it, for the engineers who read it (the cache keeps it
      // from the compile that filled it).
      if (!cubin.ptx.empty()) {
        TIR_RETURN_IF_ERROR(Write(dir / (stem + "." + arch.name + ".ptx"), cubin.ptx));
        absl::StrAppendFormat(&report, "  %s.%s.ptx: %d lines\n", stem, arch.name,
                              std::count(cubin.ptx.begin(), cubin.ptx.end(), '\n'));
      }
    }
    if (options.report) {
      const planning::KernelFacts facts = planning::ComputeFacts(planned.partition.kernels[k]);
      const perf::KernelReport r = perf::BuildReport(facts, space[pick], arch, planned.predictions[k][pick],
                                                     haveArtifact ? &artifact : nullptr);
      report += perf::ReportText(r);
      reports.push_back(llvm::json::Object{{"graph", name}, {"kernel", static_cast<int64_t>(k)},
                                           {"rank", static_cast<int64_t>(pick)}, {"default", space[pick].is_default},
                                           {"report", perf::ReportJson(r)}});
    }
    codegen::HostBuildOptions build;
    build.form = arch.is_gpu ? codegen::HostForm::kLanes : codegen::HostForm::kPlain;
    if (arch.is_gpu && !options.verify) continue;
    TIR_ASSIGN_OR_RETURN(std::unique_ptr<codegen::HostKernel> built,
                         codegen::BuildHostKernel(emitted, (dir / ".build").string(), build));
    if (!arch.is_gpu) {
      TIR_ASSIGN_OR_RETURN(const std::string object, Read(built->path()));
      TIR_RETURN_IF_ERROR(Write(dir / (stem + ".host.so"), object, 0755));
      absl::StrAppendFormat(&report, "  %s.host.so\n", stem);
    }
    if (!options.verify) continue;
    TIR_ASSIGN_OR_RETURN(std::string lines, VerifyKernel(kernel, emitted.field_names, emitted.launch, *built, allPassed,
                                                         space[pick].params.count("tf32") > 0));
    report += lines;
  }
  return report;
}

}  // namespace

absl::StatusOr<std::string> EmitCommand(const std::string &text, const EmitOptions &options) {
  TIR_ASSIGN_OR_RETURN(target::ArchInfo arch, target::LookupDevice(options.arch, options.device));
  // The compile cache's cubins are used as they are found: only from a
  // directory of this user's alone (UNSAFE_DIRECTORY otherwise). One that
  // cannot be made (a read-only home) is done without, as before.
  EmitOptions o = options;
  if (!o.compile_cache_dir.empty()) {
    const absl::Status made = MakeTrustedDirectory(o.compile_cache_dir);
    if (ReasonOf(made) == "UNSAFE_DIRECTORY") return made;
    if (!made.ok()) o.compile_cache_dir.clear();
  }
  auto context = makeTirContext();
  TIR_ASSIGN_OR_RETURN(LoadedGraphs loaded, LoadGraphsText(text, context.get()));
  std::string report;
  bool allPassed = true;
  llvm::json::Array reports;
  for (GraphOp graph : loaded.graphs) {
    if (graph.getNumResults() == 0) {
      if (loaded.graphs.size() == 1) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                         "the graph has no outputs: there is nothing to compute");
      }
      absl::StrAppend(&report, "@", graph.getSymName().str(), ": no outputs, nothing to compute\n");
      continue;
    }
    // A partitioned graph's stitching graph launches kernel graphs of the
    // module; those are emitted on their own.
    std::vector<std::string> launched;
    graph.walk([&](LaunchOp l) { launched.push_back("@" + l.getCallee().str()); });
    if (!launched.empty()) {
      absl::StrAppend(&report, "@", graph.getSymName().str(), ": stitches kernel graphs (", absl::StrJoin(launched, ", "),
                      "), emitted on their own\n");
      continue;
    }
    TIR_ASSIGN_OR_RETURN(std::string one, EmitGraph(graph, arch, o, allPassed, reports));
    report += one;
  }
  if (!allPassed) {
    return MakeError(absl::StatusCode::kInternal, "KERNEL_WRONG", report + "verification failed");
  }
  if (o.report && o.report_json) {
    std::string json;
    llvm::raw_string_ostream os(json);
    os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                     {"arch", arch.name}, {"device", arch.device}, {"part", arch.part},
                                     {"kernels", std::move(reports)}}));
    return os.str() + "\n";
  }
  return report;
}

absl::StatusOr<std::string> VerifyCommand(const std::string &dir_name, const VerifyOptions &options) {
  const std::filesystem::path dir(dir_name);
  std::error_code ec;
  // Its sources are compiled and run here, its .build used: a directory of
  // this user's that nobody else can write to.
  if (absl::Status trusted = CheckTrustedDirectory(dir_name, DirAccess::kOwned);
      !trusted.ok() && ReasonOf(trusted) != "NOT_FOUND") {
    return trusted;
  }
  std::vector<std::string> stems;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".launch.json";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      stems.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  if (ec) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "cannot list " + dir.string() + ": " + ec.message());
  if (stems.empty()) {
    return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND",
                     dir.string() + " holds no .launch.json: it is not a directory `tirctl emit -o` wrote");
  }
  std::sort(stems.begin(), stems.end());
  // The runtime headers as they are in the directory (edited or not).
  codegen::HostBuildOptions build;
  for (const auto &[header, text] : codegen::RuntimeHeaders()) {
    auto on_disk = Read(dir / header);
    build.headers.emplace_back(header, on_disk.ok() ? *on_disk : text);
  }
  auto context = makeTirContext();
  std::string report;
  bool allPassed = true;
  for (const std::string &stem : stems) {
    TIR_ASSIGN_OR_RETURN(std::string source, Read(dir / (stem + ".cu")));
    TIR_ASSIGN_OR_RETURN(std::string graph_text, Read(dir / (stem + ".mlir")));
    TIR_ASSIGN_OR_RETURN(std::string layout, Read(dir / (stem + ".launch.json")));
    // The layout file is JSON: its "launch" rule (a tir.v1.LaunchRule) and "arch".
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(layout);
    const llvm::json::Object *top = json ? json->getAsObject() : nullptr;
    const llvm::json::Value *rule = top != nullptr ? top->get("launch") : nullptr;
    tir::v1::LaunchRule launch;
    if (!json) llvm::consumeError(json.takeError());
    if (rule == nullptr ||
        !google::protobuf::util::JsonStringToMessage(llvm::formatv("{0}", *rule).str(), &launch).ok()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                       (dir / (stem + ".launch.json")).string() + " has no readable \"launch\" rule");
    }
    std::string arch_name = options.arch;
    if (arch_name.empty()) {
      std::optional<llvm::StringRef> a = top->getString("arch");
      arch_name = a ? a->str() : "host";
    }
    TIR_ASSIGN_OR_RETURN(target::ArchInfo arch, target::LookupArch(arch_name));
    build.form = arch.is_gpu ? codegen::HostForm::kLanes : codegen::HostForm::kPlain;
    TIR_ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphText(graph_text, context.get(), stem + ".mlir"));
    // The parameter struct's fields as emitted (their names carry the tensor
    // maps' boxes, which depend on the candidate's tile).
    TIR_ASSIGN_OR_RETURN(std::vector<std::string> fields,
                         FieldNamesOf(top, (dir / (stem + ".launch.json")).string()));
    absl::StrAppendFormat(&report, "%s (%s, %s):\n", stem, arch.name,
                          arch.is_gpu ? "the GPU form, emulated lane by lane" : "the plain host form");
    codegen::EmittedKernel emitted;
    emitted.source = source;
    auto built = codegen::BuildHostKernel(emitted, (dir / ".build").string(), build);
    if (!built.ok()) {
      allPassed = false;
      absl::StrAppendFormat(&report, "  %s: %s\n", ReasonOf(built.status()), built.status().message());
      continue;
    }
    TIR_ASSIGN_OR_RETURN(std::string lines, VerifyKernel(loaded.graph, fields, launch, **built, allPassed,
                                                         layout.find("\"precision\": \"tf32\"") != std::string::npos));
    report += lines;
  }
  if (!allPassed) return MakeError(absl::StatusCode::kInternal, "KERNEL_WRONG", report + "verification failed");
  return report;
}

}  // namespace tir::client
