// `tirctl service status|start|stop`: the user's local service
// (client/local_service.h) seen and stopped from the command line.

#ifndef TIR_CLIENT_LOCAL_SERVICE_COMMAND_H_
#define TIR_CLIENT_LOCAL_SERVICE_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/local_service.h"

namespace tir::client {

struct ServiceCommandOptions {
  // Where the service is; for `start`, how it starts (backend, idle
  // timeout, binary).
  LocalServiceOptions service;
  bool json = false;
  absl::Duration timeout = absl::Seconds(60);
};

// What goes to stdout. `status`: the running service (pid, address, worker,
// store, log, version, uptime, idle timeout; -o json: its record), NOT_FOUND
// when none runs, UNAVAILABLE when one holds the lock and does not answer.
// `start`: the same once it answers (started if needed). `stop`: "stopped
// (pid N)", or that none ran.
absl::StatusOr<std::string> ServiceCommand(const std::string &what, const ServiceCommandOptions &o);

// The record in a few lines, as `status` prints it.
std::string DescribeLocalService(const tir::v1::LocalService &service, absl::Time now);
// The service's upstream asked (ListWorkers) as the service asks it, with its
// token and CA: a line saying it answers (and its workers' arches) or why
// not; "" without an upstream.
std::string UpstreamHealth(const tir::v1::LocalService &service, absl::Time deadline);

}  // namespace tir::client

#endif  // TIR_CLIENT_LOCAL_SERVICE_COMMAND_H_
