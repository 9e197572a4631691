#include "client/client.h"

#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/bundle_signature.h"
#include "compiler/support/status.h"
#include "tir/v1/error.pb.h"

namespace tir {
namespace {

std::string NewRequestId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat("req-", absl::Hex(rng(), absl::kZeroPad16), absl::Hex(rng(), absl::kZeroPad16));
}

std::string KernelName(const std::string &key_or_name) {
  return absl::StartsWith(key_or_name, "kernels/") ? key_or_name : "kernels/" + key_or_name;
}

}  // namespace

std::string RetryServiceConfig(int max_attempts, absl::Duration initial_backoff) {
  // gRPC retries at most 5 attempts.
  const int attempts = std::min(max_attempts, 5);
  if (attempts < 2) return "";
  // Every call but DeleteKernel (a write that is not idempotent) and
  // WatchOperation (a stream; the watcher polls again): Compile carries a
  // request id, so a retried one joins the operation it started.
  std::string names;
  for (const char *m : {"Compile", "GetOperation", "WaitOperation", "CancelOperation", "GetKernel", "LookupKernel",
                        "ListKernels", "ListWorkers"}) {
    absl::StrAppend(&names, names.empty() ? "" : ",", R"({"service":"tir.v1.CompilerService","method":")", m, R"("})");
  }
  return absl::StrCat(R"({"methodConfig":[{"name":[)", names, R"(],"retryPolicy":{"maxAttempts":)", attempts,
                      R"(,"initialBackoff":")", absl::ToDoubleSeconds(initial_backoff),
                      R"(s","maxBackoff":"10s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})");
}

absl::Status FromGrpc(const grpc::Status &status) {
  if (status.ok()) return absl::OkStatus();
  tir::v1::Error e;
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  if (!status.error_details().empty() && e.ParseFromString(status.error_details()) && !e.reason().empty()) {
    return MakeError(code, e.reason(), e.message());
  }
  // From gRPC itself (deadline, connection, message size): the code names it.
  return MakeError(code, ReasonOf(absl::Status(code, "")), status.error_message());
}

tir::v1::GraphSource GraphSourceFromText(const std::string &mlir_text) {
  tir::v1::GraphSource s;
  s.set_mlir_text(mlir_text);
  return s;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions &options) {
  if (options.address.empty()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", "no address");
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // Calls are retried by gRPC's retry policy while the coordinator is
  // UNAVAILABLE; a lost connection is tried again soon, not after the
  // default second of reconnect backoff.
  const std::string retry = RetryServiceConfig(options.max_attempts, options.initial_backoff);
  if (!retry.empty()) {
    args.SetServiceConfigJSON(retry);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  }
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(absl::ToInt64Milliseconds(options.initial_backoff)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(absl::ToInt64Milliseconds(options.initial_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10000);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_root_certs.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs;
    creds = grpc::SslCredentials(ssl);
  }
  return std::make_unique<Client>(grpc::CreateCustomChannel(options.address, creds, args), options);
}

Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options)
    : channel_(std::move(channel)), stub_(tir::v1::CompilerService::NewStub(channel_)), options_(std::move(options)) {}

void Client::Authorize(grpc::ClientContext &ctx) const {
  if (!options_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.token);
  if (!options_.client_name.empty()) ctx.AddMetadata("tir-client", options_.client_name);
}

absl::Status Client::Check(const tir::v1::KernelBundle &bundle) const {
  return options_.bundle_key.empty() ? absl::OkStatus() : CheckBundleSignature(bundle, options_.bundle_key);
}

absl::Status Client::Check(const tir::v1::Operation &op) const {
  return op.has_response() ? Check(op.response()) : absl::OkStatus();
}

template <typename Req, typename Resp, typename Fn>
absl::Status Client::Call(Fn fn, const Req &req, Resp *resp, absl::Duration timeout) {
  // One call; gRPC retries it under the channel's retry policy.
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(std::min(absl::Now() + timeout, deadline_)));
  Authorize(ctx);
  return FromGrpc((stub_.get()->*fn)(&ctx, req, resp));
}

