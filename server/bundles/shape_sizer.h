// A dynamic bundle served at one shape of its bucket: sized for it
// (tuning::SizeBundle) and served only once every kernel is verified there.
// The verification records come from ShapeRecords in memory, else the
// ledger; the shape the bundle was tuned at is verified by its tuning. A
// record made for a bundle that a retune replaced says nothing of the new one
// (records carry their bundle's create time). Thread-safe.

#ifndef TIR_SERVER_BUNDLES_SHAPE_SIZER_H_
#define TIR_SERVER_BUNDLES_SHAPE_SIZER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/bundles/shape_records.h"
#include "server/bundles/signer.h"
#include "server/common/shape.h"
#include "server/ledger/ledger.h"
#include "tir/v1/kernel.pb.h"
#include "tir/v1/status.pb.h"

namespace tir::bundles {

class ShapeSizer {
 public:
  ShapeSizer(ledger::Ledger &ledger, const BundleSigner &signer) : ledger_(ledger), signer_(signer) {}

  // The verified, sized, signed bundle `stored` serves for `shape`; nullopt
  // when the shape is not verified. Errors: WRONG_AT_SHAPE, store errors.
  absl::StatusOr<std::optional<tir::v1::KernelBundle>> AtShape(const tir::v1::KernelBundle &stored,
                                                               const common::Shape &shape);
  // The served copy of a sized bundle: served_shape set, signed.
  tir::v1::KernelBundle ServedCopy(tir::v1::KernelBundle sized, const tir::v1::ShapeVerification &record) const;
  // A check's verdict: kept (passes and wrong results: `keep`), its served
  // copy when it passed.
  void Verified(const std::string &key, const common::Shape &shape, const tir::v1::KernelBundle &sized,
                const tir::v1::ShapeVerification &record, bool keep);
  // A served hit (the dashboard's bucket figures).
  void NoteHit(const std::string &key, const tir::v1::KernelBundle &served) { records_.NoteHit(key, served); }
  // Drops what is known of `key`'s shapes (memory and ledger): a new or
  // deleted bundle.
  void Forget(const std::string &key);
  std::vector<tir::v1::BucketStatus> Top(size_t n) const { return records_.Top(n); }

 private:
  ledger::Ledger &ledger_;
  const BundleSigner &signer_;
  ShapeRecords records_;
};

// "kernel K: VERDICT detail" of the record's first kernel that did not pass.
std::string FirstFailure(const tir::v1::ShapeVerification &record);
// The refusal of a bundle that failed its check at a shape.
absl::Status WrongAtShape(const std::string &key, const std::string &shape, const tir::v1::ShapeVerification &record);

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_SHAPE_SIZER_H_
