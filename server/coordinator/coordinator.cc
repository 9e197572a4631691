#include "server/coordinator/coordinator.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/bundle_signature.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/fingerprint/Fingerprint.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "compiler/target/ArchTable.h"
#include "google/protobuf/util/time_util.h"
#include "llvm/Support/SHA256.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "server/tuning/bundle_shapes.h"
#include "server/tuning/trial_points.h"

namespace tir::coordinator {

using google::protobuf::util::TimeUtil;

struct Coordinator::Metrics {
  explicit Metrics(prometheus::Registry &r)
      : cache(prometheus::BuildCounter().Name("tir_cache_lookups_total").Help("Kernel cache lookups by result").Register(r)),
        queue_depth(prometheus::BuildGauge().Name("tir_queue_depth").Help("Work items waiting for a worker, by arch").Register(r)),
        leases(prometheus::BuildGauge().Name("tir_leases_outstanding").Help("Work items leased to workers").Register(r).Add({})),
        workers(prometheus::BuildGauge().Name("tir_workers").Help("Registered workers by arch and state").Register(r)),
        tune_seconds(prometheus::BuildHistogram()
                         .Name("tir_tune_seconds")
                         .Help("Wall time of a tuning job, from planning to the stored bundle")
                         .Register(r)
                         .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600})),
        queue_wait_seconds(prometheus::BuildHistogram()
                               .Name("tir_queue_wait_seconds")
                               .Help("Time a work item waited before a worker leased it")
                               .Register(r)
                               .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.1, 0.5, 1, 5, 10, 60, 300})),
        measure_seconds(prometheus::BuildHistogram()
                            .Name("tir_measure_seconds")
                            .Help("Lease to report of one work item (compile and measure on a worker)")
                            .Register(r)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300})),
        compile_seconds(prometheus::BuildHistogram()
                            .Name("tir_compile_seconds")
                            .Help("Compile of a default candidate on the coordinator")
                            .Register(r)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5})),
        measured(prometheus::BuildCounter()
                     .Name("tir_candidates_measured_total")
                     .Help("Candidate measurements reported by workers")
                     .Register(r)
                     .Add({})),
        quarantines(prometheus::BuildCounter()
                        .Name("tir_worker_quarantines_total")
                        .Help("Workers quarantined after their candidates faulted or timed out on several kernels in a row")
                        .Register(r)
                        .Add({})),
        limits(prometheus::BuildCounter()
                   .Name("tir_limit_exceeded_total")
                   .Help("Requests refused with LIMIT_EXCEEDED, by limit")
                   .Register(r)),
        leases_expired(prometheus::BuildCounter()
                           .Name("tir_leases_expired_total")
                           .Help("Leases re-queued because they passed their deadline unreported")
                           .Register(r)
                           .Add({})),
        speedup(prometheus::BuildHistogram()
                    .Name("tir_tuned_speedup")
                    .Help("Default candidates' time over the tuned bundle's, per tuned bundle")
                    .Register(r)
                    .Add({}, prometheus::Histogram::BucketBoundaries{1, 1.05, 1.1, 1.25, 1.5, 2, 3, 5, 10})),
        store_kernels(prometheus::BuildGauge()
                          .Name("tir_store_kernels")
                          .Help("Kernel bundles in the store (RocksDB's estimate)")
                          .Register(r)
                          .Add({})),
        store_bytes(prometheus::BuildGauge()
                        .Name("tir_store_bytes")
                        .Help("Bytes of kernel bundles in the store (RocksDB's estimate)")
                        .Register(r)
                        .Add({})),
        shape_checks(prometheus::BuildCounter()
                         .Name("tir_shape_checks_total")
                         .Help("Dynamic bundles checked at a shape of their bucket asked for the first time, by result")
                         .Register(r)),
        shape_check_seconds(prometheus::BuildHistogram()
                                .Name("tir_shape_check_seconds")
                                .Help("Queue to result of a dynamic bundle's check at a new shape")
                                .Register(r)
                                .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30})) {}
  prometheus::Family<prometheus::Counter> &cache;
  prometheus::Family<prometheus::Gauge> &queue_depth;
  std::set<std::string> queue_arches;  // every arch the queue gauge has shown
  prometheus::Gauge &leases;
  prometheus::Family<prometheus::Gauge> &workers;
  prometheus::Histogram &tune_seconds, &queue_wait_seconds, &measure_seconds, &compile_seconds;
  prometheus::Counter &measured, &quarantines;
  prometheus::Family<prometheus::Counter> &limits;
  prometheus::Counter &leases_expired;
  prometheus::Histogram &speedup;
  prometheus::Gauge &store_kernels, &store_bytes;
  prometheus::Family<prometheus::Counter> &shape_checks;
  prometheus::Histogram &shape_check_seconds;
};

namespace {

std::string Sha256Hex(const std::string &data) {
  std::array<uint8_t, 32> d = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  static const char *kHex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

absl::Status NotFound(const std::string &what) { return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", what); }

// `limit` is the config key (camelCase, as in the config file).
absl::Status LimitExceeded(const std::string &limit, uint64_t value, const std::string &what) {
  return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                   absl::StrCat("limit ", limit, "=", value, " reached: ", what));
}

constexpr char kCachedPrefix[] = "operations/cached.";

// Nanosecond resolution (TimeUtil::GetCurrentTime gives whole seconds here).
google::protobuf::Timestamp NowTimestamp() { return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now())); }

bool SameTime(const google::protobuf::Timestamp &a, const google::protobuf::Timestamp &b) {
  return a.seconds() == b.seconds() && a.nanos() == b.nanos();
}

// A shape's text in an operation name ("0=8x512 1=7" <-> "0=8x512;1=7").
std::string ShapeInName(std::string text) {
  std::replace(text.begin(), text.end(), ' ', ';');
  return text;
}

// A shape from its canonical text ("0=8x512 1=7"); empty on a bad one.
Coordinator::Shape ParseShapeText(const std::string &text) {
  Coordinator::Shape shape;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(" ;"), absl::SkipEmpty())) {
    absl::StatusOr<tir::v1::ShapeHint> h = reference::ParseShapeHint(part);
    if (!h.ok()) return {};
    shape.hints.push_back(*std::move(h));
  }
  shape.text = reference::FormatShapes(shape.hints);
  return shape;
}

// An operation record: "<key>" or "<key>\n<shape>".
std::pair<std::string, Coordinator::Shape> SplitOpRecord(const std::string &value) {
  const size_t nl = value.find('\n');
  if (nl == std::string::npos) return {value, {}};
  return {value.substr(0, nl), ParseShapeText(value.substr(nl + 1))};
}

std::string KeyFromName(const std::string &name) {
  return absl::StartsWith(name, "kernels/") ? name.substr(8) : name;
}

// A bundle's identity and signature; kernels and tuning figures follow.
tir::v1::KernelBundle NewBundle(const tir::v1::KernelBundle &signature, const std::string &key,
                                const std::string &fingerprint, const std::string &arch, const std::string &policy,
                                bool tuned) {
  tir::v1::KernelBundle b = signature;
  b.set_key(key);
  b.set_name("kernels/" + key);
  b.set_graph_fingerprint(fingerprint);
  b.set_arch(arch);
  b.mutable_tuning()->set_tuned(tuned);
  b.mutable_tuning()->set_policy(policy);
  b.mutable_provenance()->set_arch(arch);
  b.mutable_provenance()->set_tir_version(kTirVersion);
  b.mutable_provenance()->set_codegen_version(kCodegenVersion);
  return b;
}

// What a kernel entry says about launching candidate `position` of `w`.
void DescribeEntry(tir::v1::KernelEntry *e, size_t partition, const tuning::KernelWork &w, int position) {
  const tir::v1::CandidateWork &cw = w.item.candidates(position);
  e->set_partition(static_cast<uint32_t>(partition));
  e->set_kind(w.kind);
  e->set_entry_symbol(cw.entry_symbol());
  *e->mutable_launch() = cw.launch();
  *e->mutable_arguments() = cw.arguments();
  for (int64_t d : w.domain) e->add_iteration_domain(d);
  *e->mutable_candidate() = cw.candidate();
  e->set_source(cw.source());
  e->set_kernel_mlir(w.item.kernel_mlir());
  *e->mutable_kernel_inputs() = {w.input_refs.begin(), w.input_refs.end()};
  *e->mutable_kernel_outputs() = {w.output_refs.begin(), w.output_refs.end()};
}

}  // namespace

std::string TuningPolicy(const TunerConfig &c) {
  return absl::StrFormat("halving-v3:w%d:f%g:r%d:b%g", c.width, c.max_space_fraction, c.min_runs, c.budget_seconds);
}

Coordinator::Coordinator(CoordinatorOptions options, std::shared_ptr<store::KernelStore> store,
                         std::shared_ptr<prometheus::Registry> registry)
    : options_(std::move(options)),
      store_(std::move(store)),
      registry_(registry ? registry : std::make_shared<prometheus::Registry>()),
      metrics_(std::make_unique<Metrics>(*registry_)),
      compile_cache_(options_.work_dir + "/nvrtc"),
      bundle_key_id_(options_.bundle_key.empty() ? "" : BundleKeyId(options_.bundle_key)),
      workers_(WorkerRegistry::Options{options_.quarantine_after, options_.quarantine_probe}),
      ops_(options_.limits.max_operations),
      planner_(options_.planning_threads > 0 ? options_.planning_threads
                                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
               options_.limits.max_planning_queue) {
  // Every label value exists from the start, so rates and alerts see zeros.
  metrics_->cache.Add({{"result", "hit"}});
  metrics_->cache.Add({{"result", "miss"}});
  for (const char *limit : {"maxOpsPerGraph", "maxJobs", "maxJobsPerClient", "maxQueueItems", "maxOperations"}) {
    metrics_->limits.Add({{"limit", limit}});
  }
  for (const char *result : {"passed", "wrong", "failed"}) metrics_->shape_checks.Add({{"result", result}});
  absl::StatusOr<reference::BucketPolicy> policy = reference::BucketPolicy::Parse(options_.shape_buckets);
  if (policy.ok()) {
    bucket_policy_ = *policy;
  } else {
    std::fprintf(stderr, "tir-coordinator: %s; using pow2\n", std::string(policy.status().message()).c_str());
  }
}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Shutdown() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  if (reaper_.joinable()) reaper_.join();
  writer_.Flush();
}

void Coordinator::Touch() {
  std::map<std::string, int> byArch;
  for (const std::string &arch : metrics_->queue_arches) byArch[arch] = 0;
  for (const auto &[name, w] : workers_.all()) byArch[w.capabilities.arch()] += 0;
  for (const auto &[arch, n] : lq_.QueuedByArch()) byArch[arch] += n;
  for (const auto &[arch, n] : byArch) {
    metrics_->queue_arches.insert(arch);
    metrics_->queue_depth.Add({{"arch", arch}}).Set(n);
  }
  metrics_->leases.Set(static_cast<double>(lq_.leased()));
  changed_.SignalAll();
}

