#include "client/service_commands.h"

#include "compiler/codegen/LaunchContract.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/bundle_runner.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/DynamicShapes.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/cli.h"
#include "compiler/support/private_dir.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

namespace tir::client {
namespace {

std::string Json(const google::protobuf::Message &m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

// Binaries and sources left out (JSON output is for people and scripts).
tir::v1::KernelBundle Metadata(tir::v1::KernelBundle b) {
  for (auto &k : *b.mutable_kernels()) {
    k.clear_binary();
    k.clear_source();
  }
  return b;
}

std::string Ms(double seconds) { return absl::StrFormat("%.3f ms", seconds * 1e3); }

std::string Params(const tir::v1::Candidate &c) {
  std::map<std::string, int64_t> sorted(c.params().begin(), c.params().end());
  std::vector<std::string> parts;
  for (const auto &[k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, " ");
}

const char *StageName(tir::v1::Stage s) {
  switch (s) {
    case tir::v1::STAGE_VERIFYING: return "verifying";
    case tir::v1::STAGE_PLANNING: return "planning";
    case tir::v1::STAGE_QUEUED: return "queued";
    case tir::v1::STAGE_TUNING: return "tuning";
    case tir::v1::STAGE_CHECKING_SHAPE: return "checking the shape";
    case tir::v1::STAGE_DONE: return "done";
    default: return "starting";
  }
}

// Redraws one line on stderr (a terminal), at most ten times a second and
// always for a new stage and at the end.
class ProgressBar {
 public:
  explicit ProgressBar(absl::Time start) : start_(start) {}
  void Draw(const tir::v1::Operation &op) {
    const absl::Time now = absl::Now();
    const tir::v1::Stage stage = op.metadata().progress().stage();
    if (!op.done() && stage == stage_ && now - drawn_ < absl::Milliseconds(100)) return;
    stage_ = stage;
    drawn_ = now;
    std::fprintf(stderr, "\r\033[K%s", ProgressLine(op, now - start_).c_str());
    if (op.done()) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  absl::Time start_;
  absl::Time drawn_ = absl::InfinitePast();
  tir::v1::Stage stage_ = tir::v1::STAGE_UNSPECIFIED;
};

absl::Status OperationError(const tir::v1::Operation &op) {
  return MakeError(static_cast<absl::StatusCode>(op.error().code()), op.error().reason(), op.error().message());
}

}  // namespace

std::string ProgressLine(const tir::v1::Operation &op, absl::Duration elapsed) {
  const tir::v1::CompileMetadata &m = op.metadata();
  const tir::v1::CompileProgress &p = m.progress();
  const std::string bucket = m.shape_bucket().empty() ? "" : absl::StrCat(" bucket ", m.shape_bucket());
  const std::string kernels = absl::StrCat(p.partitions(), p.partitions() == 1 ? " kernel" : " kernels");
  std::string line;
  if (op.done()) {
    if (m.cache_hit()) {
      line = absl::StrCat("cache hit", bucket);
    } else if (op.has_error()) {
      line = absl::StrCat("failed", bucket, ": ", op.error().reason());
    } else if (m.shape_checked()) {
      line = absl::StrCat("checked", bucket, " at ", m.shape(), ": ", kernels);
    } else {
      line = absl::StrFormat("tuned%s: %s, %u/%u candidates measured (%u failed)", bucket, kernels,
                             p.candidates_measured(), p.candidates_total(), p.candidates_failed());
    }
  } else if (p.stage() == tir::v1::STAGE_TUNING) {
    line = absl::StrFormat("tuning%s: %s planned, %u/%u candidates measured (%u failed)", bucket, kernels,
                           p.candidates_measured(), p.candidates_total(), p.candidates_failed());
    if (p.best_seconds() > 0) absl::StrAppend(&line, ", best ", Ms(p.best_seconds()));
  } else if (p.stage() == tir::v1::STAGE_QUEUED) {
    line = absl::StrCat("queued", bucket, ": ", kernels, " planned, ", p.candidates_total(),
                        " candidates to measure, waiting for a worker");
  } else {
    line = absl::StrCat(StageName(p.stage()), bucket);
  }
  return absl::StrFormat("%s  %.1f s", line, absl::ToDoubleSeconds(elapsed));
}

std::string DescribeShapes(const tir::v1::KernelBundle &b) {
  if (b.buckets().empty()) return "";
  std::string out = absl::StrCat("  bucket ", reference::FormatBucket(b.buckets()), " (", b.bucket_policy(), "), tuned at ",
                                 reference::FormatShapes({b.tuned_shape().begin(), b.tuned_shape().end()}), "\n");
  if (b.has_served_shape()) {
    const tir::v1::ShapeVerification &v = b.served_shape();
    absl::StrAppend(&out, "  served at ", reference::FormatShapes({v.shape().begin(), v.shape().end()}),
                    v.passed() ? absl::StrCat(": every kernel verified there",
                                              v.worker().empty() ? " (by its tuning)" : " on " + v.worker())
                               : ": not verified there (the heuristic's default)",
                    "\n");
  }
  return out;
}

std::string DescribeBundle(const tir::v1::KernelBundle &b) {
  std::string out = DescribeShapes(b);
  const tir::v1::TuningSummary &t = b.tuning();
  for (const auto &k : b.kernels()) {
    absl::StrAppendFormat(&out, "  kernel %d (%s): candidate #%d%s  %s", k.partition(), k.kind(), k.candidate().rank(),
                          k.candidate().is_default() ? " (default)" : "", Params(k.candidate()));
    if (k.has_measurement() && k.measurement().samples() > 0) {
      absl::StrAppendFormat(&out, "  %s median (IQR %s, n=%d)", Ms(k.measurement().median_seconds()),
                            Ms(k.measurement().iqr_seconds()), k.measurement().samples());
    }
    out += "\n";
  }
  if (t.tuned()) {
    absl::StrAppendFormat(&out, "  tuned: %d of %d candidates measured (%d failed)", t.candidates_measured(),
                          t.candidates_total(), t.candidates_failed());
    if (t.default_seconds() > 0 && t.best_seconds() > 0) {
      // Both times come from the round that chose each kernel's winner.
      absl::StrAppendFormat(&out, "; %s against the default's %s: x%.2f", Ms(t.best_seconds()), Ms(t.default_seconds()),
                            t.default_seconds() / t.best_seconds());
      const int kept = static_cast<int>(std::count_if(b.kernels().begin(), b.kernels().end(),
                                                      [](const auto &k) { return k.candidate().is_default(); }));
      if (kept == b.kernels_size()) {
        absl::StrAppend(&out, "; the default kept (no candidate was faster in the same round)");
      } else if (kept > 0) {
        absl::StrAppendFormat(&out, "; %d of %d kernels keep the default (no candidate was faster in the same round)",
                              kept, b.kernels_size());
      }
    }
    out += "\n";
  } else {
    absl::StrAppendFormat(&out, "  untuned: the default candidates, compiled (%d candidates in the space)\n",
                          t.candidates_total());
  }
  return out;
}

absl::StatusOr<std::vector<std::vector<tir::v1::ShapeHint>>> GroupShapes(const std::vector<std::string> &flags) {
  std::vector<std::vector<tir::v1::ShapeHint>> out;
  for (const std::string &f : flags) {
    TIR_ASSIGN_OR_RETURN(tir::v1::ShapeHint h, reference::ParseShapeHint(f));
    const bool repeat = !out.empty() && std::any_of(out.back().begin(), out.back().end(),
                                                    [&](const tir::v1::ShapeHint &x) { return x.input() == h.input(); });
    if (out.empty() || repeat) out.emplace_back();
    out.back().push_back(std::move(h));
  }
  return out;
}

namespace {

absl::StatusOr<std::string> CompileAt(Client &client, const std::string &text, const CompileCommandOptions &o,
                                      const std::vector<tir::v1::ShapeHint> &shape) {
  tir::v1::CompileOptions options;
  for (const tir::v1::ShapeHint &h : shape) *options.add_shape_hints() = h;
  options.set_target_arch(o.arch);
  options.set_precision(o.precision);
  options.set_mode(o.heuristic_now ? tir::v1::COMPILE_MODE_HEURISTIC_NOW : tir::v1::COMPILE_MODE_WAIT);
  options.mutable_budget()->set_max_candidates_per_kernel(o.max_candidates_per_kernel);
  const absl::Time start = absl::Now();
  absl::StatusOr<tir::v1::Operation> submitted = client.Compile(GraphSourceFromText(text), options);
  if (!submitted.ok() && ReasonOf(submitted.status()) == "DEADLINE_EXCEEDED") {
    return MakeError(absl::StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED",
                     absl::StrCat("the coordinator did not take the graph within the command's timeout (",
                                  absl::FormatDuration(o.timeout), "; ", submitted.status().message(), ")"));
  }
  TIR_RETURN_IF_ERROR(submitted.status());
  tir::v1::Operation op = *std::move(submitted);
  // The client's deadline is the command's: what is left of it.
  const absl::Duration left = std::max(client.deadline() - absl::Now(), absl::ZeroDuration());
  if (!op.done()) {
    if (o.progress) {
      ProgressBar bar(start);
      TIR_ASSIGN_OR_RETURN(op, client.Watch(op.name(), left, [&](const tir::v1::Operation &state) { bar.Draw(state); }));
    } else {
      TIR_ASSIGN_OR_RETURN(op, client.Wait(op.name(), left));
    }
  }
  if (!op.done()) {
    return MakeError(absl::StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED",
                     absl::StrCat(op.name(), " is still running after ", absl::FormatDuration(o.timeout),
                                  "; `tirctl ops wait ", op.name(), "` picks it up"));
  }
  if (op.has_error()) return OperationError(op);
  const tir::v1::KernelBundle &b = op.response();
  std::string path = o.out_path;
  if (o.cache_dir.empty() && (path.empty() || o.verify)) {
    // No cache directory (no HOME, no XDG_CACHE_HOME, no home): never a
    // shared directory instead.
    TIR_RETURN_IF_ERROR(UserCacheDir().status());
  }
  if (path.empty()) {
    // The file is named by the key the service sent: a key is 64 hex digits,
    // and anything else (a path, "../") is refused, never written to.
    if (b.key().size() != 64 || b.key().find_first_not_of("0123456789abcdef") != std::string::npos) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "INVALID_BUNDLE",
                       "the service answered with a bundle whose key is not a cache key; it is not written");
    }
    // One file per shape served (a dynamic graph's bucket serves several).
    const std::string shape =
        b.has_served_shape() ? reference::FormatShapes({b.served_shape().shape().begin(), b.served_shape().shape().end()}) : "";
    std::string suffix = shape.empty() ? "" : "@" + shape;
    std::replace(suffix.begin(), suffix.end(), ' ', ';');
    path = absl::StrCat(o.cache_dir, "/bundles/", b.key(), suffix, ".pb");
    // The cache's bundles directory: this user's alone, under directories
    // nobody else can change (UNSAFE_DIRECTORY otherwise).
    TIR_RETURN_IF_ERROR(MakeTrustedDirectory(o.cache_dir + "/bundles"));
  } else if (std::filesystem::path(path).has_parent_path()) {
    std::error_code ec;  // a directory that cannot be made shows in the write's error
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  }
  {
    // Written whole by rename: a link planted at the path is replaced,
    // never written through.
    std::string bytes;
    if (!b.SerializeToString(&bytes)) {
      return MakeError(absl::StatusCode::kInternal, "INTERNAL", "cannot serialize the bundle for " + path);
    }
    const absl::Status written = WriteFileReplacing(path, bytes, o.out_path.empty() ? 0600 : 0644);
    if (!written.ok()) {
      return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                       absl::StrCat("cannot write the bundle to ", path, ": ", written.message()));
    }
  }
  std::string verified;
  if (o.verify) {
    if (b.kernels_size() == 0 || b.kernels(0).format() != tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "FAILED_PRECONDITION",
                       "--verify runs the bundle here, so it needs --arch host");
    }
    auto ctx = makeTirContext();
    TIR_ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphText(text, ctx.get()));
    TIR_RETURN_IF_ERROR(reference::CheckVerificationFits(loaded.graph, 1));
    std::vector<reference::Tensor> inputs = reference::SampleInputs(loaded.graph, 1, 20261129);
    // A dynamic graph's inputs at the shape the bundle was served for.
    std::vector<std::vector<int64_t>> args;
    for (mlir::BlockArgument arg : loaded.graph.getBodyBlock().getArguments()) {
      const size_t i = arg.getArgNumber();
      if (static_cast<int>(i) >= b.inputs_size()) break;
      if (arg.getType().isIndex()) {
        for (const tir::v1::ShapeHint &h : b.served_shape().shape()) {
          if (h.input() == i && h.shape_size() == 1) inputs[i] = reference::Tensor::ScalarInt(inputs[i].dtype, h.shape(0));
        }
      } else if (auto t = arg.getType().dyn_cast<mlir::RankedTensorType>(); t && !t.hasStaticShape()) {
        inputs[i] = reference::RandomTensor(inputs[i].dtype, {b.inputs(i).shape().begin(), b.inputs(i).shape().end()},
                                            20261129 + i);
      }
      args.push_back(inputs[i].scalar ? std::vector<int64_t>{arg.getType().isIndex() ? inputs[i].GetI(0) : 0}
                                      : inputs[i].shape);
    }
    reference::FitGatherIndices(loaded.graph, inputs, 20261129);
    const auto shapes = reference::ValueShapes(loaded.graph, args);
    TIR_ASSIGN_OR_RETURN(reference::Reference ref, reference::EvaluateWithRounding(loaded.graph, inputs));
    std::vector<reference::Tensor> &want = ref.outputs;
    for (size_t i = 0; i < want.size() && static_cast<int>(i) < b.outputs_size(); ++i) {
      // As stored: a stride-0 output dimension holds its index-0 element.
      const std::vector<int64_t> strides = codegen::LayoutStrides(want[i].shape, codegen::ContractOf(b.outputs(i)));
      want[i] = reference::AsStored(want[i], strides);
      if (reference::HasRounding(ref.rounding[i])) ref.rounding[i] = reference::AsStored(ref.rounding[i], strides);
    }
    // Its binaries are written and loaded there: a directory of this
    // user's alone, under directories nobody else can change.
    TIR_RETURN_IF_ERROR(MakeTrustedDirectory(o.cache_dir + "/verify"));
    TIR_ASSIGN_OR_RETURN(std::vector<reference::Tensor> got,
                         RunHostBundle(b, inputs, absl::StrCat(o.cache_dir, "/verify")));
    bool ok = got.size() == want.size();
    // The longest reduction in the graph sets the accumulation bound.
    int64_t length = 1;
    loaded.graph.walk([&](mlir::Operation *op) {
      if (op->getNumOperands() == 0 || !llvm::isa<ReduceOp, ReduceUdOp, MatmulOp>(op)) return;
      auto in = op->getOperand(0).getType().dyn_cast<mlir::RankedTensorType>();
      if (!in || in.getRank() == 0) return;
      // Extents at the shape run (a dynamic one from the inferred shapes).
      auto extent = [&](int64_t d) -> int64_t {
        if (!in.isDynamicDim(d)) return in.getDimSize(d);
        auto it = shapes.find(op->getOperand(0));
        return it != shapes.end() && d < static_cast<int64_t>(it->second.size()) && it->second[d] > 0 ? it->second[d] : 1;
      };
      int64_t n = 1;
      if (llvm::isa<MatmulOp>(op)) {
        n = extent(in.getRank() - 1);
      } else if (auto dims = op->getAttrOfType<mlir::DenseI32ArrayAttr>("dimensions")) {
        for (int64_t d : dims.asArrayRef()) {
          if (d >= 0 && d < in.getRank()) n *= extent(d);
        }
      }
      length = std::max(length, n);
    });
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
      const reference::OutputCheck check = reference::CheckOutput(got[i], want[i], ref.rounding[i], length);
      const double err = check.error, bound = check.bound;
      absl::StrAppendFormat(&verified, "  verified output %d: relative L2 error %.3g (bound %.3g)%s\n", i, err, bound,
                            err <= bound ? "" : "  WRONG");
      ok &= err <= bound;
    }
    if (!ok) return MakeError(absl::StatusCode::kInternal, "KERNEL_WRONG", "the bundle does not compute the graph:\n" + verified);
  }
  if (o.json) {
    tir::v1::Operation shown = op;
    *shown.mutable_response() = Metadata(b);
    return Json(shown);
  }
  std::string report = absl::StrFormat("%s for %s: %s in %.1f s\n", b.name(), b.arch(),
                                       op.metadata().cache_hit() ? "cache hit (no work done)"
                                       : op.metadata().shape_checked()
                                           ? "checked at this shape (the bucket was tuned before)"
                                       : b.tuning().tuned() ? "tuned"
                                                            : "answered with the defaults",
                                       absl::ToDoubleSeconds(absl::Now() - start));
  if (op.metadata().tier() == "upstream") absl::StrAppend(&report, "  answered by the upstream (the fleet)\n");
  for (const std::string &note : op.metadata().notes()) absl::StrAppend(&report, "  note: ", note, "\n");
  absl::StrAppend(&report, DescribeBundle(b), verified, "  bundle written to ", path, "\n");
  return report;
}

}  // namespace

