#include "server/bundles/assembly.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "compiler/target/ArchTable.h"
#include "google/protobuf/util/time_util.h"

namespace tir::bundles {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp NowTimestamp() { return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now())); }

namespace {

double Finite(double x) { return std::isfinite(x) && x >= 0 ? x : 0; }

}  // namespace

tir::v1::Verification TakenVerification(const tir::v1::Verification &v, const std::string &where) {
  tir::v1::Verification out;
  const tir::v1::Verdict verdict =
      tir::v1::Verdict_IsValid(v.verdict()) && v.verdict() != tir::v1::VERDICT_UNSPECIFIED ? v.verdict()
                                                                                          : tir::v1::VERDICT_FAULT;
  out.set_verdict(verdict);
  out.set_relative_l2_error(Finite(v.relative_l2_error()));
  out.set_tolerance(Finite(v.tolerance()));
  std::string detail;
  switch (verdict) {
    case tir::v1::VERDICT_PASSED:
    case tir::v1::VERDICT_WRONG:
      detail = absl::StrCat(verdict == tir::v1::VERDICT_PASSED ? "matched" : "did not match",
                            " the reference: relative L2 error ", out.relative_l2_error(), ", tolerance ",
                            out.tolerance());
      break;
    default:
      detail = "the worker's account is in the coordinator's log";
  }
  if (!where.empty()) absl::StrAppend(&detail, " (", where, ")");
  out.set_detail(std::move(detail));
  return out;
}

tir::v1::Measurement TakenMeasurement(const tir::v1::Measurement &m) {
  tir::v1::Measurement out;
  out.set_median_seconds(Finite(m.median_seconds()));
  out.set_iqr_seconds(Finite(m.iqr_seconds()));
  out.set_min_seconds(Finite(m.min_seconds()));
  out.set_samples(m.samples());
  if (tir::v1::TimingSource_IsValid(m.source())) out.set_source(m.source());
  out.set_sm_clock_mhz(m.sm_clock_mhz());
  out.set_temperature_c(m.temperature_c());
  return out;
}

std::string ShownDeviceName(const std::string &name) {
  std::string out;
  for (char ch : name) {
    if (out.size() >= 64) break;
    const bool kept = absl::ascii_isalnum(static_cast<unsigned char>(ch)) ||
                      absl::string_view(" ._-()/+:").find(ch) != absl::string_view::npos;
    if (kept) out.push_back(ch);
  }
  return out;
}

tir::v1::KernelBundle NewBundle(const BundleIdentity &id, bool tuned) {
  tir::v1::KernelBundle b = id.signature;
  b.set_key(id.key);
  b.set_name("kernels/" + id.key);
  b.set_graph_fingerprint(id.fingerprint);
  b.set_arch(id.arch);
  b.mutable_tuning()->set_tuned(tuned);
  b.mutable_tuning()->set_policy(id.policy);
  b.mutable_provenance()->set_arch(id.arch);
  b.mutable_provenance()->set_tir_version(kTirVersion);
  b.mutable_provenance()->set_codegen_version(kCodegenVersion);
  return b;
}

void DescribeEntry(tir::v1::KernelEntry *e, size_t partition, const tuning::KernelWork &w, int position) {
  const tir::v1::CandidateWork &cw = w.item.candidates(position);
  e->set_partition(static_cast<uint32_t>(partition));
  e->set_kind(w.kind);
  e->set_entry_symbol(cw.entry_symbol());
  *e->mutable_launch() = cw.launch();
  *e->mutable_arguments() = cw.arguments();
  for (int64_t d : w.domain) e->add_iteration_domain(d);
  *e->mutable_candidate() = cw.candidate();
  e->set_source(cw.source());
  e->set_kernel_mlir(w.item.kernel_mlir());
  *e->mutable_kernel_inputs() = {w.input_refs.begin(), w.input_refs.end()};
  *e->mutable_kernel_outputs() = {w.output_refs.begin(), w.output_refs.end()};
}

BinaryBuilder::BinaryBuilder(std::string work_dir, prometheus::Registry &registry)
    : work_dir_(std::move(work_dir)),
      compile_cache_(work_dir_ + "/nvrtc"),
      compile_seconds_(prometheus::BuildHistogram()
                           .Name("tir_compile_seconds")
                           .Help("Compile of a served kernel (a default or a tuned winner) on the coordinator")
                           .Register(registry)
                           .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5})) {}

absl::Status BinaryBuilder::Build(const std::string &arch, const std::vector<std::string> &options,
                                  tir::v1::KernelEntry *e) {
  const absl::Time start = absl::Now();
  TIR_ASSIGN_OR_RETURN(codegen::KernelBinary k,
                       codegen::BuildKernel(e->source(), arch, options, compile_cache_, work_dir_ + "/host"));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  compile_seconds_.Observe(seconds);
  e->set_format(k.format);
  e->set_binary(std::move(k.binary));
  e->set_binary_sha256(k.sha256);
  *e->mutable_compile_info() = k.info;
  e->mutable_compile_info()->set_compile_seconds(seconds);
  return absl::OkStatus();
}

std::string BinaryBuilder::Toolchain(const std::string &arch) { return codegen::ToolchainOf(arch); }

absl::Status CheckServable(const tir::v1::KernelBundle &b, uint64_t max_message_bytes) {
  constexpr uint64_t kEnvelope = 64 << 10;  // the operation and its metadata around it
  const uint64_t size = b.ByteSizeLong();
  if (size + kEnvelope <= max_message_bytes) return absl::OkStatus();
  return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                   absl::StrCat("maxMessageBytes: the bundle for ", b.key().substr(0, 16), " has ", size,
                                " bytes and would not fit an answer of at most ", max_message_bytes, " bytes"));
}

void MarkBuilt(tir::v1::KernelBundle &b) {
  tir::v1::Provenance *p = b.mutable_provenance();
  p->set_builder("coordinator");
  p->set_builder_toolchain(BinaryBuilder::Toolchain(b.arch()));
  absl::StatusOr<target::ArchInfo> info = target::LookupArch(b.arch());
  if (info.ok() && info->is_gpu) {
    p->set_nvrtc_version(nvrtc::Version());
    p->clear_host_compiler();
  } else {
    p->set_host_compiler(p->builder_toolchain());
    p->clear_nvrtc_version();
  }
}

DefaultBundles::DefaultBundles(BinaryBuilder &builder, const BundleSigner &signer) : builder_(builder), signer_(signer) {}

absl::StatusOr<tir::v1::KernelBundle> DefaultBundles::Build(const BundleIdentity &id,
                                                            const std::vector<tuning::KernelWork> &plan) {
  TIR_RETURN_IF_ERROR(target::LookupArch(id.arch).status());
  tir::v1::KernelBundle b = NewBundle(id, false);
  for (size_t k = 0; k < plan.size(); ++k) {
    const tuning::KernelWork &w = plan[k];
    const int pos = w.default_position >= 0 ? w.default_position : 0;
    const tir::v1::CandidateWork &cw = w.item.candidates(pos);
    tir::v1::KernelEntry *e = b.add_kernels();
    DescribeEntry(e, k, w, pos);
    TIR_RETURN_IF_ERROR(builder_.Build(id.arch, {cw.compile_options().begin(), cw.compile_options().end()}, e));
    b.mutable_tuning()->set_candidates_total(b.tuning().candidates_total() + static_cast<uint32_t>(w.space_size));
  }
  MarkBuilt(b);
  *b.mutable_create_time() = NowTimestamp();
  signer_.Sign(b);
  return b;
}

}  // namespace tir::bundles
