#include "server/service/rpc_status.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "tir/v1/error.pb.h"

namespace tir::service {

grpc::Status ToGrpc(const absl::Status &status) {
  if (status.ok()) return grpc::Status::OK;
  tir::v1::Error e;
  e.set_code(static_cast<int>(status.code()));
  e.set_reason(ReasonOf(status));
  e.set_message(std::string(status.message()));
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), absl::StrCat(e.reason(), ": ", e.message()),
                      e.SerializeAsString());
}

}  // namespace tir::service
