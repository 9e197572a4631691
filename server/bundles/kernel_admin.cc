#include "server/bundles/kernel_admin.h"

#include <algorithm>

#include "compiler/support/status.h"

namespace tir::bundles {
namespace {

std::string KeyFromName(const std::string &name) {
  return name.rfind("kernels/", 0) == 0 ? name.substr(8) : name;
}

}  // namespace

absl::StatusOr<tir::v1::KernelBundle> KernelAdmin::Get(const std::string &name, bool metadata_only) {
  TIR_ASSIGN_OR_RETURN(tir::v1::KernelBundle b, store_->GetKernel(KeyFromName(name)));
  if (metadata_only) {
    for (auto &k : *b.mutable_kernels()) {
      k.clear_binary();
      k.clear_source();
    }
    signer_.Sign(b);  // what is served is signed
  } else {
    signer_.Served(b);
  }
  return b;
}

absl::StatusOr<tir::v1::ListKernelsResponse> KernelAdmin::List(const tir::v1::ListKernelsRequest &request) {
  const uint32_t size = request.page_size() == 0 ? 100 : std::min(request.page_size(), 1000u);
  TIR_ASSIGN_OR_RETURN(store::KernelPage page, store_->ListKernels(size, request.page_token(), request.arch()));
  tir::v1::ListKernelsResponse out;
  for (auto &k : page.kernels) {
    signer_.Sign(k);
    *out.add_kernels() = std::move(k);
  }
  out.set_next_page_token(page.next_page_token);
  return out;
}

absl::StatusOr<tir::v1::DeleteKernelResponse> KernelAdmin::Delete(const std::string &name) {
  TIR_ASSIGN_OR_RETURN(bool deleted, store_->DeleteKernel(KeyFromName(name)));
  sizer_.Forget(KeyFromName(name));
  tir::v1::DeleteKernelResponse out;
  out.set_deleted(deleted);
  return out;
}

}  // namespace tir::bundles
