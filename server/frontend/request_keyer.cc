#include "server/frontend/request_keyer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/conversion/InputLimits.h"
#include "compiler/fingerprint/Fingerprint.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/digest.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "compiler/target/ArchTable.h"
#include "server/tuning/trial_points.h"

namespace tir::frontend {

void DescribeShape(tir::v1::Operation &op, const Parsed &parsed) {
  tir::v1::CompileMetadata *m = op.mutable_metadata();
  for (const std::string &n : parsed.notes) m->add_notes(n);
  if (!parsed.dynamic) return;
  m->set_shape(parsed.shape.text);
  m->set_shape_bucket(parsed.bucket_text);
}

RequestKeyer::RequestKeyer(const common::Limits &limits, tuning::TunerConfig tuner, reference::BucketPolicy buckets,
                           common::LimitCounter &counter)
    : max_ops_(limits.max_ops_per_graph),
      planning_budget_(absl::Milliseconds(limits.planning_budget_ms)),
      max_planned_candidates_(limits.max_planned_candidates),
      max_kernels_(limits.max_kernels_per_graph),
      tuner_(tuner),
      buckets_(std::move(buckets)),
      limits_(counter) {}

std::string RequestKeyer::RawKey(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                                 const std::string &arch) {
  const std::string precision = options.precision() == "tf32" ? "tf32" : "";
  std::string hints;
  for (const tir::v1::ShapeHint &h : options.shape_hints()) {
    absl::StrAppend(&hints, h.input(), "=", absl::StrJoin(h.shape(), "x"), ";");
  }
  return Sha256Hex(absl::StrCat(source.SerializeAsString(), "\n", arch, "\n",
                                options.budget().max_candidates_per_kernel(), "\n", precision, "\n", hints));
}

std::shared_ptr<const Parsed> RequestKeyer::Known(const tir::v1::GraphSource &source,
                                                  const tir::v1::CompileOptions &options, const std::string &arch) {
  if (!planning::CheckPrecision(options.precision()).ok()) return nullptr;
  const std::string raw = RawKey(source, options, arch);
  absl::MutexLock l(&mu_);
  auto it = known_.find(raw);
  return it == known_.end() ? nullptr : it->second;
}

absl::StatusOr<Parsed> RequestKeyer::Parse(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                                           const std::string &arch) {
  TIR_RETURN_IF_ERROR(planning::CheckPrecision(options.precision()));
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(arch));
  Parsed p;
  // "ieee" is the default spelled out: one key for both.
  p.precision = options.precision() == "tf32" ? "tf32" : "";
  p.width = static_cast<int>(options.budget().max_candidates_per_kernel());
  // The ops are bounded before anything is built: the proto form's by its
  // count, the text's by its `=` signs (each op with results has one, an
  // attribute one more; a graph of maxOpsPerGraph ops with a few attributes
  // each passes).
  const uint64_t opsBound = 4 * uint64_t{max_ops_} + 1024;
  if (source.has_graph() && static_cast<uint64_t>(source.graph().ops_size()) > max_ops_) {
    return limits_.Exceeded("maxOpsPerGraph", max_ops_,
                            absl::StrCat("the graph has ", source.graph().ops_size(), " operations"));
  }
  if (source.source_case() == tir::v1::GraphSource::kMlirText) {
    const uint64_t assignments = static_cast<uint64_t>(ScanText(source.mlir_text()).assignments);
    if (assignments > opsBound) {
      return limits_.Exceeded("maxOpsPerGraph", max_ops_,
                              absl::StrCat("the graph's text has ", assignments, " assignments (more than ", opsBound,
                                           " cannot be ", max_ops_, " operations)"));
    }
  }
  // Parsing and verifying count toward the planning budget (Plan takes what
  // is left of it).
  p.started = absl::Now();
  p.graph = std::make_shared<ParsedGraph>();
  p.graph->context = makeTirContext();
  TIR_ASSIGN_OR_RETURN(p.graph->loaded, LoadGraphSource(source, p.graph->context.get()));
  GraphOp graph = p.graph->loaded.graph;
  uint64_t ops = 0;
  graph.getBody().walk([&](mlir::Operation *) { ++ops; });
  if (ops > max_ops_) {
    return limits_.Exceeded("maxOpsPerGraph", max_ops_, absl::StrCat("the graph has ", ops, " operations"));
  }
  if (planning_budget_ > absl::ZeroDuration() && absl::Now() - p.started > planning_budget_) {
    return limits_.Exceeded("planningBudgetMs", absl::ToInt64Milliseconds(planning_budget_),
                            absl::StrCat("parsing and verifying the graph took ",
                                         absl::ToInt64Milliseconds(absl::Now() - p.started), " ms"));
  }
  // Dynamic dims: the shape asked, its bucket and the shape tuned at.
  const std::vector<reference::DynamicDim> dims = reference::DynamicDimsOf(graph);
  bool dynamicValues = !dims.empty();
  graph.walk([&](mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes()) {
      if (auto r = t.dyn_cast<mlir::RankedTensorType>(); r && !r.hasStaticShape()) dynamicValues = true;
    }
  });
  std::string bucketKey;
  if (!dynamicValues) {
    if (!options.shape_hints().empty()) p.notes.push_back("shape hints ignored: the graph has no dynamic dims");
  } else {
    TIR_ASSIGN_OR_RETURN(reference::BoundShapes asked, reference::BindShapes(graph, dims, options.shape_hints()));
    const std::vector<reference::DimRange> bucket = reference::BucketOf(dims, asked.sizes, buckets_);
    // Workers verify at these sizes: the reference must fit in memory there.
    TIR_RETURN_IF_ERROR(reference::CheckVerificationFitsAt(graph, asked.args));
    reference::BoundShapes tuned = reference::Representative(graph, dims, bucket, asked);
    if (!reference::CheckVerificationFitsAt(graph, tuned.args).ok()) tuned = asked;
    p.dynamic = true;
    p.shape.hints = reference::AsHints(graph, asked.args);
    p.shape.text = reference::FormatShapes(p.shape.hints);
    p.tuned_args = tuned.args;
    p.bucket_text = reference::FormatBucket(dims, bucket);
    tir::v1::KernelBundle &sig = p.signature;
    sig.set_bucket_policy(buckets_.Name());
    *sig.mutable_buckets() = reference::BucketProtos(dims, bucket);
    reference::ArgShapes top = asked.args;
    for (size_t i = 0; i < dims.size(); ++i) top[dims[i].input][dims[i].index ? 0 : dims[i].dim] = bucket[i].upper;
    for (tir::v1::ShapeHint &h : reference::AsHints(graph, top)) *sig.add_shape_bucket() = std::move(h);
    for (tir::v1::ShapeHint &h : reference::AsHints(graph, tuned.args)) *sig.add_tuned_shape() = std::move(h);
    // The key holds the bucket (every shape of it shares the bundle).
    bucketKey = absl::StrCat("\nshapes=", buckets_.Name(), ":", p.bucket_text.empty() ? "-" : p.bucket_text);
  }
  p.fingerprint = FingerprintGraph(graph);
  p.graph_name = graph.getSymName().str();
  p.policy = tuning::TuningPolicy(tuner_, p.width);
  p.key = Sha256Hex(absl::StrCat("tir-key-v1\n", p.fingerprint, "\n", arch, "\n", kCodegenVersion, "\n",
                                 info.is_gpu ? nvrtc::Version() : "host", "\n", p.policy,
                                 p.precision.empty() ? "" : "\nprecision=" + p.precision, bucketKey));
  // The same request bytes always give the same key: the hot (cache-hit)
  // path keys them by their hash from now on.
  auto known = std::make_shared<Parsed>(p);
  known->signature.Clear();  // the hot path needs only the key and the shape
  known->graph.reset();
  known->started = absl::InfinitePast();
  const std::string raw = RawKey(source, options, arch);
  // What the entry keeps, roughly (the shape texts and sizes grow with the
  // graph's inputs).
  size_t bytes = sizeof(Parsed) + raw.size() + known->key.size() + known->fingerprint.size() + known->policy.size() +
                 known->graph_name.size() + known->shape.text.size() + known->bucket_text.size();
  for (const std::string &n : known->notes) bytes += n.size();
  for (const auto &a : known->tuned_args) bytes += 8 * a.size() + sizeof(a);
  for (const tir::v1::ShapeHint &h : known->shape.hints) bytes += 8 * h.shape_size() + sizeof(h);
  absl::MutexLock l(&mu_);
  // Bounded in entries and bytes; it refills from traffic.
  if (known_.size() >= kMaxKnown || known_bytes_ + bytes > kMaxKnownBytes) {
    known_.clear();
    known_bytes_ = 0;
  }
  if (bytes <= kMaxKnownBytes / 64) {  // one request cannot take the cache's room
    auto [it, added] = known_.try_emplace(raw);
    if (added) known_bytes_ += bytes;
    it->second = std::move(known);
  }
  return p;
}

