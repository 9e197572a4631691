#include "server/dispatch/worker_registry.h"

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::dispatch {
namespace {

using ::testing::ElementsAre;
using ::testing::MatchesRegex;

tir::v1::WorkerCapabilities Caps(const std::string &arch) {
  tir::v1::WorkerCapabilities c;
  c.set_arch(arch);
  c.set_backend(arch == "host" ? "host" : "cuda");
  return c;
}

std::vector<tir::v1::CandidateResult> Verdicts(std::vector<tir::v1::Verdict> vs) {
  std::vector<tir::v1::CandidateResult> out;
  for (auto v : vs) {
    out.emplace_back();
    out.back().mutable_verification()->set_verdict(v);
  }
  return out;
}

TEST(WorkerRegistryTest, NamesAreRandomAndAKnownNameKeepsItsEntry) {
  WorkerRegistry r({});
  const absl::Time t0 = absl::Now();
  const std::string a = r.Register("", Caps("host"), t0);
  EXPECT_THAT(a, MatchesRegex("workers/[0-9a-f]{32}"));
  const std::string session = r.Find(a)->session;
  EXPECT_THAT(session, MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(r.Register(a, Caps("host"), t0, session), a);
  // Without its secret a known name is not taken over: a new name comes back.
  EXPECT_NE(r.Register(a, Caps("host"), t0), a);
  EXPECT_NE(r.Register(a, Caps("host"), t0, std::string(64, '0')), a);
  EXPECT_TRUE(r.SessionMatches(a, session));
  EXPECT_FALSE(r.SessionMatches(a, ""));
  // A name from another coordinator's life is not taken over.
  EXPECT_NE(r.Register("workers/0000000000000001", Caps("host"), t0), "workers/0000000000000001");
  WorkerRegistry other({});
  EXPECT_NE(other.Register("", Caps("host"), t0), a);
}

// A worker with a credential of its own is its identity: one entry, named
// for it, whose health outlives re-registration, drains and loss.
TEST(WorkerRegistryTest, AnIdentitysEntryIsOneAndKeepsItsHealth) {
  WorkerRegistry r({.quarantine_after = 1});
  const absl::Time t0 = absl::Now();
  bool replaced = true;
  const std::string a = r.RegisterIdentity("gpu-a", Caps("host"), t0, "", &replaced);
  EXPECT_EQ(a, "workers/id-gpu-a");
  EXPECT_FALSE(replaced);
  const std::string first = r.Find(a)->session;
  EXPECT_EQ(r.RegisterIdentity("gpu-a", Caps("host"), t0, first, &replaced), a);
  EXPECT_FALSE(replaced) << "its own session: the same registration";
  EXPECT_EQ(r.Find(a)->session, first);
  EXPECT_EQ(r.RegisterIdentity("gpu-a", Caps("host"), t0, "", &replaced), a);
  EXPECT_TRUE(replaced) << "a live registration without its session is displaced";
  EXPECT_NE(r.Find(a)->session, first);
  // Quarantine and distrust are the identity's.
  EXPECT_EQ(r.NoteResults(a, "job", 0, Verdicts({tir::v1::VERDICT_FAULT}), t0), WorkerRegistry::Health::kQuarantined);
  r.Distrust(a);
  r.Remove(a, t0);
  ASSERT_NE(r.Find(a), nullptr) << "a drain keeps an identity's entry";
  EXPECT_EQ(r.Find(a)->state, "lost");
  r.MarkLost(t0 + absl::Hours(1), absl::Seconds(5));
  ASSERT_NE(r.Find(a), nullptr) << "an identity is never forgotten";
  EXPECT_EQ(r.RegisterIdentity("gpu-a", Caps("host"), t0 + absl::Hours(1), "", &replaced), a);
  EXPECT_FALSE(replaced) << "it was lost";
  EXPECT_TRUE(r.Find(a)->quarantined);
  EXPECT_TRUE(r.Find(a)->distrusted);
  EXPECT_EQ(r.Anonymous(), 0u);
  // A worker without credentials cannot take an identity's name.
  const std::string session = r.Find(a)->session;
  EXPECT_NE(r.Register(a, Caps("host"), t0, session), a);
  EXPECT_EQ(r.Anonymous(), 1u);
  r.Remove(r.all().rbegin()->first == a ? r.all().begin()->first : r.all().rbegin()->first, t0);
  EXPECT_EQ(r.Anonymous(), 0u) << "a drained anonymous worker is forgotten";
}

TEST(WorkerRegistryTest, HeartbeatsKeepAWorkerAliveAndSilenceLosesIt) {
  WorkerRegistry r({});
  const absl::Time t0 = absl::Now();
  const std::string a = r.Register("", Caps("sm_90a"), t0), b = r.Register("", Caps("sm_90a"), t0);
  EXPECT_TRUE(r.HasHealthy("sm_90a"));
  EXPECT_FALSE(r.HasHealthy("host"));
  EXPECT_TRUE(r.Heartbeat(a, tir::v1::WORKER_STATE_BUSY, 7, t0 + absl::Seconds(4)));
  EXPECT_EQ(r.Find(a)->state, "busy");
  EXPECT_EQ(r.Find(a)->measured, 7u);
  EXPECT_THAT(r.MarkLost(t0 + absl::Seconds(6), absl::Seconds(5)), ElementsAre(b));
  EXPECT_EQ(r.FindLive(b), nullptr);
  EXPECT_FALSE(r.Heartbeat(b, tir::v1::WORKER_STATE_READY, 0, t0 + absl::Seconds(7))) << "lost: register again";
  EXPECT_TRUE(r.Heartbeat(a, tir::v1::WORKER_STATE_DRAINING, 7, t0 + absl::Seconds(7)));
  EXPECT_FALSE(r.HasHealthy("sm_90a")) << "draining and lost";
  EXPECT_EQ(r.Register(b, Caps("sm_90a"), t0 + absl::Seconds(8), r.Find(b)->session), b);
  EXPECT_TRUE(r.HasHealthy("sm_90a"));
}

// Tests that planning's device is the one most healthy workers of the arch
// report, and that a lost worker's device no longer counts.
TEST(WorkerRegistryTest, DeviceOfIsTheHealthyMajority) {
  WorkerRegistry r({});
  const absl::Time t0 = absl::Now();
  EXPECT_EQ(r.DeviceOf("sm_90a"), "");
  auto caps = [](const char *device) {
    tir::v1::WorkerCapabilities c = Caps("sm_90a");
    c.set_device_name(device);
    return c;
  };
  const std::string a = r.Register("", caps("NVIDIA H200"), t0);
  r.Register("", caps("NVIDIA H200"), t0);
  r.Register("", caps("NVIDIA H100 80GB HBM3"), t0);
  EXPECT_EQ(r.DeviceOf("sm_90a"), "NVIDIA H200");
  EXPECT_EQ(r.DeviceOf("sm_80"), "");
  EXPECT_TRUE(r.Heartbeat(a, tir::v1::WORKER_STATE_DRAINING, 0, t0));
  r.Register("", caps("NVIDIA H100 80GB HBM3"), t0);
  EXPECT_EQ(r.DeviceOf("sm_90a"), "NVIDIA H100 80GB HBM3");
}

TEST(WorkerRegistryTest, FaultsOnSeveralKernelsInARowQuarantineUntilAProbePasses) {
  WorkerRegistry r({/*quarantine_after=*/3, /*quarantine_probe=*/absl::Seconds(60)});
  const absl::Time t0 = absl::Now();
  const std::string w = r.Register("", Caps("sm_90a"), t0);
  using V = tir::v1::Verdict;
  const auto faults = Verdicts({V::VERDICT_FAULT, V::VERDICT_TIMEOUT});
  // The same kernel twice counts once; wrong results are the kernel's.
  EXPECT_EQ(r.NoteResults(w, "j", 0, faults, t0), WorkerRegistry::Health::kSame);
  EXPECT_EQ(r.NoteResults(w, "j", 0, faults, t0), WorkerRegistry::Health::kSame);
  EXPECT_EQ(r.NoteResults(w, "j", 1, Verdicts({V::VERDICT_WRONG, V::VERDICT_FAULT}), t0), WorkerRegistry::Health::kSame);
  EXPECT_EQ(r.NoteResults(w, "k", 0, faults, t0), WorkerRegistry::Health::kSame);
  EXPECT_EQ(r.Find(w)->sick.size(), 2u);
  EXPECT_EQ(r.NoteResults(w, "k", 1, faults, t0), WorkerRegistry::Health::kQuarantined);
  WorkerEntry &e = *r.Find(w);
  EXPECT_EQ(e.shown(), "quarantined");
  EXPECT_FALSE(r.HasHealthy("sm_90a"));
  // No work before the probe is due; then one item, whatever is asked.
  EXPECT_EQ(r.Allowance(e, 4, t0 + absl::Seconds(30)), 0u);
  EXPECT_EQ(r.Allowance(e, 4, t0 + absl::Seconds(61)), 1u);
  r.Leased(e, t0 + absl::Seconds(61));
  EXPECT_EQ(r.Allowance(e, 4, t0 + absl::Seconds(62)), 0u) << "one probe per interval";
  EXPECT_EQ(r.NoteResults(w, "p", 0, Verdicts({V::VERDICT_FAULT}), t0 + absl::Seconds(63)), WorkerRegistry::Health::kSame);
  EXPECT_TRUE(e.quarantined);
  EXPECT_EQ(r.NoteResults(w, "p", 1, Verdicts({V::VERDICT_FAULT, V::VERDICT_PASSED}), t0 + absl::Seconds(130)),
            WorkerRegistry::Health::kReleased);
  EXPECT_EQ(e.shown(), "ready");
  EXPECT_TRUE(e.sick.empty());
  EXPECT_EQ(r.Allowance(e, 4, t0), 4u);
}

TEST(WorkerRegistryTest, APassingCandidateBetweenFaultsStartsTheCountAgain) {
  WorkerRegistry r({/*quarantine_after=*/2, absl::Seconds(60)});
  const absl::Time t0 = absl::Now();
  const std::string w = r.Register("", Caps("host"), t0);
  using V = tir::v1::Verdict;
  r.NoteResults(w, "a", 0, Verdicts({V::VERDICT_FAULT}), t0);
  r.NoteResults(w, "b", 0, Verdicts({V::VERDICT_PASSED}), t0);
  EXPECT_EQ(r.NoteResults(w, "c", 0, Verdicts({V::VERDICT_FAULT}), t0), WorkerRegistry::Health::kSame);
  EXPECT_FALSE(r.Find(w)->quarantined);
  WorkerRegistry never({/*quarantine_after=*/0, absl::Seconds(60)});
  const std::string n = never.Register("", Caps("host"), t0);
  for (int k = 0; k < 5; ++k) never.NoteResults(n, "x", k, Verdicts({V::VERDICT_FAULT}), t0);
  EXPECT_FALSE(never.Find(n)->quarantined);
}

}  // namespace
}  // namespace tir::dispatch

namespace tir::dispatch {
namespace {

TEST(WorkerRegistryBoundsTest, LostWorkersAreForgottenAndDistrustedOnesTakeNoWork) {
  WorkerRegistry r({});
  const absl::Time t0 = absl::Now();
  const std::string a = r.Register("", Caps("host"), t0), b = r.Register("", Caps("host"), t0);
  ASSERT_TRUE(r.Distrust(b));
  EXPECT_FALSE(r.Find(b)->healthy());
  EXPECT_EQ(r.Find(b)->shown(), "distrusted");
  EXPECT_EQ(r.Register(b, Caps("host"), t0, r.Find(b)->session), b);
  EXPECT_TRUE(r.Find(b)->distrusted) << "registering again under its name keeps it";
  EXPECT_FALSE(r.Distrust("workers/unknown"));
  // Lost after lost_after, forgotten forget_after later.
  EXPECT_EQ(r.MarkLost(t0 + absl::Seconds(10), absl::Seconds(5), absl::Minutes(10)).size(), 2u);
  EXPECT_NE(r.Find(a), nullptr);
  r.MarkLost(t0 + absl::Minutes(11), absl::Seconds(5), absl::Minutes(10));
  EXPECT_EQ(r.Find(a), nullptr);
  EXPECT_TRUE(r.all().empty());
}

}  // namespace
}  // namespace tir::dispatch
