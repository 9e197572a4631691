#include "server/service/services.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "server/service/rpc_status.h"

namespace tir::service {
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

// Compares a presented credential with the expected one in time that depends
// only on their lengths, not on where they first differ.
bool ConstantTimeEqual(absl::string_view got, absl::string_view want) {
  unsigned char diff = got.size() == want.size() ? 0 : 1;
  for (size_t k = 0; k < got.size(); ++k) diff |= static_cast<unsigned char>(got[k] ^ want[k % std::max<size_t>(1, want.size())]);
  return diff == 0 && !want.empty();
}

}  // namespace

absl::Status CheckToken(const grpc::ServerContextBase &context, const std::string &token) {
  if (token.empty()) return absl::OkStatus();
  const auto &md = context.client_metadata();
  auto it = md.find("authorization");
  if (it != md.end() && ConstantTimeEqual(absl::string_view(it->second.data(), it->second.size()), "Bearer " + token)) {
    return absl::OkStatus();
  }
  return MakeError(absl::StatusCode::kUnauthenticated, "UNAUTHENTICATED",
                   it == md.end() ? "this call needs a token (authorization: Bearer <token>)" : "wrong token");
}

absl::Status CheckReadToken(const grpc::ServerContextBase &context, const Tokens &tokens) {
  absl::Status s = CheckToken(context, tokens.client);
  if (s.ok() || tokens.read.empty() || !CheckToken(context, tokens.read).ok()) return s;
  return absl::OkStatus();
}

std::string ClientOf(const grpc::ServerContextBase &context) {
  const auto &md = context.client_metadata();
  auto it = md.find("tir-client");
  if (it != md.end() && !it->second.empty()) return std::string(it->second.data(), std::min<size_t>(it->second.size(), 128));
  std::string peer = context.peer();  // "ipv4:127.0.0.1:5555", "ipv6:[::1]:5555", "unix:..."
  const size_t colon = peer.rfind(':');
  if (colon != std::string::npos && colon > peer.find(':')) peer.resize(colon);
  return peer;
}

CompilerServiceImpl::CompilerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry)
    : c_(c),
      tokens_(std::move(tokens)),
      requests_(prometheus::BuildCounter()
                    .Name("tir_requests_total")
                    .Help("Client API calls by method and status code")
                    .Register(registry)),
      slow_(static_cast<int>(std::max(4u, std::thread::hardware_concurrency() * 2)), kSlowCalls) {}

grpc::Status CompilerServiceImpl::Done(const char *method, const absl::Status &s) {
  requests_.Add({{"method", method}, {"code", absl::StatusCodeToString(s.code())}}).Increment();
  return ToGrpc(s);
}

grpc::ServerUnaryReactor *CompilerServiceImpl::Finish(grpc::CallbackServerContext *ctx, const char *method,
                                                      const absl::Status &s) {
  grpc::ServerUnaryReactor *r = ctx->DefaultReactor();
  r->Finish(Done(method, s));
  return r;
}

grpc::ServerUnaryReactor *CompilerServiceImpl::Slow(grpc::CallbackServerContext *ctx, const char *method,
                                                    std::function<absl::Status()> call) {
  grpc::ServerUnaryReactor *r = ctx->DefaultReactor();
  const absl::Status queued = slow_.Submit([this, r, method, call = std::move(call)] { r->Finish(Done(method, call())); },
                                           "slowCalls");
  if (!queued.ok()) r->Finish(Done(method, queued));
  return r;
}