void Coordinator::Refit() {
  absl::StatusOr<std::vector<planning::TrialPoint>> points = tuning::LoadTrialPoints(*store_);
  if (!points.ok()) return;  // the model stays as it was
  auto fit = std::make_shared<const planning::Calibration>(planning::Calibration::Fit(*std::move(points)));
  absl::MutexLock l(&calibration_mu_);
  calibration_ = std::move(fit);
}

absl::Status Coordinator::Start() {
  Refit();
  // Resume unfinished jobs: each persisted request is planned again and its
  // stored rounds are replayed into the tuners, so tuning goes on where it
  // stopped.
  std::vector<tir::v1::CompileRequest> pending;
  TIR_RETURN_IF_ERROR(store_->Scan(store::Family::kJobs, "job/", [&](absl::string_view, absl::string_view value) {
    tir::v1::CompileRequest r;
    if (r.ParseFromString(std::string(value))) pending.push_back(r);
    return true;
  }));
  for (tir::v1::CompileRequest &r : pending) {
    r.clear_request_id();
    r.mutable_options()->set_mode(tir::v1::COMPILE_MODE_WAIT);
    absl::StatusOr<tir::v1::Operation> op = CompileInternal(r, true, "");
    if (!op.ok()) IgnoreError(op.status(), "a persisted job no longer compiles; dropping it");
  }
  // Operations from before the restart wait for their resumed jobs under
  // their own names (the others answer from the store: RestoredOperation).
  std::vector<std::pair<std::string, std::string>> persisted;
  TIR_RETURN_IF_ERROR(store_->Scan(store::Family::kJobs, "op/", [&](absl::string_view k, absl::string_view value) {
    persisted.emplace_back(std::string(k.substr(3)), std::string(value));
    return true;
  }));
  {
    absl::MutexLock l(&mu_);
    for (const auto &[name, value] : persisted) {
      const auto [key, shape] = SplitOpRecord(value);
      auto job = jobs_.find(key);
      if (job == jobs_.end() || ops_.Contains(name)) continue;
      ops_.Restore(name, job->second.arch, key);
      ops_.Find(name)->job = key;
      job->second.operations.push_back(name);
      if (!shape.text.empty()) job->second.op_shapes[name] = shape;
      UpdateProgress(key);
    }
  }
  reaper_ = std::thread([this] { Reap(); });
  resumed_.Notify();
  return absl::OkStatus();
}

absl::StatusOr<Coordinator::Parsed> Coordinator::KeyOf(const tir::v1::GraphSource &source,
                                                       const tir::v1::CompileOptions &options, const std::string &arch,
                                                       std::vector<tuning::KernelWork> *plan) {
  // The same request bytes always give the same key: a hash of them skips
  // parsing on the hot (cache-hit) path.
  TIR_RETURN_IF_ERROR(planning::CheckPrecision(options.precision()));
  // "ieee" is the default spelled out: one key for both.
  const std::string precision = options.precision() == "tf32" ? "tf32" : "";
  const std::string raw = RawKey(source, options, arch);
  if (plan == nullptr) {
    absl::MutexLock l(&parsed_mu_);
    auto it = parsed_.find(raw);
    if (it != parsed_.end()) return *it->second;
  }
  auto context = makeTirContext();
  TIR_ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphSource(source, context.get()));
  uint64_t ops = 0;
  loaded.graph.getBody().walk([&](mlir::Operation *) { ++ops; });
  if (ops > options_.limits.max_ops_per_graph) {
    metrics_->limits.Add({{"limit", "maxOpsPerGraph"}}).Increment();
    return LimitExceeded("maxOpsPerGraph", options_.limits.max_ops_per_graph,
                         absl::StrCat("the graph has ", ops, " operations"));
  }
  // Candidates are ranked for the device the arch's workers have (an H200
  // is an H100 with 4.8 TB/s), else the arch's representative part. Only
  // planning ranks: keying alone never takes mu_.
  std::string device;
  if (plan != nullptr) {
    absl::MutexLock l(&mu_);
    device = workers_.DeviceOf(arch);
  }
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupDevice(arch, device));
  Parsed p;
  // Dynamic dims: the shape asked, its bucket and the shape tuned at.
  const std::vector<reference::DynamicDim> dims = reference::DynamicDimsOf(loaded.graph);
  bool dynamicValues = !dims.empty();
  loaded.graph.walk([&](mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes()) {
      if (auto r = t.dyn_cast<mlir::RankedTensorType>(); r && !r.hasStaticShape()) dynamicValues = true;
    }
  });
  std::string bucketKey;
  if (!dynamicValues) {
    if (!options.shape_hints().empty()) {
      p.notes.push_back("shape hints ignored: the graph has no dynamic dims");
    }
  } else {
    TIR_ASSIGN_OR_RETURN(reference::BoundShapes asked, reference::BindShapes(loaded.graph, dims, options.shape_hints()));
    const std::vector<reference::DimRange> bucket = reference::BucketOf(dims, asked.sizes, bucket_policy_);
    // Workers verify at these sizes: the reference must fit in memory there.
    TIR_RETURN_IF_ERROR(reference::CheckVerificationFitsAt(loaded.graph, asked.args));
    reference::BoundShapes tuned = reference::Representative(loaded.graph, dims, bucket, asked);
    if (!reference::CheckVerificationFitsAt(loaded.graph, tuned.args).ok()) tuned = asked;
    p.dynamic = true;
    p.shape.hints = reference::AsHints(loaded.graph, asked.args);
    p.shape.text = reference::FormatShapes(p.shape.hints);
    p.tuned_args = tuned.args;
    p.bucket_text = reference::FormatBucket(dims, bucket);
    tir::v1::KernelBundle &sig = p.signature;
    sig.set_bucket_policy(bucket_policy_.Name());
    *sig.mutable_buckets() = reference::BucketProtos(dims, bucket);
    reference::ArgShapes top = asked.args;
    for (size_t i = 0; i < dims.size(); ++i) top[dims[i].input][dims[i].index ? 0 : dims[i].dim] = bucket[i].upper;
    for (tir::v1::ShapeHint &h : reference::AsHints(loaded.graph, top)) *sig.add_shape_bucket() = std::move(h);
    for (tir::v1::ShapeHint &h : reference::AsHints(loaded.graph, tuned.args)) *sig.add_tuned_shape() = std::move(h);
    // The key holds the bucket (every shape of it shares the bundle).
    bucketKey = absl::StrCat("\nshapes=", bucket_policy_.Name(), ":", p.bucket_text.empty() ? "-" : p.bucket_text);
  }
  p.fingerprint = FingerprintGraph(loaded.graph);
  p.graph_name = loaded.graph.getSymName().str();
  TunerConfig config = options_.tuner;
  if (options.budget().max_candidates_per_kernel() > 0) config.width = options.budget().max_candidates_per_kernel();
  p.policy = TuningPolicy(config);
  p.key = Sha256Hex(absl::StrCat("tir-key-v1\n", p.fingerprint, "\n", arch, "\n", kCodegenVersion, "\n",
                                 info.is_gpu ? nvrtc::Version() : "host", "\n", p.policy,
                                 precision.empty() ? "" : "\nprecision=" + precision, bucketKey));
  if (plan != nullptr) {
    tir::v1::MeasurementPolicy policy;
    std::shared_ptr<const planning::Calibration> calibration;
    {
      absl::MutexLock l(&calibration_mu_);
      calibration = calibration_;
    }
    planning::AnalyticCostModel analytic;
    std::unique_ptr<planning::CalibratedCostModel> calibrated;
    if (calibration && !calibration->empty()) {
      calibrated = std::make_unique<planning::CalibratedCostModel>(analytic, *calibration);
    }
    TIR_ASSIGN_OR_RETURN(*plan, tuning::BuildWorkItems(loaded.graph, info, config.width, policy, &p.signature,
                                                       calibrated ? static_cast<const planning::CostModel *>(calibrated.get())
                                                                  : &analytic,
                                                       config.max_space_fraction,
                                                       planning::PlanOptions{precision, p.dynamic ? &p.tuned_args : nullptr},
                                                       p.dynamic ? &p.tuned_args : nullptr));
  }
  auto cached = std::make_shared<Parsed>(p);
  cached->signature.Clear();  // the hot path needs only the key and the shape
  absl::MutexLock l(&parsed_mu_);
  if (parsed_.size() >= 100000) parsed_.clear();  // bounded; it refills from traffic
  parsed_[raw] = std::move(cached);
  return p;
}

std::string Coordinator::RawKey(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                                const std::string &arch) {
  const std::string precision = options.precision() == "tf32" ? "tf32" : "";
  std::string hints;
  for (const tir::v1::ShapeHint &h : options.shape_hints()) absl::StrAppend(&hints, h.input(), "=", absl::StrJoin(h.shape(), "x"), ";");
  return Sha256Hex(absl::StrCat(source.SerializeAsString(), "\n", arch, "\n", options.budget().max_candidates_per_kernel(),
                                "\n", precision, "\n", hints));
}

std::shared_ptr<const Coordinator::Parsed> Coordinator::Known(const tir::v1::GraphSource &source,
                                                               const tir::v1::CompileOptions &options,
                                                               const std::string &arch) {
  if (!planning::CheckPrecision(options.precision()).ok()) return nullptr;
  const std::string raw = RawKey(source, options, arch);
  absl::MutexLock l(&parsed_mu_);
  auto it = parsed_.find(raw);
  if (it == parsed_.end()) return nullptr;
  return it->second;
}

absl::StatusOr<std::optional<tir::v1::Operation>> Coordinator::CompileIfCached(const tir::v1::CompileRequest &request) {
  const std::string arch = request.options().target_arch();
  if (arch.empty() || request.options().force_retune() || !target::LookupArch(arch).ok()) return std::nullopt;
  std::shared_ptr<const Parsed> parsed = Known(request.graph(), request.options(), arch);
  if (!parsed) return std::nullopt;
  tir::v1::KernelBundle unchecked;
  absl::StatusOr<std::optional<tir::v1::Operation>> hit = CacheHit(*parsed, &unchecked);
  if (!hit.ok() || !*hit) return std::nullopt;  // Compile answers (and counts) a miss, a check or an error
  ++requests_;
  return hit;
}

absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> Coordinator::LookupIfKnown(
    const tir::v1::LookupKernelRequest &request) {
  const std::string arch = request.options().target_arch();
  if (!target::LookupArch(arch).ok()) return std::nullopt;
  std::shared_ptr<const Parsed> parsed = Known(request.graph(), request.options(), arch);
  if (!parsed) return std::nullopt;
  return LookupByKey(*parsed);
}

