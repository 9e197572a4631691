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

// What one HTTP server (the dashboard, /metrics) gives its clients. Each
// connection holds one of `threads` while it is read and answered, so a
// client gets `request_timeout_ms` to send its whole request (and as long
// to take each write of the answer) and is then cut: slow clients hold
// threads for that long at most, and fewer of them than `threads` leave
// every other request answered at once. No keep-alive: each connection
// carries one request.
struct HttpLimits {
  int threads = 32;
  int request_timeout_ms = 5000;
};

// civetweb's options (also prometheus::Exposer's) for serving on `address`
// ("HOST:PORT") within `limits`.
std::vector<std::string> CivetOptions(const std::string &address, const HttpLimits &limits);

class Dashboard {
 public:
  // Serves on `address` ("0.0.0.0:PORT"). Errors: UNAVAILABLE / LISTEN_FAILED.
  // `tokens`: those that open /api/status (empty: open).
  static absl::StatusOr<std::unique_ptr<Dashboard>> Start(coordinator::Coordinator *c, const std::string &address,
                                                          std::vector<std::string> tokens = {},
                                                          const HttpLimits &limits = {});
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
