#include "compiler/codegen/HostBuild.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/codegen/ParamPacking.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/digest.h"
#include "compiler/support/private_dir.h"
#include "compiler/support/status.h"
#include "llvm/Support/Program.h"

namespace tir::codegen {
namespace {

absl::Status Invalid(const std::string &m) { return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", m); }

// The first 12 bytes of the source's SHA-256, in hex: a file name.
std::string Hex(llvm::StringRef data) { return Sha256Hex(absl::string_view(data.data(), data.size())).substr(0, 24); }

// A name no other thread or process of this machine writes to.
std::string Private(const std::filesystem::path &p) {
  return absl::StrCat(p.string(), ".", ::getpid(), ".", std::hash<std::thread::id>()(std::this_thread::get_id()));
}

// Writes `text` to `path` whole or not at all (a new file of its own, then
// a rename: a link at `path` is replaced, never followed).
bool WriteWhole(const std::filesystem::path &path, const std::string &text) {
  return WriteFileReplacing(path.string(), text, 0600).ok();
}

// Runs `args`, its output to `log`: true when it exits 0.
bool Run(const std::string &program, const std::vector<std::string> &args, const std::string &log, std::string *error) {
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  const std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log), llvm::StringRef(log)};
  return llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0, 0, error) == 0;
}

// What names the compiler `program` beyond its path: the first line of its
// `--version` (a compiler upgraded in place gets new directories), asked
// once per process. (A wrapper such as ccache answers for itself: name the
// compiler in TIR_HOST_CXX's flags or upgrade the wrapper with it.)
std::string CompilerIdentity(const std::string &program, const std::filesystem::path &work_dir) {
  static std::mutex mu;
  static auto *known = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> hold(mu);
  auto it = known->find(program);
  if (it != known->end()) return it->second;
  std::error_code ec;
  std::filesystem::create_directories(work_dir, ec);
  const std::string log = Private(work_dir / "cxx-version");
  std::string error, line;
  if (Run(program, {program, "--version"}, log, &error)) {
    std::ifstream in(log);
    std::getline(in, line);
  }
  std::filesystem::remove(log, ec);
  return (*known)[program] = line;
}

// An exclusive lock on a file, held while the object lives (released when
// its process ends, however it ends), waited for at most `patience`. A lock
// that cannot be had (no such file system support, a holder stuck past the
// wait) is no lock: the callers then race, which is correct (every file is
// written whole), only wasteful.
class FileLock {
 public:
  FileLock(const std::filesystem::path &path, absl::Duration patience)
      : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600)) {
    const absl::Time deadline = absl::Now() + patience;
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || absl::Now() > deadline) {
        ::close(fd_);
        fd_ = -1;
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;

 private:
  int fd_;
};

// How long a builder waits for another to complete a header directory: two
// compiles of the runtime headers, on a loaded machine.
constexpr absl::Duration kHeaderDirPatience = absl::Minutes(5);

// Header directories this process will not complete again (by path): a
// build of them failed here or in a process this one waited for, or their
// object failed to link twice.
struct DirMemory {
  std::mutex mu;
  std::set<std::string> tried;
  std::map<std::string, int> forgotten;
};
DirMemory &Dirs() {
  static auto *dirs = new DirMemory();
  return *dirs;
}

std::atomic<int64_t> g_link_fallbacks{0};

// The runtime headers of one form and compiler, in a directory every kernel
// built with them shares, with what each kernel would otherwise compile
// again:
//  - for the emulated form, the emulator's machinery (tir_lanes.h's
//    TIR_LANES_OUTLINE functions) compiled once into `tir_lanes_runtime.o`,
//    which each kernel, compiled with TIR_LANES_SPLIT, links: a kernel's own
//    code is a small part of what the header holds;
//  - for the emulated form, the first header precompiled
//    (`tir_runtime.h.gch`: GCC uses it for the kernel's first #include when
//    the flags match, and ignores it otherwise).
// One caller at a time completes a directory (a lock file); it is complete
// once `ready` exists. When the object or the precompiled header fails to
// build, the directory is left without `ready` and with `failed`, the
// compiler's words are in `<file>.log`, and stderr says so: kernels then
// compile the headers whole (slower, never wrong). Neither this process nor
// one that waited for that build tries again; a later process does.
struct Includes {
  std::filesystem::path dir;
  std::vector<std::string> flags;  // the kernel's flags (the first: the compiler)
  std::string runtime_object;      // empty: none
};

