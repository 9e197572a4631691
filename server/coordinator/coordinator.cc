#include "server/coordinator/coordinator.h"

#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "client/bundle_signature.h"
#include "server/tuning/bundle_shapes.h"

namespace tir::coordinator {
namespace {

absl::Status NotFound(const std::string &what) { return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", what); }

reference::BucketPolicy Buckets(const std::string &text) {
  absl::StatusOr<reference::BucketPolicy> policy = reference::BucketPolicy::Parse(text);
  if (policy.ok()) return *policy;
  std::fprintf(stderr, "tir-coordinator: %s; using pow2\n", std::string(policy.status().message()).c_str());
  return reference::BucketPolicy();
}

bundles::BundleIdentity IdentityOf(const frontend::Parsed &p, const std::string &arch) {
  return {p.key, p.fingerprint, arch, p.policy, p.signature};
}

dispatch::DispatchOptions DispatchOptionsOf(const CoordinatorOptions &o) {
  return {o.heartbeat_interval, o.lost_after,          o.max_attempts,          o.lease_timeout,
          o.quarantine_after,   o.quarantine_probe, o.limits.max_queue_items, o.max_lease_waits};
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, std::shared_ptr<store::KernelStore> store,
                         std::shared_ptr<prometheus::Registry> registry)
    : options_(std::move(options)),
      store_(std::move(store)),
      registry_(registry ? registry : std::make_shared<prometheus::Registry>()),
      cache_(prometheus::BuildCounter().Name("tir_cache_lookups_total").Help("Kernel cache lookups by result").Register(*registry_)),
      limits_(*registry_),
      ledger_(store_, &writer_),
      signer_(options_.bundle_key),
      sizer_(ledger_, signer_),
      store_source_(store_),
      shape_source_(store_source_, sizer_),
      served_(shape_source_, signer_),
      builder_(options_.work_dir, *registry_),
      defaults_(builder_, signer_),
      admin_(store_, signer_, sizer_, ledger_),
      keyer_(options_.limits, options_.tuner, Buckets(options_.shape_buckets), limits_),
      ops_(options_.limits.max_operations, limits_, ledger_,
           options_.shard_tag.empty() ? "" : options_.shard_tag + "-"),
      dispatcher_(DispatchOptionsOf(options_), *registry_, limits_),
      checks_(dispatcher_, ops_, sizer_, limits_, options_.limits.max_jobs, *registry_),
      tuning_({dispatcher_, ops_, checks_, ledger_, *store_, signer_, builder_, planner_, writer_, limits_, *registry_},
              tuning::SuccessiveHalvingFactory(options_.tuner), options_.limits,
              [this](const std::string &key) { sizer_.Forget(key); },
              [this](int trials) {
                // The ledger scan runs on the planning pool (at most one
                // waits); a full pool leaves it to the next trials.
                if (models_.NoteTrials(trials) &&
                    !planner_.Submit([this] { models_.Refit(ledger_); }, "maxPlanningQueue").ok()) {
                  models_.RefitDropped();
                }
              }),
      status_({[this](absl::Time now, bool sample) { return dispatcher_.Snapshot(now, sample); },
               [this](auto *running, auto *recent) { tuning_.Snapshot(running, recent); },
               [this](size_t n) { return sizer_.Top(n); }, [this] { return tuning_.measured(); }},
              counts_, store_, *registry_),
      // At least three planning threads: two clients' first tasks leave
      // one for a third (WorkPool's shares).
      planner_(options_.planning_threads > 0 ? options_.planning_threads
                                             : static_cast<int>(std::max(3u, std::thread::hardware_concurrency())),
               options_.limits.max_planning_queue) {
  // Every label value exists from the start, so rates and alerts see zeros.
  cache_.Add({{"result", "hit"}});
  cache_.Add({{"result", "miss"}});
  if (!options_.upstream.address.empty()) {
    absl::StatusOr<std::unique_ptr<upstream::Upstream>> up = upstream::Upstream::Connect(options_.upstream, *registry_);
    if (!up.ok()) {
      upstream_error_ = up.status();
      return;
    }
    upstream_ = *std::move(up);
    read_through_ = std::make_unique<upstream::ReadThrough>(upstream::ReadThrough::Parts{
        *upstream_, ops_, *store_, signer_,
        [this](const tir::v1::CompileRequest &request, const std::string &owner) {
          return CompileInternal(request, false, "", owner, /*ask_upstream=*/false);
        }},
        6 * options_.upstream.timeout);
  }
}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Shutdown() {
  if (read_through_) read_through_->Stop();
  dispatcher_.Stop();
  ops_.Stop();
  status_.Stop();
  // The pool's tasks post to the writer and the writer's submit to the pool:
  // both are drained twice, so neither is left a task for the other once
  // they go (the writer first).
  for (int i = 0; i < 2; ++i) {
    planner_.Drain();
    writer_.Flush();
  }
}

absl::Status Coordinator::Start() {
  TIR_RETURN_IF_ERROR(upstream_error_);
  models_.Refit(ledger_);
  // Unfinished jobs are planned again and their stored rounds replayed, so
  // tuning goes on where it stopped.
  TIR_ASSIGN_OR_RETURN(std::vector<tir::v1::CompileRequest> pending, ledger_.Jobs());
  for (tir::v1::CompileRequest &r : pending) {
    r.clear_request_id();
    r.mutable_options()->set_mode(tir::v1::COMPILE_MODE_WAIT);
    absl::StatusOr<tir::v1::Operation> op = CompileInternal(r, true, "", "");
    if (!op.ok()) {
      IgnoreError(op.status(), "a persisted job no longer compiles; dropping it");
    } else if (op->metadata().cache_hit()) {
      ledger_.DropJob(op->metadata().key());  // stored just before the restart
    }
  }
  // Operations from before the restart wait for their resumed jobs under
  // their own names (the others answer from the store: RestoredOperation).
  TIR_ASSIGN_OR_RETURN(auto persisted, ledger_.Operations());
  for (const auto &[name, record] : persisted) {
    tuning_.Restore(name, record.key(), record.shape(), record.owner());
  }
  dispatcher_.Start();
  status_.Start();
  resumed_.Notify();
  return absl::OkStatus();
}

void Coordinator::CountLookup(bool hit) {
  cache_.Add({{"result", hit ? "hit" : "miss"}}).Increment();
  ++(hit ? counts_.hits : counts_.misses);
}

absl::StatusOr<std::optional<tir::v1::Operation>> Coordinator::CompileIfCached(const tir::v1::CompileRequest &request,
                                                                               const std::string &owner) {
  const std::string arch = request.options().target_arch();
  if (arch.empty() || request.options().force_retune() || !target::LookupArch(arch).ok()) return std::nullopt;
  std::shared_ptr<const frontend::Parsed> parsed = keyer_.Known(request.graph(), request.options(), arch);
  if (!parsed) return std::nullopt;
  tir::v1::KernelBundle unchecked;
  absl::StatusOr<std::optional<tir::v1::Operation>> hit = CacheHit(*parsed, &unchecked);
  if (!hit.ok() || !*hit) return std::nullopt;  // Compile answers (and counts) a miss, a check or an error
  ++counts_.requests;
  admin_.NoteRequester(parsed->key, owner);
  return hit;
}

absl::StatusOr<std::optional<tir::v1::Operation>> Coordinator::CacheHit(const frontend::Parsed &parsed,
                                                                        tir::v1::KernelBundle *unchecked) {
  TIR_ASSIGN_OR_RETURN(std::optional<bundles::FoundBundle> found,
                       served_.Find({parsed.key, parsed.dynamic ? &parsed.shape : nullptr}));
  if (!found) return std::nullopt;
  if (!found->servable) {
    *unchecked = std::move(found->bundle);
    return std::nullopt;
  }
  if (parsed.dynamic) sizer_.NoteHit(parsed.key, found->bundle);
  CountLookup(true);
  // Answered from the store; the operation is not kept (its name says where
  // to find it again).
  tir::v1::Operation op = operations::CachedOperation(std::move(found->bundle));
  frontend::DescribeShape(op, parsed);
  op.mutable_metadata()->set_tier("local");
  return op;
}

tir::v1::ServiceStatus Coordinator::Status() {
  tir::v1::ServiceStatus s = status_.Render();
  if (upstream_) *s.mutable_upstream() = upstream_->Snapshot(read_through_->following());
  if (options_.describe_shards) options_.describe_shards(s);
  return s;
}

absl::StatusOr<tir::v1::Operation> Coordinator::Compile(const tir::v1::CompileRequest &request, const std::string &client,
                                                        const std::string &owner) {
  absl::StatusOr<tir::v1::Operation> op = CompileInternal(request, false, client, owner);
  // Whoever is answered (a hit, a job, a default) asked for the key's bundle.
  if (op.ok() && !op->metadata().key().empty()) admin_.NoteRequester(op->metadata().key(), owner);
  return op;
}

absl::StatusOr<tir::v1::Operation> Coordinator::CompileInternal(const tir::v1::CompileRequest &request, bool resume,
                                                                const std::string &client, const std::string &owner,
                                                                bool ask_upstream) {
  const std::string arch = request.options().target_arch();
  if (arch.empty()) {
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH", "options.target_arch is required (e.g. sm_90a, host)");
  }
  TIR_RETURN_IF_ERROR(target::LookupArch(arch).status());
  if (request.request_id().size() > kMaxRequestIdBytes) {
    // It is kept with the operation (and its client's ids) while it lives.
    return MakeError(absl::StatusCode::kInvalidArgument, "LIMIT_EXCEEDED",
                     absl::StrCat("request_id has ", request.request_id().size(), " bytes; at most ",
                                  kMaxRequestIdBytes, " are taken"));
  }
  ++counts_.requests;
  // 1. The key: of a request seen before without parsing; else parsed
  // (once: the plan below is made from the same graph).
  frontend::Parsed parsed;
  if (std::shared_ptr<const frontend::Parsed> known = keyer_.Known(request.graph(), request.options(), arch)) {
    parsed = *known;
  } else {
    TIR_ASSIGN_OR_RETURN(parsed, keyer_.Parse(request.graph(), request.options(), arch));
  }
  // 2. The cache (a retried request that has a bundle by now gets it). A
  // dynamic graph's bundle not verified at the shape yet is `unchecked`.
  tir::v1::KernelBundle unchecked;
  if (!request.options().force_retune()) {
    TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::Operation> hit, CacheHit(parsed, &unchecked));
    if (hit) return *std::move(hit);
  }
  // Request ids are the client's own: scoped by who sent them, and one
  // reused for another graph (or options) is refused, not answered with the
  // first request's operation.
  const std::string requestId = request.request_id().empty() ? "" : absl::StrCat(client, "\n", request.request_id());
  if (std::optional<tir::v1::Operation> op = ops_.ByRequest(requestId)) {
    if (op->metadata().key() != parsed.key) {
      return MakeError(absl::StatusCode::kAlreadyExists, "REQUEST_ID_REUSED",
                       absl::StrCat("request id ", request.request_id(), " was used for another graph or options (",
                                    op->name(), "); use a new id per request"));
    }
    return *op;
  }
  CountLookup(false);
  const int priority = request.options().priority();
  const bool now = request.options().mode() == tir::v1::COMPILE_MODE_HEURISTIC_NOW;
  const bool checkOnly = !unchecked.key().empty();
  if (checkOnly && resume) {
    // A job whose bundle was stored just before a restart: nothing is left
    // to tune. Its operations are checked at their shapes when asked for.
    ledger_.DropJob(parsed.key);
    return tir::v1::Operation();
  }
  // 2a. In a sharded fleet, a shard that took this key while its owner was
  // down may have it: kept here and served, not tuned again.
  if (options_.find_elsewhere && !resume && !checkOnly && !parsed.dynamic && !request.options().force_retune()) {
    if (std::optional<tir::v1::KernelBundle> there = options_.find_elsewhere(parsed.key);
        there && there->arch() == arch && CheckBinaryHashes(*there).ok()) {
      there->clear_signature();
      signer_.Sign(*there);
      IgnoreError(store_->PutKernel(*there), "a bundle found at another shard is served but not kept here");
      tir::v1::Operation op = operations::CachedOperation(*std::move(there));
      op.mutable_metadata()->set_tier("local");
      return op;
    }
  }
  // 2b. A miss here is asked of the upstream tier, when there is one: its
  // tuned bundle (kept here), its tuning followed, or its untuned answer now.
  std::string upstreamNote;
  // A job here for the key already (the upstream was down when it began)
  // takes the request below, rather than a second tuning there.
  if (read_through_ && ask_upstream && !resume && !checkOnly && !request.options().force_retune() &&
      !tuning_.Tuning(parsed.key)) {
    upstream::Miss miss{parsed.key, arch, parsed.dynamic ? parsed.shape.text : "", requestId, owner,
                        [&parsed](tir::v1::Operation &op) { frontend::DescribeShape(op, parsed); }};
    if (std::optional<tir::v1::Operation> op = read_through_->Compile(request, miss, &upstreamNote)) return *op;
  }
  tuning::Waiter waiter{requestId,
                        [&parsed, &upstreamNote](tir::v1::Operation &op) {
                          frontend::DescribeShape(op, parsed);
                          op.mutable_metadata()->set_tier("local");
                          if (!upstreamNote.empty()) op.mutable_metadata()->add_notes(upstreamNote);
                        },
                        parsed.dynamic ? std::optional<common::Shape>(parsed.shape) : std::nullopt, owner};
  const bool live = dispatcher_.HasHealthy(arch);
  // 2c. The bucket's bundle is checked at this shape first (in heuristic-now
  // mode, or without a worker, the check waits and the default answers now).
  if (checkOnly && !now && live) {
    TIR_ASSIGN_OR_RETURN(tir::v1::Operation op,
                         ops_.New(
                             arch, parsed.key, "", requestId,
                             [&](tir::v1::Operation &o) {
                               waiter.describe(o);
                               o.mutable_metadata()->set_shape_checked(true);
                             },
                             owner));
    ops_.Persist(op.name(), parsed.key, parsed.shape.text);
    checks_.Check(unchecked, parsed.shape, {op.name()}, priority);
    if (std::optional<tir::v1::Operation> answer = ops_.Get(op.name())) return *answer;
    return NotFound("operation " + op.name() + " was dropped");
  }
  if (checkOnly) checks_.Check(unchecked, parsed.shape, {}, priority);
  // 3. An identical job in flight takes the request.
  if (!now && live && !checkOnly) {
    TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::Operation> joined, tuning_.Join(parsed.key, arch, priority, waiter));
    if (joined) return *joined;
  }
  // 4. Plan, and for an answer now compile the defaults: on the planning
  // pool (bounded), outside every lock.
  const bool answerNow = !resume && (now || !live);
  if (answerNow && !now && !options_.default_without_worker) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "NO_WORKER_FOR_ARCH",
                     absl::StrCat("no worker for ", arch, " is registered"));
  }
  // A request known by its bytes is parsed now, for its plan.
  if (parsed.graph == nullptr) {
    TIR_ASSIGN_OR_RETURN(parsed, keyer_.Parse(request.graph(), request.options(), arch));
  }
  const std::string device = dispatcher_.DeviceOf(arch);
  std::vector<tuning::KernelWork> plan;
  absl::Status planned;
  std::optional<absl::StatusOr<tir::v1::KernelBundle>> untuned;
  TIR_RETURN_IF_ERROR(planner_.Run([&] {
    models_.With([&](const planning::CostModel &model) {
      absl::StatusOr<std::vector<tuning::KernelWork>> p = keyer_.Plan(parsed, arch, device, model);
      planned = p.status();
      if (p.ok()) plan = *std::move(p);
    });
    if (!planned.ok() || !answerNow) return;
    untuned = defaults_.Build(IdentityOf(parsed, arch), plan);
    if (untuned->ok()) {
      if (absl::Status fits = bundles::CheckServable(**untuned, options_.limits.max_message_bytes); !fits.ok()) {
        untuned = fits;
      }
    }
    if (untuned->ok() && parsed.dynamic) {
      // Sized for the shape asked; not verified there (nor anywhere: the
      // heuristic's default, as for a static graph).
      absl::StatusOr<tuning::BundleAtShape> sized = tuning::SizeBundle(**untuned, parsed.shape.hints);
      if (!sized.ok()) {
        untuned = sized.status();
        return;
      }
      tir::v1::ShapeVerification record;
      *record.mutable_shape() = {parsed.shape.hints.begin(), parsed.shape.hints.end()};
      untuned = sizer_.ServedCopy(std::move(sized->bundle), record);
    }
  }, "maxPlanningQueue", client));
  TIR_RETURN_IF_ERROR(planned);
  if (checkOnly) {
    // The bundle is only being checked at the shape: the default answers.
    TIR_ASSIGN_OR_RETURN(tir::v1::Operation op, ops_.New(arch, parsed.key, "", requestId, waiter.describe, owner));
    ops_.Finish({op.name()}, *untuned);
    return ops_.Get(op.name()).value_or(op);
  }
  ledger::Rounds rounds;
  if (resume) {
    absl::StatusOr<ledger::Rounds> stored = ledger_.RoundsOf(parsed.key);
    if (stored.ok()) rounds = *std::move(stored);
    IgnoreError(stored.status(), "without its stored rounds a resumed job tunes from round 0");
  }
  // A job behind an answer given now is stored within a bound (options_):
  // requests that cost their client nothing must not fill the store.
  bool persist = true;
  if (answerNow) {
    const size_t bytes = request.ByteSizeLong() - request.request_id().size();
    persist = bytes <= options_.answered_job_record_bytes &&
              ledger_.JobBytes() + bytes <= options_.answered_jobs_store_bytes;
  }
  tuning::JobSpec spec{IdentityOf(parsed, arch), request, parsed.graph_name, client, priority, parsed.width, persist};
  return tuning_.Open(std::move(spec), std::move(plan), std::move(untuned), waiter, resume, std::move(rounds));
}