absl::StatusOr<std::string> Coordinator::NewOperation(const std::string &arch, const std::string &key) {
  absl::StatusOr<std::string> name = ops_.New(arch, key);
  if (!name.ok()) metrics_->limits.Add({{"limit", "maxOperations"}}).Increment();
  return name;
}

void Coordinator::PersistOperation(const std::string &name, const std::string &key, const std::string &shape) {
  IgnoreError(store_->Put(store::Family::kJobs, "op/" + name, shape.empty() ? key : key + "\n" + shape, true),
              "an operation not persisted answers only until the coordinator restarts");
}

absl::StatusOr<tir::v1::Operation> Coordinator::RestoredOperation(const std::string &name) {
  // The server answers while Start() resumes the stored jobs: an operation
  // not in memory yet may be one of theirs, so wait for the resume first.
  if (!resumed_.HasBeenNotified()) {
    resumed_.WaitForNotificationWithTimeout(absl::Minutes(2));
    absl::MutexLock l(&mu_);
    if (const OperationTable::Entry *e = ops_.Find(name)) return e->op;
  }
  absl::StatusOr<std::string> value = store_->Get(store::Family::kJobs, "op/" + name);
  if (absl::IsNotFound(value.status())) return NotFound("no operation " + name);
  TIR_RETURN_IF_ERROR(value.status());
  const auto [key, shape] = SplitOpRecord(*value);
  absl::StatusOr<tir::v1::KernelBundle> b = store_->GetKernel(key);
  if (absl::IsNotFound(b.status())) {
    return NotFound(absl::StrCat("operation ", name, " (key ", key,
                                 ") ended before the coordinator restarted and no bundle is stored for it; compile again"));
  }
  TIR_RETURN_IF_ERROR(b.status());
  if (!shape.text.empty()) {
    // A dynamic graph's operation: the bundle sized for its shape, once
    // verified there; else the check starts again under the same name.
    absl::StatusOr<std::optional<tir::v1::KernelBundle>> at = ServedAtShape(*b, shape);
    if (!at.ok()) return at.status();
    if (!*at) {
      {
        absl::MutexLock l(&mu_);
        if (!ops_.Contains(name)) ops_.Restore(name, b->arch(), key);
      }
      CheckShape(*b, shape, {name}, 0);
      absl::MutexLock l(&mu_);
      if (const OperationTable::Entry *e = ops_.Find(name)) return e->op;
      return NotFound("no operation " + name);
    }
    *b = **std::move(at);
  }
  Served(*b);
  tir::v1::Operation op = CachedOperation(*std::move(b));
  op.set_name(name);
  op.mutable_metadata()->set_cache_hit(false);
  return op;
}

void Coordinator::FinishOperation(const std::string &name, const absl::StatusOr<tir::v1::KernelBundle> &result) {
  ops_.Finish(name, result);
}

bool Coordinator::HasLiveWorker(const std::string &arch) const { return workers_.HasHealthy(arch); }

absl::StatusOr<tir::v1::Operation> Coordinator::Compile(const tir::v1::CompileRequest &request, const std::string &client) {
  return CompileInternal(request, false, client);
}

absl::Status Coordinator::CheckJobLimits(const std::string &client, size_t kernels) const {
  const Limits &lim = options_.limits;
  if (jobs_.size() >= lim.max_jobs) {
    metrics_->limits.Add({{"limit", "maxJobs"}}).Increment();
    return LimitExceeded("maxJobs", lim.max_jobs, absl::StrCat(jobs_.size(), " tuning jobs are in flight"));
  }
  size_t mine = 0;
  for (const auto &[key, job] : jobs_) mine += job.client == client;
  if (mine >= lim.max_jobs_per_client) {
    metrics_->limits.Add({{"limit", "maxJobsPerClient"}}).Increment();
    return LimitExceeded("maxJobsPerClient", lim.max_jobs_per_client,
                         absl::StrCat("client ", client.empty() ? "(unnamed)" : client, " has ", mine,
                                      " tuning jobs in flight"));
  }
  if (lq_.queued() + kernels > lim.max_queue_items) {
    metrics_->limits.Add({{"limit", "maxQueueItems"}}).Increment();
    return LimitExceeded("maxQueueItems", lim.max_queue_items,
                         absl::StrCat(lq_.queued(), " work items are queued and this job adds ", kernels));
  }
  return absl::OkStatus();
}

void Coordinator::Sign(tir::v1::KernelBundle &bundle) const {
  if (!options_.bundle_key.empty()) SignBundle(bundle, options_.bundle_key);
}

void Coordinator::Served(tir::v1::KernelBundle &bundle) const {
  // Bundles are signed when stored; one from before the key (or another
  // key) is signed as it is served.
  if (!options_.bundle_key.empty() && bundle.signature().key_id() != bundle_key_id_) Sign(bundle);
}

absl::StatusOr<tir::v1::Operation> Coordinator::CompileInternal(const tir::v1::CompileRequest &request, bool resume,
                                                                const std::string &client) {
  const std::string arch = request.options().target_arch();
  if (arch.empty()) {
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH", "options.target_arch is required (e.g. sm_90a, host)");
  }
  TIR_RETURN_IF_ERROR(target::LookupArch(arch).status());
  ++requests_;
  TIR_ASSIGN_OR_RETURN(Parsed parsed, KeyOf(request.graph(), request.options(), arch, nullptr));
  // 2. Cache (before anything that takes mu_: a hit never waits behind the
  // job table; a retried request that has a bundle by now gets it). A
  // dynamic graph's bundle not verified at the shape yet is `unchecked`.
  tir::v1::KernelBundle unchecked;
  if (!request.options().force_retune()) {
    TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::Operation> hit, CacheHit(parsed, &unchecked));
    if (hit) return *std::move(hit);
  }
  {
    absl::MutexLock l(&mu_);
    if (!request.request_id().empty()) {
      if (const OperationTable::Entry *e = ops_.ByRequest(request.request_id())) return e->op;
    }
  }
  metrics_->cache.Add({{"result", "miss"}}).Increment();
  ++misses_;
  const bool now = request.options().mode() == tir::v1::COMPILE_MODE_HEURISTIC_NOW;
  // 2b. The bucket's bundle exists but is not verified at this shape: its
  // kernels are checked there first (in heuristic-now mode the check runs
  // and the default answers now, as for a miss).
  const bool checkOnly = !unchecked.key().empty();
  if (checkOnly && resume) {
    // A job whose bundle was stored just before a restart: nothing is left
    // to tune. Its operations are checked at their shapes when asked for.
    writer_.Post([this, key = parsed.key] {
      IgnoreError(store_->Delete(store::Family::kJobs, "job/" + key), "a finished job's record stays");
    });
    return tir::v1::Operation();
  }
  if (checkOnly) {
    bool live;
    {
      absl::MutexLock l(&mu_);
      live = HasLiveWorker(arch);
    }
    if (now || !live) {
      // Checked once a worker is there; answered now as a miss would be
      // (the defaults, or NO_WORKER_FOR_ARCH).
      CheckShape(unchecked, parsed.shape, {}, request.options().priority());
    } else {
      std::string name;
      {
        absl::MutexLock l(&mu_);
        TIR_ASSIGN_OR_RETURN(name, NewOperation(arch, parsed.key));
        ops_.RememberRequest(request.request_id(), name);
        DescribeShape(ops_.Find(name)->op, parsed);
        ops_.Find(name)->op.mutable_metadata()->set_shape_checked(true);
      }
      PersistOperation(name, parsed.key, parsed.shape.text);
      CheckShape(unchecked, parsed.shape, {name}, request.options().priority());
      absl::MutexLock l(&mu_);
      if (const OperationTable::Entry *e = ops_.Find(name)) return e->op;
      return NotFound("operation " + name + " was dropped");
    }
  }
  // 3. An identical job in flight takes the request.
  {
    std::optional<tir::v1::Operation> joined;
    {
      absl::MutexLock l(&mu_);
      auto job = jobs_.find(parsed.key);
      if (job != jobs_.end() && !job->second.cancelled && !now && HasLiveWorker(arch)) {
        TIR_ASSIGN_OR_RETURN(const std::string name, NewOperation(arch, parsed.key));
        ops_.Find(name)->job = parsed.key;
        DescribeShape(ops_.Find(name)->op, parsed);
        job->second.operations.push_back(name);
        if (parsed.dynamic) job->second.op_shapes[name] = parsed.shape;
        job->second.priority = std::max(job->second.priority, request.options().priority());
        lq_.Reprioritize(parsed.key, job->second.priority);
        ops_.RememberRequest(request.request_id(), name);
        UpdateProgress(parsed.key);
        joined = ops_.Find(name)->op;
      }
    }
    if (joined) {
      // Durable before the client learns the name (outside mu_).
      PersistOperation(joined->name(), parsed.key, parsed.shape.text);
      return *joined;
    }
  }
  // 4. Plan, and for an answer now compile the defaults: on the planning
  // pool (bounded), outside mu_.
  bool answerNow;
  {
    absl::MutexLock l(&mu_);
    answerNow = !resume && (now || !HasLiveWorker(arch));
  }
  if (answerNow && !now && !options_.default_without_worker) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "NO_WORKER_FOR_ARCH",
                     absl::StrCat("no worker for ", arch, " is registered"));
  }
  std::vector<tuning::KernelWork> plan;
  absl::StatusOr<Parsed> planned = parsed;
  std::optional<absl::StatusOr<tir::v1::KernelBundle>> untuned;
  TIR_RETURN_IF_ERROR(planner_.Run([&] {
    planned = KeyOf(request.graph(), request.options(), arch, &plan);
    if (planned.ok() && answerNow) {
      untuned = DefaultBundle(planned->key, *planned, arch, plan);
      if (untuned->ok() && planned->dynamic) {
        // Sized for the shape asked; not verified there (nor anywhere: the
        // heuristic's default, as for a static graph).
        absl::StatusOr<tuning::BundleAtShape> sized = tuning::SizeBundle(**untuned, planned->shape.hints);
        if (sized.ok()) {
          tir::v1::ShapeVerification record;
          *record.mutable_shape() = {planned->shape.hints.begin(), planned->shape.hints.end()};
          untuned = ServedCopy(std::move(sized->bundle), record);
        } else {
          untuned = sized.status();
        }
      }
    }
  }));
  TIR_RETURN_IF_ERROR(planned.status());
  parsed = *std::move(planned);
  // A resumed job's stored rounds (read here, outside mu_).
  std::map<std::pair<int, int>, tir::v1::ReportResultRequest> stored;
  if (resume) {
    IgnoreError(store_->Scan(store::Family::kJobs, "round/" + parsed.key + "/",
                             [&](absl::string_view k, absl::string_view value) {
                               int kernel = -1, round = -1;
                               const std::string rest(k.substr(7 + parsed.key.size()));
                               tir::v1::ReportResultRequest r;
                               if (std::sscanf(rest.c_str(), "%d/%d", &kernel, &round) == 2 &&
                                   r.ParseFromString(std::string(value))) {
                                 stored[{kernel, round}] = std::move(r);
                               }
                               return true;
                             }),
                "without its stored rounds a resumed job tunes from round 0");
  }
  tir::v1::Operation answer;
  std::string jobRecord;  // the new job's request, to persist
  bool persistOp = false;
  {
    absl::MutexLock l(&mu_);
    auto job = jobs_.find(parsed.key);
    bool jobless = false;
    if (job == jobs_.end() || job->second.cancelled) {
      absl::Status fits = resume ? absl::OkStatus() : CheckJobLimits(client, plan.size());
      // Past a job limit an untuned answer still goes out, without a job
      // queued to tune it later; a request that waits for tuning is refused.
      if (!fits.ok() && !untuned) return fits;
      jobless = !fits.ok();
    }
    TIR_ASSIGN_OR_RETURN(const std::string name, NewOperation(arch, parsed.key));
    ops_.RememberRequest(request.request_id(), name);
    DescribeShape(ops_.Find(name)->op, parsed);
    if (jobless || checkOnly) {
      // Past a job limit, or a bundle that is only being checked at the shape.
      FinishOperation(name, *untuned);
      return ops_.Find(name)->op;
    }
    if (job == jobs_.end() || job->second.cancelled) {
      StartJob(parsed.key, request, parsed, std::move(plan), std::move(stored), client);
      job = jobs_.find(parsed.key);
      if (!resume) jobRecord = job->second.request.SerializeAsString();
    }
    if (untuned) {
      FinishOperation(name, *untuned);
    } else {
      ops_.Find(name)->job = parsed.key;
      job->second.operations.push_back(name);
      if (parsed.dynamic) job->second.op_shapes[name] = parsed.shape;
      persistOp = !resume;
    }
    UpdateProgress(parsed.key);
    Advance(parsed.key);
    answer = ops_.Find(name)->op;
  }
  // Durable before the client learns the name (outside mu_; the operation's
  // synced write makes the job's before it durable too). A job that ended
  // meanwhile and finds its record again is answered from the cache when it
  // resumes.
  if (!jobRecord.empty()) {
    IgnoreError(store_->Put(store::Family::kJobs, "job/" + parsed.key, jobRecord, !persistOp),
                "a job not persisted is not resumed after a restart");
  }
  if (persistOp) PersistOperation(answer.name(), parsed.key, parsed.shape.text);
  return answer;
}

