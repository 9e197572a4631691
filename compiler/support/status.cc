#include "compiler/support/status.h"

#include <cstdio>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace tir {

absl::Status MakeError(absl::StatusCode code, absl::string_view reason,
                       absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kReasonPayload, absl::Cord(reason));
  return status;
}

std::string ReasonOf(const absl::Status& status) {
  if (status.ok()) return "";
  if (auto payload = status.GetPayload(kReasonPayload)) return std::string(*payload);
  switch (status.code()) {
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
      return "INTERNAL";
    case absl::StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case absl::StatusCode::kNotFound:
      return "NOT_FOUND";
    case absl::StatusCode::kCancelled:
      return "CANCELLED";
    case absl::StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case absl::StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    case absl::StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case absl::StatusCode::kResourceExhausted:
      return "LIMIT_EXCEEDED";
    case absl::StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case absl::StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    default:
      return std::string(absl::StatusCodeToString(status.code()));
  }
}

absl::Status Annotate(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(prefix, ": ", status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

void IgnoreError(const absl::Status& status, absl::string_view why) {
  if (status.ok()) return;
  std::fprintf(stderr, "tir: ignoring error (%.*s): %s\n", static_cast<int>(why.size()),
               why.data(), status.ToString().c_str());
}

}  // namespace tir