absl::StatusOr<tir::v1::Operation> Coordinator::RestoredOperation(const std::string &name) {
  // The server answers while Start() resumes the stored jobs: an operation
  // not in memory yet may be one of theirs, so wait for the resume first.
  if (!resumed_.HasBeenNotified()) {
    resumed_.WaitForNotificationWithTimeout(absl::Minutes(2));
    if (std::optional<tir::v1::Operation> op = ops_.Get(name)) return *op;
  }
  absl::StatusOr<tir::v1::OperationRecord> record = ledger_.GetOperation(name);
  if (absl::IsNotFound(record.status())) return NotFound("no operation " + name);
  TIR_RETURN_IF_ERROR(record.status());
  TIR_ASSIGN_OR_RETURN(std::optional<bundles::FoundBundle> found, store_source_.Find({record->key()}));
  if (!found) {
    return NotFound(absl::StrCat("operation ", name, " (key ", record->key(),
                                 ") ended before the coordinator restarted and no bundle is stored for it; compile again"));
  }
  tir::v1::KernelBundle b = std::move(found->bundle);
  if (!record->shape().empty()) {
    // A dynamic graph's operation: the bundle sized for its shape, once
    // verified there; else the check starts again under the same name.
    const common::Shape shape = common::ParseShapeText(record->shape());
    TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::KernelBundle> at, sizer_.AtShape(b, shape));
    if (!at) {
      ops_.Restore(name, b.arch(), record->key(), "", record->owner());
      checks_.Check(b, shape, {name}, 0);
      if (std::optional<tir::v1::Operation> op = ops_.Get(name)) return *op;
      return NotFound("no operation " + name);
    }
    b = *std::move(at);
  }
  signer_.Served(b);
  tir::v1::Operation op = operations::CachedOperation(std::move(b));
  op.set_name(name);
  op.mutable_metadata()->set_cache_hit(false);
  return op;
}

