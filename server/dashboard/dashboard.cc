#include "server/dashboard/dashboard.h"

#include <CivetServer.h>

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

class Fixed : public CivetHandler {
 public:
  Fixed(const char *type, std::function<std::string()> body) : type_(type), body_(std::move(body)) {}
  bool handleGet(CivetServer *, mg_connection *conn) override {
    Reply(conn, type_, body_());
    return true;
  }

 private:
  const char *type_;
  std::function<std::string()> body_;
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

absl::StatusOr<std::unique_ptr<Dashboard>> Dashboard::Start(coordinator::Coordinator *c, const std::string &address) {
  auto d = std::unique_ptr<Dashboard>(new Dashboard());
  d->handlers_ = std::make_unique<Handlers>();
  d->handlers_->page = std::make_unique<Fixed>("text/html; charset=utf-8", [] { return Page(); });
  d->handlers_->status = std::make_unique<Fixed>("application/json", [c] { return StatusJson(*c); });
  d->handlers_->health = std::make_unique<Fixed>("text/plain", [] { return std::string("ok\n"); });
  const std::vector<std::string> options = {"listening_ports", address, "num_threads", "4"};
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