absl::StatusOr<Includes> HeaderDir(const std::filesystem::path &work_dir,
                                   const std::vector<std::pair<std::string, std::string>> &headers,
                                   const std::string &program, const std::vector<std::string> &flags, bool lanes) {
  std::string key = absl::StrCat(program, "\n", CompilerIdentity(program, work_dir), "\n");
  for (const std::string &f : flags) absl::StrAppend(&key, f, "\n");
  for (const auto &[name, text] : headers) absl::StrAppend(&key, "\n//", name, "\n", text);
  Includes out{work_dir / ("headers-" + Hex(key)), {}, ""};
  const std::filesystem::path object = out.dir / "tir_lanes_runtime.o";
  // The kernel's flags and objects, from what the directory holds.
  const auto finish = [&] {
    out.flags = flags;
    out.runtime_object.clear();
    if (lanes && std::filesystem::exists(object)) {
      out.flags.push_back("-DTIR_LANES_SPLIT");
      out.runtime_object = object.string();
    }
    return out;
  };
  DirMemory &dirs = Dirs();
  const auto tried = [&] {
    std::lock_guard<std::mutex> hold(dirs.mu);
    return dirs.tried.count(out.dir.string()) > 0;
  };
  const auto remember = [&] {
    std::lock_guard<std::mutex> hold(dirs.mu);
    dirs.tried.insert(out.dir.string());
  };
  std::error_code ec;
  // Its `ready`, headers and object are used only from a directory of this
  // user's alone (in a private work directory: CompileHostObject).
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(out.dir.string()));
  if (std::filesystem::exists(out.dir / "ready", ec) || tried()) return finish();
  const auto waited = std::filesystem::file_time_type::clock::now();
  FileLock lock(out.dir / "lock", kHeaderDirPatience);
  // Completed while this one waited, or found incomplete by a build it waited for.
  if (std::filesystem::exists(out.dir / "ready", ec) || tried()) return finish();
  const std::filesystem::path failed = out.dir / "failed";
  if (std::filesystem::exists(failed, ec) && std::filesystem::last_write_time(failed, ec) >= waited && !ec) {
    remember();
    return finish();
  }
  for (const auto &[name, text] : headers) WriteWhole(out.dir / name, text);
  std::string missing;
  // The plain form's objects are served (host kernels) and must be the same
  // bytes from every builder: they are built from the headers alone.
  if (lanes && !headers.empty()) {
    const std::string first = (out.dir / headers.front().first).string();
    // Builds `what` into `target` (its compiler's words in `target`.log),
    // or leaves it missing.
    const auto build = [&](std::vector<std::string> args, std::initializer_list<const char *> what,
                           const std::string &target) {
      const std::string tmp = Private(target);
      for (const char *a : what) args.push_back(a);
      for (const std::string &a : {std::string("-o"), tmp, first}) args.push_back(a);
      std::string error;
      bool built = Run(program, args, target + ".log", &error) && std::filesystem::exists(tmp);
      if (built) {
        std::error_code moved;
        std::filesystem::rename(tmp, target, moved);
        built = !moved;
        if (moved) error = "cannot move it in place: " + moved.message();
      }
      std::filesystem::remove(tmp, ec);
      if (!built) {
        absl::StrAppend(&missing, missing.empty() ? "" : ", ", std::filesystem::path(target).filename().string());
        std::fprintf(stderr, "tir: %s did not build (%s.log%s%s); kernels compile the runtime headers whole\n",
                     target.c_str(), target.c_str(), error.empty() ? "" : ": ", error.c_str());
      }
    };
    build(flags, {"-DTIR_LANES_SPLIT", "-DTIR_LANES_RUNTIME", "-c", "-x", "c++"}, object.string());
    build(finish().flags, {"-x", "c++-header"}, first + ".gch");
  }
  if (missing.empty()) {
    std::filesystem::remove(failed, ec);
    WriteWhole(out.dir / "ready", "");
  } else {
    WriteWhole(failed, missing + "\n");
    remember();
  }
  return finish();
}

// A kernel failed to link with `includes`' shared object: the directory is
// marked incomplete (no `ready`, no object) so that it is built again, by
// this process once, and then by later processes only.
void ForgetRuntimeObject(const Includes &includes) {
  FileLock lock(includes.dir / "lock", kHeaderDirPatience);
  std::error_code ec;
  std::filesystem::remove(includes.dir / "ready", ec);
  std::filesystem::remove(includes.runtime_object, ec);
  DirMemory &dirs = Dirs();
  std::lock_guard<std::mutex> hold(dirs.mu);
  if (++dirs.forgotten[includes.dir.string()] >= 2) dirs.tried.insert(includes.dir.string());
}

}  // namespace

int64_t HostLinkFallbacks() { return g_link_fallbacks.load(); }

HostKernel::~HostKernel() {
  if (handle_ != nullptr) dlclose(handle_);
}

absl::Status HostKernel::CallLanes(const void *params, size_t params_bytes, const unsigned *grid,
                                   const unsigned *block, uint64_t dynamic_smem,
                                   const std::vector<std::pair<void *, size_t>> &writable,
                                   const LaneSchedules &schedules, LaneStats *stats) const {
  if (lanes_ == nullptr) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "INVALID_ARGUMENT", path_ + " is not an emulated kernel");
  }
  std::string error(4096, '\0');
  unsigned long long counts[2] = {0, 0};
  std::vector<void *> ranges;
  std::vector<unsigned long> sizes;
  for (const auto &[p, n] : writable) {
    ranges.push_back(p);
    sizes.push_back(n);
  }
  const long long schedule[3] = {schedules.schedules, static_cast<long long>(schedules.seed), schedules.explore_blocks};
  const int errors = lanes_(params, params_bytes, grid, block, dynamic_smem, ranges.data(), sizes.data(),
                            static_cast<int>(ranges.size()), schedule, error.data(), error.size(), counts);
  if (stats != nullptr) {
    stats->events += counts[0];
    stats->threads += counts[1];
  }
  if (errors == 0) return absl::OkStatus();
  error.resize(std::strlen(error.c_str()));
  const size_t colon = error.find(':');
  const std::string reason = colon == std::string::npos ? "KERNEL_FAULT" : error.substr(0, colon);
  std::string message = colon == std::string::npos ? error : error.substr(colon + 2);
  if (errors > 1) absl::StrAppend(&message, " (and ", errors - 1, " more)");
  return MakeError(absl::StatusCode::kAborted, reason, message);
}

