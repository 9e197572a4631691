// Launch rules: grid extents over the iteration domain, block sizes.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"

namespace tir::codegen::detail {

// The grid extent multiplies in every domain extent (the launcher evaluates
// them from the actual shapes; tir.iteration_domain records which).
void KernelEmitter::AddDomainDims(tir::v1::LaunchExtent *g, bool onlyParallel) {
  for (int d = 0; d < rank_; ++d) {
    if (onlyParallel && reduced_.count(d)) continue;
    auto *td = g->add_dims();
    td->mutable_tensor()->set_kind(tir::v1::TensorRef::ITERATION_DOMAIN);
    td->set_dim(d);
  }
}

// grid = (ceil(N / block_n), ceil(M / block_m), batch), block = threads.
void KernelEmitter::AddMatmulLaunch(int64_t bm, int64_t bn, int64_t threads, int b) {
  auto domainDim = [&](tir::v1::LaunchExtent *g, int d) {
    auto *td = g->add_dims();
    td->mutable_tensor()->set_kind(tir::v1::TensorRef::ITERATION_DOMAIN);
    td->set_dim(d);
  };
  auto *gx = launch_.add_grid();
  gx->set_constant(1);
  gx->set_divisor(bn);
  domainDim(gx, b + 1);
  auto *gy = launch_.add_grid();
  gy->set_constant(1);
  gy->set_divisor(bm);
  domainDim(gy, b);
  auto *gz = launch_.add_grid();
  gz->set_constant(1);
  for (int d = 0; d < b; ++d) domainDim(gz, d);
  launch_.add_block(threads);
  launch_.add_block(1);
  launch_.add_block(1);
}

}  // namespace tir::codegen::detail
