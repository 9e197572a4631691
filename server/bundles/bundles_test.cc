#include <cmath>
#include <filesystem>

#include "client/bundle_signature.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "server/bundles/assembly.h"
#include "server/bundles/kernel_admin.h"
#include "server/bundles/shape_source.h"
#include "server/bundles/signing_source.h"
#include "server/bundles/store_source.h"
#include "server/store/test_store.h"

namespace tir::bundles {
namespace {

class BundlesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::FreshTestStore();
    ASSERT_NE(store_, nullptr);
    ledger_ = std::make_unique<ledger::Ledger>(store_, nullptr);
    sizer_ = std::make_unique<ShapeSizer>(*ledger_, signer_);
  }
  // A dynamic bundle of one input of ?x4 f32 (no kernels), tuned at 8x4.
  tir::v1::KernelBundle Dynamic(const std::string &key) {
    tir::v1::KernelBundle b;
    b.set_key(key);
    b.set_name("kernels/" + key);
    tir::v1::TensorType *t = b.add_inputs();
    t->set_dtype(tir::v1::DTYPE_F32);
    t->add_shape(-1);
    t->add_shape(4);
    *b.add_tuned_shape() = Hint("0=8x4");
    b.mutable_tuning()->set_tuned(true);
    b.mutable_create_time()->set_seconds(100);
    return b;
  }
  static tir::v1::ShapeHint Hint(const std::string &text) { return common::ParseShapeText(text).hints.at(0); }

  const std::string key_ = "secret";
  BundleSigner signer_{key_};
  std::shared_ptr<store::KernelStore> store_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::unique_ptr<ShapeSizer> sizer_;
};

