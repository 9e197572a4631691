// The front of a compile request: its cache key, from the graph parsed once.
//  - Known: a request seen before is keyed by a hash of its bytes, without
//    parsing (the cache-hit path);
//  - Parse: the graph parsed and verified (maxOpsPerGraph), fingerprinted,
//    a dynamic graph's shape bound to its bucket; the key is
//    SHA-256(fingerprint, arch, codegen version, NVRTC version, tuning
//    policy, precision, bucket). The parsed graph stays with the request for
//    Plan, so a miss parses it once;
//  - Plan: the kernels and their candidates (tuning::BuildWorkItems), ranked
//    for the device the arch's workers have.
// The hashes of requests seen are kept (at most 100,000 and 64 MiB of what
// they key, then refilled from traffic) under their own lock. Thread-safe.

#ifndef TIR_SERVER_FRONTEND_REQUEST_KEYER_H_
#define TIR_SERVER_FRONTEND_REQUEST_KEYER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/synchronization/mutex.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/planning/Calibration.h"
#include "compiler/reference/DynamicShapes.h"
#include "mlir/IR/MLIRContext.h"
#include "server/common/limits.h"
#include "server/common/shape.h"
#include "server/ledger/ledger.h"
#include "server/tuning/successive_halving.h"
#include "server/tuning/work_items.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::frontend {

// A request's graph, parsed (its context outlives its module).
struct ParsedGraph {
  std::unique_ptr<mlir::MLIRContext> context;
  LoadedGraph loaded;
};

struct Parsed {
  std::string key;
  std::string fingerprint;
  std::string policy;
  std::string graph_name;
  std::string precision;  // "" (IEEE) or "tf32"
  int width = 0;          // candidates per kernel the request asked (0: configured)
  // Inputs, outputs and intermediates (filled when planned); for a dynamic
  // graph also its bucket (buckets, bucket_policy, shape_bucket, tuned_shape).
  tir::v1::KernelBundle signature;
  // A dynamic graph: the shape asked, and the shapes tuned at (per graph
  // argument, for planning).
  bool dynamic = false;
  common::Shape shape;
  std::vector<std::vector<int64_t>> tuned_args;
  std::string bucket_text;
  // What the request asked that was ignored.
  std::vector<std::string> notes;
  // Set by Parse (null from Known), with when parsing began: the planning
  // budget counts from then.
  std::shared_ptr<ParsedGraph> graph;
  absl::Time started = absl::InfinitePast();
};

// Sets an operation's shape metadata (a dynamic graph's shape, bucket, notes).
void DescribeShape(tir::v1::Operation &op, const Parsed &parsed);

class RequestKeyer {
 public:
  // `limits`: maxOpsPerGraph for Parse, the planning budget for Plan.
  RequestKeyer(const common::Limits &limits, tuning::TunerConfig tuner, reference::BucketPolicy buckets,
               common::LimitCounter &counter);

  // A request seen before, by the hash of its bytes; null when it was not
  // (or its precision is bad).
  std::shared_ptr<const Parsed> Known(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                                      const std::string &arch) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Parsed> Parse(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                               const std::string &arch) ABSL_LOCKS_EXCLUDED(mu_);
  // Plans `parsed` (from Parse) for `arch`, ranked for `device` ("" for the
  // arch's representative part) with `model`; fills its signature. Past the
  // planning budget (time, candidates) LIMIT_EXCEEDED, counted.
  absl::StatusOr<std::vector<tuning::KernelWork>> Plan(Parsed &parsed, const std::string &arch,
                                                       const std::string &device,
                                                       const planning::CostModel &model) const;

 private:
  static std::string RawKey(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                            const std::string &arch);
  const uint32_t max_ops_;
  const absl::Duration planning_budget_;
  const size_t max_planned_candidates_, max_kernels_;
  const tuning::TunerConfig tuner_;
  const reference::BucketPolicy buckets_;
  common::LimitCounter &limits_;
  static constexpr size_t kMaxKnown = 100000;
  static constexpr size_t kMaxKnownBytes = size_t{64} << 20;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const Parsed>> known_ ABSL_GUARDED_BY(mu_);  // request hash -> key
  size_t known_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// The cost model's corrections, fit from the trial ledger. Thread-safe.
class CostModels {
 public:
  // Fits again from every stored trial (the model stays when they cannot
  // be read).
  void Refit(const ledger::Ledger &ledger) ABSL_LOCKS_EXCLUDED(mu_);
  // Counts new trials; true when 32 have come since the last refit and no
  // refit is pending already (the caller then runs one: at most one waits).
  bool NoteTrials(int n) ABSL_LOCKS_EXCLUDED(mu_);
  // The refit NoteTrials asked for could not be run: the next trials ask again.
  void RefitDropped() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `fn` with the model planning uses now (calibrated once fit).
  void With(const std::function<void(const planning::CostModel &)> &fn) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  planning::AnalyticCostModel analytic_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const planning::Calibration> calibration_ ABSL_GUARDED_BY(mu_);
  int since_fit_ ABSL_GUARDED_BY(mu_) = 0;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tir::frontend

#endif  // TIR_SERVER_FRONTEND_REQUEST_KEYER_H_
