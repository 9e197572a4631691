#include "server/api/services.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
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

CompilerServiceImpl::CompilerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry)
    : c_(c),
      auth_(std::move(tokens)),
      requests_(prometheus::BuildCounter()
                    .Name("tir_requests_total")
                    .Help("Client API calls by method and status code")
                    .Register(registry)),
      slow_(static_cast<int>(std::max(4u, std::thread::hardware_concurrency() * 2)), kSlowCalls),
      watches_(std::make_unique<WatchStreams>(c, [this](const absl::Status &s) { Done("WatchOperation", s); })),
      waits_(std::make_unique<OperationWaits>(c, [this](const absl::Status &s) { Done("WaitOperation", s); })) {}

grpc::Status CompilerServiceImpl::Done(const char *method, const absl::Status &s) { return Counted(requests_, method, s); }

grpc::Status CompilerServiceImpl::Run(grpc::ServerContextBase *ctx, const char *method,
                                      const std::function<absl::Status(const Caller &caller)> &handler) {
  Caller caller;
  absl::Status s = auth_.Check(*ctx, method, &caller.identity, &caller.admin);
  if (s.ok()) {
    caller.client = ClientOf(*ctx, caller.identity);
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
  caller.client = ClientOf(*ctx, caller.identity);
  const std::string &client = caller.client;
  Answer a = handler(caller);
  if (!a.slow) {
    r->Finish(Done(method, a.status));
    return r;
  }
  const absl::Status queued =
      slow_.Submit([this, r, method, call = std::move(a.slow)] { r->Finish(Done(method, call())); }, "slowCalls", client);
  if (!queued.ok()) r->Finish(Done(method, queued));
  return r;
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
    return {absl::OkStatus(), [this, client = caller.client, owner = caller.identity, req, out] {
              return Assign(c_->Compile(*req, client, owner), out);
            }};
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::GetOperation(grpc::CallbackServerContext *ctx,
                                                            const tir::v1::GetOperationRequest *req,
                                                            tir::v1::Operation *out) {
  return React(ctx, "GetOperation", [&](const Caller &) -> Answer { return {Assign(c_->GetOperation(req->name()), out)}; });
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
  return waits_->Start(req->name(), end, ClientOf(*ctx, identity), out, allowed);
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
  return watches_->Start(ctx, req.name(), ClientOf(*ctx, identity), allowed);
}

grpc::Status CompilerServiceImpl::CancelOperation(grpc::ServerContext *ctx, const tir::v1::CancelOperationRequest *req,
                                                  tir::v1::Operation *out) {
  // Only its owner (the identity that asked for it) or an admin cancels it.
  return Run(ctx, "CancelOperation", [&](const Caller &caller) {
    return Assign(c_->CancelOperation(req->name(), caller.identity, caller.admin), out);
  });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::GetKernel(grpc::CallbackServerContext *ctx,
                                                         const tir::v1::GetKernelRequest *req, tir::v1::KernelBundle *out) {
  return React(ctx, "GetKernel",
               [&](const Caller &) -> Answer { return {Assign(c_->GetKernel(req->name(), req->metadata_only()), out)}; });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::LookupKernel(grpc::CallbackServerContext *ctx,
                                                            const tir::v1::LookupKernelRequest *req,
                                                            tir::v1::LookupKernelResponse *out) {
  return React(ctx, "LookupKernel", [&](const Caller &) -> Answer {
    absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> known = c_->LookupIfKnown(*req);
    if (!known.ok()) return {known.status()};
    if (*known) {
      *out = **std::move(known);
      return {absl::OkStatus()};
    }
    return {absl::OkStatus(), [this, req, out] { return Assign(c_->LookupKernel(*req), out); }};
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
  return Run(ctx, "DeleteKernel", [&](const Caller &caller) {
    return Assign(c_->DeleteKernel(req->name(), caller.identity, caller.admin), out);
  });
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
