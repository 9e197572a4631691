// Collects MLIR diagnostics emitted in a scope into an absl::Status.

#ifndef TIR_COMPILER_CONVERSION_DIAGNOSTICSTATUS_H_
#define TIR_COMPILER_CONVERSION_DIAGNOSTICSTATUS_H_

#include <string>

#include "absl/status/status.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

namespace tir {

// While alive, captures every diagnostic of `context` (errors, warnings and
// their notes) as "location: severity: message" lines instead of printing them.
class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(mlir::MLIRContext *context);

  // The captured text, one diagnostic per line.
  const std::string &text() const { return text_; }

  // INVALID_ARGUMENT with `reason` and "`what`: <diagnostics>" (or `fallback`
  // when nothing was emitted).
  absl::Status ToStatus(absl::string_view reason, absl::string_view what) const;

 private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

}  // namespace tir

#endif  // TIR_COMPILER_CONVERSION_DIAGNOSTICSTATUS_H_
