// The gRPC services of tir-coordinator over a Coordinator: the client API
// (tir.v1.CompilerService) and the worker API (tir.v1.WorkerService), with
// every call authorized (auth.h) by the helpers that run its handler, and
// counted by method and code.

#ifndef TIR_SERVER_API_SERVICES_H_
#define TIR_SERVER_API_SERVICES_H_

#include <functional>
#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "server/api/auth.h"
#include "server/api/operation_waits.h"
#include "server/api/watch_streams.h"
#include "server/coordinator/coordinator.h"
#include "server/common/work_queue.h"
#include "server/shards/forwarder.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::api {


// The calls that answer quickly (a cache hit, a read) run on gRPC's callback
// threads, with no thread of their own per call, so a thousand clients on
// cache hits need no thousand threads; a Compile or Lookup that must parse
// or plan goes to a bounded pool (`kSlowCalls` waiting at most, then
// LIMIT_EXCEEDED). Writes stay synchronous. The long polls hold no thread:
// WaitOperation calls are callback reactors a poller answers
// (operation_waits.h), WatchOperation streams callback reactors over
// serialized bytes (watch_streams.h), one copy of a bundle however many
// streams send it.
using CompilerServiceBase = tir::v1::CompilerService::WithCallbackMethod_Compile<
    tir::v1::CompilerService::WithCallbackMethod_GetOperation<tir::v1::CompilerService::WithCallbackMethod_GetKernel<
        tir::v1::CompilerService::WithCallbackMethod_LookupKernel<tir::v1::CompilerService::WithCallbackMethod_ListKernels<
            tir::v1::CompilerService::WithCallbackMethod_ListWorkers<tir::v1::CompilerService::WithCallbackMethod_WaitOperation<
                tir::v1::CompilerService::WithRawCallbackMethod_WatchOperation<tir::v1::CompilerService::Service>>>>>>>>;

