// The workers a coordinator knows: their capabilities, heartbeats and
// states, and their health. Names are "workers/" and 16 random hex digits,
// so a worker that still holds a name from before a coordinator restart
// never takes over another's.
//
// Health: a worker whose reports have every candidate fault or time out on
// `quarantine_after` different kernels in a row is quarantined (a sick GPU
// fails whatever it touches): it is leased one probe item every
// `quarantine_probe`, and a report with a passing candidate lets it back.
// Wrong results and compile failures are the kernel's, not the worker's.
//
// Not thread-safe: the Dispatcher's mutex guards it.

#ifndef TIR_SERVER_DISPATCH_WORKER_REGISTRY_H_
#define TIR_SERVER_DISPATCH_WORKER_REGISTRY_H_

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::dispatch {

struct WorkerEntry {
  tir::v1::WorkerCapabilities capabilities;
  // The worker credential it registered with ("" : none of its own). An
  // entry with one is kept through drains and loss: its health and distrust
  // are the identity's.
  std::string identity;
  std::string session;  // its registration's secret (RegisterWorkerResponse.session)
  absl::Time last_heartbeat;
  std::string state = "ready";  // ready, busy, draining, unavailable, lost
  uint64_t measured = 0;
  uint64_t sampled_measured = 0;  // at the last series sample
  double rate = 0;                // candidates per second over the last sample
  // Kernels (job, kernel) whose reports from it had every candidate fault or
  // time out, since its last passing candidate.
  std::set<std::pair<std::string, int>> sick;
  bool quarantined = false;
  // Its word was found false: it reported measuring a binary that is not
  // the coordinator's build of the source, a time below the kernel's
  // physical floor, a WRONG verdict another worker contradicted, or winners
  // the coordinator could not confirm more than once. It takes no more work;
  // `distrust_reason` says why (the coordinator's words).
  bool distrusted = false;
  std::string distrust_reason;
  // Winners it measured whose binary the coordinator could not check (a
  // toolchain not the coordinator's, or no hash).
  int unconfirmed = 0;
  absl::Time lost_at;
  absl::Time next_probe;
  // "quarantined" while quarantined, else `state`.
  std::string shown() const { return distrusted ? "distrusted" : quarantined ? "quarantined" : state; }
  // Takes work: not lost, draining, unavailable or quarantined.
  bool healthy() const { return !distrusted && !quarantined && state != "lost" && state != "draining" && state != "unavailable"; }
};

class WorkerRegistry {
 public:
  struct Options {
    int quarantine_after = 3;  // 0: never
    absl::Duration quarantine_probe = absl::Minutes(1);
  };
  explicit WorkerRegistry(Options options);

  // Registers a worker: `name` again when it is known and `session` is its
  // secret (its health kept), else a new name with a new secret. It is
  // "ready" and heard from `now`.
  std::string Register(const std::string &name, const tir::v1::WorkerCapabilities &caps, absl::Time now,
                       const std::string &session = "");
  // Registers the worker of credential `identity` under NameOf(identity),
  // whatever name it asks for: again (its session kept) when `session` is
  // the entry's secret, else with a new secret, `*replaced` telling whether
  // a live registration was displaced. Health and distrust are kept.
  std::string RegisterIdentity(const std::string &identity, const tir::v1::WorkerCapabilities &caps, absl::Time now,
                               const std::string &session, bool *replaced);
  // "workers/id-<identity>": never a random name (hex digits only).
  static std::string NameOf(const std::string &identity) { return "workers/id-" + identity; }
  // Whether Register(name, ..., session) makes a new entry (a new name).
  bool Mints(const std::string &name, const std::string &session) const;
  // Entries without an identity (the ones maxWorkers bounds).
  size_t Anonymous() const;
  // Whether `session` is the secret of known worker `name` (true for an
  // unknown name: the call then fails as it would).
  bool SessionMatches(const std::string &name, const std::string &session) const;
  // Null when unknown.
  WorkerEntry *Find(const std::string &name);
  const WorkerEntry *Find(const std::string &name) const;
  // Null when unknown or lost (it must register again).
  WorkerEntry *FindLive(const std::string &name);
  // Deregisters `name` (a drain): forgotten, or for an identity's entry,
  // "lost" with its health kept.
  void Remove(const std::string &name, absl::Time now);

  // A heartbeat: state and count; false when the worker must register again.
  bool Heartbeat(const std::string &name, tir::v1::WorkerState state, uint64_t measured, absl::Time now);
  // A healthy worker of `arch` exists.
  bool HasHealthy(const std::string &arch) const;
  // Whether a healthy worker of `arch` not named in `besides` exists (one
  // that could check what those workers said).
  bool HasHealthyOtherThan(const std::string &arch, const std::set<std::string> &besides) const;
  // The device name most healthy workers of `arch` report ("" when none):
  // the device whose figures planning ranks candidates for.
  std::string DeviceOf(const std::string &arch) const;
  // Workers heard from last before `now - lost_after` become "lost"; their
  // names. Those lost for `forget_after` are forgotten (but for an
  // identity's, bounded by the credentials file and kept for their health).
  std::vector<std::string> MarkLost(absl::Time now, absl::Duration lost_after,
                                    absl::Duration forget_after = absl::Minutes(10));
  // Takes no more work (see WorkerEntry::distrusted) for `why`; false when
  // unknown or distrusted already.
  bool Distrust(const std::string &name, const std::string &why = "");
  // `name` measured a winner the coordinator could not confirm; true when
  // that makes `limit` of them (it is to be distrusted).
  bool NoteUnconfirmed(const std::string &name, int limit);

  // How many of `asked` items `w` may lease now: all of them, or for a
  // quarantined worker one when its probe is due (Leased moves the probe on).
  uint32_t Allowance(const WorkerEntry &w, uint32_t asked, absl::Time now) const;
  void Leased(WorkerEntry &w, absl::Time now);

  enum class Health { kSame, kQuarantined, kReleased };
  // After `name` reported `results` for kernel `kernel` of `job`.
  Health NoteResults(const std::string &name, const std::string &job, int kernel,
                     const std::vector<tir::v1::CandidateResult> &results, absl::Time now);

  const std::map<std::string, WorkerEntry> &all() const { return workers_; }
  std::map<std::string, WorkerEntry> &all() { return workers_; }

 private:
  Options options_;
  std::map<std::string, WorkerEntry> workers_;
};

}  // namespace tir::dispatch

#endif  // TIR_SERVER_DISPATCH_WORKER_REGISTRY_H_
