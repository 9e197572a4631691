// A running tir-coordinator: the store, the coordinator, the two gRPC
// services with health checking and reflection, and /metrics. Used by the
// tir-coordinator binary and by whatever embeds a coordinator in-process.

#ifndef TIR_SERVER_API_SERVER_H_
#define TIR_SERVER_API_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "server/api/activity.h"
#include "server/coordinator/coordinator.h"
#include "server/dashboard/dashboard.h"
#include "server/api/services.h"
#include "server/store/checkpoints.h"
#include "tir/v1/config.pb.h"

namespace tir::api {

class CoordinatorServer {
 public:
  // Opens the store, resumes its jobs and starts serving (a "host:0" listen
  // address picks a free port). Errors: INVALID_CONFIG, the store's, and
  // UNAVAILABLE / LISTEN_FAILED when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(const tir::v1::CoordinatorConfig &config);
  ~CoordinatorServer();

  // The bound gRPC port.
  int port() const { return port_; }
  coordinator::Coordinator &coordinator() { return *coordinator_; }
  prometheus::Registry &registry() { return *registry_; }
  // Client calls in flight and the last one's time (an idle service ends).
  const ClientActivity &client_activity() const { return *activity_; }
  // Blocks until Shutdown.
  void Wait();
  // Stops accepting calls, lets running ones finish (up to 5 s), closes.
  void Shutdown();

 private:
  CoordinatorServer() = default;
  // Before server_: its interceptors count into it until the server is gone.
  std::unique_ptr<ClientActivity> activity_ = std::make_unique<ClientActivity>();
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<store::KernelStore> store_;
  // Backups of the store (checkpointDir), stopped before it closes.
  std::unique_ptr<store::Checkpoints> checkpoints_;
  std::unique_ptr<coordinator::Coordinator> coordinator_;
  std::unique_ptr<CompilerServiceImpl> compiler_;
  std::unique_ptr<WorkerServiceImpl> workers_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<dashboard::Dashboard> dashboard_;
  int port_ = 0;
};

}  // namespace tir::api

#endif  // TIR_SERVER_API_SERVER_H_
