// Status helpers shared by every tir library.
//
// Errors are absl::Status values. A client-visible error also carries a stable
// UPPER_SNAKE reason (see proto/tir/v1/error.proto) as a status payload, so the
// RPC layer can put it on the wire without parsing messages.

#ifndef TIR_COMPILER_SUPPORT_STATUS_H_
#define TIR_COMPILER_SUPPORT_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tir {

// Payload URL under which the reason is stored.
inline constexpr absl::string_view kReasonPayload = "type.tir.dev/tir.v1.ErrorReason";

// Builds a status with `code`, `message` and the stable `reason`.
absl::Status MakeError(absl::StatusCode code, absl::string_view reason,
                       absl::string_view message);

// Returns the reason attached to `status`, or a default derived from its code
// ("" for OK, "INTERNAL" for unknown/internal, the code name otherwise).
std::string ReasonOf(const absl::Status& status);

// Returns `status` with `prefix: ` prepended to its message, keeping code and reason.
absl::Status Annotate(const absl::Status& status, absl::string_view prefix);

// Logs `status` with `why` to stderr and drops it. Use only where failing is
// harmless (best-effort cleanup) and say so in `why`.
void IgnoreError(const absl::Status& status, absl::string_view why);

}  // namespace tir

#define TIR_STATUS_CONCAT_INNER_(a, b) a##b
#define TIR_STATUS_CONCAT_(a, b) TIR_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define TIR_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::absl::Status tir_status_ = (expr);           \
    if (!tir_status_.ok()) return tir_status_;     \
  } while (0)

// `TIR_ASSIGN_OR_RETURN(T x, StatusOrExpr)`: declares/assigns `x` from the
// value or returns the error.
#define TIR_ASSIGN_OR_RETURN(lhs, expr) \
  TIR_ASSIGN_OR_RETURN_IMPL_(TIR_STATUS_CONCAT_(tir_statusor_, __LINE__), lhs, expr)

#define TIR_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

#endif  // TIR_COMPILER_SUPPORT_STATUS_H_