// A worker's verification and measurement reach a bundle as numbers in the
// coordinator's words: its detail, unknown fields and a made-up enum stay out.
TEST(TakenFromWorkerTest, OnlyMeasuredNumbersAreKept) {
  tir::v1::Verification v;
  v.set_verdict(tir::v1::VERDICT_PASSED);
  v.set_relative_l2_error(1e-7);
  v.set_tolerance(std::nan(""));
  v.set_detail("\x1b]0;rogue detail\x07" + std::string(1024, 'D'));
  v.GetReflection()->MutableUnknownFields(&v)->AddLengthDelimited(77, "rogue payload");
  const tir::v1::Verification kept = TakenVerification(v, "workers/a");
  EXPECT_EQ(kept.verdict(), tir::v1::VERDICT_PASSED);
  EXPECT_EQ(kept.relative_l2_error(), 1e-7);
  EXPECT_EQ(kept.tolerance(), 0) << "not a number";
  EXPECT_THAT(kept.detail(), ::testing::StartsWith("matched the reference"));
  EXPECT_THAT(kept.detail(), ::testing::HasSubstr("(workers/a)"));
  EXPECT_EQ(kept.SerializeAsString().find("rogue"), std::string::npos);
  v.set_verdict(static_cast<tir::v1::Verdict>(99));
  EXPECT_EQ(TakenVerification(v).verdict(), tir::v1::VERDICT_FAULT) << "a verdict the coordinator does not know";

  tir::v1::Measurement m;
  m.set_median_seconds(2e-6);
  m.set_min_seconds(-1);
  m.set_samples(5);
  m.set_source(static_cast<tir::v1::TimingSource>(1234));
  m.GetReflection()->MutableUnknownFields(&m)->AddLengthDelimited(77, "rogue payload");
  const tir::v1::Measurement taken = TakenMeasurement(m);
  EXPECT_EQ(taken.median_seconds(), 2e-6);
  EXPECT_EQ(taken.min_seconds(), 0);
  EXPECT_EQ(taken.samples(), 5u);
  EXPECT_EQ(taken.source(), tir::v1::TimingSource());
  EXPECT_EQ(taken.SerializeAsString().find("rogue"), std::string::npos);

  EXPECT_EQ(ShownDeviceName("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(ShownDeviceName("x<script>\x1b[31m" + std::string(100, 'y')).size(), 64u);
  EXPECT_EQ(ShownDeviceName("a<b>\nc"), "abc");
}

TEST_F(BundlesTest, TheStoreFindsWhatItHoldsAndSigningSignsIt) {
  tir::v1::KernelBundle b;
  b.set_key("k");
  b.set_name("kernels/k");
  ASSERT_TRUE(store_->PutKernel(b).ok());
  StoreSource stored(store_);
  SigningSource signing(stored, signer_);
  auto none = signing.Find({"other"});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto found = signing.Find({"k"});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_TRUE((*found)->servable);
  EXPECT_TRUE(CheckBundleSignature((*found)->bundle, key_).ok());
  EXPECT_FALSE(CheckBundleSignature((*found)->bundle, "another key").ok());
}

TEST_F(BundlesTest, ADynamicBundleIsServedAtAShapeOnlyOnceVerifiedThere) {
  ASSERT_TRUE(store_->PutKernel(Dynamic("d")).ok());
  StoreSource stored(store_);
  ShapeSource sized(stored, *sizer_);
  SigningSource signing(sized, signer_);

  // The shape tuned at is verified by the tuning.
  const common::Shape tuned = common::ParseShapeText("0=8x4");
  auto atTuned = signing.Find({"d", &tuned});
  ASSERT_TRUE(atTuned.ok()) << atTuned.status();
  ASSERT_TRUE(atTuned->has_value());
  EXPECT_TRUE((*atTuned)->servable);
  EXPECT_EQ((*atTuned)->bundle.inputs(0).shape(0), 8);
  EXPECT_TRUE((*atTuned)->bundle.has_served_shape());
  EXPECT_TRUE(CheckBundleSignature((*atTuned)->bundle, key_).ok());

  // Another shape of the bucket: found, not servable, unsigned, unsized.
  const common::Shape other = common::ParseShapeText("0=5x4");
  auto atOther = signing.Find({"d", &other});
  ASSERT_TRUE(atOther.ok()) << atOther.status();
  ASSERT_TRUE(atOther->has_value());
  EXPECT_FALSE((*atOther)->servable);
  EXPECT_EQ((*atOther)->bundle.inputs(0).shape(0), -1);

  // Verified there: served sized; the record is in the ledger.
  tir::v1::ShapeVerification pass;
  *pass.add_shape() = other.hints[0];
  pass.set_passed(true);
  *pass.mutable_bundle_create_time() = (*atOther)->bundle.create_time();
  sizer_->Verified("d", other, (*atOther)->bundle, pass, true);
  auto again = signing.Find({"d", &other});
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_TRUE((*again)->servable);
  EXPECT_TRUE(ledger_->GetShape("d", other.text)->has_value());

  // A bundle retuned under the key (another create time) is not verified
  // by the old record.
  tir::v1::KernelBundle retuned = Dynamic("d");
  retuned.mutable_create_time()->set_seconds(200);
  ASSERT_TRUE(store_->PutKernel(retuned).ok());
  auto stale = signing.Find({"d", &other});
  ASSERT_TRUE(stale.ok() && stale->has_value());
  EXPECT_FALSE((*stale)->servable);
}

TEST_F(BundlesTest, ABundleWrongAtAShapeIsRefusedThereWithItsReason) {
  ASSERT_TRUE(store_->PutKernel(Dynamic("w")).ok());
  StoreSource stored(store_);
  ShapeSource sized(stored, *sizer_);
  const common::Shape shape = common::ParseShapeText("0=3x4");
  tir::v1::ShapeVerification wrong;
  wrong.set_passed(false);
  wrong.add_kernels()->set_verdict(tir::v1::VERDICT_WRONG);
  wrong.mutable_bundle_create_time()->set_seconds(100);
  sizer_->Verified("w", shape, Dynamic("w"), wrong, true);
  auto refused = sized.Find({"w", &shape});
  EXPECT_EQ(ReasonOf(refused.status()), "WRONG_AT_SHAPE");
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("VERDICT_WRONG"));
  // Forgetting the key (a new bundle) drops the refusal from memory and ledger.
  sizer_->Forget("w");
  EXPECT_FALSE(ledger_->GetShape("w", shape.text)->has_value());
  auto after = sized.Find({"w", &shape});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE((*after)->servable);
}

TEST_F(BundlesTest, AdminServesSignedMetadataListsAndDeletesWithTheShapeRecords) {
  tir::v1::KernelBundle b = Dynamic("a");
  tir::v1::KernelEntry *k = b.add_kernels();
  k->set_binary("cubin");
  k->set_source("source");
  ASSERT_TRUE(store_->PutKernel(b).ok());
  KernelAdmin admin(store_, signer_, *sizer_, *ledger_);
  auto meta = admin.Get("kernels/a", true);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_TRUE(meta->kernels(0).binary().empty());
  EXPECT_TRUE(meta->kernels(0).source().empty());
  EXPECT_TRUE(CheckBundleSignature(*meta, key_).ok()) << "metadata is signed as served";
  EXPECT_EQ(admin.Get("a", false)->kernels(0).binary(), "cubin");
  auto page = admin.List({});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->kernels_size(), 1);
  EXPECT_TRUE(CheckBundleSignature(page->kernels(0), key_).ok());

  tir::v1::ShapeVerification v;
  v.set_passed(true);
  ledger_->PutShape("a", "0=5x4", v);
  auto deleted = admin.Delete("kernels/a", "", false);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(deleted->deleted()) << "no requester recorded: the anonymous client's";
  EXPECT_FALSE(ledger_->GetShape("a", "0=5x4")->has_value()) << "its shape records go with it";
  EXPECT_FALSE(admin.Delete("kernels/a", "", false)->deleted());
  EXPECT_EQ(ReasonOf(admin.Get("a", false).status()), "NOT_FOUND");
}

// A bundle is deleted by the only identity that asked for it, or an admin;
// one asked for by two identities by an admin only; the requesters are in
// the ledger (a new KernelAdmin, as after a restart, knows them).
TEST_F(BundlesTest, ABundleIsDeletedByItsOnlyRequesterOrAnAdmin) {
  for (const std::string key : {"one", "two", "old"}) {
    tir::v1::KernelBundle b;
    b.set_key(key);
    b.set_name("kernels/" + key);
    ASSERT_TRUE(store_->PutKernel(b).ok());
  }
  {
    KernelAdmin before(store_, signer_, *sizer_, *ledger_);
    before.NoteRequester("one", "team-a");
    before.NoteRequester("one", "team-a");
    before.NoteRequester("two", "team-a");
    before.NoteRequester("two", "team-b");
  }
  EXPECT_EQ(*ledger_->RequestersOf("two"), (std::vector<std::string>{"team-a", "team-b"}));
  KernelAdmin admin(store_, signer_, *sizer_, *ledger_);
  for (const auto &[key, who] : std::vector<std::pair<std::string, std::string>>{
           {"one", "team-b"}, {"one", ""}, {"two", "team-a"}, {"two", "team-b"}, {"old", "team-a"}}) {
    auto refused = admin.Delete("kernels/" + key, who, false);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << key << " by " << who;
    EXPECT_EQ(ReasonOf(refused.status()), "NOT_OWNER") << key << " by " << who;
    EXPECT_TRUE(admin.Get(key, true).ok()) << key << " is still served";
  }
  auto mine = admin.Delete("kernels/one", "team-a", false);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_TRUE(mine->deleted());
  EXPECT_TRUE(ledger_->RequestersOf("one")->empty()) << "its requesters go with it";
  auto shared = admin.Delete("two", "root", true);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_TRUE(shared->deleted());
  // Asked for again after a deletion: the new requester's alone.
  admin.NoteRequester("one", "team-b");
  EXPECT_EQ(*ledger_->RequestersOf("one"), (std::vector<std::string>{"team-b"}));
  EXPECT_FALSE(admin.Delete("one", "team-b", false)->deleted()) << "nothing stored under it now";
}

}  // namespace
}  // namespace tir::bundles
