#include "server/dashboard/dashboard.h"

#include <CivetServer.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "openssl/crypto.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

namespace tir::dashboard {
namespace {

void Reply(mg_connection *conn, const char *type, const std::string &body) {
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n",
            type, body.size());
  mg_write(conn, body.data(), body.size());
}

// A Host header a browser sends for this server, not for a name an attacker
// points at it (DNS rebinding): an IP literal, "localhost", or this machine's
// host name, with or without a port.
bool HostAllowed(const char *header) {
  if (header == nullptr) return false;
  std::string host(header);
  if (!host.empty() && host.front() == '[') {  // [v6]:port
    const size_t close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
    in6_addr v6;
    return inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  }
  if (const size_t colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
  host = absl::AsciiStrToLower(host);
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1 || host == "localhost") return true;
  char name[256] = {0};
  return gethostname(name, sizeof(name) - 1) == 0 && host == absl::AsciiStrToLower(name);
}

class Fixed : public CivetHandler {
 public:
  // `tokens`: any of them opens it (none: open to all).
  Fixed(const char *type, std::function<std::string()> body, std::vector<std::string> tokens = {})
      : type_(type), body_(std::move(body)), tokens_(std::move(tokens)) {}
  bool handleGet(CivetServer *, mg_connection *conn) override {
    if (!HostAllowed(mg_get_header(conn, "Host"))) {
      Refuse(conn, 403, "Forbidden", "this Host is not the coordinator's (use its address or localhost)\n");
      return true;
    }
    if (!tokens_.empty() && !Authorized(mg_get_header(conn, "Authorization"))) {
      Refuse(conn, 401, "Unauthorized", "this endpoint needs the read or client token (Authorization: Bearer <token>)\n");
      return true;
    }
    Reply(conn, type_, body_());
    return true;
  }

 private:
  bool Authorized(const char *header) const {
    if (header == nullptr) return false;
    const absl::string_view got(header);
    for (const std::string &t : tokens_) {
      const std::string want = "Bearer " + t;
      if (got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0) return true;
    }
    return false;
  }
  static void Refuse(mg_connection *conn, int code, const char *reason, const std::string &body) {
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
              "Connection: close\r\n\r\n",
              code, reason, body.size());
    mg_write(conn, body.data(), body.size());
  }
  const char *type_;
  std::function<std::string()> body_;
  const std::vector<std::string> tokens_;
};

}  // namespace

struct Dashboard::Handlers {
  std::unique_ptr<Fixed> page, status, health;
};

const std::string &Dashboard::Page() {
  static const std::string page =
#include "server/dashboard/dashboard_html.inc"
      ;
  return page;
}

std::string Dashboard::StatusJson(coordinator::Coordinator &c) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(c.Status(), &out, o);
  return out;
}

std::vector<std::string> CivetOptions(const std::string &address, const HttpLimits &limits) {
  const std::string timeout = std::to_string(limits.request_timeout_ms);
  // civetweb's reads of a request (its whole header) and each write of an
  // answer end at request_timeout_ms; a connection between requests would
  // wait keep_alive_timeout_ms, but none is kept. linger_timeout_ms stays
  // unset: closing a socket never waits for its client.
  return {"listening_ports",    address, "num_threads",           std::to_string(limits.threads),
          "request_timeout_ms", timeout, "keep_alive_timeout_ms", timeout,
          "enable_keep_alive",  "no"};
}

absl::StatusOr<std::unique_ptr<Dashboard>> Dashboard::Start(coordinator::Coordinator *c, const std::string &address,
                                                            std::vector<std::string> tokens, const HttpLimits &limits) {
  auto d = std::unique_ptr<Dashboard>(new Dashboard());
  d->handlers_ = std::make_unique<Handlers>();
  d->handlers_->page = std::make_unique<Fixed>("text/html; charset=utf-8", [] { return Page(); });
  d->handlers_->status = std::make_unique<Fixed>("application/json", [c] { return StatusJson(*c); }, std::move(tokens));
  d->handlers_->health = std::make_unique<Fixed>("text/plain", [] { return std::string("ok\n"); });
  const std::vector<std::string> options = CivetOptions(address, limits);
  try {
    // CivetServer reports a failed bind by throwing; this is the one place.
    d->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception &e) {
    return MakeError(absl::StatusCode::kUnavailable, "LISTEN_FAILED",
                     absl::StrCat("dashboard cannot serve on ", address, ": ", e.what()));
  }
  d->server_->addHandler("/api/status", d->handlers_->status.get());
  d->server_->addHandler("/healthz", d->handlers_->health.get());
  d->server_->addHandler("/", d->handlers_->page.get());
  return d;
}

Dashboard::~Dashboard() {
  if (server_) server_->close();
}

}  // namespace tir::dashboard
