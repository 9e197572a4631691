#include "server/api/rpc_status.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "tir/v1/error.pb.h"

namespace tir::api {

std::string ShownMessage(absl::string_view m) {
  std::string out;
  out.reserve(std::min(m.size(), kMaxErrorMessage) + 32);
  size_t i = 0;
  while (i < m.size() && out.size() < kMaxErrorMessage) {
    const unsigned char c = static_cast<unsigned char>(m[i]);
    // The length of a well-formed UTF-8 sequence starting here (0: none):
    // no overlong forms (C0, C1, E0 80-9F, F0 80-8F), no surrogates (ED
    // A0-BF), nothing past U+10FFFF (F4 90-BF, F5-FF).
    size_t n = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
    for (size_t k = 1; n > 1 && k < n; ++k) {
      if (i + k >= m.size()) {
        n = 0;
        break;
      }
      const unsigned char b = static_cast<unsigned char>(m[i + k]);
      unsigned char lo = 0x80, hi = 0xbf;
      if (k == 1) {
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
      }
      if (b < lo || b > hi) n = 0;
    }
    if (n == 1 && (c < 0x20 && c != '\n' && c != '\t')) n = 0;  // control characters
    if (n == 0) {
      out += '?';
      ++i;
    } else {
      out.append(m.data() + i, n);
      i += n;
    }
  }
  if (i < m.size()) absl::StrAppend(&out, "... (", m.size(), " bytes in all)");
  return out;
}

grpc::Status ToGrpc(const absl::Status &status) {
  if (status.ok()) return grpc::Status::OK;
  tir::v1::Error e;
  e.set_code(static_cast<int>(status.code()));
  e.set_reason(ReasonOf(status));
  // What a request sent can come back in its error (a name, a path): the
  // message is bounded and valid UTF-8, so the answer's metadata always
  // fits what the caller accepts (8 KB by default).
  e.set_message(ShownMessage(status.message()));
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), absl::StrCat(e.reason(), ": ", e.message()),
                      e.SerializeAsString());
}

namespace {

class MalformedRequest final : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequest(const char *method) : method_(method ? method : "") {}
  void Intercept(grpc::experimental::InterceptorBatchMethods *methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status s = methods->GetSendStatus();
      // Every answer tir itself sends carries a reason; this one is gRPC's
      // own, for a request body that is not the method's message.
      // (The synchronous handlers answer INTERNAL, the callback ones
      // UNIMPLEMENTED with no message.)
      const bool bare = s.error_details().empty() &&
                        (s.error_code() == grpc::StatusCode::INTERNAL ||
                         (s.error_code() == grpc::StatusCode::UNIMPLEMENTED && s.error_message().empty()));
      if (bare) {
        methods->ModifySendStatus(ToGrpc(MakeError(
            absl::StatusCode::kInvalidArgument, "MALFORMED_REQUEST",
            absl::StrCat("the request to ", method_, " is not a valid protobuf message of its type",
                         s.error_message().empty() ? "" : " (" + s.error_message() + ")"))));
      }
    }
    methods->Proceed();
  }

 private:
  std::string method_;
};

class MalformedRequestFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor *CreateServerInterceptor(grpc::experimental::ServerRpcInfo *info) override {
    return new MalformedRequest(info->method());
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MalformedRequestInterceptor() {
  return std::make_unique<MalformedRequestFactory>();
}

}  // namespace tir::api
