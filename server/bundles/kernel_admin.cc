#include "server/bundles/kernel_admin.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
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

void KernelAdmin::NoteRequester(const std::string &key, const std::string &identity) {
  absl::MutexLock l(&mu_);
  if (noted_.size() >= kMaxNotedKeys && !noted_.count(key)) noted_.clear();
  if (!noted_[key].insert(identity).second) return;
  // Posted under the lock: ordered with a deletion's drop of the records.
  ledger_.AddRequester(key, identity);
}

absl::StatusOr<tir::v1::DeleteKernelResponse> KernelAdmin::Delete(const std::string &name, const std::string &identity,
                                                                  bool admin) {
  const std::string key = KeyFromName(name);
  tir::v1::DeleteKernelResponse out;
  if (!admin) {
    TIR_ASSIGN_OR_RETURN(std::vector<std::string> recorded, ledger_.RequestersOf(key));
    std::set<std::string> requesters(recorded.begin(), recorded.end());
    {
      absl::MutexLock l(&mu_);  // noted, perhaps not written yet
      if (auto it = noted_.find(key); it != noted_.end()) requesters.insert(it->second.begin(), it->second.end());
    }
    if (requesters.empty()) {
      // Stored before requesters were recorded (or no such bundle): the
      // anonymous identity's.
      absl::StatusOr<tir::v1::KernelBundle> stored = store_->GetKernel(key);
      if (absl::IsNotFound(stored.status())) return out;  // nothing to delete
      TIR_RETURN_IF_ERROR(stored.status());
      requesters.insert("");
    }
    if (requesters.size() != 1 || *requesters.begin() != identity) {
      const bool asked = requesters.count(identity) > 0;
      return MakeError(absl::StatusCode::kPermissionDenied, "NOT_OWNER",
                       absl::StrCat("bundle ", key, " was asked for by ",
                                    asked ? absl::StrCat(requesters.size() - 1, " other client(s) too")
                                          : std::string("another client"),
                                    ": only ", asked ? "an admin" : "its requester or an admin",
                                    " deletes it (a bundle shared by several clients serves all of them)"));
    }
  }
  TIR_ASSIGN_OR_RETURN(bool deleted, store_->DeleteKernel(key));
  sizer_.Forget(key);
  {
    absl::MutexLock l(&mu_);
    noted_.erase(key);
    ledger_.DropRequesters(key);
  }
  out.set_deleted(deleted);
  return out;
}

}  // namespace tir::bundles
