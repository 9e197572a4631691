// Host tiers that read through to one fleet, on loopback: each a coordinator
// with a host worker and the fleet as its upstream (what the per-user local
// service is with --upstream), as client::EmbeddedService runs them.
//  - a graph tuned through the first tier is tuned once, on the fleet, and
//    is then a hit through the second without tuning there;
//  - a lookup through a tier finds what the fleet has and keeps it;
//  - heuristic-now through a tier serves the fleet's untuned answer, and
//    the tuned bundle once the fleet has it;
//  - the fleet down: a tier tunes here and says why; a compile following the
//    fleet's tuning when the fleet goes is tuned here instead;
//  - a fleet whose bundles are not signed with the key the tier expects is
//    not trusted: tuned here, said so.

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/client.h"
#include "client/embedded.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api/server.h"

namespace tir {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

// An elementwise graph; each test its own size (the fleet's store is shared
// by the suite).
std::string Graph(int rows, int cols) {
  return absl::StrCat("tir.graph @g(%x: tensor<", rows, "x", cols, "xf32>) -> tensor<", rows, "x", cols, "xf32> {\n",
                      "  %y = exp %x : tensor<", rows, "x", cols, "xf32>\n  results %y : tensor<", rows, "x", cols,
                      "xf32>\n}\n");
}

tir::v1::CompileOptions Host(tir::v1::CompileMode mode = tir::v1::COMPILE_MODE_WAIT) {
  tir::v1::CompileOptions o;
  o.set_target_arch("host");
  o.set_mode(mode);
  return o;
}

std::unique_ptr<Client> ClientOf(client::EmbeddedService &s) {
  ClientOptions o;
  o.address = s.address();
  o.call_timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(*c);
}

// Jobs a coordinator tuned (finished) or is tuning.
int Tuned(client::EmbeddedService &s) {
  const tir::v1::ServiceStatus status = s.server().coordinator().Status();
  return status.recent_size() + status.running_size();
}

std::string Notes(const tir::v1::Operation &op) { return absl::StrJoin(op.metadata().notes(), "; "); }

std::unique_ptr<client::EmbeddedService> Start(const std::string &name, const std::string &upstream,
                                               const std::string &bundle_key_file = "") {
  client::EmbeddedOptions o;
  o.cache_dir = Tmp() + "/" + name;
  o.backend = "host";
  o.upstream = upstream;
  o.upstream_bundle_key_file = bundle_key_file;
  // Long enough for a loaded machine's calls; a lost fleet is given up
  // after six of them (18 s).
  o.upstream_timeout = absl::Seconds(3);
  // A fleet found down is left alone for the rest of a test.
  o.upstream_retry = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<client::EmbeddedService>> s = client::EmbeddedService::Start(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

class HostTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    const std::string run = absl::StrCat("run", n++);
    fleet_ = Start(run + "-fleet", "");
    ASSERT_NE(fleet_, nullptr);
    first_ = Start(run + "-tier1", fleet_->address());
    second_ = Start(run + "-tier2", fleet_->address());
    ASSERT_NE(first_, nullptr);
    ASSERT_NE(second_, nullptr);
  }
  std::unique_ptr<client::EmbeddedService> fleet_, first_, second_;
};

TEST_F(HostTierTest, TunedOnceOnTheFleetThenAHitThroughTheOtherTierWithoutTuning) {
  const std::string g = Graph(24, 40);
  auto c1 = ClientOf(*first_);
  absl::StatusOr<tir::v1::Operation> op = c1->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->metadata().tier(), "upstream") << Notes(*op);
  EXPECT_THAT(Notes(*op), HasSubstr("tuning upstream"));
  op = c1->Wait(op->name(), absl::Minutes(2));
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->done());
  ASSERT_TRUE(op->has_response()) << op->error().message();
  EXPECT_TRUE(op->response().tuning().tuned());
  EXPECT_EQ(Tuned(*fleet_), 1) << "tuned on the fleet";
  EXPECT_EQ(Tuned(*first_), 0) << "the tier followed the fleet's tuning, it did not tune";

  // Kept by the first tier: its own hit now.
  absl::StatusOr<tir::v1::Operation> again = c1->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->metadata().cache_hit());
  EXPECT_EQ(again->metadata().tier(), "local");
  EXPECT_EQ(again->response().kernels(0).binary(), op->response().kernels(0).binary());

  // The second tier has never seen it: the fleet's hit, without tuning.
  auto c2 = ClientOf(*second_);
  const uint64_t fleetHits = fleet_->server().coordinator().Status().cache_hits();
  absl::StatusOr<tir::v1::Operation> other = c2->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(other->done());
  ASSERT_TRUE(other->has_response());
  EXPECT_TRUE(other->metadata().cache_hit());
  EXPECT_EQ(other->metadata().tier(), "upstream");
  EXPECT_TRUE(other->response().tuning().tuned());
  EXPECT_EQ(other->response().kernels(0).binary(), op->response().kernels(0).binary());
  EXPECT_EQ(Tuned(*second_), 0);
  EXPECT_EQ(Tuned(*fleet_), 1) << "tuned once in all";
  EXPECT_EQ(fleet_->server().coordinator().Status().cache_hits(), fleetHits + 1);
  const tir::v1::UpstreamStatus up = second_->server().coordinator().Status().upstream();
  EXPECT_EQ(up.address(), fleet_->address());
  EXPECT_TRUE(up.healthy());
  EXPECT_EQ(up.hits(), 1u);
  // And kept there too.
  other = c2->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->metadata().tier(), "local");
}