absl::StatusOr<std::string> CompileHostObject(const std::string &source, const std::string &work_dir,
                                              const HostBuildOptions &options) {
  const auto &headers = options.headers.empty() ? RuntimeHeaders() : options.headers;
  const bool lanes = options.form == HostForm::kLanes;
  // The compiler: TIR_HOST_CXX (a program and its own flags) or c++, run
  // directly (no shell: paths are arguments, never parsed).
  const char *cxx = std::getenv("TIR_HOST_CXX");
  std::vector<std::string> flags = absl::StrSplit(cxx && *cxx ? cxx : "c++", ' ', absl::SkipEmpty());
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(flags[0]);
  if (!program) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "HOST_COMPILER_MISSING",
                     absl::StrCat("no host compiler ", flags[0], " on PATH (TIR_HOST_CXX names another)"));
  }
  for (const char *flag : {"-std=c++17", "-O1", "-fPIC", "-w"}) flags.push_back(flag);
  if (lanes) flags.push_back("-DTIR_EMULATE=1");
  // Every object, header and marker below is used only from a directory no
  // other user can plant in or redirect (UNSAFE_DIRECTORY otherwise).
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(work_dir));
  // The object's name: its source, headers, compiler (which one, its
  // version) and flags.
  std::string key = absl::StrCat(lanes ? "lanes\n" : "plain\n", source, "\n", *program, "\n", CompilerIdentity(*program, work_dir));
  for (const std::string &f : flags) absl::StrAppend(&key, "\n", f);
  for (const auto &[name, text] : headers) absl::StrAppend(&key, "\n//", name, "\n", text);
  const std::string id = Hex(key);
  const std::filesystem::path dir = std::filesystem::path(work_dir) / id;
  std::error_code ec;
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(dir.string()));
  const std::string src = (dir / "kernel.cc").string(), so = (dir / "kernel.so").string(),
                    log = (dir / "compile.log").string();
  if (std::filesystem::exists(so)) return so;
  // The kernel's directory holds no headers: its #include finds them (and
  // their precompiled form) in the shared directory.
  TIR_ASSIGN_OR_RETURN(const Includes includes, HeaderDir(work_dir, headers, *program, flags, lanes));
  WriteWhole(src, source);
  // A private temporary name per call, so concurrent compiles of one source
  // never hand out a half-written object.
  const std::string tmp = Private(so), callLog = Private(log);
  // Compiles the kernel against the shared runtime object, or (`whole`)
  // with the runtime headers compiled in: whether `tmp` was written.
  std::string error, text;
  const auto compile = [&](bool whole) {
    std::vector<std::string> args = whole ? flags : includes.flags;
    for (const std::string &a : {std::string("-shared"), "-I" + includes.dir.string(), std::string("-o"), tmp, src}) {
      args.push_back(a);
    }
    if (!whole && !includes.runtime_object.empty()) args.push_back(includes.runtime_object);
    error.clear();
    const bool ok = Run(*program, args, callLog, &error) && std::filesystem::exists(tmp);
    std::ifstream in(callLog);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return ok;
  };
  bool built = compile(false);
  // A link against the shared object that fails (a damaged or stale
  // object: GCC's and clang's drivers say so) is not the kernel's fault: it
  // compiles whole once more, and the directory is rebuilt.
  if (!built && !includes.runtime_object.empty() &&
      (text.find("ld returned") != std::string::npos || text.find("linker command failed") != std::string::npos)) {
    std::fprintf(stderr, "tir: %s did not link with %s; compiling it whole\n", src.c_str(),
                 includes.runtime_object.c_str());
    ++g_link_fallbacks;
    ForgetRuntimeObject(includes);
    built = compile(true);
  }
  if (!built) {
    if (!error.empty()) text = error + "\n" + text;
    std::filesystem::remove(tmp, ec);
    return MakeError(absl::StatusCode::kInvalidArgument, "HOST_COMPILE_FAILED",
                     absl::StrCat("the system compiler rejected generated kernel ", src, ":\n", text.substr(0, 4000)));
  }
  std::filesystem::rename(tmp, so, ec);
  if (ec) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "cannot move " + tmp + " to " + so + ": " + ec.message());
  return so;
}

absl::StatusOr<std::unique_ptr<HostKernel>> LoadHostKernel(const std::string &so) {
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("dlopen ", so, ": ", dlerror()));
  auto call = reinterpret_cast<HostKernel::CallFn>(dlsym(handle, "tir_host_call"));
  auto lanes = reinterpret_cast<HostKernel::LanesFn>(dlsym(handle, "tir_lanes_call"));
  if (call == nullptr && lanes == nullptr) {
    dlclose(handle);
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", so + " has neither tir_host_call nor tir_lanes_call");
  }
  return std::make_unique<HostKernel>(handle, call, lanes, so);
}

absl::StatusOr<std::unique_ptr<HostKernel>> BuildHostKernel(const EmittedKernel &kernel, const std::string &work_dir,
                                                             const HostBuildOptions &options) {
  TIR_ASSIGN_OR_RETURN(std::string so, CompileHostObject(kernel.source, work_dir, options));
  return LoadHostKernel(so);
}