absl::StatusOr<tir::v1::Operation> Client::Compile(const tir::v1::GraphSource &graph,
                                                   const tir::v1::CompileOptions &options) {
  tir::v1::CompileRequest r;
  *r.mutable_graph() = graph;
  *r.mutable_options() = options;
  return Compile(std::move(r));
}

namespace {
void SetShapes(tir::v1::CompileOptions &options, const Shapes &shapes) {
  options.clear_shape_hints();
  for (const auto &[input, shape] : shapes) {
    tir::v1::ShapeHint *h = options.add_shape_hints();
    h->set_input(input);
    for (int64_t d : shape) h->add_shape(d);
  }
}
}  // namespace

absl::StatusOr<tir::v1::Operation> Client::Compile(const tir::v1::GraphSource &graph, tir::v1::CompileOptions options,
                                                   const Shapes &shapes) {
  SetShapes(options, shapes);
  return Compile(graph, options);
}

absl::StatusOr<tir::v1::LookupKernelResponse> Client::Lookup(const tir::v1::GraphSource &graph,
                                                             tir::v1::CompileOptions options, const Shapes &shapes) {
  SetShapes(options, shapes);
  return Lookup(graph, options);
}

absl::StatusOr<tir::v1::Operation> Client::Compile(tir::v1::CompileRequest request) {
  if (request.request_id().empty()) request.set_request_id(NewRequestId());
  tir::v1::Operation op;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::Compile, request, &op, options_.call_timeout));
  TIR_RETURN_IF_ERROR(Check(op));
  return op;
}

absl::StatusOr<tir::v1::Operation> Client::GetOperation(const std::string &name) {
  tir::v1::GetOperationRequest r;
  r.set_name(name);
  tir::v1::Operation op;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::GetOperation, r, &op, options_.call_timeout));
  TIR_RETURN_IF_ERROR(Check(op));
  return op;
}

absl::StatusOr<tir::v1::Operation> Client::Wait(const std::string &name, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  // The key the operation answered for first: a later answer for another
  // key (a coordinator that reused the name) is an error, not a result.
  std::string key;
  for (;;) {
    // Long polls of at most a minute, so a proxy's idle timeout never cuts
    // one. The coordinator answers at the time asked; when the client's
    // deadline comes first it is asked to answer a little before it (a
    // tenth of what is left, at most a second), so its answer, not the
    // deadline, ends the wait. The call itself allows the answer some time
    // to come back (a tenth of the poll, 1 to 10 s), within the deadline.
    const absl::Time now = absl::Now();
    const absl::Duration hard = deadline_ - now;
    const absl::Duration margin = std::max(absl::ZeroDuration(), std::min(hard / 10, absl::Seconds(1)));
    const absl::Duration poll =
        std::max(absl::ZeroDuration(), std::min({end - now, absl::Minutes(1), hard - margin}));
    tir::v1::WaitOperationRequest r;
    r.set_name(name);
    r.mutable_timeout()->set_seconds(absl::ToInt64Seconds(poll));
    r.mutable_timeout()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(poll) % 1000000000));
    tir::v1::Operation op;
    TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::WaitOperation, r, &op,
                             poll + std::clamp(poll / 10, absl::Seconds(1), absl::Seconds(10))));
    const std::string &got = op.metadata().key();
    if (key.empty()) key = got;
    if (!got.empty() && got != key) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "OPERATION_REPLACED",
                       absl::StrCat(name, " answered for key ", got, " after answering for ", key,
                                    "; the coordinator lost the operation (compile again)"));
    }
    if (op.done() && op.has_response() && !key.empty() && op.response().key() != key) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "OPERATION_REPLACED",
                       absl::StrCat(name, " finished with the bundle of key ", op.response().key(), ", not ", key));
    }
    TIR_RETURN_IF_ERROR(Check(op));
    if (op.done() || absl::Now() >= end || absl::Now() >= deadline_ - margin) return op;
  }
}