absl::StatusOr<tir::v1::Operation> Coordinator::GetOperation(const std::string &name) {
  if (std::optional<std::pair<std::string, std::string>> cached = operations::ParseCachedName(name)) {
    // "operations/cached.<key>" or, for a dynamic graph, "...<key>@<shape>".
    const common::Shape shape = common::ParseShapeText(cached->second);
    if (!cached->second.empty() && shape.hints.empty()) return NotFound("no operation " + name);
    TIR_ASSIGN_OR_RETURN(std::optional<bundles::FoundBundle> found,
                         served_.Find({cached->first, cached->second.empty() ? nullptr : &shape}));
    if (!found) return NotFound("no operation " + name);
    if (!found->servable) return NotFound("no operation " + name + ": the bundle is not verified at that shape");
    return operations::CachedOperation(std::move(found->bundle));
  }
  if (std::optional<tir::v1::Operation> op = ops_.Get(name)) return *op;
  return RestoredOperation(name);
}

absl::StatusOr<tir::v1::Operation> Coordinator::WaitOperation(const std::string &name, absl::Duration timeout,
                                                              int64_t *version) {
  if (operations::ParseCachedName(name)) return GetOperation(name);
  if (std::optional<tir::v1::Operation> op = ops_.Wait(name, absl::Now() + timeout, version)) return *op;
  return RestoredOperation(name);  // it reads the store (and may check a shape)
}

