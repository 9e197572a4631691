#include "client/embedded.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "worker/backend_select.h"
#include "worker/runner_locator.h"

namespace tir::client {

absl::StatusOr<std::unique_ptr<EmbeddedService>> EmbeddedService::Start(const EmbeddedOptions &options) {
  auto e = std::unique_ptr<EmbeddedService>(new EmbeddedService());
  std::string runner = options.runner_path;
  if (runner.empty()) {
    const char *env = std::getenv("TIR_WORKER_RUNNER");
    TIR_ASSIGN_OR_RETURN(runner, worker::FindRunner(worker::ThisProcessSearch(env ? env : "", nullptr)));
  }
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<worker::Backend> backend,
                       worker::SelectBackend(options.backend, 0, options.cache_dir + "/worker"));
  e->arch_ = backend->Capabilities().arch();
  e->backend_ = backend->Capabilities().backend();
  e->listen_ = options.listen;
  tir::v1::CoordinatorConfig config;
  config.set_listen(options.listen);
  config.set_client_token_file(options.client_token_file);
  config.set_worker_token_file(options.worker_token_file);
  config.set_db(options.cache_dir + "/store");
  config.set_work_dir(options.cache_dir + "/coordinator");
  config.set_heartbeat_interval_ms(500);
  config.set_lost_after_ms(5000);
  config.set_upstream(options.upstream);
  config.set_upstream_token_file(options.upstream_token_file);
  config.set_upstream_bundle_key_file(options.upstream_bundle_key_file);
  config.set_upstream_ca_file(options.upstream_ca_file);
  config.set_upstream_timeout_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(options.upstream_timeout)));
  config.set_upstream_retry_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(options.upstream_retry)));
  TIR_ASSIGN_OR_RETURN(e->server_, api::CoordinatorServer::Start(config));
  worker::WorkerOptions wo;
  wo.runner_path = runner;
  wo.reference_dir = options.cache_dir + "/worker/reference";
  wo.compile_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  wo.lease_wait = absl::Milliseconds(300);
  wo.token = options.worker_token;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  e->worker_ = std::make_unique<worker::Worker>(
      wo, std::move(backend), grpc::CreateCustomChannel(e->address(), grpc::InsecureChannelCredentials(), args),
      nullptr);
  TIR_RETURN_IF_ERROR(e->worker_->StartRunner());
  e->thread_ = std::thread([w = e->worker_.get()] { w->Run(); });
  // Registered before any request, so none is answered "no worker".
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (e->worker_->name().empty() && absl::Now() < end) absl::SleepFor(absl::Milliseconds(10));
  if (e->worker_->name().empty()) {
    return MakeError(absl::StatusCode::kUnavailable, "INTERNAL", "the embedded worker did not register");
  }
  return e;
}

EmbeddedService::~EmbeddedService() {
  if (worker_) worker_->Stop();
  if (thread_.joinable()) thread_.join();
  if (server_) server_->Shutdown();
}

std::string EmbeddedService::address() const {
  return absl::StartsWith(listen_, "unix:") ? listen_ : absl::StrCat("127.0.0.1:", server_->port());
}

}  // namespace tir::client
