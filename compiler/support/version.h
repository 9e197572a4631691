// tir's version, reported by every binary and in every kernel's provenance.

#ifndef TIR_COMPILER_SUPPORT_VERSION_H_
#define TIR_COMPILER_SUPPORT_VERSION_H_

namespace tir {

inline constexpr char kTirVersion[] = "0.1.0";

// Version of the generated code, folded into cache keys: bump it whenever a
// change to codegen or the tile library changes what a cached kernel would be.
inline constexpr char kCodegenVersion[] = "codegen-9";

}  // namespace tir

#endif  // TIR_COMPILER_SUPPORT_VERSION_H_