void Coordinator::StartJob(const std::string &key, const tir::v1::CompileRequest &request, const Parsed &parsed,
                           std::vector<tuning::KernelWork> plan,
                           std::map<std::pair<int, int>, tir::v1::ReportResultRequest> stored_rounds,
                           const std::string &client) {
  tir::v1::CompileRequest persisted = request;
  persisted.clear_request_id();
  Job &job = jobs_[key];
  job = Job();
  job.key = key;
  job.request = persisted;
  job.fingerprint = parsed.fingerprint;
  job.graph_name = parsed.graph_name;
  job.policy = parsed.policy;
  job.signature = parsed.signature;
  job.arch = request.options().target_arch();
  job.priority = request.options().priority();
  job.client = client;
  job.start = absl::Now();
  job.stored_rounds = std::move(stored_rounds);
  TunerConfig config = options_.tuner;
  if (request.options().budget().max_candidates_per_kernel() > 0) {
    config.width = request.options().budget().max_candidates_per_kernel();
  }
  for (tuning::KernelWork &w : plan) {
    KernelJob k;
    k.tuner = std::make_unique<KernelTuner>(w.item.candidates_size(), w.default_position,
                                            static_cast<int>(w.space_size), config);
    k.work = std::move(w);
    job.kernels.push_back(std::move(k));
  }
}

void Coordinator::Advance(const std::string &key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second.storing) return;
  Job &job = it->second;
  bool allDone = true;
  for (size_t k = 0; k < job.kernels.size(); ++k) {
    KernelJob &kj = job.kernels[k];
    // The next round of the kernel (none while one is in flight); a round
    // stored before a restart is replayed instead of measured again.
    for (std::optional<KernelTuner::Round> round = kj.tuner->done() ? std::nullopt : kj.tuner->Next(); round;) {
      QueuedWork q;
      q.job = key;
      q.kernel = static_cast<int>(k);
      q.round = round->number;
      q.priority = job.priority;
      q.queued_at = absl::Now();
      q.item = kj.work.item;
      q.item.clear_candidates();
      for (int p : round->positions) {
        tir::v1::CandidateWork *c = q.item.add_candidates();
        *c = kj.work.item.candidates(p);
        // The run deadline follows what the candidate took before (the cost
        // model's prediction can be far off, on the host above all).
        c->set_expected_seconds(kj.tuner->Median(p));
      }
      *q.item.mutable_policy() = round->policy;
      auto stored = job.stored_rounds.find({static_cast<int>(k), round->number});
      if (stored != job.stored_rounds.end()) {
        tir::v1::ReportResultRequest r = std::move(stored->second);
        job.stored_rounds.erase(stored);
        bool same = r.results_size() == q.item.candidates_size();
        for (int i = 0; same && i < r.results_size(); ++i) {
          same = r.results(i).candidate_index() == q.item.candidates(i).candidate_index();
        }
        if (same) {
          RecordRound(q, {r.results().begin(), r.results().end()}, r.name(), true);
          round = kj.tuner->done() ? std::nullopt : kj.tuner->Next();
          continue;
        }
      }
      lq_.Push(std::move(q));
      break;
    }
    if (kj.tuner->done()) {
      if (!kj.tuner->outcome().ok()) {
        EndJob(key, Annotate(kj.tuner->outcome(), absl::StrCat("kernel ", k)));
        return;
      }
      continue;
    }
    allDone = false;
  }
  if (allDone) {
    // 5. Assemble, store, answer.
    tir::v1::KernelBundle b = NewBundle(job.signature, key, job.fingerprint, job.arch, job.policy, true);
    tir::v1::TuningSummary *t = b.mutable_tuning();
    bool defaultsMeasured = true;
    for (size_t k = 0; k < job.kernels.size(); ++k) {
      KernelJob &kj = job.kernels[k];
      const int w = kj.tuner->winner();
      tir::v1::KernelEntry *e = b.add_kernels();
      DescribeEntry(e, k, kj.work, w);
      const tir::v1::CandidateResult &r = kj.best[w];
      e->set_format(r.format());
      e->set_binary(kj.binaries[w]);
      // The round that chose the winner: its time there, and the default's
      // from the same round (the tuner's default wins a tie, so the tuned
      // time is never above the default's).
      *e->mutable_measurement() = kj.tuner->FinalMeasurement();
      *e->mutable_verification() = r.verification();
      *e->mutable_compile_info() = r.compile_info();
      t->set_candidates_total(t->candidates_total() + static_cast<uint32_t>(kj.work.space_size));
      t->set_candidates_measured(t->candidates_measured() + kj.tuner->measured());
      t->set_candidates_failed(t->candidates_failed() + kj.tuner->failed());
      t->set_best_seconds(t->best_seconds() + kj.tuner->FinalSeconds(w));
      const double d = kj.tuner->FinalSeconds(kj.tuner->default_position());
      if (d <= 0) defaultsMeasured = false;
      t->set_default_seconds(t->default_seconds() + d);
      if (k == 0) {
        tir::v1::Provenance *p = b.mutable_provenance();
        p->set_worker(kj.workers[w]);
        if (const WorkerEntry *wk = workers_.Find(kj.workers[w])) {
          p->set_device_name(wk->capabilities.device_name());
          p->set_driver_version(wk->capabilities.driver_version());
          p->set_nvrtc_version(wk->capabilities.nvrtc_version());
          p->set_host_compiler(wk->capabilities.host_compiler());
        }
        *p->mutable_measure_time() = TimeUtil::GetCurrentTime();
      }
    }
    if (!defaultsMeasured) t->set_default_seconds(0);
    *b.mutable_create_time() = NowTimestamp();
    Sign(b);
    if (t->default_seconds() > 0 && t->best_seconds() > 0) metrics_->speedup.Observe(t->default_seconds() / t->best_seconds());
    metrics_->tune_seconds.Observe(absl::ToDoubleSeconds(absl::Now() - job.start));
    // Stored (synced) by the writer, outside mu_; the job's operations are
    // answered once it is.
    job.storing = true;
    writer_.Post([this, key, b = std::move(b)] {
      const absl::Status stored = store_->PutKernel(b);
      // Shapes verified for the bundle it replaces (a retune) were for other kernels.
      if (stored.ok()) ForgetShapes(key);
      absl::MutexLock l(&mu_);
      if (stored.ok()) {
        EndJob(key, b);
      } else {
        EndJob(key, stored);
      }
    });
    return;
  }
  UpdateProgress(key);
  Touch();
}

void Coordinator::EndJob(const std::string &key, const absl::StatusOr<tir::v1::KernelBundle> &result) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  tir::v1::JobStatus done = JobStatusOf(it->second);
  done.set_state(result.ok() ? "done" : absl::IsCancelled(result.status()) ? "cancelled" : "failed");
  if (result.ok() && result->tuning().best_seconds() > 0 && result->tuning().default_seconds() > 0) {
    done.set_speedup(result->tuning().default_seconds() / result->tuning().best_seconds());
  }
  if (!result.ok()) done.set_error(absl::StrCat(ReasonOf(result.status()), ": ", result.status().message()));
  recent_.push_back(done);
  if (recent_.size() > 50) recent_.pop_front();
  // A dynamic graph's operations are answered at their shapes: sized (and
  // checked first where the shape is not the one tuned at), on the pool.
  std::map<std::string, std::pair<Shape, std::vector<std::string>>> byShape;
  for (const std::string &op : it->second.operations) {
    auto shape = it->second.op_shapes.find(op);
    if (!result.ok() || shape == it->second.op_shapes.end()) {
      FinishOperation(op, result);
      continue;
    }
    auto &group = byShape[shape->second.text];
    group.first = shape->second;
    group.second.push_back(op);
  }
  for (auto &[text, group] : byShape) {
    auto answer = [this, bundle = *result, shape = group.first, ops = group.second, priority = it->second.priority] {
      AnswerAtShape(bundle, shape, ops, priority);
    };
    // On the pool, else (the pool full) on the writer: outside mu_ either way.
    if (!planner_.Submit(answer, "maxPlanningQueue").ok()) writer_.Post(answer);
  }
  // Its queued items and leases are dropped: heartbeats tell their workers
  // to stop, and a late report is acknowledged as a duplicate.
  lq_.DropJob(key);
  writer_.Post([this, key] {
    IgnoreError(store_->Delete(store::Family::kJobs, "job/" + key),
                "a finished job's record stays until the next resume");
    std::vector<std::string> rounds;
    IgnoreError(store_->Scan(store::Family::kJobs, "round/" + key + "/",
                             [&](absl::string_view k, absl::string_view) {
                               rounds.emplace_back(k);
                               return true;
                             }),
                "a finished job's rounds stay until the next resume");
    for (const std::string &r : rounds) IgnoreError(store_->Delete(store::Family::kJobs, r), "a stale round record stays");
  });
  jobs_.erase(it);
  Touch();
}