absl::StatusOr<tir::v1::Operation> Client::Watch(const std::string &name, absl::Duration timeout,
                                                 const std::function<void(const tir::v1::Operation &)> &on_progress) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(std::min(absl::Now() + timeout, deadline_)));
  Authorize(ctx);
  tir::v1::WatchOperationRequest r;
  r.set_name(name);
  auto reader = stub_->WatchOperation(&ctx, r);
  tir::v1::Operation op, last;
  bool any = false;
  absl::Status checked = absl::OkStatus();
  while (reader->Read(&op)) {
    checked = Check(op);
    if (!checked.ok()) {
      ctx.TryCancel();
      break;
    }
    any = true;
    last = op;
    if (on_progress) on_progress(op);
    if (op.done()) {
      ctx.TryCancel();
      break;
    }
  }
  const grpc::Status s = reader->Finish();
  TIR_RETURN_IF_ERROR(checked);
  if (any && (last.done() || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) return last;
  TIR_RETURN_IF_ERROR(FromGrpc(s));
  return last;
}

absl::StatusOr<tir::v1::Operation> Client::Cancel(const std::string &name) {
  tir::v1::CancelOperationRequest r;
  r.set_name(name);
  tir::v1::Operation op;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::CancelOperation, r, &op, options_.call_timeout));
  return op;
}

absl::StatusOr<tir::v1::KernelBundle> Client::GetKernel(const std::string &key_or_name, bool metadata_only) {
  tir::v1::GetKernelRequest r;
  r.set_name(KernelName(key_or_name));
  r.set_metadata_only(metadata_only);
  tir::v1::KernelBundle b;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::GetKernel, r, &b, options_.call_timeout));
  TIR_RETURN_IF_ERROR(Check(b));
  return b;
}

absl::StatusOr<tir::v1::LookupKernelResponse> Client::Lookup(const tir::v1::GraphSource &graph,
                                                             const tir::v1::CompileOptions &options) {
  tir::v1::LookupKernelRequest r;
  *r.mutable_graph() = graph;
  *r.mutable_options() = options;
  tir::v1::LookupKernelResponse out;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::LookupKernel, r, &out, options_.call_timeout));
  if (out.found()) TIR_RETURN_IF_ERROR(Check(out.bundle()));
  return out;
}

absl::StatusOr<tir::v1::ListKernelsResponse> Client::ListKernels(uint32_t page_size, const std::string &page_token,
                                                                 const std::string &arch) {
  tir::v1::ListKernelsRequest r;
  r.set_page_size(page_size);
  r.set_page_token(page_token);
  r.set_arch(arch);
  tir::v1::ListKernelsResponse out;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::ListKernels, r, &out, options_.call_timeout));
  for (const tir::v1::KernelBundle &b : out.kernels()) TIR_RETURN_IF_ERROR(Check(b));
  return out;
}

absl::StatusOr<bool> Client::DeleteKernel(const std::string &key_or_name) {
  tir::v1::DeleteKernelRequest r;
  r.set_name(KernelName(key_or_name));
  tir::v1::DeleteKernelResponse out;
  // Not retried: a retry after a lost answer would report "did not exist".
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::DeleteKernel, r, &out, options_.call_timeout));
  return out.deleted();
}

absl::StatusOr<tir::v1::ListWorkersResponse> Client::ListWorkers(const std::string &arch) {
  tir::v1::ListWorkersRequest r;
  r.set_arch(arch);
  tir::v1::ListWorkersResponse out;
  TIR_RETURN_IF_ERROR(Call(&tir::v1::CompilerService::Stub::ListWorkers, r, &out, options_.call_timeout));
  return out;
}

}  // namespace tir