absl::StatusOr<tir::v1::Operation> Coordinator::CancelOperation(const std::string &name, const std::string &identity,
                                                                bool admin) {
  if (operations::ParseCachedName(name)) return GetOperation(name);  // done already: nothing is cancelled
  // Its owner's, or an admin's, to cancel (NOT_FOUND when not kept).
  TIR_RETURN_IF_ERROR(ops_.CanCancel(name, identity, admin));
  const std::string job = ops_.JobOf(name);
  ops_.Finish({name}, MakeError(absl::StatusCode::kCancelled, "CANCELLED", "cancelled by the client"));
  ops_.Forget({name});
  checks_.Cancel(name, job);  // a check goes on: its record serves the next request for the shape
  tuning_.Cancel(name, job);
  if (std::optional<tir::v1::Operation> op = ops_.Get(name)) return *op;
  return NotFound("no operation " + name);
}

absl::StatusOr<tir::v1::LookupKernelResponse> Coordinator::LookupKernel(const tir::v1::LookupKernelRequest &request) {
  const std::string arch = request.options().target_arch();
  TIR_RETURN_IF_ERROR(target::LookupArch(arch).status());
  TIR_ASSIGN_OR_RETURN(frontend::Parsed parsed, keyer_.Parse(request.graph(), request.options(), arch));
  return LookupByKey(parsed, request, true);
}