absl::StatusOr<std::string> CompileCommand(Client &client, const std::string &text, const CompileCommandOptions &o) {
  // Every call ends by the command's deadline, connecting included.
  struct Restore {
    Client &c;
    absl::Time was;
    ~Restore() { c.set_deadline(was); }
  } restore{client, client.deadline()};
  client.set_deadline(std::min(client.deadline(), absl::Now() + o.timeout));
  if (o.shapes.empty()) return CompileAt(client, text, o, {});
  std::string out;
  for (const std::vector<tir::v1::ShapeHint> &shape : o.shapes) {
    absl::StatusOr<std::string> one = CompileAt(client, text, o, shape);
    if (!one.ok()) {
      return MakeError(one.status().code(), ReasonOf(one.status()),
                       absl::StrCat("at shape ", reference::FormatShapes(shape), ": ", one.status().message()));
    }
    if (!o.json && o.shapes.size() > 1) absl::StrAppend(&out, "at shape ", reference::FormatShapes(shape), ":\n");
    absl::StrAppend(&out, *one);
  }
  return out;
}

absl::StatusOr<std::string> GetCommand(Client &client, const std::string &key, bool json) {
  TIR_ASSIGN_OR_RETURN(tir::v1::KernelBundle b, client.GetKernel(key, true));
  if (json) return Json(b);
  return absl::StrCat(b.name(), " for ", b.arch(), " (fingerprint ", b.graph_fingerprint().substr(0, 16), ")\n",
                      DescribeBundle(b));
}