TEST_F(HostTierTest, ALookupThroughATierFindsTheFleetsBundleAndKeepsIt) {
  const std::string g = Graph(8, 104);
  auto direct = ClientOf(*fleet_);
  absl::StatusOr<tir::v1::Operation> op = direct->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(op.ok()) << op.status();
  op = direct->Wait(op->name(), absl::Minutes(2));
  ASSERT_TRUE(op.ok() && op->has_response()) << op.status();
  auto c = ClientOf(*first_);
  absl::StatusOr<tir::v1::LookupKernelResponse> found = c->Lookup(GraphSourceFromText(Graph(8, 112)), Host());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_FALSE(found->found()) << "in neither tier";
  found = c->Lookup(GraphSourceFromText(g), Host());
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->found());
  EXPECT_EQ(found->bundle().kernels(0).binary(), op->response().kernels(0).binary());
  // Kept: the tier answers it with the fleet gone.
  fleet_.reset();
  found = c->Lookup(GraphSourceFromText(g), Host());
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->found());
  EXPECT_EQ(Tuned(*first_), 0);
}

TEST_F(HostTierTest, HeuristicNowServesTheFleetsUntunedAnswerThenItsTunedBundle) {
  const std::string g = Graph(40, 24);
  auto c = ClientOf(*first_);
  absl::StatusOr<tir::v1::Operation> now = c->Compile(GraphSourceFromText(g), Host(tir::v1::COMPILE_MODE_HEURISTIC_NOW));
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_TRUE(now->done());
  ASSERT_TRUE(now->has_response()) << now->error().message();
  EXPECT_FALSE(now->response().tuning().tuned());
  EXPECT_EQ(now->metadata().tier(), "upstream");
  EXPECT_THAT(Notes(*now), HasSubstr("untuned: tuning upstream"));
  // The fleet tunes behind its answer; once it has, the tier's next request
  // is the tuned bundle (and kept).
  auto direct = ClientOf(*fleet_);
  absl::StatusOr<tir::v1::Operation> tuned = direct->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  tuned = direct->Wait(tuned->name(), absl::Minutes(2));
  ASSERT_TRUE(tuned.ok() && tuned->has_response()) << tuned.status();
  absl::StatusOr<tir::v1::Operation> later = c->Compile(GraphSourceFromText(g), Host(tir::v1::COMPILE_MODE_HEURISTIC_NOW));
  ASSERT_TRUE(later.ok()) << later.status();
  ASSERT_TRUE(later->has_response());
  EXPECT_TRUE(later->response().tuning().tuned());
  EXPECT_EQ(later->metadata().tier(), "upstream");
  EXPECT_EQ(Tuned(*first_), 0);
}

