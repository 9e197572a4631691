// The coordinator's built-in dashboard: one page (no framework, nothing from
// a CDN) that polls a JSON status endpoint.
//
//   GET /             the page (no data; it reads a token from its URL's
//                     fragment, /#token=..., and sends it with its polls)
//   GET /api/status   tir.v1.ServiceStatus as JSON (field names as in the
//                     proto); with tokens configured it needs the read or
//                     client token (Authorization: Bearer), else 401
//   GET /healthz      "ok"
// Every request's Host must be an IP literal, localhost or this machine's
// name (403 otherwise): a page on another site whose name was pointed at
// this address (DNS rebinding) reads nothing.

#ifndef TIR_SERVER_DASHBOARD_DASHBOARD_H_
#define TIR_SERVER_DASHBOARD_DASHBOARD_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/coordinator/coordinator.h"

class CivetServer;

namespace tir::dashboard {

class Dashboard {
 public:
  // Serves on `address` ("0.0.0.0:PORT"). Errors: UNAVAILABLE / LISTEN_FAILED.
  // `tokens`: those that open /api/status (empty: open).
  static absl::StatusOr<std::unique_ptr<Dashboard>> Start(coordinator::Coordinator *c, const std::string &address,
                                                          std::vector<std::string> tokens = {});
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