void Coordinator::UpdateProgress(const std::string &key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  const tir::v1::JobStatus j = JobStatusOf(it->second);
  tir::v1::CompileProgress p;
  p.set_stage(j.state() == "tuning" ? tir::v1::STAGE_TUNING : tir::v1::STAGE_QUEUED);
  p.set_partitions(j.kernels());
  p.set_candidates_total(j.candidates_planned());
  p.set_candidates_measured(j.candidates_measured());
  p.set_candidates_failed(j.candidates_failed());
  for (const std::string &op : it->second.operations) ops_.SetProgress(op, p);
}

absl::StatusOr<tir::v1::KernelBundle> Coordinator::DefaultBundle(const std::string &key, const Parsed &parsed,
                                                                 const std::string &arch,
                                                                 const std::vector<tuning::KernelWork> &plan) {
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(arch));
  tir::v1::KernelBundle b = NewBundle(parsed.signature, key, parsed.fingerprint, arch, parsed.policy, false);
  for (size_t k = 0; k < plan.size(); ++k) {
    const tuning::KernelWork &w = plan[k];
    const int pos = w.default_position >= 0 ? w.default_position : 0;
    const tir::v1::CandidateWork &cw = w.item.candidates(pos);
    tir::v1::KernelEntry *e = b.add_kernels();
    DescribeEntry(e, k, w, pos);
    const absl::Time start = absl::Now();
    if (info.is_gpu) {
      nvrtc::CompileOptions o;
      o.arch = arch;
      o.headers = codegen::RuntimeHeaders();
      bool hit = false;
      TIR_ASSIGN_OR_RETURN(nvrtc::CompiledKernel c, compile_cache_.Compile(cw.source(), o, &hit));
      e->set_format(tir::v1::BINARY_FORMAT_CUBIN);
      e->set_binary(c.cubin);
      e->mutable_compile_info()->set_registers(std::max(0, c.registers));
      e->mutable_compile_info()->set_spill_bytes(c.spill_bytes);
      e->mutable_compile_info()->set_cache_hit(hit);
      b.mutable_provenance()->set_nvrtc_version(nvrtc::Version());
    } else {
      TIR_ASSIGN_OR_RETURN(std::string so, codegen::CompileHostObject(cw.source(), options_.work_dir + "/host"));
      std::ifstream in(so, std::ios::binary);
      e->set_format(tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
      e->set_binary(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    metrics_->compile_seconds.Observe(seconds);
    e->mutable_compile_info()->set_compile_seconds(seconds);
    b.mutable_tuning()->set_candidates_total(b.tuning().candidates_total() + static_cast<uint32_t>(w.space_size));
  }
  *b.mutable_create_time() = NowTimestamp();
  Sign(b);
  return b;
}

tir::v1::Operation Coordinator::CachedOperation(tir::v1::KernelBundle bundle) {
  tir::v1::Operation op;
  op.set_name(absl::StrCat(kCachedPrefix, bundle.key()));
  if (bundle.has_served_shape()) {
    const std::string shape =
        reference::FormatShapes({bundle.served_shape().shape().begin(), bundle.served_shape().shape().end()});
    op.set_name(absl::StrCat(kCachedPrefix, bundle.key(), "@", ShapeInName(shape)));
    op.mutable_metadata()->set_shape(shape);
    op.mutable_metadata()->set_shape_bucket(BucketText(bundle));
  }
  op.set_done(true);
  tir::v1::CompileMetadata *m = op.mutable_metadata();
  m->set_key(bundle.key());
  m->set_cache_hit(true);
  m->set_target_arch(bundle.arch());
  m->mutable_progress()->set_stage(tir::v1::STAGE_DONE);
  *m->mutable_create_time() = *m->mutable_end_time() = TimeUtil::GetCurrentTime();
  *op.mutable_response() = std::move(bundle);
  return op;
}

absl::StatusOr<tir::v1::Operation> Coordinator::GetOperation(const std::string &name) {
  if (absl::StartsWith(name, kCachedPrefix)) {
    // "operations/cached.<key>" or, for a dynamic graph, "...<key>@<shape>".
    const std::string rest = name.substr(std::strlen(kCachedPrefix));
    const size_t at = rest.find('@');
    absl::StatusOr<tir::v1::KernelBundle> b = store_->GetKernel(rest.substr(0, at));
    if (absl::IsNotFound(b.status())) return NotFound("no operation " + name);
    TIR_RETURN_IF_ERROR(b.status());
    if (at != std::string::npos) {
      const Shape shape = ParseShapeText(rest.substr(at + 1));
      if (shape.hints.empty()) return NotFound("no operation " + name);
      TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::KernelBundle> sized, ServedAtShape(*b, shape));
      if (!sized) return NotFound("no operation " + name + ": the bundle is not verified at that shape");
      *b = *std::move(sized);
    }
    Served(*b);
    return CachedOperation(*std::move(b));
  }
  {
    absl::MutexLock l(&mu_);
    if (const OperationTable::Entry *e = ops_.Find(name)) return e->op;
  }
  return RestoredOperation(name);
}

absl::StatusOr<tir::v1::Operation> Coordinator::WaitOperation(const std::string &name, absl::Duration timeout,
                                                              int64_t *version) {
  if (absl::StartsWith(name, kCachedPrefix)) return GetOperation(name);
  const absl::Time end = absl::Now() + timeout;
  bool known;
  {
    absl::MutexLock l(&mu_);
    known = ops_.Contains(name);
  }
  if (!known) return RestoredOperation(name);
  {
    absl::MutexLock l(&mu_);
    for (;;) {
      const OperationTable::Entry *e = ops_.Find(name);
      if (e == nullptr) break;  // dropped while waited on: it is done
      const bool changed = version != nullptr && *version >= 0 && e->version != *version;
      if (e->op.done() || changed || absl::Now() >= end || stopping_) {
        if (version != nullptr) *version = e->version;
        return e->op;
      }
      changed_.WaitWithDeadline(&mu_, end);
    }
  }
  return RestoredOperation(name);  // outside mu_: it reads the store (and may check a shape)
}

absl::StatusOr<tir::v1::Operation> Coordinator::CancelOperation(const std::string &name) {
  if (absl::StartsWith(name, kCachedPrefix)) return GetOperation(name);  // done already
  absl::MutexLock l(&mu_);
  OperationTable::Entry *entry = ops_.Find(name);
  if (entry == nullptr) return NotFound("no operation " + name);
  const std::string key = entry->job;
  FinishOperation(name, MakeError(absl::StatusCode::kCancelled, "CANCELLED", "cancelled by the client"));
  ForgetOperations({name});
  if (auto check = checks_.find(key); check != checks_.end()) {
    // A check goes on: its record serves the next request for the shape.
    auto &ops = check->second.operations;
    ops.erase(std::remove(ops.begin(), ops.end(), name), ops.end());
  }
  auto job = jobs_.find(key);
  if (job != jobs_.end()) {
    // The job stops once no operation waits for it.
    auto &ops = job->second.operations;
    ops.erase(std::remove(ops.begin(), ops.end(), name), ops.end());
    if (ops.empty()) {
      job->second.cancelled = true;
      EndJob(key, MakeError(absl::StatusCode::kCancelled, "CANCELLED", "cancelled by the client"));
    }
  }
  Touch();
  return ops_.Find(name)->op;
}

absl::StatusOr<tir::v1::LookupKernelResponse> Coordinator::LookupKernel(const tir::v1::LookupKernelRequest &request) {
  const std::string arch = request.options().target_arch();
  TIR_RETURN_IF_ERROR(target::LookupArch(arch).status());
  TIR_ASSIGN_OR_RETURN(Parsed parsed, KeyOf(request.graph(), request.options(), arch, nullptr));
  return LookupByKey(parsed);
}

absl::StatusOr<tir::v1::LookupKernelResponse> Coordinator::LookupByKey(const Parsed &parsed) {
  const std::string &key = parsed.key;
  absl::StatusOr<tir::v1::KernelBundle> hit = store_->GetKernel(key);
  if (!hit.ok() && !absl::IsNotFound(hit.status())) return hit.status();
  tir::v1::LookupKernelResponse out;
  out.set_key(key);
  if (hit.ok() && parsed.dynamic) {
    // A lookup starts no check: the bucket's bundle is found, served sized
    // only for a shape it is verified at.
    absl::StatusOr<std::optional<tir::v1::KernelBundle>> at = ServedAtShape(*hit, parsed.shape);
    if (at.ok() && *at) {
      out.set_shape_verified(true);
      shape_records_.NoteHit(key, **at);
      *hit = **std::move(at);
    } else if (!at.ok() && ReasonOf(at.status()) != "WRONG_AT_SHAPE") {
      return at.status();
    }
  }
  const bool served = hit.ok() && (!parsed.dynamic || out.shape_verified());
  metrics_->cache.Add({{"result", served ? "hit" : "miss"}}).Increment();
  ++requests_;
  ++(served ? hits_ : misses_);
  if (hit.ok()) {
    out.set_found(true);
    Served(*hit);
    *out.mutable_bundle() = *std::move(hit);
  }
  return out;
}

absl::StatusOr<std::optional<tir::v1::Operation>> Coordinator::CacheHit(const Parsed &parsed,
                                                                        tir::v1::KernelBundle *unchecked) {
  absl::StatusOr<tir::v1::KernelBundle> hit = store_->GetKernel(parsed.key);
  if (absl::IsNotFound(hit.status())) return std::nullopt;
  TIR_RETURN_IF_ERROR(hit.status());
  if (parsed.dynamic) {
    TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::KernelBundle> at, ServedAtShape(*hit, parsed.shape));
    if (!at) {
      if (unchecked != nullptr) *unchecked = *std::move(hit);
      return std::nullopt;
    }
    shape_records_.NoteHit(parsed.key, *at);
    *hit = *std::move(at);
  }
  metrics_->cache.Add({{"result", "hit"}}).Increment();
  ++hits_;
  Served(*hit);
  // Answered from the store; the operation is not kept (its name says where
  // to find it again).
  tir::v1::Operation op = CachedOperation(*std::move(hit));
  DescribeShape(op, parsed);
  return op;
}

void Coordinator::ForgetShapes(const std::string &key) {
  shape_records_.Forget(key);
  std::vector<std::string> records;
  IgnoreError(store_->Scan(store::Family::kJobs, absl::StrCat("shape/", key, "/"),
                           [&](absl::string_view k, absl::string_view) {
                             records.emplace_back(k);
                             return true;
                           }),
              "stale shape records stay in the store");
  for (const std::string &r : records) IgnoreError(store_->Delete(store::Family::kJobs, r), "a stale shape record stays");
}