absl::StatusOr<std::string> Coordinator::KeyOf(const tir::v1::GraphSource &graph,
                                               const tir::v1::CompileOptions &options) {
  const std::string arch = options.target_arch();
  if (arch.empty()) {
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH", "options.target_arch is required (e.g. sm_90a, host)");
  }
  TIR_RETURN_IF_ERROR(target::LookupArch(arch).status());
  if (std::shared_ptr<const frontend::Parsed> known = keyer_.Known(graph, options, arch)) return known->key;
  TIR_ASSIGN_OR_RETURN(frontend::Parsed parsed, keyer_.Parse(graph, options, arch));
  return parsed.key;
}

absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> Coordinator::LookupIfKnown(
    const tir::v1::LookupKernelRequest &request) {
  const std::string arch = request.options().target_arch();
  if (!target::LookupArch(arch).ok()) return std::nullopt;
  std::shared_ptr<const frontend::Parsed> parsed = keyer_.Known(request.graph(), request.options(), arch);
  if (!parsed) return std::nullopt;
  if (read_through_) {
    // A miss here is the upstream's to answer, off this (callback) thread.
    TIR_ASSIGN_OR_RETURN(std::optional<bundles::FoundBundle> found, store_source_.Find({parsed->key}));
    if (!found) return std::nullopt;
  }
  return LookupByKey(*parsed, request, false);
}

