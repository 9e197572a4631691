#include "server/bundles/assembly.h"

#include <fstream>
#include <iterator>

#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "compiler/target/ArchTable.h"
#include "google/protobuf/util/time_util.h"

namespace tir::bundles {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp NowTimestamp() { return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now())); }

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

DefaultBundles::DefaultBundles(std::string work_dir, const BundleSigner &signer, prometheus::Registry &registry)
    : work_dir_(std::move(work_dir)),
      signer_(signer),
      compile_cache_(work_dir_ + "/nvrtc"),
      compile_seconds_(prometheus::BuildHistogram()
                           .Name("tir_compile_seconds")
                           .Help("Compile of a default candidate on the coordinator")
                           .Register(registry)
                           .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5})) {}

absl::StatusOr<tir::v1::KernelBundle> DefaultBundles::Build(const BundleIdentity &id,
                                                            const std::vector<tuning::KernelWork> &plan) {
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(id.arch));
  tir::v1::KernelBundle b = NewBundle(id, false);
  for (size_t k = 0; k < plan.size(); ++k) {
    const tuning::KernelWork &w = plan[k];
    const int pos = w.default_position >= 0 ? w.default_position : 0;
    const tir::v1::CandidateWork &cw = w.item.candidates(pos);
    tir::v1::KernelEntry *e = b.add_kernels();
    DescribeEntry(e, k, w, pos);
    const absl::Time start = absl::Now();
    if (info.is_gpu) {
      nvrtc::CompileOptions o;
      o.arch = id.arch;
      o.headers = codegen::RuntimeHeaders();
      bool hit = false;
      TIR_ASSIGN_OR_RETURN(nvrtc::CompiledKernel c, compile_cache_.Compile(cw.source(), o, &hit));
      e->set_format(tir::v1::BINARY_FORMAT_CUBIN);
      e->set_binary(c.cubin);
      e->mutable_compile_info()->set_registers(std::max(0, c.registers));
      e->mutable_compile_info()->set_spill_bytes(c.spill_bytes);
      e->mutable_compile_info()->set_cache_hit(hit);
      b.mutable_provenance()->set_nvrtc_version(nvrtc::Version());
    } else {
      TIR_ASSIGN_OR_RETURN(std::string so, codegen::CompileHostObject(cw.source(), work_dir_ + "/host"));
      std::ifstream in(so, std::ios::binary);
      e->set_format(tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
      e->set_binary(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    compile_seconds_.Observe(seconds);
    e->mutable_compile_info()->set_compile_seconds(seconds);
    b.mutable_tuning()->set_candidates_total(b.tuning().candidates_total() + static_cast<uint32_t>(w.space_size));
  }
  *b.mutable_create_time() = NowTimestamp();
  signer_.Sign(b);
  return b;
}

}  // namespace tir::bundles