TEST_F(HostTierTest, TheFleetDownMeansTuningHereAndSaysSo) {
  fleet_.reset();
  auto c = ClientOf(*second_);
  absl::StatusOr<tir::v1::Operation> op = c->Compile(GraphSourceFromText(Graph(56, 16)), Host());
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->metadata().tier(), "local");
  EXPECT_THAT(Notes(*op), HasSubstr("did not answer"));
  op = c->Wait(op->name(), absl::Minutes(2));
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->has_response()) << op->error().message();
  EXPECT_TRUE(op->response().tuning().tuned());
  EXPECT_EQ(Tuned(*second_), 1);
  // Left alone for its retry time: the next miss does not wait for it.
  op = c->Compile(GraphSourceFromText(Graph(56, 24)), Host(tir::v1::COMPILE_MODE_HEURISTIC_NOW));
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->has_response());
  EXPECT_EQ(op->metadata().tier(), "local");
  EXPECT_THAT(Notes(*op), HasSubstr("is down"));
  const tir::v1::UpstreamStatus up = second_->server().coordinator().Status().upstream();
  EXPECT_FALSE(up.healthy());
  EXPECT_GE(up.failures(), 1u);
  EXPECT_THAT(up.last_error(), HasSubstr("UNAVAILABLE"));
}

TEST_F(HostTierTest, ACompileFollowingTheFleetThatGoesAwayIsTunedHere) {
  // Large enough that the fleet is still tuning when it goes.
  const std::string g = Graph(256, 384);
  auto c = ClientOf(*first_);
  absl::StatusOr<tir::v1::Operation> op = c->Compile(GraphSourceFromText(g), Host());
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_EQ(op->metadata().tier(), "upstream") << Notes(*op);
  ASSERT_FALSE(op->done());
  fleet_.reset();
  op = c->Wait(op->name(), absl::Minutes(3));
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->done());
  ASSERT_TRUE(op->has_response()) << op->error().message();
  EXPECT_TRUE(op->response().tuning().tuned());
  EXPECT_EQ(Tuned(*first_), 1) << "tuned here once the fleet was gone";
}

TEST(HostTierKeyTest, ATierThatExpectsAnotherBundleKeyTunesHere) {
  const std::string key = Tmp() + "/fleet.key";
  std::ofstream(key) << "the key this tier expects, not the fleet's\n";
  auto fleet = Start("keyed-fleet", "");
  ASSERT_NE(fleet, nullptr);
  auto tier = Start("keyed-tier", fleet->address(), key);
  ASSERT_NE(tier, nullptr);
  // Tuned on the fleet first: its answer to the tier is then a bundle, which
  // the tier refuses.
  auto direct = ClientOf(*fleet);
  absl::StatusOr<tir::v1::Operation> there = direct->Compile(GraphSourceFromText(Graph(16, 72)), Host());
  ASSERT_TRUE(there.ok()) << there.status();
  there = direct->Wait(there->name(), absl::Minutes(2));
  ASSERT_TRUE(there.ok() && there->has_response()) << there.status();
  auto c = ClientOf(*tier);
  absl::StatusOr<tir::v1::Operation> op = c->Compile(GraphSourceFromText(Graph(16, 72)), Host());
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->metadata().tier(), "local");
  EXPECT_THAT(Notes(*op), HasSubstr("BUNDLE_UNSIGNED"));
  op = c->Wait(op->name(), absl::Minutes(2));
  ASSERT_TRUE(op.ok() && op->has_response()) << op.status();
  EXPECT_EQ(Tuned(*tier), 1);
}

}  // namespace
}  // namespace tir
