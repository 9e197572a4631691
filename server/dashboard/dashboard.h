// The coordinator's built-in dashboard: one page (no framework, nothing from
// a CDN) that polls a JSON status endpoint.
//
//   GET /             the page
//   GET /api/status   tir.v1.ServiceStatus as JSON (field names as in the proto)
//   GET /healthz      "ok"

#ifndef TIR_SERVER_DASHBOARD_DASHBOARD_H_
#define TIR_SERVER_DASHBOARD_DASHBOARD_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/coordinator/coordinator.h"

class CivetServer;

namespace tir::dashboard {

class Dashboard {
 public:
  // Serves on `address` ("0.0.0.0:PORT"). Errors: UNAVAILABLE / LISTEN_FAILED.
  static absl::StatusOr<std::unique_ptr<Dashboard>> Start(coordinator::Coordinator *c, const std::string &address);
  ~Dashboard();

  // The status as the endpoint serves it.
  static std::string StatusJson(coordinator::Coordinator &c);
  // The page.
  static const std::string &Page();

 private:
  Dashboard() = default;
  struct Handlers;
  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<CivetServer> server_;
};

}  // namespace tir::dashboard

#endif  // TIR_SERVER_DASHBOARD_DASHBOARD_H_