absl::StatusOr<std::vector<int64_t>> ResolveDomain(GraphOp kernel, const std::vector<std::vector<int64_t>> &args) {
  mlir::Block &block = kernel.getBodyBlock();
  if (args.size() != block.getNumArguments()) {
    return Invalid(absl::StrCat("kernel takes ", block.getNumArguments(), " inputs, got ", args.size()));
  }
  for (mlir::BlockArgument arg : block.getArguments()) {
    const size_t want = arg.getType().isIndex() ? 1
                        : arg.getType().isa<mlir::RankedTensorType>() ? arg.getType().cast<mlir::RankedTensorType>().getRank()
                                                                      : args[arg.getArgNumber()].size();
    if (args[arg.getArgNumber()].size() != want) {
      return Invalid(absl::StrCat("kernel input ", arg.getArgNumber(), " is given ", args[arg.getArgNumber()].size(),
                                  " sizes for ", want));
    }
  }
  auto domainType = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain");
  if (!domainType) return Invalid("the kernel graph has no tir.iteration_domain");
  auto domainAttr = domainType.asArrayRef();
  std::vector<int64_t> domain(domainAttr.begin(), domainAttr.end());
  llvm::DenseMap<mlir::Value, std::vector<int64_t>> shapes;  // filled on demand
  for (size_t d = 0; d < domain.size(); ++d) {
    if (domain[d] >= 0) continue;
    // A concatenation spans the sum of its inputs' extents (each input alone
    // reads only part of the dimension, so this comes first).
    kernel.walk([&](ConcatenateOp cat) {
      auto map = cat->getAttrOfType<mlir::AffineMapAttr>("tir.access");
      if (domain[d] >= 0 || !map) return;
      auto e = map.getValue().getResult(cat.getDimension()).dyn_cast<mlir::AffineDimExpr>();
      if (!e || e.getPosition() != d) return;
      int64_t sum = 0;
      for (mlir::Value v : cat.getInputs()) {
        const int64_t ext = v.getType().cast<mlir::RankedTensorType>().getDimSize(cat.getDimension());
        auto arg = v.dyn_cast<mlir::BlockArgument>();
        if (!mlir::ShapedType::isDynamic(ext)) sum += ext;
        else if (arg && arg.getOwner() == &block) sum += args[arg.getArgNumber()][cat.getDimension()];
        else return;
      }
      domain[d] = sum;
    });
    if (domain[d] >= 0) continue;
    for (mlir::BlockArgument arg : block.getArguments()) {
      auto map = kernel.getArgAttrOfType<mlir::AffineMapAttr>(arg.getArgNumber(), "tir.iter_space_map");
      if (!map) continue;
      for (unsigned j = 0; j < map.getValue().getNumResults(); ++j) {
        auto e = map.getValue().getResult(j).dyn_cast<mlir::AffineDimExpr>();
        if (e && e.getPosition() == d) domain[d] = args[arg.getArgNumber()][j];
      }
    }
    // Else from a dynamic_dims operand that is an index argument.
    kernel.walk([&](mlir::Operation *op) {
      if (domain[d] >= 0 || !llvm::isa<SplatOp, IotaOp, BroadcastOp, ReshapeOp>(op)) return;
      auto map = op->getAttrOfType<mlir::AffineMapAttr>("tir.access");
      auto type = op->getResult(0).getType().cast<mlir::RankedTensorType>();
      mlir::OperandRange dims = op->getOperands().drop_front(llvm::isa<SplatOp, BroadcastOp, ReshapeOp>(op) ? 1 : 0);
      if (!map || dims.empty()) return;
      unsigned next = 0;
      for (int64_t j = 0; j < type.getRank(); ++j) {
        if (!type.isDynamicDim(j)) continue;
        mlir::Value v = dims[next++];
        auto e = map.getValue().getResult(j).dyn_cast<mlir::AffineDimExpr>();
        if (!e || e.getPosition() != d) continue;
        if (auto arg = v.dyn_cast<mlir::BlockArgument>(); arg && arg.getOwner() == &block) {
          domain[d] = args[arg.getArgNumber()][0];
        } else if (auto dimOp = v.getDefiningOp<DimOp>()) {
          if (auto src = dimOp.getInput().dyn_cast<mlir::BlockArgument>(); src && src.getOwner() == &block) {
            domain[d] = args[src.getArgNumber()][dimOp.getDimension()];
          }
        }
      }
    });
    if (domain[d] < 0) {
      // Else from the shape of a value whose access reads that dim alone,
      // with every value's shape worked out from the inputs (through
      // reshapes and concatenations as well).
      if (shapes.empty()) shapes = reference::ValueShapes(kernel, args);
      kernel.walk([&](mlir::Operation *op) {
        if (domain[d] >= 0 || op->getNumResults() != 1) return;
        auto map = op->getAttrOfType<mlir::AffineMapAttr>("tir.access");
        auto it = shapes.find(op->getResult(0));
        if (!map || it == shapes.end()) return;
        for (unsigned j = 0; j < map.getValue().getNumResults() && j < it->second.size(); ++j) {
          auto e = map.getValue().getResult(j).dyn_cast<mlir::AffineDimExpr>();
          if (e && e.getPosition() == d && it->second[j] >= 0) domain[d] = it->second[j];
        }
      });
    }
    if (domain[d] < 0) return Invalid(absl::StrCat("cannot resolve dynamic extent ", d, " of the iteration domain"));
  }
  return domain;
}