void Coordinator::CheckShape(const tir::v1::KernelBundle &stored, const Shape &shape, std::vector<std::string> ops,
                             int priority) {
  // The id names the bundle: a retuned bundle's check is its own.
  const std::string id = absl::StrCat("check/", stored.key(), "/",
                                      TimeUtil::TimestampToNanoseconds(stored.create_time()), "/", shape.text);
  {
    absl::MutexLock l(&mu_);
    auto it = checks_.find(id);
    if (it != checks_.end()) {
      for (const std::string &op : ops) {
        if (OperationTable::Entry *e = ops_.Find(op)) e->job = id;
        it->second.operations.push_back(op);
      }
      lq_.Reprioritize(id, priority);
      UpdateCheckProgress(it->second);
      return;
    }
  }
  // Sized outside mu_ (it parses the kernel graphs).
  absl::StatusOr<tuning::BundleAtShape> sized = tuning::SizeBundle(stored, shape.hints);
  absl::MutexLock l(&mu_);
  if (!sized.ok()) {
    for (const std::string &op : ops) FinishOperation(op, sized.status());
    ForgetOperations(ops);
    Touch();
    return;
  }
  if (!checks_.count(id)) {
    // A check takes room as a job does: at most maxJobs checks in flight,
    // and its items in the queue's bound.
    const Limits &lim = options_.limits;
    absl::Status fits = absl::OkStatus();
    if (checks_.size() >= lim.max_jobs) {
      metrics_->limits.Add({{"limit", "maxJobs"}}).Increment();
      fits = LimitExceeded("maxJobs", lim.max_jobs, absl::StrCat(checks_.size(), " shape checks are in flight"));
    } else if (lq_.queued() + sized->checks.size() > lim.max_queue_items) {
      metrics_->limits.Add({{"limit", "maxQueueItems"}}).Increment();
      fits = LimitExceeded("maxQueueItems", lim.max_queue_items,
                           absl::StrCat(lq_.queued(), " work items are queued and this check adds ", sized->checks.size()));
    }
    if (!fits.ok()) {
      for (const std::string &op : ops) FinishOperation(op, fits);
      Touch();
      return;
    }
  }
  auto [it, fresh] = checks_.try_emplace(id);
  ShapeCheck &c = it->second;
  for (const std::string &op : ops) {
    if (OperationTable::Entry *e = ops_.Find(op)) e->job = id;
    c.operations.push_back(op);
  }
  if (fresh) {
    c.id = id;
    c.key = stored.key();
    c.shape = shape;
    c.sized = std::move(sized->bundle);
    c.results.resize(sized->checks.size());
    c.start = absl::Now();
    for (size_t k = 0; k < sized->checks.size(); ++k) {
      QueuedWork q;
      q.job = id;
      q.kernel = static_cast<int>(k);
      q.round = 0;
      q.priority = priority;
      q.queued_at = absl::Now();
      q.item = std::move(sized->checks[k]);
      lq_.Push(std::move(q));
    }
  }
  UpdateCheckProgress(c);
  if (c.results.empty()) CompleteCheck(it);  // no kernel to check
  Touch();
}

void Coordinator::AnswerAtShape(const tir::v1::KernelBundle &stored, const Shape &shape, std::vector<std::string> ops,
                                int priority) {
  absl::StatusOr<std::optional<tir::v1::KernelBundle>> at = ServedAtShape(stored, shape);
  if (at.ok() && !*at) {
    CheckShape(stored, shape, std::move(ops), priority);
    return;
  }
  absl::MutexLock l(&mu_);
  for (const std::string &op : ops) FinishOperation(op, at.ok() ? absl::StatusOr<tir::v1::KernelBundle>(**at) : at.status());
  Touch();
}

void Coordinator::UpdateCheckProgress(const ShapeCheck &c) {
  tir::v1::CompileProgress p;
  p.set_stage(tir::v1::STAGE_CHECKING_SHAPE);
  p.set_partitions(static_cast<uint32_t>(c.results.size()));
  p.set_candidates_total(static_cast<uint32_t>(c.results.size()));
  uint32_t measured = 0, failed = 0;
  for (const auto &r : c.results) {
    measured += r.has_value();
    failed += r.has_value() && r->verdict() != tir::v1::VERDICT_PASSED;
  }
  p.set_candidates_measured(measured);
  p.set_candidates_failed(failed);
  for (const std::string &op : c.operations) ops_.SetProgress(op, p);
}

void Coordinator::RecordCheck(const QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results,
                              const std::string &worker) {
  auto it = checks_.find(work.job);
  if (it == checks_.end() || work.kernel < 0 || work.kernel >= static_cast<int>(it->second.results.size())) return;
  ShapeCheck &c = it->second;
  tir::v1::Verification v;
  if (results.empty()) {
    v.set_verdict(tir::v1::VERDICT_FAULT);
    v.set_detail("the worker reported no result");
  } else {
    v = results[0].verification();
    if (v.verdict() == tir::v1::VERDICT_UNSPECIFIED) v.set_verdict(tir::v1::VERDICT_FAULT);
  }
  c.results[work.kernel] = v;
  if (!worker.empty()) c.worker = worker;
  UpdateCheckProgress(c);
  for (const auto &r : c.results) {
    if (!r) return;  // kernels still to check
  }
  CompleteCheck(it);
}

void Coordinator::CompleteCheck(std::map<std::string, ShapeCheck>::iterator it) {
  ShapeCheck &c = it->second;
  tir::v1::ShapeVerification record;
  *record.mutable_shape() = {c.shape.hints.begin(), c.shape.hints.end()};
  bool passed = true, wrong = false;
  for (const auto &r : c.results) {
    *record.add_kernels() = *r;
    passed &= r->verdict() == tir::v1::VERDICT_PASSED;
    wrong |= r->verdict() == tir::v1::VERDICT_WRONG;
  }
  record.set_passed(passed);
  record.set_worker(c.worker);
  *record.mutable_verify_time() = NowTimestamp();
  *record.mutable_bundle_create_time() = c.sized.create_time();
  metrics_->shape_checks.Add({{"result", passed ? "passed" : wrong ? "wrong" : "failed"}}).Increment();
  metrics_->shape_check_seconds.Observe(absl::ToDoubleSeconds(absl::Now() - c.start));
  shape_records_.NoteVerified(c.key, c.sized, passed);
  // Kept: a pass, and a wrong result (a refusal for good). A check whose
  // kernels only faulted, timed out or did not compile (after the attempts
  // a sick worker gets) fails its requests and is made again next time.
  if (passed || wrong) {
    shape_records_.Put(c.key, c.shape.text, record);
    writer_.Post([this, k = absl::StrCat("shape/", c.key, "/", c.shape.text), v = record.SerializeAsString()] {
      IgnoreError(store_->Put(store::Family::kJobs, k, v, false), "a shape record not stored is checked again");
    });
  }
  absl::StatusOr<tir::v1::KernelBundle> answer;
  if (passed) {
    tir::v1::KernelBundle copy = ServedCopy(c.sized, record);
    shape_records_.PutServed(c.key, c.shape.text, copy);
    answer = std::move(copy);
  } else {
    std::string why;
    for (int k = 0; k < record.kernels_size() && why.empty(); ++k) {
      if (record.kernels(k).verdict() != tir::v1::VERDICT_PASSED) {
        why = absl::StrCat("kernel ", k, ": ", tir::v1::Verdict_Name(record.kernels(k).verdict()), " ",
                           record.kernels(k).detail());
      }
    }
    answer = wrong ? MakeError(absl::StatusCode::kFailedPrecondition, "WRONG_AT_SHAPE",
                               absl::StrCat("bundle ", c.key, " failed its check at shape ", c.shape.text, " (", why,
                                            "); it is not served there. Compile with force_retune to tune again"))
                   : MakeError(absl::StatusCode::kUnavailable, "SHAPE_CHECK_FAILED",
                               absl::StrCat("the check of bundle ", c.key, " at shape ", c.shape.text,
                                            " did not complete (", why, "); asking again checks it again"));
  }
  for (const std::string &op : c.operations) FinishOperation(op, answer);
  if (!answer.ok()) ForgetOperations(c.operations);
  lq_.DropJob(c.id);
  checks_.erase(it);
  Touch();
}

void Coordinator::ForgetOperations(const std::vector<std::string> &ops) {
  // Ended for good (cancelled, refused): a restart does not bring them back.
  writer_.Post([this, ops] {
    for (const std::string &op : ops) IgnoreError(store_->Delete(store::Family::kJobs, "op/" + op), "a stale operation record stays");
  });
}

void Coordinator::DescribeShape(tir::v1::Operation &op, const Parsed &parsed) {
  tir::v1::CompileMetadata *m = op.mutable_metadata();
  for (const std::string &n : parsed.notes) m->add_notes(n);
  if (!parsed.dynamic) return;
  m->set_shape(parsed.shape.text);
  m->set_shape_bucket(parsed.bucket_text);
}

tir::v1::KernelBundle Coordinator::ServedCopy(tir::v1::KernelBundle sized,
                                              const tir::v1::ShapeVerification &record) const {
  *sized.mutable_served_shape() = record;
  Sign(sized);
  return sized;
}

absl::StatusOr<std::optional<tir::v1::KernelBundle>> Coordinator::ServedAtShape(const tir::v1::KernelBundle &stored,
                                                                                const Shape &shape) {
  const std::string &key = stored.key();
  if (std::optional<tir::v1::KernelBundle> copy = shape_records_.Served(key, shape.text)) {
    // A copy made for an older bundle under the key (retuned since) is stale.
    if (SameTime(copy->create_time(), stored.create_time())) return copy;
  }
  std::optional<tir::v1::ShapeVerification> record = shape_records_.Find(key, shape.text);
  if (!record) {
    absl::StatusOr<std::string> value = store_->Get(store::Family::kJobs, absl::StrCat("shape/", key, "/", shape.text));
    if (value.ok()) {
      tir::v1::ShapeVerification r;
      if (r.ParseFromString(*value)) {
        record = r;
        shape_records_.Put(key, shape.text, r);
      }
    } else if (!absl::IsNotFound(value.status())) {
      return value.status();
    }
  }
  // A record made for the bundle a retune replaced says nothing of this one.
  if (record && !SameTime(record->bundle_create_time(), stored.create_time())) record.reset();
  if (!record) {
    // The shape the bundle was tuned at is verified by its tuning.
    bool tunedHere = stored.tuned_shape_size() == static_cast<int>(shape.hints.size());
    for (int i = 0; tunedHere && i < stored.tuned_shape_size(); ++i) {
      tunedHere = stored.tuned_shape(i).SerializeAsString() == shape.hints[i].SerializeAsString();
    }
    if (!tunedHere || !stored.tuning().tuned()) return std::nullopt;
    tir::v1::ShapeVerification r;
    *r.mutable_shape() = {shape.hints.begin(), shape.hints.end()};
    bool passed = true;
    for (const tir::v1::KernelEntry &k : stored.kernels()) {
      *r.add_kernels() = k.verification();
      passed &= k.verification().verdict() == tir::v1::VERDICT_PASSED;
    }
    r.set_passed(passed);
    *r.mutable_verify_time() = stored.create_time();
    *r.mutable_bundle_create_time() = stored.create_time();
    record = r;
    shape_records_.Put(key, shape.text, r);
  }
  if (!record->passed()) {
    std::string why;
    for (int k = 0; k < record->kernels_size(); ++k) {
      if (record->kernels(k).verdict() != tir::v1::VERDICT_PASSED) {
        why = absl::StrCat("kernel ", k, ": ", record->kernels(k).detail());
        break;
      }
    }
    return MakeError(absl::StatusCode::kFailedPrecondition, "WRONG_AT_SHAPE",
                     absl::StrCat("bundle ", key, " failed its check at shape ", shape.text, " (", why,
                                  "); it is not served there. Compile with force_retune to tune again"));
  }
  TIR_ASSIGN_OR_RETURN(tuning::BundleAtShape sized, tuning::SizeBundle(stored, shape.hints));
  tir::v1::KernelBundle copy = ServedCopy(std::move(sized.bundle), *record);
  shape_records_.PutServed(key, shape.text, copy);
  return copy;
}

