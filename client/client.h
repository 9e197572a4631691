// tir::Client: the C++ client of a tir coordinator (tir.v1.CompilerService).
//
// Every call carries a deadline; calls that are safe to repeat (reads, and
// Compile, which is idempotent by its request_id) are retried with backoff
// when the coordinator is UNAVAILABLE; nothing else is retried. Errors are
// absl::Status with the coordinator's canonical code and stable reason
// (tir::ReasonOf), e.g. INVALID_GRAPH, UNKNOWN_ARCH, UNAUTHENTICATED.
//
// Usage:
//
//   tir::ClientOptions options;
//   options.address = "tir.internal:7070";
//   auto client = tir::Client::Connect(options);
//   tir::v1::CompileOptions o;
//   o.set_target_arch("sm_90a");
//   absl::StatusOr<tir::v1::Operation> op = (*client)->Compile(GraphSourceFromText(mlir), o);
//   op = (*client)->Wait(op->name(), absl::Minutes(20));
//   if (op.ok() && op->has_response()) {
//     const tir::v1::KernelBundle &bundle = op->response();  // cubins + launch rules
//   }

#ifndef TIR_CLIENT_CLIENT_H_
#define TIR_CLIENT_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "tir/v1/compiler_service.grpc.pb.h"

namespace tir {

struct ClientOptions {
  // "host:port" of the coordinator.
  std::string address;
  // Sent as "authorization: Bearer <token>" when not empty.
  std::string token;
  // Deadline of one call (Wait and Watch use their own timeouts on top).
  absl::Duration call_timeout = absl::Seconds(30);
  // Attempts of a retryable call while the coordinator is UNAVAILABLE
  // (gRPC's retry policy: at most 5; every call but DeleteKernel and
  // WatchOperation), the first retry at most `initial_backoff` later, each
  // next one up to twice as late (gRPC draws each delay at random below it).
  int max_attempts = 4;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // PEM root certificates for TLS ("" for a plaintext channel).
  std::string tls_root_certs;
  // Largest message accepted (bundles carry binaries).
  int max_message_bytes = 64 << 20;
  // The coordinator's bundle key: when not empty, every bundle answered
  // (operations, GetKernel, Lookup, ListKernels) is checked against its
  // signature before it is returned. Errors: BUNDLE_UNSIGNED,
  // BUNDLE_KEY_MISMATCH, BUNDLE_SIGNATURE_INVALID (client/bundle_signature.h).
  std::string bundle_key;
  // Sent as "tir-client" metadata: a label for logs. The coordinator counts
  // jobs (maxJobsPerClient) and scopes request ids by the identity of the
  // caller's credential (its own token from credentialsFile), else by its
  // address: neither is the caller's to choose.
  std::string client_name;
};

// A graph in tir's or TensorIR's MLIR text form.
// The channel's service config that retries the client's calls (empty for
// a single attempt): RetryServiceConfig(options.max_attempts,
// options.initial_backoff).
std::string RetryServiceConfig(int max_attempts, absl::Duration initial_backoff);

tir::v1::GraphSource GraphSourceFromText(const std::string &mlir_text);

// Sizes for a graph with dynamic dims: graph input index -> its full shape
// (an index input: {its value}). They become CompileOptions.shape_hints.
using Shapes = std::map<uint32_t, std::vector<int64_t>>;

class Client {
 public:
  // Creates the channel (connecting lazily).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions &options);
  // Over an existing channel (in-process services, tests).
  Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options);

  // Submits a graph; the request gets a fresh request_id, so the retries of
  // this call never start a second job.
  absl::StatusOr<tir::v1::Operation> Compile(const tir::v1::GraphSource &graph, const tir::v1::CompileOptions &options);
  absl::StatusOr<tir::v1::Operation> Compile(tir::v1::CompileRequest request);
  // For a graph with dynamic dims, at `shapes` (replacing options.shape_hints):
  // the bundle is that shape's bucket's, served sized for the shape once its
  // kernels are verified there (a first-time shape waits for that check).
  absl::StatusOr<tir::v1::Operation> Compile(const tir::v1::GraphSource &graph, tir::v1::CompileOptions options,
                                             const Shapes &shapes);
  absl::StatusOr<tir::v1::Operation> GetOperation(const std::string &name);
  // Returns once the operation is done or `timeout` passed (the operation as
  // it is then; check done()). A coordinator that does not answer costs the
  // timeout and the time a long poll's answer is allowed to come back in (a
  // tenth of the poll, 1 to 10 s), never past set_deadline's deadline.
  absl::StatusOr<tir::v1::Operation> Wait(const std::string &name, absl::Duration timeout);
  // Calls `on_progress` with each state of the operation until it is done or
  // `timeout` passes; returns the last state.
  absl::StatusOr<tir::v1::Operation> Watch(const std::string &name, absl::Duration timeout,
                                           const std::function<void(const tir::v1::Operation &)> &on_progress);
  absl::StatusOr<tir::v1::Operation> Cancel(const std::string &name);
  absl::StatusOr<tir::v1::KernelBundle> GetKernel(const std::string &key_or_name, bool metadata_only = false);
  absl::StatusOr<tir::v1::LookupKernelResponse> Lookup(const tir::v1::GraphSource &graph,
                                                       const tir::v1::CompileOptions &options);
  // Finds the bucket's bundle of `shapes` (shape_verified: sized for them).
  absl::StatusOr<tir::v1::LookupKernelResponse> Lookup(const tir::v1::GraphSource &graph,
                                                       tir::v1::CompileOptions options, const Shapes &shapes);
  absl::StatusOr<tir::v1::ListKernelsResponse> ListKernels(uint32_t page_size, const std::string &page_token,
                                                           const std::string &arch = "");
  absl::StatusOr<bool> DeleteKernel(const std::string &key_or_name);
  absl::StatusOr<tir::v1::ListWorkersResponse> ListWorkers(const std::string &arch = "");

  // Every later call of this client ends by `deadline` at the latest,
  // connecting included (a command's overall timeout): a coordinator that
  // accepts and never answers costs no more. InfiniteFuture: each call's own
  // timeout alone.
  void set_deadline(absl::Time deadline) { deadline_ = deadline; }
  absl::Time deadline() const { return deadline_; }

 private:
  template <typename Req, typename Resp, typename Fn>
  absl::Status Call(Fn fn, const Req &req, Resp *resp, absl::Duration timeout);
  void Authorize(grpc::ClientContext &ctx) const;
  // The bundle key's check of what an answer carries (OK without a key).
  absl::Status Check(const tir::v1::KernelBundle &bundle) const;
  absl::Status Check(const tir::v1::Operation &op) const;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tir::v1::CompilerService::Stub> stub_;
  ClientOptions options_;
  absl::Time deadline_ = absl::InfiniteFuture();
};

// grpc::Status -> absl::Status with the reason from tir.v1.Error details.
absl::Status FromGrpc(const grpc::Status &status);

}  // namespace tir

#endif  // TIR_CLIENT_CLIENT_H_