grpc::ServerUnaryReactor *CompilerServiceImpl::Compile(grpc::CallbackServerContext *ctx,
                                                       const tir::v1::CompileRequest *req, tir::v1::Operation *out) {
  absl::Status s = CheckToken(*ctx, tokens_.client);
  if (!s.ok()) return Finish(ctx, "Compile", s);
  // A cache hit answers here; anything else (parse, plan, join a job) on
  // the slow-call pool.
  absl::StatusOr<std::optional<tir::v1::Operation>> hit = c_->CompileIfCached(*req);
  if (!hit.ok()) return Finish(ctx, "Compile", hit.status());
  if (*hit) {
    *out = **std::move(hit);
    return Finish(ctx, "Compile", absl::OkStatus());
  }
  return Slow(ctx, "Compile", [this, ctx, req, out] { return Assign(c_->Compile(*req, ClientOf(*ctx)), out); });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::GetOperation(grpc::CallbackServerContext *ctx,
                                                            const tir::v1::GetOperationRequest *req,
                                                            tir::v1::Operation *out) {
  absl::Status s = CheckReadToken(*ctx, tokens_);
  if (s.ok()) s = Assign(c_->GetOperation(req->name()), out);
  return Finish(ctx, "GetOperation", s);
}

grpc::Status CompilerServiceImpl::WaitOperation(grpc::ServerContext *ctx, const tir::v1::WaitOperationRequest *req,
                                                tir::v1::Operation *out) {
  absl::Duration timeout = req->has_timeout() ? absl::Seconds(req->timeout().seconds()) + absl::Nanoseconds(req->timeout().nanos())
                                              : absl::Minutes(10);
  // Answer a little before the caller's deadline, with the operation as it is.
  timeout = std::min(timeout, DeadlineOf(*ctx) - absl::Now() - absl::Milliseconds(50));
  absl::Status s = CheckReadToken(*ctx, tokens_);
  if (s.ok()) s = Assign(c_->WaitOperation(req->name(), std::max(timeout, absl::ZeroDuration())), out);
  return Done("WaitOperation", s);
}

grpc::Status CompilerServiceImpl::WatchOperation(grpc::ServerContext *ctx, const tir::v1::WatchOperationRequest *req,
                                                 grpc::ServerWriter<tir::v1::Operation> *writer) {
  if (absl::Status s = CheckReadToken(*ctx, tokens_); !s.ok()) return Done("WatchOperation", s);
  int64_t version = -1;
  for (;;) {
    absl::StatusOr<tir::v1::Operation> op = c_->WaitOperation(req->name(), absl::Seconds(1), &version);
    if (!op.ok()) return Done("WatchOperation", op.status());
    if (!writer->Write(*op) || op->done() || ctx->IsCancelled()) break;
  }
  return Done("WatchOperation", absl::OkStatus());
}

grpc::Status CompilerServiceImpl::CancelOperation(grpc::ServerContext *ctx, const tir::v1::CancelOperationRequest *req,
                                                  tir::v1::Operation *out) {
  absl::Status s = CheckToken(*ctx, tokens_.client);
  if (s.ok()) s = Assign(c_->CancelOperation(req->name()), out);
  return Done("CancelOperation", s);
}

grpc::ServerUnaryReactor *CompilerServiceImpl::GetKernel(grpc::CallbackServerContext *ctx,
                                                         const tir::v1::GetKernelRequest *req, tir::v1::KernelBundle *out) {
  absl::Status s = CheckReadToken(*ctx, tokens_);
  if (s.ok()) s = Assign(c_->GetKernel(req->name(), req->metadata_only()), out);
  return Finish(ctx, "GetKernel", s);
}

grpc::ServerUnaryReactor *CompilerServiceImpl::LookupKernel(grpc::CallbackServerContext *ctx,
                                                            const tir::v1::LookupKernelRequest *req,
                                                            tir::v1::LookupKernelResponse *out) {
  absl::Status s = CheckReadToken(*ctx, tokens_);
  if (!s.ok()) return Finish(ctx, "LookupKernel", s);
  absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> known = c_->LookupIfKnown(*req);
  if (!known.ok()) return Finish(ctx, "LookupKernel", known.status());
  if (*known) {
    *out = **std::move(known);
    return Finish(ctx, "LookupKernel", absl::OkStatus());
  }
  return Slow(ctx, "LookupKernel", [this, req, out] { return Assign(c_->LookupKernel(*req), out); });
}

grpc::ServerUnaryReactor *CompilerServiceImpl::ListKernels(grpc::CallbackServerContext *ctx,
                                                           const tir::v1::ListKernelsRequest *req,
                                                           tir::v1::ListKernelsResponse *out) {
  absl::Status s = CheckReadToken(*ctx, tokens_);
  if (s.ok()) s = Assign(c_->ListKernels(*req), out);
  return Finish(ctx, "ListKernels", s);
}

grpc::Status CompilerServiceImpl::DeleteKernel(grpc::ServerContext *ctx, const tir::v1::DeleteKernelRequest *req,
                                               tir::v1::DeleteKernelResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.client);
  if (s.ok()) s = Assign(c_->DeleteKernel(req->name()), out);
  return Done("DeleteKernel", s);
}

grpc::ServerUnaryReactor *CompilerServiceImpl::ListWorkers(grpc::CallbackServerContext *ctx,
                                                           const tir::v1::ListWorkersRequest *req,
                                                           tir::v1::ListWorkersResponse *out) {
  absl::Status s = CheckReadToken(*ctx, tokens_);
  if (s.ok()) *out = c_->ListWorkers(req->arch());
  return Finish(ctx, "ListWorkers", s);
}

WorkerServiceImpl::WorkerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry)
    : c_(c),
      tokens_(std::move(tokens)),
      requests_(prometheus::BuildCounter()
                    .Name("tir_worker_requests_total")
                    .Help("Worker API calls by method and status code")
                    .Register(registry)) {}

grpc::Status WorkerServiceImpl::Done(const char *method, const absl::Status &s) {
  requests_.Add({{"method", method}, {"code", absl::StatusCodeToString(s.code())}}).Increment();
  return ToGrpc(s);
}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext *ctx, const tir::v1::RegisterWorkerRequest *req,
                                               tir::v1::RegisterWorkerResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.worker);
  if (s.ok()) s = Assign(c_->RegisterWorker(*req), out);
  return Done("RegisterWorker", s);
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext *ctx, const tir::v1::HeartbeatRequest *req,
                                          tir::v1::HeartbeatResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.worker);
  if (s.ok()) s = Assign(c_->Heartbeat(*req), out);
  return Done("Heartbeat", s);
}

grpc::Status WorkerServiceImpl::LeaseWork(grpc::ServerContext *ctx, const tir::v1::LeaseWorkRequest *req,
                                          tir::v1::LeaseWorkResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.worker);
  if (s.ok()) s = Assign(c_->LeaseWork(*req, DeadlineOf(*ctx) - absl::Milliseconds(50)), out);
  return Done("LeaseWork", s);
}

grpc::Status WorkerServiceImpl::ReportResult(grpc::ServerContext *ctx, const tir::v1::ReportResultRequest *req,
                                             tir::v1::ReportResultResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.worker);
  if (s.ok()) s = Assign(c_->ReportResult(*req), out);
  return Done("ReportResult", s);
}

grpc::Status WorkerServiceImpl::Drain(grpc::ServerContext *ctx, const tir::v1::DrainRequest *req,
                                      tir::v1::DrainResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.worker);
  if (s.ok()) s = Assign(c_->Drain(*req), out);
  return Done("Drain", s);
}

grpc::Status WorkerServiceImpl::ReturnWork(grpc::ServerContext *ctx, const tir::v1::ReturnWorkRequest *req,
                                           tir::v1::ReturnWorkResponse *out) {
  absl::Status s = CheckToken(*ctx, tokens_.worker);
  if (s.ok()) s = Assign(c_->ReturnWork(*req), out);
  return Done("ReturnWork", s);
}

}  // namespace tir::service