absl::StatusOr<std::vector<tuning::KernelWork>> RequestKeyer::Plan(Parsed &parsed, const std::string &arch,
                                                                   const std::string &device,
                                                                   const planning::CostModel &model) const {
  if (parsed.graph == nullptr) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", "a request is planned from its parsed graph");
  }
  // Candidates are ranked for the device the arch's workers have (an H200
  // is an H100 with 4.8 TB/s), else the arch's representative part.
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupDevice(arch, device));
  tuning::TunerConfig config = tuner_;
  if (parsed.width > 0) config.width = parsed.width;
  const std::vector<std::vector<int64_t>> *tuned = parsed.dynamic ? &parsed.tuned_args : nullptr;
  planning::PlanOptions options{parsed.precision, tuned};
  // The budget counts from the start of parsing (a request known by its
  // bytes was parsed just now, for its plan).
  if (planning_budget_ > absl::ZeroDuration()) {
    options.deadline = (parsed.started == absl::InfinitePast() ? absl::Now() : parsed.started) + planning_budget_;
  }
  options.max_candidates = max_planned_candidates_;
  options.max_kernels = max_kernels_;
  absl::StatusOr<std::vector<tuning::KernelWork>> work =
      tuning::BuildWorkItems(parsed.graph->loaded.graph, info, config.width, tir::v1::MeasurementPolicy(),
                             &parsed.signature, &model, config.max_space_fraction, options, tuned);
  if (!work.ok() && ReasonOf(work.status()) == "LIMIT_EXCEEDED") {
    const absl::string_view m = work.status().message();
    limits_.Count(std::string(m.substr(0, m.find_first_of("=:"))));
  }
  return work;
}

