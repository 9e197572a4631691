#include "server/api/services.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "compiler/support/status.h"
#include "server/api/forwarded_watch.h"
#include "server/api/rpc_status.h"

namespace tir::api {
namespace {

absl::Time DeadlineOf(const grpc::ServerContextBase &ctx) {
  const auto d = ctx.deadline();
  if (d == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(d);
}

template <typename T>
absl::Status Assign(absl::StatusOr<T> r, T *out) {
  if (!r.ok()) return r.status();
  *out = *std::move(r);
  return absl::OkStatus();
}

grpc::Status Counted(prometheus::Family<prometheus::Counter> &requests, const char *method, const absl::Status &s) {
  requests.Add({{"method", method}, {"code", absl::StatusCodeToString(s.code())}}).Increment();
  return ToGrpc(s);
}

}  // namespace

CompilerServiceImpl::CompilerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry,
                                         std::shared_ptr<shards::Forwarder> forwarder)
    : c_(c),
      forwarder_(std::move(forwarder)),
      auth_(std::move(tokens)),
      requests_(prometheus::BuildCounter()
                    .Name("tir_requests_total")
                    .Help("Client API calls by method and status code")
                    .Register(registry)),
      slow_(static_cast<int>(std::max(4u, std::thread::hardware_concurrency() * 2)), kSlowCalls),
      watches_(std::make_unique<WatchStreams>(c, [this](const absl::Status &s) { Done("WatchOperation", s); })),
      waits_(std::make_unique<OperationWaits>(c, [this](const absl::Status &s) { Done("WaitOperation", s); })) {}

grpc::Status CompilerServiceImpl::Done(const char *method, const absl::Status &s) { return Counted(requests_, method, s); }

grpc::Status CompilerServiceImpl::Done(const char *method, const grpc::Status &s) {
  // Another shard's answer, passed on as it came (its details included).
  requests_.Add({{"method", method}, {"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code()))}})
      .Increment();
  return s;
}

std::vector<int> CompilerServiceImpl::Shards(const grpc::ServerContextBase &ctx, absl::string_view key) const {
  if (!forwarder_ || forwarder_->Forwarded(ctx)) return {};
  std::vector<int> route = forwarder_->Route(key);
  if (route.size() == 1 && route.front() == forwarder_->ring().self()) return {};
  return route;
}

int CompilerServiceImpl::ShardOf(const grpc::ServerContextBase &ctx, const std::string &operation) const {
  if (!forwarder_ || forwarder_->Forwarded(ctx)) return -1;
  int shard = forwarder_->ring().OfOperation(operation);
  // A cached answer's name ("operations/cached.<key>...") is its key's.
  if (std::optional<std::pair<std::string, std::string>> cached = operations::ParseCachedName(operation)) {
    shard = forwarder_->Route(cached->first).front();
  }
  return shard == forwarder_->ring().self() ? -1 : shard;
}

std::string CompilerServiceImpl::ClientKey(const grpc::ServerContextBase &ctx, const std::string &identity) const {
  // A forwarded call counts against the client the forwarding shard names
  // (its own identity, or the host it came from), not against that shard.
  if (forwarder_ && identity.empty()) {
    if (std::string of = forwarder_->ForwardedFor(ctx); !of.empty()) return of;
  }
  return ClientOf(ctx, identity);
}

void CompilerServiceImpl::StopForwarding() {
  if (forwarder_) forwarder_->Stop();
}

template <typename Req, typename Resp>
void CompilerServiceImpl::ForwardOnce(grpc::ServerContextBase *ctx, int shard, AsyncMethod<Req, Resp> method,
                                      const Req *req, Resp *out, const std::string &client, bool wait,
                                      std::function<void(grpc::Status)> done) {
  forwarder_->Call(
      shard, *ctx, client,
      [method, req, out](shards::Forwarder::Async *async, grpc::ClientContext *cc,
                         std::function<void(grpc::Status)> cb) { (async->*method)(cc, req, out, std::move(cb)); },
      [this, ctx, shard, method, req, out, client, wait, done = std::move(done)](grpc::Status s) mutable {
        // Without a turn here (an operation's shard), a restarting shard is
        // waited for: its connection refused is tried again, a little later,
        // while the caller's deadline allows.
        if (wait && shards::TransportFailure(s) && !forwarder_->stopping() &&
            DeadlineOf(*ctx) - absl::Now() > absl::Seconds(2)) {
          const absl::Status queued = slow_.Submit(
              [this, ctx, shard, method, req, out, client, done] {
                absl::SleepFor(absl::Milliseconds(500));
                ForwardOnce(ctx, shard, method, req, out, client, true, done);
              },
              "slowCalls", client);
          if (queued.ok()) return;
        }
        done(s);
      },
      wait);
}

template <typename Req, typename Resp>
CompilerServiceImpl::Answer CompilerServiceImpl::Forwarded(grpc::ServerContextBase *ctx, std::vector<int> shards,
                                                           AsyncMethod<Req, Resp> method, const Req *req, Resp *out,
                                                           std::function<absl::Status()> local,
                                                           const std::string &client) {
  Answer a;
  a.later = [this, ctx, shards = std::move(shards), method, req, out, local = std::move(local),
             client](std::function<void(grpc::Status)> finish) {
    shards::TryShards(
        *forwarder_, shards,
        [this, ctx, method, req, out, client, wait = !local](int shard, std::function<void(grpc::Status)> done) {
          ForwardOnce(ctx, shard, method, req, out, client, wait, std::move(done));
        },
        [this, local, client](std::function<void(grpc::Status)> done) {
          // This shard's turn: on the slow-call pool, off gRPC's threads.
          const absl::Status queued =
              slow_.Submit([local, done] { done(ToGrpc(local())); }, "slowCalls", client);
          if (!queued.ok()) done(ToGrpc(queued));
        },
        std::move(finish));
  };
  return a;
}

grpc::Status CompilerServiceImpl::Run(grpc::ServerContextBase *ctx, const char *method,
                                      const std::function<absl::Status(const Caller &caller)> &handler) {
  Caller caller;
  absl::Status s = auth_.Check(*ctx, method, &caller.identity, &caller.admin);
  if (s.ok()) {
    caller.client = ClientKey(*ctx, caller.identity);
    s = handler(caller);
  }
  return Done(method, s);
}

grpc::ServerUnaryReactor *CompilerServiceImpl::React(grpc::CallbackServerContext *ctx, const char *method,
                                                     const std::function<Answer(const Caller &caller)> &handler) {
  grpc::ServerUnaryReactor *r = ctx->DefaultReactor();
  Caller caller;
  const absl::Status allowed = auth_.Check(*ctx, method, &caller.identity, &caller.admin);
  if (!allowed.ok()) {
    r->Finish(Done(method, allowed));
    return r;
  }
  caller.client = ClientKey(*ctx, caller.identity);
  const std::string &client = caller.client;
  Answer a = handler(caller);
  if (a.later) {
    a.later([this, r, method](grpc::Status s) { r->Finish(Done(method, s)); });
    return r;
  }
  if (!a.slow) {
    r->Finish(Done(method, a.status));
    return r;
  }
  const absl::Status queued =
      slow_.Submit([this, r, method, call = std::move(a.slow)] { r->Finish(Done(method, call())); }, "slowCalls", client);
  if (!queued.ok()) r->Finish(Done(method, queued));
  return r;
}

template <typename Req, typename Resp>
CompilerServiceImpl::Answer CompilerServiceImpl::Keyed(grpc::ServerContextBase *ctx, AsyncMethod<Req, Resp> method,
                                                       const Req *req, Resp *out, std::function<absl::Status()> here,
                                                       const std::string &client) {
  Answer a;
  a.later = [this, ctx, method, req, out, here, client](std::function<void(grpc::Status)> finish) {
    const absl::Status queued = slow_.Submit(
        [this, ctx, method, req, out, here, client, finish] {
          absl::StatusOr<std::string> key = c_->KeyOf(req->graph(), req->options());
          if (!key.ok()) return finish(ToGrpc(key.status()));
          std::vector<int> shards = Shards(*ctx, *key);
          if (shards.empty()) return finish(ToGrpc(here()));
          Forwarded(ctx, std::move(shards), method, req, out, here, client).later(finish);
        },
        "slowCalls", client);
    if (!queued.ok()) finish(ToGrpc(queued));
  };
  return a;
}

template <typename Req, typename Resp>
grpc::Status CompilerServiceImpl::ForwardedNow(grpc::ServerContextBase *ctx, std::vector<int> shards,
                                               AsyncMethod<Req, Resp> method, const Req *req, Resp *out) {
  absl::Notification answered;
  grpc::Status got;
  Forwarded(ctx, std::move(shards), method, req, out, {}, ClientKey(*ctx, "")).later([&](grpc::Status s) {
    got = std::move(s);
    answered.Notify();
  });
  answered.WaitForNotification();
  return got;
}

grpc::ServerUnaryReactor *CompilerServiceImpl::Compile(grpc::CallbackServerContext *ctx,
                                                       const tir::v1::CompileRequest *req, tir::v1::Operation *out) {
  return React(ctx, "Compile", [&](const Caller &caller) -> Answer {
    // A cache hit answers here; anything else (parse, plan, join a job) on
    // the slow-call pool. The caller's identity owns what it asked for.
    absl::StatusOr<std::optional<tir::v1::Operation>> hit = c_->CompileIfCached(*req, caller.identity);
    if (!hit.ok()) return {hit.status()};
    if (*hit) {
      *out = **std::move(hit);
      return {absl::OkStatus()};
    }
    auto here = [this, client = caller.client, owner = caller.identity, req, out] {
      return Assign(c_->Compile(*req, client, owner), out);
    };
    if (!forwarder_ || forwarder_->Forwarded(*ctx)) return {absl::OkStatus(), here};
    return Keyed(ctx, &shards::Forwarder::Async::Compile, req, out, here, caller.client);
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::GetOperation(grpc::CallbackServerContext *ctx,
                                                            const tir::v1::GetOperationRequest *req,
                                                            tir::v1::Operation *out) {
  return React(ctx, "GetOperation", [&](const Caller &caller) -> Answer {
    if (const int shard = ShardOf(*ctx, req->name()); shard >= 0) {
      return Forwarded(ctx, {shard}, &shards::Forwarder::Async::GetOperation, req, out, {}, caller.client);
    }
    return {Assign(c_->GetOperation(req->name()), out)};
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::WaitOperation(grpc::CallbackServerContext *ctx,
                                                             const tir::v1::WaitOperationRequest *req,
                                                             tir::v1::Operation *out) {
  std::string identity;
  const absl::Status allowed = auth_.Check(*ctx, "WaitOperation", &identity);
  absl::Duration timeout = req->has_timeout()
                               ? absl::Seconds(req->timeout().seconds()) + absl::Nanoseconds(req->timeout().nanos())
                               : absl::Minutes(10);
  // Answer a little before the caller's deadline, with the operation as it is.
  const absl::Time now = absl::Now();
  const absl::Time end = std::min(now + std::max(timeout, absl::ZeroDuration()), DeadlineOf(*ctx) - absl::Milliseconds(50));
  if (const int shard = ShardOf(*ctx, req->name()); allowed.ok() && shard >= 0) {
    // Another shard's operation: waited for there (the call holds no
    // thread here either).
    grpc::ServerUnaryReactor *r = ctx->DefaultReactor();
    // Answered there a little earlier than here, so the answer, not the
    // caller's deadline, ends the wait across the extra hop.
    auto there = std::make_shared<tir::v1::WaitOperationRequest>(*req);
    const absl::Duration left = end - now;
    const absl::Duration poll =
        std::max(absl::ZeroDuration(), left - std::clamp(left / 10, absl::Milliseconds(200), absl::Seconds(2)));
    there->mutable_timeout()->set_seconds(absl::ToInt64Seconds(poll));
    there->mutable_timeout()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(poll) % 1000000000));
    Forwarded(ctx, {shard}, &shards::Forwarder::Async::WaitOperation, static_cast<const tir::v1::WaitOperationRequest *>(there.get()), out, {},
              ClientKey(*ctx, identity))
        .later([this, r, there](grpc::Status s) { r->Finish(Done("WaitOperation", s)); });
    return r;
  }
  return waits_->Start(req->name(), end, ClientKey(*ctx, identity), out, allowed);
}

grpc::ServerWriteReactor<grpc::ByteBuffer> *CompilerServiceImpl::WatchOperation(grpc::CallbackServerContext *ctx,
                                                                             const grpc::ByteBuffer *request) {
  std::string identity;
  absl::Status allowed = auth_.Check(*ctx, "WatchOperation", &identity);
  tir::v1::WatchOperationRequest req;
  grpc::ByteBuffer copy(*request);
  if (allowed.ok() && !grpc::SerializationTraits<tir::v1::WatchOperationRequest>::Deserialize(&copy, &req).ok()) {
    allowed = MakeError(absl::StatusCode::kInvalidArgument, "MALFORMED_REQUEST",
                        "WatchOperation: the request is not a tir.v1.WatchOperationRequest");
  }
  if (const int shard = ShardOf(*ctx, req.name()); allowed.ok() && shard >= 0) {
    return new ForwardedWatch(*forwarder_, ctx, req.name(), shard, ClientKey(*ctx, identity),
                              [this](const grpc::Status &s) { Done("WatchOperation", s); });
  }
  return watches_->Start(ctx, req.name(), ClientKey(*ctx, identity), allowed);
}

grpc::Status CompilerServiceImpl::CancelOperation(grpc::ServerContext *ctx, const tir::v1::CancelOperationRequest *req,
                                                  tir::v1::Operation *out) {
  // Only its owner (the identity that asked for it) or an admin cancels it.
  if (const int shard = ShardOf(*ctx, req->name()); shard >= 0) {
    // Another shard's operation: cancelled there, where its owner is
    // checked (the caller is authenticated here first).
    if (absl::Status allowed = auth_.Check(*ctx, "CancelOperation"); !allowed.ok()) return Done("CancelOperation", allowed);
    return Done("CancelOperation", ForwardedNow(ctx, {shard}, &shards::Forwarder::Async::CancelOperation, req, out));
  }
  return Run(ctx, "CancelOperation", [&](const Caller &caller) {
    return Assign(c_->CancelOperation(req->name(), caller.identity, caller.admin), out);
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::GetKernel(grpc::CallbackServerContext *ctx,
                                                         const tir::v1::GetKernelRequest *req, tir::v1::KernelBundle *out) {
  return React(ctx, "GetKernel", [&](const Caller &caller) -> Answer {
    absl::StatusOr<tir::v1::KernelBundle> here = c_->GetKernel(req->name(), req->metadata_only());
    // Not stored here: the key's shard has it, if any does.
    absl::string_view key = req->name();
    if (absl::IsNotFound(here.status()) && absl::ConsumePrefix(&key, "kernels/")) {
      if (std::vector<int> shards = Shards(*ctx, key); !shards.empty()) {
        shards.pop_back();  // this shard answered already
        if (!shards.empty()) {
          return Forwarded(ctx, std::move(shards), &shards::Forwarder::Async::GetKernel, req, out,
                           [here] { return here.status(); }, caller.client);
        }
      }
    }
    return {Assign(std::move(here), out)};
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::LookupKernel(grpc::CallbackServerContext *ctx,
                                                            const tir::v1::LookupKernelRequest *req,
                                                            tir::v1::LookupKernelResponse *out) {
  return React(ctx, "LookupKernel", [&](const Caller &caller) -> Answer {
    absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> known = c_->LookupIfKnown(*req);
    if (!known.ok()) return {known.status()};
    if (*known) {
      *out = **std::move(known);
      return {absl::OkStatus()};
    }
    auto here = [this, req, out] { return Assign(c_->LookupKernel(*req), out); };
    if (!forwarder_ || forwarder_->Forwarded(*ctx)) return {absl::OkStatus(), here};
    return Keyed(ctx, &shards::Forwarder::Async::LookupKernel, req, out, here, caller.client);
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::ListKernels(grpc::CallbackServerContext *ctx,
                                                           const tir::v1::ListKernelsRequest *req,
                                                           tir::v1::ListKernelsResponse *out) {
  return React(ctx, "ListKernels", [&](const Caller &) -> Answer { return {Assign(c_->ListKernels(*req), out)}; });
}

grpc::Status CompilerServiceImpl::DeleteKernel(grpc::ServerContext *ctx, const tir::v1::DeleteKernelRequest *req,
                                               tir::v1::DeleteKernelResponse *out) {
  // Only the one identity that asked for it, or an admin, deletes a bundle
  // (a bundle other clients asked for too serves them as well).
  grpc::Status here = Run(ctx, "DeleteKernel", [&](const Caller &caller) {
    return Assign(c_->DeleteKernel(req->name(), caller.identity, caller.admin), out);
  });
  // Not stored here: deleted where the key's shard keeps it.
  absl::string_view key = req->name();
  if (here.error_code() == grpc::StatusCode::NOT_FOUND && absl::ConsumePrefix(&key, "kernels/")) {
    std::vector<int> shards = Shards(*ctx, key);
    if (!shards.empty()) shards.pop_back();
    if (!shards.empty()) {
      return Done("DeleteKernel", ForwardedNow(ctx, std::move(shards), &shards::Forwarder::Async::DeleteKernel, req, out));
    }
  }
  return here;
}

grpc::ServerUnaryReactor *CompilerServiceImpl::ListWorkers(grpc::CallbackServerContext *ctx,
                                                           const tir::v1::ListWorkersRequest *req,
                                                           tir::v1::ListWorkersResponse *out) {
  return React(ctx, "ListWorkers", [&](const Caller &) -> Answer {
    *out = c_->ListWorkers(req->arch());
    return {absl::OkStatus()};
  });
}

WorkerServiceImpl::WorkerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry)
    : c_(c),
      auth_(std::move(tokens)),
      requests_(prometheus::BuildCounter()
                    .Name("tir_worker_requests_total")
                    .Help("Worker API calls by method and status code")
                    .Register(registry)) {}

namespace {

// The worker session a call presents (metadata tir-worker-session).
std::string SessionOf(const grpc::ServerContextBase &ctx) {
  const auto &md = ctx.client_metadata();
  auto it = md.find("tir-worker-session");
  return it == md.end() ? "" : std::string(it->second.data(), std::min<size_t>(it->second.size(), 128));
}

}  // namespace

grpc::Status WorkerServiceImpl::Run(grpc::ServerContextBase *ctx, const char *method, const std::string *name,
                                    const std::function<absl::Status(const std::string &identity)> &handler) {
  std::string identity;
  absl::Status s = auth_.Check(*ctx, method, &identity);
  // Every call under a name but the registration presents the name's secret
  // (and its identity).
  if (s.ok() && name != nullptr) s = c_->CheckWorkerSession(*name, SessionOf(*ctx), identity);
  if (s.ok()) s = handler(identity);
  return Counted(requests_, method, s);
}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext *ctx, const tir::v1::RegisterWorkerRequest *req,
                                               tir::v1::RegisterWorkerResponse *out) {
  return Run(ctx, "RegisterWorker", nullptr,
             [&](const std::string &identity) { return Assign(c_->RegisterWorker(*req, SessionOf(*ctx), identity), out); });
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext *ctx, const tir::v1::HeartbeatRequest *req,
                                          tir::v1::HeartbeatResponse *out) {
  return Run(ctx, "Heartbeat", &req->name(), [&](const std::string &) { return Assign(c_->Heartbeat(*req), out); });
}

grpc::Status WorkerServiceImpl::LeaseWork(grpc::ServerContext *ctx, const tir::v1::LeaseWorkRequest *req,
                                          tir::v1::LeaseWorkResponse *out) {
  return Run(ctx, "LeaseWork", &req->name(),
             [&](const std::string &) { return Assign(c_->LeaseWork(*req, DeadlineOf(*ctx) - absl::Milliseconds(50)), out); });
}

grpc::Status WorkerServiceImpl::ReportResult(grpc::ServerContext *ctx, const tir::v1::ReportResultRequest *req,
                                             tir::v1::ReportResultResponse *out) {
  return Run(ctx, "ReportResult", &req->name(), [&](const std::string &) { return Assign(c_->ReportResult(*req), out); });
}

grpc::Status WorkerServiceImpl::Drain(grpc::ServerContext *ctx, const tir::v1::DrainRequest *req,
                                      tir::v1::DrainResponse *out) {
  return Run(ctx, "Drain", &req->name(), [&](const std::string &) { return Assign(c_->Drain(*req), out); });
}

grpc::Status WorkerServiceImpl::ReturnWork(grpc::ServerContext *ctx, const tir::v1::ReturnWorkRequest *req,
                                           tir::v1::ReturnWorkResponse *out) {
  return Run(ctx, "ReturnWork", &req->name(), [&](const std::string &) { return Assign(c_->ReturnWork(*req), out); });
}

}  // namespace tir::api