class CompilerServiceImpl final : public CompilerServiceBase {
 public:
  // `forwarder`: in a sharded fleet, where calls that belong to another
  // shard go (shards/forwarder.h); null for a coordinator alone.
  CompilerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry,
                      std::shared_ptr<shards::Forwarder> forwarder = nullptr);
  grpc::ServerUnaryReactor *Compile(grpc::CallbackServerContext *, const tir::v1::CompileRequest *,
                                    tir::v1::Operation *) override;
  grpc::ServerUnaryReactor *GetOperation(grpc::CallbackServerContext *, const tir::v1::GetOperationRequest *,
                                         tir::v1::Operation *) override;
  grpc::ServerUnaryReactor *WaitOperation(grpc::CallbackServerContext *, const tir::v1::WaitOperationRequest *,
                                          tir::v1::Operation *) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer> *WatchOperation(grpc::CallbackServerContext *,
                                                            const grpc::ByteBuffer *request) override;
  grpc::Status CancelOperation(grpc::ServerContext *, const tir::v1::CancelOperationRequest *,
                               tir::v1::Operation *) override;
  grpc::ServerUnaryReactor *GetKernel(grpc::CallbackServerContext *, const tir::v1::GetKernelRequest *,
                                      tir::v1::KernelBundle *) override;
  grpc::ServerUnaryReactor *LookupKernel(grpc::CallbackServerContext *, const tir::v1::LookupKernelRequest *,
                                         tir::v1::LookupKernelResponse *) override;
  grpc::ServerUnaryReactor *ListKernels(grpc::CallbackServerContext *, const tir::v1::ListKernelsRequest *,
                                        tir::v1::ListKernelsResponse *) override;
  grpc::Status DeleteKernel(grpc::ServerContext *, const tir::v1::DeleteKernelRequest *,
                            tir::v1::DeleteKernelResponse *) override;
  grpc::ServerUnaryReactor *ListWorkers(grpc::CallbackServerContext *, const tir::v1::ListWorkersRequest *,
                                        tir::v1::ListWorkersResponse *) override;

  // Calls that wait for the slow-call pool at most.
  static constexpr size_t kSlowCalls = 4096;
  // Cancels the calls forwarded to other shards (before the server shuts
  // down: each holds its caller's call open).
  void StopForwarding();
  // Returns once every call handed to the pool has finished (before the
  // server goes away).
  void DrainSlowCalls() {
    slow_.Drain();
    watches_->Stop();
    waits_->Stop();
  }

 private:
  // What a callback handler answers: a status now, or a call for the
  // slow-call pool (LIMIT_EXCEEDED at once when kSlowCalls wait already).
  struct Answer {
    absl::Status status;
    std::function<absl::Status()> slow;
    // Or an answer that comes later (a call forwarded to another shard):
    // started with the function that finishes the call.
    std::function<void(std::function<void(grpc::Status)>)> later;
  };
  // Who makes an authorized call: who it counts against for limits
  // (ClientOf), its authenticated identity ("" for a shared token or an
  // open service: what it owns) and whether that is an admin's.
  struct Caller {
    std::string client;
    std::string identity;
    bool admin = false;
  };
  // Authorizes `method`, then answers with `handler` (counted), given its
  // caller.
  grpc::ServerUnaryReactor *React(grpc::CallbackServerContext *ctx, const char *method,
                                  const std::function<Answer(const Caller &caller)> &handler);
  // The same for a synchronous handler.
  grpc::Status Run(grpc::ServerContextBase *ctx, const char *method,
                   const std::function<absl::Status(const Caller &caller)> &handler);
  grpc::Status Done(const char *method, const absl::Status &s);
  grpc::Status Done(const char *method, const grpc::Status &s);
  // In a sharded fleet: the shards a call for `key` goes to, in order,
  // ending with this one (shards::Forwarder::Route); {} when the call is
  // answered here (no shards, or a call forwarded to this shard already).
  std::vector<int> Shards(const grpc::ServerContextBase &ctx, absl::string_view key) const;
  // The shard another shard's operation lives on (-1: this one's, or not
  // sharded, or a call forwarded here already).
  int ShardOf(const grpc::ServerContextBase &ctx, const std::string &operation) const;
  // ClientOf, or for a call another shard forwarded, the client it names.
  std::string ClientKey(const grpc::ServerContextBase &ctx, const std::string &identity) const;
  // Forwards a keyed call to `shards` in turn (shards::TryShards), with the
  // caller's authorization; `local` answers on the slow-call pool when the
  // turn comes to this shard.
  template <typename Req, typename Resp>
  using AsyncMethod = void (shards::Forwarder::Async::*)(grpc::ClientContext *, const Req *, Resp *,
                                                         std::function<void(grpc::Status)>);
  template <typename Req, typename Resp>
  Answer Forwarded(grpc::ServerContextBase *ctx, std::vector<int> shards, AsyncMethod<Req, Resp> method,
                   const Req *req, Resp *out, std::function<absl::Status()> local, const std::string &client);
  // One forwarded call to `shard` (again, a little later, while the shard
  // refuses connections and `wait` says to wait for it).
  template <typename Req, typename Resp>
  void ForwardOnce(grpc::ServerContextBase *ctx, int shard, AsyncMethod<Req, Resp> method, const Req *req, Resp *out,
                   const std::string &client, bool wait, std::function<void(grpc::Status)> done);
  // A call keyed by its graph (Compile, LookupKernel) in a sharded fleet:
  // keyed (parsed) on the slow-call pool, then answered by the key's shard,
  // `here` when that is this one.
  template <typename Req, typename Resp>
  Answer Keyed(grpc::ServerContextBase *ctx, AsyncMethod<Req, Resp> method, const Req *req, Resp *out,
               std::function<absl::Status()> here, const std::string &client);
  // The same from a synchronous handler: waits for the answer.
  template <typename Req, typename Resp>
  grpc::Status ForwardedNow(grpc::ServerContextBase *ctx, std::vector<int> shards, AsyncMethod<Req, Resp> method,
                            const Req *req, Resp *out);
  coordinator::Coordinator *c_;
  std::shared_ptr<shards::Forwarder> forwarder_;
  Authenticator auth_;
  prometheus::Family<prometheus::Counter> &requests_;
  common::WorkPool slow_;
  std::unique_ptr<WatchStreams> watches_;
  std::unique_ptr<OperationWaits> waits_;
};

class WorkerServiceImpl final : public tir::v1::WorkerService::Service {
 public:
  WorkerServiceImpl(coordinator::Coordinator *c, Tokens tokens, prometheus::Registry &registry);
  grpc::Status RegisterWorker(grpc::ServerContext *, const tir::v1::RegisterWorkerRequest *,
                              tir::v1::RegisterWorkerResponse *) override;
  grpc::Status Heartbeat(grpc::ServerContext *, const tir::v1::HeartbeatRequest *, tir::v1::HeartbeatResponse *) override;
  grpc::Status LeaseWork(grpc::ServerContext *, const tir::v1::LeaseWorkRequest *, tir::v1::LeaseWorkResponse *) override;
  grpc::Status ReportResult(grpc::ServerContext *, const tir::v1::ReportResultRequest *,
                            tir::v1::ReportResultResponse *) override;
  grpc::Status Drain(grpc::ServerContext *, const tir::v1::DrainRequest *, tir::v1::DrainResponse *) override;
  grpc::Status ReturnWork(grpc::ServerContext *, const tir::v1::ReturnWorkRequest *,
                          tir::v1::ReturnWorkResponse *) override;

 private:
  // Authorizes `method`, then answers with `handler` (counted).
  // `name`: the worker the call is made under (null for RegisterWorker),
  // whose session (and identity, for a worker with credentials of its own)
  // the call must present. `handler` is given the call's identity.
  grpc::Status Run(grpc::ServerContextBase *ctx, const char *method, const std::string *name,
                   const std::function<absl::Status(const std::string &identity)> &handler);
  coordinator::Coordinator *c_;
  Authenticator auth_;
  prometheus::Family<prometheus::Counter> &requests_;
};

}  // namespace tir::api

#endif  // TIR_SERVER_API_SERVICES_H_