absl::StatusOr<std::unique_ptr<HostLaunch>> HostLaunch::Prepare(GraphOp kernel,
                                                                const std::vector<std::string> &field_names,
                                                                const tir::v1::LaunchRule &launch,
                                                                const std::vector<reference::Tensor> &inputs,
                                                                int copies) {
  if (copies < 1) return Invalid("at least one argument set is needed");
  mlir::Block &block = kernel.getBodyBlock();
  if (inputs.size() != block.getNumArguments()) {
    return Invalid(absl::StrCat("kernel takes ", block.getNumArguments(), " inputs, got ", inputs.size()));
  }
  for (mlir::BlockArgument arg : block.getArguments()) {
    const reference::Tensor &t = inputs[arg.getArgNumber()];
    auto type = arg.getType().dyn_cast<mlir::RankedTensorType>();
    if (!type) continue;
    bool ok = !t.scalar && static_cast<int64_t>(t.shape.size()) == type.getRank();
    for (int64_t d = 0; ok && d < type.getRank(); ++d) {
      ok = t.shape[d] >= 0 && (type.isDynamicDim(d) || t.shape[d] == type.getDimSize(d));
    }
    if (!ok) return Invalid(absl::StrCat("input ", arg.getArgNumber(), " does not have the kernel's shape"));
  }
  std::vector<std::vector<int64_t>> args;
  for (const reference::Tensor &t : inputs) args.push_back(t.scalar ? std::vector<int64_t>{t.GetI(0)} : t.shape);
  TIR_ASSIGN_OR_RETURN(const std::vector<int64_t> domain, ResolveDomain(kernel, args));
  auto results = llvm::cast<ResultsOp>(block.getTerminator());
  auto launchPtr = std::unique_ptr<HostLaunch>(new HostLaunch());
  HostLaunch &h = *launchPtr;
  for (mlir::Value v : results.getValues()) {
    auto type = v.getType().dyn_cast<mlir::RankedTensorType>();
    if (!type) {  // a scalar result: one element
      h.out_shapes_.push_back({});
      h.out_dtypes_.push_back(reference::DTypeOf(v.getType()));
      h.out_strides_.push_back({});
      h.out_scalar_.push_back(true);
      continue;
    }
    h.out_scalar_.push_back(false);
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    for (size_t j = 0; j < shape.size(); ++j) {
      if (!mlir::ShapedType::isDynamic(shape[j])) continue;
      // The output's natural map reads domain dim j when ranks agree.
      shape[j] = j < domain.size() ? domain[j] : 1;
    }
    h.out_shapes_.push_back(shape);
    h.out_dtypes_.push_back(reference::DTypeOf(type.getElementType()));
    h.out_strides_.push_back(LayoutStrides(shape, ContractOf(kernel.getResultAttrDict(h.out_shapes_.size() - 1))));
  }
  // Every tensor laid out as the graph declares it (padded where a dynamic
  // stride promises divisibility).
  std::vector<std::vector<int64_t>> inStrides(inputs.size());
  std::vector<LayoutContract> inContracts(inputs.size());
  for (mlir::BlockArgument arg : block.getArguments()) {
    const reference::Tensor &t = inputs[arg.getArgNumber()];
    inContracts[arg.getArgNumber()] = ContractOf(kernel.getArgAttrDict(arg.getArgNumber()));
    inStrides[arg.getArgNumber()] = LayoutStrides(t.shape, inContracts[arg.getArgNumber()]);
  }
  for (const LayoutContract &c : inContracts) {
    if (c.alignment > 256) return Invalid(absl::StrCat("tir.alignment ", c.alignment, " is above the 256 bytes tir lays buffers out with"));
  }
  auto index = [&](const std::string &name, size_t prefix, size_t limit) -> absl::StatusOr<size_t> {
    size_t i = 0;
    const size_t end = name.find('_');
    if (!absl::SimpleAtoi(name.substr(prefix, end == std::string::npos ? std::string::npos : end - prefix), &i) ||
        i >= limit) {
      return Invalid("argument field " + name + " does not match the kernel's signature");
    }
    return i;
  };
  h.sets_.resize(copies);
  for (Set &set : h.sets_) {
    // Storage for every field, then pointers to them in field order (the
    // vectors are reserved so the pointers stay valid).
    set.buffers.reserve(field_names.size());
    set.pointers.reserve(field_names.size());
    set.arrays.reserve(field_names.size());
    set.scalars.reserve(field_names.size());
    set.map_bytes.reserve(field_names.size());
    set.maps.reserve(field_names.size());
    std::vector<int> inBuffer(inputs.size(), -1), outBuffer(h.out_shapes_.size(), -1);
    set.out_buffer.assign(h.out_shapes_.size(), 0);
    int64_t bytes = 0;
    for (const std::string &name : field_names) {
      const size_t before = set.fields.size();
      // Every field but a scalar is 8-byte aligned (pointers, int64
      // arrays) or a 64-byte aligned tensor map; a scalar is its size.
      auto note = [&](int buffer, size_t bytes, size_t align = 8) {
        if (set.fields.size() != before + 1) return;
        set.field_buffer.push_back(buffer);
        set.field_bytes.push_back(bytes);
        set.field_align.push_back(align);
        set.field_map.push_back(-1);
      };
      int mapInput = -1;
      uint32_t box0 = 0, box1 = 0;
      if (name == "dim") {
        set.arrays.push_back(domain);
        if (set.arrays.back().empty()) set.arrays.back().push_back(1);  // as the kernel declares it
        set.fields.push_back(set.arrays.back().data());
        note(-1, 8 * set.arrays.back().size());
      } else if (name.rfind("out", 0) == 0) {
        TIR_ASSIGN_OR_RETURN(size_t i, index(name, 3, h.out_shapes_.size()));
        if (name.find("_stride") != std::string::npos) {
          set.arrays.push_back(h.out_strides_[i]);
          if (set.arrays.back().empty()) set.arrays.back().push_back(1);
          set.fields.push_back(set.arrays.back().data());
          note(-1, 8 * set.arrays.back().size());
          continue;
        }
        set.buffers.emplace_back(
            std::max<int64_t>(1, reference::BufferBytes(h.out_dtypes_[i], h.out_shapes_[i], h.out_strides_[i])), 0xff);
        TIR_RETURN_IF_ERROR(CheckLaunchContract(ContractOf(kernel.getResultAttrDict(i)), set.buffers.back().data(),
                                                h.out_shapes_[i], h.out_strides_[i], true, absl::StrCat("output ", i)));
        bytes += set.buffers.back().size();
        set.out_buffer[i] = set.buffers.size() - 1;
        outBuffer[i] = static_cast<int>(set.buffers.size() - 1);
        set.pointers.push_back(set.buffers.back().data());
        set.fields.push_back(&set.pointers.back());
        note(static_cast<int>(set.buffers.size() - 1), 8);
      } else if (name.rfind("in", 0) == 0) {
        TIR_ASSIGN_OR_RETURN(size_t i, index(name, 2, inputs.size()));
        const reference::Tensor &t = inputs[i];
        if (name.find("_size") != std::string::npos || name.find("_stride") != std::string::npos) {
          set.arrays.push_back(name.find("_size") != std::string::npos ? t.shape : inStrides[i]);
          if (set.arrays.back().empty()) set.arrays.back().push_back(1);
          set.fields.push_back(set.arrays.back().data());
          note(-1, 8 * set.arrays.back().size());
        } else if (t.scalar) {
          std::array<uint8_t, 8> value{};
          reference::ToBuffer(t, {}, value.data());
          set.scalars.push_back(value);
          set.fields.push_back(set.scalars.back().data());
          note(-1, static_cast<size_t>(reference::StorageBytes(t.dtype)),
               static_cast<size_t>(reference::StorageBytes(t.dtype)));
        } else {
          set.buffers.emplace_back(std::max<int64_t>(1, reference::BufferBytes(t.dtype, t.shape, inStrides[i])), 0);
          TIR_RETURN_IF_ERROR(
              CheckLaunchContract(inContracts[i], set.buffers.back().data(), t.shape, inStrides[i], false,
                                  absl::StrCat("input ", i)));
          bytes += set.buffers.back().size();
          reference::ToBuffer(t, inStrides[i], set.buffers.back().data());
          inBuffer[i] = static_cast<int>(set.buffers.size() - 1);
          set.pointers.push_back(set.buffers.back().data());
          set.fields.push_back(&set.pointers.back());
          note(static_cast<int>(set.buffers.size() - 1), 8);
        }
      } else if (bool mapOutput = false; ParseTensorMapField(name, &mapInput, &box0, &box1, &mapOutput)) {
        // A TMA tensor map of a rank-2 bf16/f16 input, or of a rank-2
        // bf16/f16/f32 output: the emulator's encoding of what
        // cuTensorMapEncodeTiled is given (a GPU launcher encodes its own
        // from the view), or zeros when the layout allows none.
        TensorMapView v;
        const std::vector<int64_t> *shape = nullptr, *strides = nullptr;
        tir::v1::DType dtype;
        if (mapOutput) {
          if (mapInput < 0 || size_t(mapInput) >= h.out_shapes_.size() || outBuffer[mapInput] < 0 ||
              h.out_shapes_[mapInput].size() != 2) {
            return Invalid("tensor-map field " + name + " does not name a rank-2 tensor output before it");
          }
          v.buffer = outBuffer[mapInput];
          shape = &h.out_shapes_[mapInput];
          strides = &h.out_strides_[mapInput];
          dtype = h.out_dtypes_[mapInput];
        } else {
          if (mapInput < 0 || size_t(mapInput) >= inputs.size() || inBuffer[mapInput] < 0 ||
              inputs[mapInput].shape.size() != 2) {
            return Invalid("tensor-map field " + name + " does not name a rank-2 tensor input before it");
          }
          v.buffer = inBuffer[mapInput];
          shape = &inputs[mapInput].shape;
          strides = &inStrides[mapInput];
          dtype = inputs[mapInput].dtype;
        }
        v.elem_bytes = static_cast<int>(reference::StorageBytes(dtype));
        v.bf16 = dtype == tir::v1::DTYPE_BF16;
        v.f32 = dtype == tir::v1::DTYPE_F32;
        v.dims[0] = static_cast<uint64_t>((*shape)[1]);
        v.dims[1] = static_cast<uint64_t>((*shape)[0]);
        v.stride_bytes = static_cast<uint64_t>((*strides)[0]) * v.elem_bytes;
        v.box[0] = box0;
        v.box[1] = box1;
        const uint64_t base = reinterpret_cast<uint64_t>(set.buffers[v.buffer].data());
        v.encodable = (dtype == tir::v1::DTYPE_BF16 || dtype == tir::v1::DTYPE_F16 || (mapOutput && v.f32)) &&
                      TensorMapEncodable(base, *shape, *strides, v.elem_bytes);
        std::array<uint64_t, 16> bytes{};
        if (v.encodable) {
          // tir_lanes::TensorMapFields: magic, base, dim0, dim1, stride1, box0, box1, element bytes, swizzle (128B).
          bytes = {0x50414d534e455454ull, base, v.dims[0], v.dims[1], v.stride_bytes, box0, box1,
                   static_cast<uint64_t>(v.elem_bytes), 3};
        }
        set.map_bytes.push_back(bytes);
        set.maps.push_back(v);
        set.fields.push_back(set.map_bytes.back().data());
        note(-1, 128, 64);
        set.field_map.back() = static_cast<int>(set.maps.size() - 1);
      } else if (name == "workspace") {
        // Grown to what each launch rule asks for (ReserveWorkspace).
        set.buffers.emplace_back(8, 0);
        set.workspace_buffer = static_cast<int>(set.buffers.size() - 1);
        set.pointers.push_back(set.buffers.back().data());
        set.workspace_pointer = static_cast<int>(set.pointers.size() - 1);
        set.fields.push_back(&set.pointers.back());
        note(set.workspace_buffer, 8);
      } else {
        return Invalid("unknown argument field " + name);
      }
    }
    h.bytes_per_set_ = bytes;
  }
  h.domain_ = domain;
  TIR_RETURN_IF_ERROR(h.SetLaunch(launch));
  return launchPtr;
}