absl::StatusOr<tir::v1::KernelBundle> Coordinator::GetKernel(const std::string &name, bool metadata_only) {
  TIR_ASSIGN_OR_RETURN(tir::v1::KernelBundle b, store_->GetKernel(KeyFromName(name)));
  if (metadata_only) {
    for (auto &k : *b.mutable_kernels()) {
      k.clear_binary();
      k.clear_source();
    }
    Sign(b);  // what is served is signed
  } else {
    Served(b);
  }
  return b;
}

absl::StatusOr<tir::v1::ListKernelsResponse> Coordinator::ListKernels(const tir::v1::ListKernelsRequest &request) {
  const uint32_t size = request.page_size() == 0 ? 100 : std::min(request.page_size(), 1000u);
  TIR_ASSIGN_OR_RETURN(store::KernelPage page, store_->ListKernels(size, request.page_token(), request.arch()));
  tir::v1::ListKernelsResponse out;
  for (auto &k : page.kernels) {
    Sign(k);
    *out.add_kernels() = std::move(k);
  }
  out.set_next_page_token(page.next_page_token);
  return out;
}

absl::StatusOr<tir::v1::DeleteKernelResponse> Coordinator::DeleteKernel(const std::string &name) {
  TIR_ASSIGN_OR_RETURN(bool deleted, store_->DeleteKernel(KeyFromName(name)));
  ForgetShapes(KeyFromName(name));
  tir::v1::DeleteKernelResponse out;
  out.set_deleted(deleted);
  return out;
}

tir::v1::ListWorkersResponse Coordinator::ListWorkers(const std::string &arch) {
  absl::MutexLock l(&mu_);
  tir::v1::ListWorkersResponse out;
  for (const auto &[name, w] : workers_.all()) {
    if (!arch.empty() && w.capabilities.arch() != arch) continue;
    tir::v1::WorkerInfo *i = out.add_workers();
    i->set_name(name);
    i->set_backend(w.capabilities.backend());
    i->set_arch(w.capabilities.arch());
    i->set_device_name(w.capabilities.device_name());
    i->set_state(w.shown());
    i->set_active_leases(static_cast<uint32_t>(lq_.HeldBy(name).size()));
    i->set_candidates_measured(w.measured);
    *i->mutable_last_heartbeat() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(w.last_heartbeat));
  }
  return out;
}

absl::StatusOr<tir::v1::RegisterWorkerResponse> Coordinator::RegisterWorker(const tir::v1::RegisterWorkerRequest &request) {
  const tir::v1::WorkerCapabilities &caps = request.capabilities();
  if (caps.backend() != "cuda" && caps.backend() != "host") {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", "backend must be cuda or host");
  }
  TIR_RETURN_IF_ERROR(target::LookupArch(caps.arch()).status());
  absl::MutexLock l(&mu_);
  const std::string name = workers_.Register(request.name(), caps, absl::Now());
  tir::v1::RegisterWorkerResponse out;
  out.set_name(name);
  *out.mutable_heartbeat_interval() = TimeUtil::MillisecondsToDuration(absl::ToInt64Milliseconds(options_.heartbeat_interval));
  *out.mutable_lost_after() = TimeUtil::MillisecondsToDuration(absl::ToInt64Milliseconds(options_.lost_after));
  Touch();
  return out;
}

absl::StatusOr<tir::v1::HeartbeatResponse> Coordinator::Heartbeat(const tir::v1::HeartbeatRequest &request) {
  absl::MutexLock l(&mu_);
  tir::v1::HeartbeatResponse out;
  if (!workers_.Heartbeat(request.name(), request.state(), request.candidates_measured(), absl::Now())) {
    out.set_reregister(true);
    return out;
  }
  for (const std::string &id : request.lease_ids()) {
    if (!lq_.Holds(id, request.name())) out.add_cancelled_lease_ids(id);
  }
  return out;
}

absl::StatusOr<tir::v1::LeaseWorkResponse> Coordinator::LeaseWork(const tir::v1::LeaseWorkRequest &request,
                                                                  absl::Time deadline) {
  const absl::Duration wait = absl::Seconds(request.wait().seconds()) + absl::Nanoseconds(request.wait().nanos());
  const absl::Time end = std::min(deadline, absl::Now() + std::min(wait, absl::Seconds(30)));
  absl::MutexLock l(&mu_);
  tir::v1::LeaseWorkResponse out;
  for (;;) {
    WorkerEntry *w = workers_.FindLive(request.name());
    if (w == nullptr) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "UNKNOWN_WORKER", "register again: " + request.name());
    }
    w->last_heartbeat = absl::Now();
    const std::string arch = w->capabilities.arch();
    // A quarantined worker gets one probe item per probe interval.
    const bool probe = w->quarantined;
    const uint32_t max = workers_.Allowance(*w, std::max(1u, request.max_items()), absl::Now());
    while (static_cast<uint32_t>(out.items_size()) < max) {
      Lease *lease = lq_.LeaseNext(arch, request.name(), absl::Now() + options_.lease_timeout);
      if (lease == nullptr) break;
      metrics_->queue_wait_seconds.Observe(absl::ToDoubleSeconds(absl::Now() - lease->work.queued_at));
      lease->work.queued_at = absl::Now();
      *out.add_items() = lease->work.item;
      UpdateProgress(lease->work.job);
      workers_.Leased(*w, absl::Now());
    }
    if (out.items_size() > 0 || absl::Now() >= end || stopping_) break;
    changed_.WaitWithDeadline(&mu_, probe ? std::min(end, w->next_probe) : end);
  }
  Touch();
  return out;
}

void Coordinator::RecordRound(QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results,
                              const std::string &worker, bool replayed) {
  auto job = jobs_.find(work.job);
  if (job == jobs_.end() || work.kernel >= static_cast<int>(job->second.kernels.size())) return;
  KernelJob &kj = job->second.kernels[work.kernel];
  // Map the item's candidates back to positions in the kernel's list.
  std::vector<int> positions;
  for (const tir::v1::CandidateWork &c : work.item.candidates()) {
    int pos = -1;
    for (int p = 0; p < kj.work.item.candidates_size(); ++p) {
      if (kj.work.item.candidates(p).candidate_index() == c.candidate_index()) pos = p;
    }
    positions.push_back(pos);
  }
  if (!replayed) {
    // The round as reported (binaries of passing candidates included), so a
    // restarted coordinator replays it rather than measuring it again.
    tir::v1::ReportResultRequest round;
    round.set_name(worker);
    round.set_lease_id(work.item.lease_id());
    for (const tir::v1::CandidateResult &r : results) *round.add_results() = r;
    writer_.Post([this, k = absl::StrFormat("round/%s/%d/%d", work.job, work.kernel, work.round),
                  v = round.SerializeAsString()] {
      IgnoreError(store_->Put(store::Family::kJobs, k, v, false), "a round not stored is measured again after a restart");
    });
  }
  for (size_t i = 0; i < results.size() && i < positions.size(); ++i) {
    const tir::v1::CandidateResult &r = results[i];
    if (!replayed) {
      metrics_->measured.Increment();
      ++measured_total_;
    }
    tir::v1::CandidateResult trial = r;
    trial.clear_binary();
    if (positions[i] >= 0) {
      const tir::v1::CandidateWork &cw = kj.work.item.candidates(positions[i]);
      trial.set_source_hash(cw.source_hash());
      *trial.mutable_merged_candidate_indices() = cw.merged_candidate_indices();
      *trial.mutable_candidate() = cw.candidate();
      trial.set_arch(kj.work.item.arch());
    }
    if (!replayed) {
      writer_.Post([this,
                    k = absl::StrFormat("%s/%d/%d/%d/%s", work.job, work.kernel, r.candidate_index(), work.round,
                                        work.item.lease_id()),
                    v = trial.SerializeAsString()] {
        IgnoreError(store_->Put(store::Family::kTrials, k, v, false), "a trial record is kept for analysis only");
      });
    }
    if (r.verification().verdict() == tir::v1::VERDICT_PASSED && positions[i] >= 0) {
      if (!r.binary().empty()) kj.binaries[positions[i]] = r.binary();
      kj.best[positions[i]] = trial;
      kj.workers[positions[i]] = worker;
    }
  }
  kj.tuner->Record(work.round, results);
  if (replayed) return;
  // The refit scans the ledger: the reaper does it, outside mu_.
  if ((trials_since_fit_ += static_cast<int>(results.size())) >= 32) {
    trials_since_fit_ = 0;
    refit_due_ = true;
  }
}