absl::StatusOr<tir::v1::LookupKernelResponse> Coordinator::LookupByKey(const frontend::Parsed &parsed,
                                                                       const tir::v1::LookupKernelRequest &request,
                                                                       bool ask_upstream) {
  TIR_ASSIGN_OR_RETURN(std::optional<bundles::FoundBundle> found, store_source_.Find({parsed.key}));
  if (!found && ask_upstream && read_through_) {
    upstream::Miss miss{parsed.key, request.options().target_arch(), parsed.dynamic ? parsed.shape.text : "", "", "",
                        nullptr};
    if (std::optional<tir::v1::LookupKernelResponse> there = read_through_->Lookup(request, miss)) {
      ++counts_.requests;
      CountLookup(false);
      return *there;
    }
  }
  tir::v1::LookupKernelResponse out;
  out.set_key(parsed.key);
  if (found && parsed.dynamic) {
    // A lookup starts no check: the bucket's bundle is found, served sized
    // only for a shape it is verified at.
    absl::StatusOr<std::optional<tir::v1::KernelBundle>> at = sizer_.AtShape(found->bundle, parsed.shape);
    if (at.ok() && *at) {
      out.set_shape_verified(true);
      sizer_.NoteHit(parsed.key, **at);
      found->bundle = **std::move(at);
    } else if (!at.ok() && ReasonOf(at.status()) != "WRONG_AT_SHAPE") {
      return at.status();
    }
  }
  ++counts_.requests;
  CountLookup(found && (!parsed.dynamic || out.shape_verified()));
  if (found) {
    out.set_found(true);
    signer_.Served(found->bundle);
    *out.mutable_bundle() = std::move(found->bundle);
  }
  return out;
}

}  // namespace tir::coordinator