namespace {

// constant * product(ceil(dims[i] / dim_divisors[i])), saturated at 2^50
// so a hostile rule cannot overflow (every limit it is checked against is
// far below).
absl::StatusOr<int64_t> ExtentProduct(const tir::v1::LaunchExtent &ext, const std::vector<int64_t> &domain,
                                      const char *what) {
  constexpr int64_t kSaturate = int64_t{1} << 50;
  int64_t v = ext.constant() ? ext.constant() : 1;
  if (v < 0) return Invalid(absl::StrCat(what, " has a negative constant ", v));
  v = std::min(v, kSaturate);
  for (int i = 0; i < ext.dims_size(); ++i) {
    const auto &d = ext.dims(i);
    if (d.dim() >= domain.size()) {
      return Invalid(absl::StrCat(what, " reads domain dim ", d.dim(), " of ", domain.size()));
    }
    const int64_t tile = i < ext.dim_divisors_size() && ext.dim_divisors(i) > 1 ? ext.dim_divisors(i) : 1;
    const int64_t e = std::max<int64_t>(0, domain[d.dim()]);
    const int64_t tiles = e / tile + (e % tile != 0);  // no e + tile - 1: both may be near INT64_MAX
    v = tiles != 0 && v > kSaturate / tiles ? kSaturate : v * tiles;
  }
  return v;
}

}  // namespace