void CostModels::Refit(const ledger::Ledger &ledger) {
  {
    absl::MutexLock l(&mu_);
    pending_ = false;  // trials from now on count toward the next one
    since_fit_ = 0;
  }
  absl::StatusOr<std::vector<planning::TrialPoint>> points = tuning::LoadTrialPoints(ledger);
  if (!points.ok()) return;  // the model stays as it was
  auto fit = std::make_shared<const planning::Calibration>(planning::Calibration::Fit(*std::move(points)));
  absl::MutexLock l(&mu_);
  calibration_ = std::move(fit);
}

bool CostModels::NoteTrials(int n) {
  absl::MutexLock l(&mu_);
  since_fit_ += n;
  if (since_fit_ < 32 || pending_) return false;
  pending_ = true;
  return true;
}

void CostModels::RefitDropped() {
  absl::MutexLock l(&mu_);
  pending_ = false;
}

void CostModels::With(const std::function<void(const planning::CostModel &)> &fn) const {
  std::shared_ptr<const planning::Calibration> calibration;
  {
    absl::MutexLock l(&mu_);
    calibration = calibration_;
  }
  if (calibration && !calibration->empty()) {
    const planning::CalibratedCostModel calibrated(analytic_, *calibration);
    fn(calibrated);
  } else {
    fn(analytic_);
  }
}

}  // namespace tir::frontend
