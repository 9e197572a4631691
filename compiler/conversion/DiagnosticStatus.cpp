#include "compiler/conversion/DiagnosticStatus.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "llvm/Support/raw_ostream.h"

namespace tir {
namespace {

const char *SeverityName(mlir::DiagnosticSeverity s) {
  switch (s) {
    case mlir::DiagnosticSeverity::Error: return "error";
    case mlir::DiagnosticSeverity::Warning: return "warning";
    case mlir::DiagnosticSeverity::Note: return "note";
    case mlir::DiagnosticSeverity::Remark: return "remark";
  }
  return "error";
}

void Append(std::string &out, mlir::Diagnostic &d) {
  llvm::raw_string_ostream os(out);
  if (!out.empty()) os << "\n";
  d.getLocation().print(os);
  os << ": " << SeverityName(d.getSeverity()) << ": " << d.str();
  for (mlir::Diagnostic &note : d.getNotes()) {
    // The verifier's "see current operation" note dumps the op; skip it.
    if (llvm::StringRef(note.str()).startswith("see current operation")) continue;
    os << "\n";
    note.getLocation().print(os);
    os << ": note: " << note.str();
  }
}

}  // namespace

DiagnosticCollector::DiagnosticCollector(mlir::MLIRContext *context)
    : handler_(context, [this](mlir::Diagnostic &d) {
        // Verifier notes that dump the whole op ("see current operation")
        // repeat the input; keep only the diagnostic itself.
        if (d.getSeverity() == mlir::DiagnosticSeverity::Note) return mlir::success();
        Append(text_, d);
        return mlir::success();
      }) {}

absl::Status DiagnosticCollector::ToStatus(absl::string_view reason,
                                           absl::string_view what) const {
  return MakeError(absl::StatusCode::kInvalidArgument, reason,
                   text_.empty() ? std::string(what) : absl::StrCat(what, ":\n", text_));
}

}  // namespace tir
