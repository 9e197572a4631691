// What a coordinator with an upstream (upstream.h) does on a miss: asks it,
// and keeps what it tuned.
//
// A Compile that misses here (no bundle stored, none being checked at the
// shape) is asked of the upstream as it came:
//  - a tuned bundle there is checked (Upstream::Check), stored here, and
//    served (signed with this coordinator's key): a hit, tier "upstream";
//  - tuning under way there (a waiting request) gets an operation here that
//    follows the upstream's; when it ends, its bundle is checked, stored
//    and served. Requests for the same key (and shape) join it, so a host
//    asks once;
//  - an untuned answer there (heuristic-now mode) is served as it is: the
//    upstream tunes behind it, and the next request finds the tuned bundle
//    there (and keeps it here);
//  - anything else (the upstream down, refusing, failing the request, its
//    bundle failing the checks, or without a worker for the arch when the
//    request waits for tuning) leaves the request to this coordinator, with
//    a note saying why. An operation following the upstream that loses it
//    (down for longer than `give_up_after`, or the operation gone) is
//    compiled here instead and answers with that.
// A LookupKernel that misses here is looked up there (a found bundle is
// checked, kept and served) and never starts anything.
// A dynamic graph's answers are the upstream's bundles sized for the shape
// asked; what is kept here is its bucket's unsized bundle (GetKernel), so
// other shapes of the bucket are checked here against it.
//
// Nothing here holds a lock across a call to the upstream or a store write.

#ifndef TIR_SERVER_UPSTREAM_READ_THROUGH_H_
#define TIR_SERVER_UPSTREAM_READ_THROUGH_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/bundles/signer.h"
#include "server/operations/operations.h"
#include "server/store/kernel_store.h"
#include "server/upstream/upstream.h"

namespace tir::upstream {

// A miss here, as the coordinator keyed the request.
struct Miss {
  std::string key;
  std::string arch;
  // A dynamic graph's shape ("0=8x512 1=7"); "" for a static graph.
  std::string shape;
  // The request id (scoped by client) and owner of an operation made here.
  std::string request_id;
  std::string owner;
  // Fills an operation's metadata (the shape asked and its bucket).
  std::function<void(tir::v1::Operation &)> describe;
};

class ReadThrough {
 public:
  struct Parts {
    Upstream &upstream;
    operations::Operations &operations;
    store::KernelStore &store;
    const bundles::BundleSigner &signer;
    // Compiles a request here, never asking the upstream: the answer of an
    // operation that lost its upstream.
    std::function<absl::StatusOr<tir::v1::Operation>(const tir::v1::CompileRequest &, const std::string &owner)> local;
  };
  // Operations following the upstream at once; past it, requests are
  // answered here.
  static constexpr size_t kMaxFollows = 256;
  // A follow whose upstream operation has not ended by then is compiled here.
  static constexpr absl::Duration kMaxFollow = absl::Hours(2);

  explicit ReadThrough(Parts parts, absl::Duration give_up_after = absl::Seconds(30));
  ~ReadThrough();

  // The upstream's answer to a miss here; nullopt: this coordinator answers
  // (`note` says why when the upstream was asked or skipped).
  std::optional<tir::v1::Operation> Compile(const tir::v1::CompileRequest &request, const Miss &miss,
                                            std::string *note);
  // The upstream's bundle for a lookup that missed here; nullopt: not found
  // there either (or not asked, or not answered).
  std::optional<tir::v1::LookupKernelResponse> Lookup(const tir::v1::LookupKernelRequest &request, const Miss &miss);

  // Operations here following the upstream's.
  uint32_t following() const;
  // Ends the follows (each answers with UNAVAILABLE, the coordinator going
  // away) and waits for their threads.
  void Stop();

 private:
  struct Follow;
  // A compile answered by a lookup there (an upstream that takes this
  // tier's token for reads only).
  std::optional<tir::v1::Operation> FromLookup(const tir::v1::CompileRequest &request, const Miss &miss,
                                               std::string *note);
  // Signed with this coordinator's key (the upstream's signature removed).
  tir::v1::KernelBundle Served(tir::v1::KernelBundle bundle) const;
  // Stores the upstream's tuned bundle here (a dynamic graph's: its bucket's).
  void Keep(const tir::v1::KernelBundle &bundle, const Miss &miss);
  absl::StatusOr<tir::v1::Operation> NewOperation(const Miss &miss, const std::string &note);
  void Run(std::shared_ptr<Follow> follow);
  // The names waiting on `follow`, which takes no more.
  std::vector<std::string> End(Follow &follow);
  void Answer(Follow &follow, const absl::StatusOr<tir::v1::KernelBundle> &answer);
  // `follow`'s request compiled here; its operations answer with that.
  void Fallback(Follow &follow, const std::string &why);

  Parts parts_;
  const absl::Duration give_up_after_;
  mutable absl::Mutex mu_;
  // By key and shape ("key@shape").
  std::map<std::string, std::shared_ptr<Follow>> follows_ ABSL_GUARDED_BY(mu_);
  // Arch -> until when the upstream is taken to have no worker for it.
  std::map<std::string, absl::Time> no_worker_ ABSL_GUARDED_BY(mu_);
  int threads_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tir::upstream

#endif  // TIR_SERVER_UPSTREAM_READ_THROUGH_H_
