// absl::Status -> grpc::Status, the one adapter at the RPC layer: the code,
// "REASON: message" as the message, and a serialized tir.v1.Error (code,
// reason, message) as the details, so clients branch on the reason.

#ifndef TIR_SERVER_API_RPC_STATUS_H_
#define TIR_SERVER_API_RPC_STATUS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/status.h"

namespace tir::api {

grpc::Status ToGrpc(const absl::Status &status);

// An error message as an answer carries it: at most kMaxErrorMessage bytes
// (then "... (N bytes in all)"), invalid UTF-8 and control characters but
// newline and tab as '?'.
inline constexpr size_t kMaxErrorMessage = 1024;
std::string ShownMessage(absl::string_view message);

// A server interceptor that turns gRPC's bare answer to a request it could
// not parse (INTERNAL, or UNIMPLEMENTED for callback methods; no details)
// into INVALID_ARGUMENT with reason MALFORMED_REQUEST naming the method.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MalformedRequestInterceptor();

}  // namespace tir::api

#endif  // TIR_SERVER_API_RPC_STATUS_H_