absl::StatusOr<std::string> ListCommand(Client &client, const std::string &arch, bool json) {
  std::string out, token;
  tir::v1::ListKernelsResponse all;
  do {
    TIR_ASSIGN_OR_RETURN(tir::v1::ListKernelsResponse page, client.ListKernels(500, token, arch));
    for (auto &k : *page.mutable_kernels()) *all.add_kernels() = std::move(k);
    token = page.next_page_token();
  } while (!token.empty());
  if (json) return Json(all);
  for (const auto &b : all.kernels()) {
    const std::string bucket = b.buckets().empty() ? "" : "  bucket " + reference::FormatBucket(b.buckets());
    absl::StrAppendFormat(&out, "%s  %-7s %d kernel(s)  %s%s\n", b.key(), b.arch(), b.kernels_size(),
                          b.tuning().tuned() ? absl::StrCat("tuned, ", Ms(b.tuning().best_seconds())) : "untuned", bucket);
  }
  return out;
}

absl::StatusOr<std::string> RemoveCommand(Client &client, const std::string &key) {
  TIR_ASSIGN_OR_RETURN(bool deleted, client.DeleteKernel(key));
  if (!deleted) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no kernel " + key);
  return absl::StrCat("deleted ", key, "\n");
}

absl::StatusOr<std::string> OperationCommand(Client &client, const std::string &what, const std::string &name, bool json,
                                             bool progress) {
  const std::string full = name.rfind("operations/", 0) == 0 ? name : "operations/" + name;
  tir::v1::Operation op;
  if (what == "get") {
    TIR_ASSIGN_OR_RETURN(op, client.GetOperation(full));
  } else if (what == "wait") {
    TIR_ASSIGN_OR_RETURN(op, client.Wait(full, absl::Hours(1)));
  } else if (what == "watch") {
    ProgressBar bar(absl::Now());
    TIR_ASSIGN_OR_RETURN(op, client.Watch(full, absl::Hours(1), [&](const tir::v1::Operation &o) {
      if (progress) {
        bar.Draw(o);
      } else if (!json) {
        const auto &p = o.metadata().progress();
        std::printf("%s: %u/%u candidates measured, %u failed\n", StageName(p.stage()), p.candidates_measured(),
                    p.candidates_total(), p.candidates_failed());
        std::fflush(stdout);
      }
    }));
  } else if (what == "cancel") {
    TIR_ASSIGN_OR_RETURN(op, client.Cancel(full));
  } else {
    return MakeError(absl::StatusCode::kInvalidArgument, "USAGE", "ops takes get, wait, watch or cancel");
  }
  if (op.has_response()) *op.mutable_response() = Metadata(op.response());
  if (json) return Json(op);
  std::string out = absl::StrFormat("%s: %s", op.name(), op.done() ? "done" : StageName(op.metadata().progress().stage()));
  if (op.has_error()) absl::StrAppend(&out, ", ", op.error().reason(), ": ", op.error().message());
  absl::StrAppend(&out, "\n");
  if (op.has_response()) absl::StrAppend(&out, op.response().name(), "\n", DescribeBundle(op.response()));
  return out;
}

absl::StatusOr<std::string> WorkersCommand(Client &client, bool json) {
  TIR_ASSIGN_OR_RETURN(tir::v1::ListWorkersResponse w, client.ListWorkers());
  if (json) return Json(w);
  std::string out;
  for (const auto &i : w.workers()) {
    absl::StrAppendFormat(&out, "%-12s %-5s %-8s %-9s leases %d, measured %d  %s\n", i.name(), i.backend(), i.arch(),
                          i.state(), i.active_leases(), i.candidates_measured(), i.device_name());
  }
  if (out.empty()) out = "no workers registered\n";
  return out;
}

}  // namespace tir::client
