// A bundle's parts from the plan: its identity (key, graph, arch, policy,
// tensors) and, per kernel, the entry a candidate launches with. Tuned
// bundles are assembled by their tuning job (server/tuning/tuning_jobs.h);
// the untuned default, compiled on the coordinator, here (DefaultBundles).

#ifndef TIR_SERVER_BUNDLES_ASSEMBLY_H_
#define TIR_SERVER_BUNDLES_ASSEMBLY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/nvrtc/compile_cache.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/bundles/signer.h"
#include "server/tuning/work_items.h"
#include "tir/v1/kernel.pb.h"

namespace tir::bundles {

struct BundleIdentity {
  std::string key;
  std::string fingerprint;
  std::string arch;
  std::string policy;
  // Inputs, outputs and intermediates; a dynamic graph's bucket.
  tir::v1::KernelBundle signature;
};

// A bundle's identity and provenance; kernels and tuning figures follow.
tir::v1::KernelBundle NewBundle(const BundleIdentity &id, bool tuned);
// What kernel entry `partition` says about launching candidate `position`.
void DescribeEntry(tir::v1::KernelEntry *e, size_t partition, const tuning::KernelWork &w, int position);
// What a bundle (or a shape's record) keeps of a worker's verification:
// the verdict and the measured error and tolerance, finite numbers, in the
// coordinator's words (`where` appended: which worker, who confirmed);
// never the worker's detail, nor a field the coordinator does not know.
tir::v1::Verification TakenVerification(const tir::v1::Verification &v, const std::string &where = "");
// The measured numbers of a worker's measurement (finite, >= 0; a timing
// source the coordinator knows); nothing else.
tir::v1::Measurement TakenMeasurement(const tir::v1::Measurement &m);
// A worker's registered device name (or driver version) as a bundle records
// it: letters, digits and " ._-()/+:" only, at most 64 bytes.
std::string ShownDeviceName(const std::string &name);
// Nanosecond resolution (TimeUtil::GetCurrentTime has whole seconds here).
google::protobuf::Timestamp NowTimestamp();

// What the coordinator serves it builds itself, from the source it
// generated (codegen::BuildKernel, the routine workers build with too):
// workers measure, they are never a source of code. Thread-safe.
class BinaryBuilder {
 public:
  BinaryBuilder(std::string work_dir, prometheus::Registry &registry);
  // Builds entry `e`'s source for `arch` with `options` (the candidate's
  // compile options): its binary, format, binary_sha256 and compile facts.
  absl::Status Build(const std::string &arch, const std::vector<std::string> &options, tir::v1::KernelEntry *e);
  // What it builds `arch` with (codegen::ToolchainOf).
  static std::string Toolchain(const std::string &arch);

 private:
  const std::string work_dir_;
  nvrtc::CompileCache compile_cache_;
  prometheus::Histogram &compile_seconds_;
};

// LIMIT_EXCEEDED (maxMessageBytes) for a bundle that would not fit one
// answer of at most `max_message_bytes` (its operation's envelope
// included): refused when it is made, not stored to be never fetched.
absl::Status CheckServable(const tir::v1::KernelBundle &b, uint64_t max_message_bytes);

// Marks `b`'s provenance as built by the coordinator with its toolchain.
void MarkBuilt(tir::v1::KernelBundle &b);

// The default candidates of a plan compiled here (cubins with NVRTC, host
// objects with the host compiler), marked untuned, signed. Thread-safe.
class DefaultBundles {
 public:
  DefaultBundles(BinaryBuilder &builder, const BundleSigner &signer);
  absl::StatusOr<tir::v1::KernelBundle> Build(const BundleIdentity &id, const std::vector<tuning::KernelWork> &plan);

 private:
  BinaryBuilder &builder_;
  const BundleSigner &signer_;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_ASSEMBLY_H_