absl::StatusOr<tir::v1::ReportResultResponse> Coordinator::ReportResult(const tir::v1::ReportResultRequest &request) {
  absl::MutexLock l(&mu_);
  tir::v1::ReportResultResponse out;
  Lease lease;
  switch (lq_.TakeReported(request.lease_id(), request.name(), &lease)) {
    case LeaseQueue::Report::kDuplicate:
      out.set_duplicate(true);
      return out;
    case LeaseQueue::Report::kNotHeld:
      return MakeError(absl::StatusCode::kFailedPrecondition, "LEASE_EXPIRED",
                       absl::StrCat(request.lease_id(), " is not held (expired and re-queued, or unknown)"));
    case LeaseQueue::Report::kOtherWorker:
      return MakeError(absl::StatusCode::kPermissionDenied, "LEASE_EXPIRED",
                       absl::StrCat(request.lease_id(), " is held by another worker"));
    case LeaseQueue::Report::kTaken:
      break;
  }
  metrics_->measure_seconds.Observe(absl::ToDoubleSeconds(absl::Now() - lease.work.queued_at));
  out.set_accepted(true);
  if (!lease.work.job.empty()) {
    std::vector<tir::v1::CandidateResult> results(request.results().begin(), request.results().end());
    NoteHealth(request.name(), lease.work.job, lease.work.kernel, results);
    const bool allSick = !results.empty() && std::all_of(results.begin(), results.end(), [](const auto &r) {
      return r.verification().verdict() == tir::v1::VERDICT_FAULT ||
             r.verification().verdict() == tir::v1::VERDICT_TIMEOUT;
    });
    if (allSick && lease.work.attempts + 1 < options_.max_attempts) {
      // Every candidate faulted or timed out: the device may be to blame,
      // not the kernel (a sick GPU fails whatever it runs). The item is
      // measured again, on a healthy worker once this one is quarantined,
      // and counts only after max_attempts such reports.
      ++lease.work.attempts;
      lease.work.queued_at = absl::Now();
      lq_.Push(std::move(lease.work));
    } else if (checks_.count(lease.work.job)) {
      RecordCheck(lease.work, results, request.name());
    } else {
      RecordRound(lease.work, results, request.name());
      Advance(lease.work.job);
    }
  }
  Touch();
  return out;
}

void Coordinator::NoteHealth(const std::string &worker, const std::string &job, int kernel,
                             const std::vector<tir::v1::CandidateResult> &results) {
  switch (workers_.NoteResults(worker, job, kernel, results, absl::Now())) {
    case WorkerRegistry::Health::kQuarantined:
      metrics_->quarantines.Increment();
      std::fprintf(stderr,
                   "tir-coordinator: %s quarantined: every candidate faulted or timed out on %d different kernels in a "
                   "row; a probe every %s\n",
                   worker.c_str(), options_.quarantine_after, absl::FormatDuration(options_.quarantine_probe).c_str());
      break;
    case WorkerRegistry::Health::kReleased:
      std::fprintf(stderr, "tir-coordinator: %s passed its probe; out of quarantine\n", worker.c_str());
      break;
    case WorkerRegistry::Health::kSame:
      break;
  }
}

void Coordinator::Requeue(Lease lease, bool count_attempt) {
  if (lease.work.job.empty() || (!jobs_.count(lease.work.job) && !checks_.count(lease.work.job))) return;
  if (count_attempt) ++lease.work.attempts;
  if (lease.work.attempts >= options_.max_attempts) {
    // Given up: the item's candidates fail as faults.
    std::vector<tir::v1::CandidateResult> results;
    for (const auto &c : lease.work.item.candidates()) {
      tir::v1::CandidateResult r;
      r.set_candidate_index(c.candidate_index());
      r.mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
      r.mutable_verification()->set_detail(absl::StrCat("lost with its worker ", lease.work.attempts, " times"));
      results.push_back(r);
    }
    const std::string job = lease.work.job;
    if (checks_.count(job)) {
      RecordCheck(lease.work, results, "");
      return;
    }
    RecordRound(lease.work, results, "");
    Advance(job);
    return;
  }
  lease.work.queued_at = absl::Now();
  lq_.Push(std::move(lease.work));
}

uint32_t Coordinator::RequeueReturned(const std::string &worker,
                                      const google::protobuf::RepeatedPtrField<std::string> &ids) {
  uint32_t n = 0;
  for (Lease &lease : lq_.TakeReturned(worker, {ids.begin(), ids.end()})) {
    Requeue(std::move(lease), false);
    ++n;
  }
  return n;
}

absl::StatusOr<tir::v1::DrainResponse> Coordinator::Drain(const tir::v1::DrainRequest &request) {
  absl::MutexLock l(&mu_);
  tir::v1::DrainResponse out;
  out.set_requeued(RequeueReturned(request.name(), request.returned_lease_ids()));
  // Anything else it still held is lost with it.
  for (Lease &lease : lq_.TakeHeldBy(request.name())) Requeue(std::move(lease), true);
  workers_.Remove(request.name());
  Touch();
  return out;
}

absl::StatusOr<tir::v1::ReturnWorkResponse> Coordinator::ReturnWork(const tir::v1::ReturnWorkRequest &request) {
  absl::MutexLock l(&mu_);
  if (workers_.Find(request.name()) == nullptr) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "UNKNOWN_WORKER", "register again: " + request.name());
  }
  tir::v1::ReturnWorkResponse out;
  out.set_requeued(RequeueReturned(request.name(), request.lease_ids()));
  if (out.requeued() > 0) {
    std::fprintf(stderr, "tir-coordinator: %s gave back %u lease(s): %s\n", request.name().c_str(), out.requeued(),
                 request.reason().c_str());
  }
  Touch();
  return out;
}

void Coordinator::Reap() {
  absl::MutexLock l(&mu_);
  while (!stopping_) {
    changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
    if (stopping_) break;
    if (refit_due_.exchange(false)) {
      mu_.Unlock();
      Refit();
      mu_.Lock();
      if (stopping_) break;
    }
    const absl::Time now = absl::Now();
    // Finished operations are kept for ten minutes.
    if (now - last_prune_ > absl::Seconds(10)) {
      last_prune_ = now;
      ops_.Prune(now, absl::Minutes(10));
    }
    if (now - last_sample_ >= absl::Seconds(2)) Sample(now);
    // Leases past their deadline go back to the queue (an attempt counts);
    // a late report for one is refused as from a lease no longer held.
    for (Lease &lease : lq_.TakeExpired(now)) {
      metrics_->leases_expired.Increment();
      Requeue(std::move(lease), true);
      Touch();
    }
    for (const std::string &name : workers_.MarkLost(now, options_.lost_after)) {
      for (Lease &lease : lq_.TakeHeldBy(name)) Requeue(std::move(lease), true);
      Touch();
    }
    std::map<std::string, std::map<std::string, int>> byArch;
    for (const auto &[name, w] : workers_.all()) ++byArch[w.capabilities.arch()][w.shown()];
    for (const char *state : {"ready", "busy", "draining", "unavailable", "lost", "quarantined"}) {
      for (auto &[arch, states] : byArch) {
        metrics_->workers.Add({{"arch", arch}, {"state", state}}).Set(states.count(state) ? states[state] : 0);
      }
    }
  }
}

tir::v1::JobStatus Coordinator::JobStatusOf(const Job &job) const {
  tir::v1::JobStatus j;
  j.set_key(job.key);
  j.set_arch(job.arch);
  j.set_graph(job.graph_name);
  j.set_kernels(static_cast<uint32_t>(job.kernels.size()));
  for (const KernelJob &k : job.kernels) {
    j.set_candidates_measured(j.candidates_measured() + k.tuner->measured());
    j.set_candidates_failed(j.candidates_failed() + k.tuner->failed());
    j.set_candidates_planned(j.candidates_planned() + k.tuner->planned());
    j.set_measurements(j.measurements() + k.tuner->measurements());
    j.set_round(std::max<uint32_t>(j.round(), k.tuner->round()));
  }
  j.set_state(lq_.Leased(job.key) ? "tuning" : "queued");
  j.set_started(absl::ToUnixMicros(job.start) * 1e-6);
  j.set_seconds(absl::ToDoubleSeconds(absl::Now() - job.start));
  j.set_waiting(static_cast<uint32_t>(job.operations.size()));
  return j;
}

void Coordinator::Sample(absl::Time now) {
  const double dt = last_sample_ == absl::Time() ? 0 : absl::ToDoubleSeconds(now - last_sample_);
  const uint64_t requests = requests_.load(), hits = hits_.load(), misses = misses_.load();
  tir::v1::StatusSample s;
  s.set_time(absl::ToUnixMicros(now) * 1e-6);
  if (dt > 0) {
    s.set_requests_per_second((requests - sampled_requests_) / dt);
    const uint64_t lookups = (hits - sampled_hits_) + (misses - sampled_misses_);
    s.set_hit_rate(lookups ? static_cast<double>(hits - sampled_hits_) / lookups : 0);
    s.set_candidates_per_second((measured_total_ - sampled_measured_) / dt);
  }
  s.set_queue_depth(static_cast<uint32_t>(lq_.queued()));
  uint32_t alive = 0;
  for (auto &[name, w] : workers_.all()) {
    if (dt > 0) w.rate = (w.measured - w.sampled_measured) / dt;
    w.sampled_measured = w.measured;
    alive += w.state != "lost";
  }
  s.set_workers(alive);
  sampled_requests_ = requests;
  sampled_hits_ = hits;
  sampled_misses_ = misses;
  sampled_measured_ = measured_total_;
  last_sample_ = now;
  series_.push_back(s);
  if (series_.size() > 900) series_.pop_front();  // 30 minutes
  mu_.Unlock();  // a store read, outside mu_
  absl::StatusOr<std::pair<uint64_t, uint64_t>> kernelStats = store_->KernelStats();
  mu_.Lock();
  if (auto &stats = kernelStats; stats.ok()) {
    stored_kernels_ = stats->first;
    stored_bytes_ = stats->second;
    metrics_->store_kernels.Set(static_cast<double>(stored_kernels_));
    metrics_->store_bytes.Set(static_cast<double>(stored_bytes_));
  }
}

tir::v1::ServiceStatus Coordinator::Status() {
  absl::MutexLock l(&mu_);
  tir::v1::ServiceStatus out;
  const absl::Time now = absl::Now();
  out.set_time(absl::ToUnixMicros(now) * 1e-6);
  out.set_version(kTirVersion);
  for (const auto &[name, w] : workers_.all()) {
    tir::v1::WorkerStatus *s = out.add_workers();
    s->set_name(name);
    s->set_backend(w.capabilities.backend());
    s->set_arch(w.capabilities.arch());
    s->set_device(w.capabilities.device_name());
    s->set_state(w.shown());
    for (const std::string &id : lq_.HeldBy(name)) s->add_leases(id);
    s->set_candidates_measured(w.measured);
    s->set_candidates_per_second(w.rate);
    s->set_heartbeat_age_seconds(absl::ToDoubleSeconds(now - w.last_heartbeat));
  }
  for (const auto &[key, job] : jobs_) *out.add_running() = JobStatusOf(job);
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) *out.add_recent() = *it;
  out.set_queue_depth(static_cast<uint32_t>(lq_.queued()));
  out.set_stored_kernels(stored_kernels_);
  out.set_stored_bytes(stored_bytes_);
  out.set_cache_hits(hits_.load());
  out.set_cache_misses(misses_.load());
  for (const auto &s : series_) *out.add_series() = s;
  for (tir::v1::BucketStatus &b : shape_records_.Top(50)) *out.add_buckets() = std::move(b);
  return out;
}

int Coordinator::jobs_in_flight() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(jobs_.size());
}

int Coordinator::queue_depth() const {
  absl::MutexLock l(&mu_);
  return static_cast<int>(lq_.queued());
}

}  // namespace tir::coordinator
