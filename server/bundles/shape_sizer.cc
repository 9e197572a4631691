#include "server/bundles/shape_sizer.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "server/tuning/bundle_shapes.h"

namespace tir::bundles {
namespace {

bool SameTime(const google::protobuf::Timestamp &a, const google::protobuf::Timestamp &b) {
  return a.seconds() == b.seconds() && a.nanos() == b.nanos();
}

}  // namespace

std::string FirstFailure(const tir::v1::ShapeVerification &record) {
  for (int k = 0; k < record.kernels_size(); ++k) {
    if (record.kernels(k).verdict() != tir::v1::VERDICT_PASSED) {
      return absl::StrCat("kernel ", k, ": ", tir::v1::Verdict_Name(record.kernels(k).verdict()), " ",
                          record.kernels(k).detail());
    }
  }
  return "";
}

absl::Status WrongAtShape(const std::string &key, const std::string &shape, const tir::v1::ShapeVerification &record) {
  const std::string why = FirstFailure(record);
  return MakeError(absl::StatusCode::kFailedPrecondition, "WRONG_AT_SHAPE",
                   absl::StrCat("bundle ", key, " failed its check at shape ", shape, " (", why,
                                "); it is not served there. Compile with force_retune to tune again"));
}

tir::v1::KernelBundle ShapeSizer::ServedCopy(tir::v1::KernelBundle sized,
                                             const tir::v1::ShapeVerification &record) const {
  *sized.mutable_served_shape() = record;
  signer_.Sign(sized);
  return sized;
}

absl::StatusOr<std::optional<tir::v1::KernelBundle>> ShapeSizer::AtShape(const tir::v1::KernelBundle &stored,
                                                                         const common::Shape &shape) {
  const std::string &key = stored.key();
  if (std::optional<tir::v1::KernelBundle> copy = records_.Served(key, shape.text)) {
    // A copy made for an older bundle under the key (retuned since) is stale.
    if (SameTime(copy->create_time(), stored.create_time())) return copy;
  }
  std::optional<tir::v1::ShapeVerification> record = records_.Find(key, shape.text);
  if (!record) {
    TIR_ASSIGN_OR_RETURN(record, ledger_.GetShape(key, shape.text));
    if (record) records_.Put(key, shape.text, *record);
  }
  // A record made for the bundle a retune replaced says nothing of this one.
  if (record && !SameTime(record->bundle_create_time(), stored.create_time())) record.reset();
  if (!record) {
    // The shape the bundle was tuned at is verified by its tuning.
    bool tunedHere = stored.tuned_shape_size() == static_cast<int>(shape.hints.size());
    for (int i = 0; tunedHere && i < stored.tuned_shape_size(); ++i) {
      tunedHere = stored.tuned_shape(i).SerializeAsString() == shape.hints[i].SerializeAsString();
    }
    if (!tunedHere || !stored.tuning().tuned()) return std::nullopt;
    tir::v1::ShapeVerification r;
    *r.mutable_shape() = {shape.hints.begin(), shape.hints.end()};
    bool passed = true;
    for (const tir::v1::KernelEntry &k : stored.kernels()) {
      *r.add_kernels() = k.verification();
      passed &= k.verification().verdict() == tir::v1::VERDICT_PASSED;
    }
    r.set_passed(passed);
    *r.mutable_verify_time() = stored.create_time();
    *r.mutable_bundle_create_time() = stored.create_time();
    record = r;
    records_.Put(key, shape.text, r);
  }
  if (!record->passed()) return WrongAtShape(key, shape.text, *record);
  TIR_ASSIGN_OR_RETURN(tuning::BundleAtShape sized, tuning::SizeBundle(stored, shape.hints));
  tir::v1::KernelBundle copy = ServedCopy(std::move(sized.bundle), *record);
  records_.PutServed(key, shape.text, copy);
  return copy;
}

void ShapeSizer::Verified(const std::string &key, const common::Shape &shape, const tir::v1::KernelBundle &sized,
                          const tir::v1::ShapeVerification &record, bool keep) {
  records_.NoteVerified(key, sized, record.passed());
  if (keep) {
    records_.Put(key, shape.text, record);
    ledger_.PutShape(key, shape.text, record);
  }
  if (record.passed()) records_.PutServed(key, shape.text, ServedCopy(sized, record));
}

void ShapeSizer::Forget(const std::string &key) {
  records_.Forget(key);
  ledger_.DropShapes(key);
}

}  // namespace tir::bundles