absl::StatusOr<std::array<unsigned, 3>> LaunchGrid(const tir::v1::LaunchRule &launch,
                                                   const std::vector<int64_t> &domain) {
  std::array<unsigned, 3> grid = {1, 1, 1};
  for (int g = 0; g < launch.grid_size() && g < 3; ++g) {
    const auto &ext = launch.grid(g);
    TIR_ASSIGN_OR_RETURN(const int64_t v, ExtentProduct(ext, domain, "launch rule"));
    const int64_t div = ext.divisor() > 1 ? ext.divisor() : 1;
    int64_t blocks = std::max<int64_t>(1, v / div + (v % div != 0));
    if (ext.max() > 0) blocks = std::min(blocks, ext.max());
    // CUDA's grid limits (x up to 2^31 - 1, y and z up to 65535).
    const int64_t limit = g == 0 ? (int64_t{1} << 31) - 1 : 65535;
    if (blocks > limit) {
      return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                       absl::StrCat("the launch needs ", blocks, " blocks along grid ", std::string(1, "xyz"[g]), ", above the limit of ",
                                    limit, "; a larger tile covers the domain"));
    }
    grid[g] = static_cast<unsigned>(blocks);
  }
  return grid;
}

int64_t ReductionLength(GraphOp kernel, const std::vector<int64_t> &domain) {
  auto kind = kernel->getAttrOfType<mlir::StringAttr>("tir.kernel_kind");
  if (!kind || kind.getValue() == "pointwise") return 1;
  if (kind.getValue() == "matmul") return domain.empty() ? 1 : std::max<int64_t>(1, domain.back());
  int64_t n = 1;
  if (auto r = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.reduced_dims")) {
    for (int64_t d : r.asArrayRef()) {
      if (d >= 0 && d < static_cast<int64_t>(domain.size())) n *= std::max<int64_t>(1, domain[d]);
    }
  }
  return n;
}

bool TensorMapEncodable(uint64_t base, const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                        int elem_bytes) {
  if (shape.size() != 2 || strides.size() != 2) return false;
  const int64_t limit = (int64_t{1} << 31) - 1;
  return strides[1] == 1 && base % 16 == 0 && strides[0] > 0 && (strides[0] * elem_bytes) % 16 == 0 &&
         strides[0] * elem_bytes < (int64_t{1} << 40) && shape[0] >= 1 && shape[1] >= 1 && shape[0] <= limit &&
         shape[1] <= limit;
}

absl::StatusOr<int64_t> LaunchWorkspaceBytes(const tir::v1::LaunchRule &launch, const std::vector<int64_t> &domain) {
  if (!launch.has_workspace_bytes()) return 0;
  const auto &ext = launch.workspace_bytes();
  TIR_ASSIGN_OR_RETURN(const int64_t v, ExtentProduct(ext, domain, "workspace rule"));
  if (v > (int64_t{1} << 40)) {
    return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED", "the kernel's workspace would pass 1 TiB");
  }
  const int64_t div = ext.divisor() > 1 ? ext.divisor() : 1;
  return (v + div - 1) / div;
}

absl::Status HostLaunch::ReserveWorkspace(const tir::v1::LaunchRule &launch) {
  TIR_ASSIGN_OR_RETURN(int64_t bytes, LaunchWorkspaceBytes(launch, domain_));
  for (Set &set : sets_) {
    if (set.workspace_buffer < 0 || static_cast<int64_t>(set.buffers[set.workspace_buffer].size()) >= bytes) continue;
    set.buffers[set.workspace_buffer].assign(bytes, 0);
    set.pointers[set.workspace_pointer] = set.buffers[set.workspace_buffer].data();
  }
  return absl::OkStatus();
}

absl::Status HostLaunch::SetLaunch(const tir::v1::LaunchRule &launch) {
  TIR_ASSIGN_OR_RETURN(grid_, LaunchGrid(launch, domain_));
  TIR_RETURN_IF_ERROR(ReserveWorkspace(launch));
  // Each candidate starts from a zeroed workspace, whatever ran before it
  // (a kernel that faulted may have left its counters behind).
  for (Set &set : sets_) {
    if (set.workspace_buffer >= 0) std::fill(set.buffers[set.workspace_buffer].begin(), set.buffers[set.workspace_buffer].end(), 0);
  }
  for (int d = 0; d < 3; ++d) {
    const int64_t b = d < launch.block_size() ? launch.block(d) : 1;
    if (b < 1 || b > 1024) return Invalid(absl::StrCat("launch rule asks for ", b, " threads along block dim ", d));
    block_[d] = static_cast<unsigned>(b);
  }
  dynamic_smem_ = launch.dynamic_shared_memory_bytes();
  return absl::OkStatus();
}

std::vector<HostLaunch::FieldView> HostLaunch::Fields(int s) const {
  std::vector<FieldView> out;
  const Set &set = sets_[s];
  for (size_t i = 0; i < set.fields.size(); ++i) {
    FieldView f;
    f.buffer = set.field_buffer[i];
    f.bytes = set.field_bytes[i];
    f.align = set.field_align[i];
    if (f.buffer < 0) f.value = set.fields[i];
    if (set.field_map[i] >= 0) f.map = &set.maps[set.field_map[i]];
    out.push_back(f);
  }
  return out;
}

void HostLaunch::Poison(int s) {
  for (size_t b : sets_[s].out_buffer) std::fill(sets_[s].buffers[b].begin(), sets_[s].buffers[b].end(), 0xff);
}

std::vector<std::pair<void *, size_t>> HostLaunch::Writable(int s) {
  std::vector<std::pair<void *, size_t>> out;
  Set &set = sets_[s];
  for (size_t b : set.out_buffer) out.emplace_back(set.buffers[b].data(), set.buffers[b].size());
  if (set.workspace_buffer >= 0) {
    out.emplace_back(set.buffers[set.workspace_buffer].data(), set.buffers[set.workspace_buffer].size());
  }
  return out;
}

absl::Status HostLaunch::Run(const HostKernel &kernel, int s, LaneStats *stats) {
  if (kernel.form() == HostForm::kLanes) {
    // The struct as a GPU launch would pass it, the buffers' host addresses
    // in the pointer fields.
    const std::vector<FieldView> fields = Fields(s);
    const ParamLayout layout = LayOutParams(fields);
    TIR_ASSIGN_OR_RETURN(const Bytes params,
                         PackParams(fields, layout, [&](int b) { return reinterpret_cast<uint64_t>(sets_[s].buffers[b].data()); }));
    return kernel.CallLanes(params.data(), params.size(), grid_.data(), block_.data(), dynamic_smem_, Writable(s),
                            schedules_, stats);
  }
  kernel.Call(sets_[s].fields.data(), grid_[0], grid_[1], grid_[2]);
  return absl::OkStatus();
}

std::vector<reference::Tensor> HostLaunch::Outputs(int s) const {
  std::vector<reference::Tensor> out;
  for (size_t i = 0; i < out_shapes_.size(); ++i) {
    out.push_back(reference::FromBuffer(out_dtypes_[i], out_shapes_[i], out_strides_[i],
                                        sets_[s].buffers[sets_[s].out_buffer[i]].data()));
    out.back().scalar = out_scalar_[i];
  }
  return out;
}

absl::StatusOr<std::vector<reference::Tensor>> RunOnHost(GraphOp kernel, const EmittedKernel &emitted,
                                                         const HostKernel &built,
                                                         const std::vector<reference::Tensor> &inputs,
                                                         LaneStats *stats) {
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<HostLaunch> launch,
                       HostLaunch::Prepare(kernel, emitted.field_names, emitted.launch, inputs));
  launch->Poison(0);
  TIR_RETURN_IF_ERROR(launch->Run(built, 0, stats));
  return launch->Outputs(0);
}

}  // namespace tir::codegen
