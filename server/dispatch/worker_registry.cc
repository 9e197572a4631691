#include "server/dispatch/worker_registry.h"

#include "compiler/support/digest.h"
#include "openssl/crypto.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tir::dispatch {
namespace {

bool Sick(const tir::v1::CandidateResult &r) {
  return r.verification().verdict() == tir::v1::VERDICT_FAULT || r.verification().verdict() == tir::v1::VERDICT_TIMEOUT;
}

}  // namespace

WorkerRegistry::WorkerRegistry(Options options) : options_(options) {}

std::string WorkerRegistry::Register(const std::string &name, const tir::v1::WorkerCapabilities &caps, absl::Time now,
                                     const std::string &session) {
  std::string n = name;
  if (Mints(name, session)) {
    do {
      n = "workers/" + RandomHex(16);
    } while (workers_.count(n));
    workers_[n].session = RandomHex(32);
  }
  WorkerEntry &w = workers_[n];  // a known name keeps its health (and distrust)
  w.capabilities = caps;
  w.last_heartbeat = now;
  w.state = "ready";
  return n;
}

std::string WorkerRegistry::RegisterIdentity(const std::string &identity, const tir::v1::WorkerCapabilities &caps,
                                             absl::Time now, const std::string &session, bool *replaced) {
  const std::string n = NameOf(identity);
  auto [it, added] = workers_.try_emplace(n);
  WorkerEntry &w = it->second;
  *replaced = false;
  if (added || !SessionMatches(n, session)) {
    *replaced = !added && w.state != "lost";
    w.session = RandomHex(32);
  }
  w.identity = identity;
  w.capabilities = caps;
  w.last_heartbeat = now;
  w.state = "ready";
  return n;
}

bool WorkerRegistry::Mints(const std::string &name, const std::string &session) const {
  // An identity's name is never taken without its credential.
  auto it = workers_.find(name);
  return name.empty() || it == workers_.end() || !it->second.identity.empty() || !SessionMatches(name, session);
}

size_t WorkerRegistry::Anonymous() const {
  return std::count_if(workers_.begin(), workers_.end(), [](const auto &w) { return w.second.identity.empty(); });
}

void WorkerRegistry::Remove(const std::string &name, absl::Time now) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return;
  if (it->second.identity.empty()) {
    workers_.erase(it);
    return;
  }
  it->second.state = "lost";
  it->second.lost_at = now;
  it->second.session = RandomHex(32);  // the drained process's session ends
}

bool WorkerRegistry::SessionMatches(const std::string &name, const std::string &session) const {
  auto it = workers_.find(name);
  if (it == workers_.end()) return true;
  const std::string &want = it->second.session;
  return session.size() == want.size() && CRYPTO_memcmp(session.data(), want.data(), want.size()) == 0;
}

WorkerEntry *WorkerRegistry::Find(const std::string &name) {
  auto it = workers_.find(name);
  return it == workers_.end() ? nullptr : &it->second;
}

const WorkerEntry *WorkerRegistry::Find(const std::string &name) const {
  auto it = workers_.find(name);
  return it == workers_.end() ? nullptr : &it->second;
}

WorkerEntry *WorkerRegistry::FindLive(const std::string &name) {
  WorkerEntry *w = Find(name);
  return w == nullptr || w->state == "lost" ? nullptr : w;
}

bool WorkerRegistry::Heartbeat(const std::string &name, tir::v1::WorkerState state, uint64_t measured, absl::Time now) {
  WorkerEntry *w = FindLive(name);
  if (w == nullptr) return false;
  w->last_heartbeat = now;
  w->measured = measured;
  w->state = state == tir::v1::WORKER_STATE_DRAINING      ? "draining"
             : state == tir::v1::WORKER_STATE_BUSY        ? "busy"
             : state == tir::v1::WORKER_STATE_UNAVAILABLE ? "unavailable"
                                                          : "ready";
  return true;
}

bool WorkerRegistry::HasHealthy(const std::string &arch) const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [&](const auto &w) { return w.second.capabilities.arch() == arch && w.second.healthy(); });
}

bool WorkerRegistry::HasHealthyOtherThan(const std::string &arch, const std::set<std::string> &besides) const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto &w) {
    return w.second.capabilities.arch() == arch && w.second.healthy() && !besides.count(w.first);
  });
}

std::string WorkerRegistry::DeviceOf(const std::string &arch) const {
  std::map<std::string, int> count;
  for (const auto &[name, w] : workers_) {
    if (w.capabilities.arch() == arch && w.healthy()) ++count[w.capabilities.device_name()];
  }
  std::string best;
  int most = 0;
  for (const auto &[device, n] : count) {
    if (n > most) best = device, most = n;
  }
  return best;
}

std::vector<std::string> WorkerRegistry::MarkLost(absl::Time now, absl::Duration lost_after,
                                                  absl::Duration forget_after) {
  std::vector<std::string> lost;
  for (auto it = workers_.begin(); it != workers_.end();) {
    WorkerEntry &w = it->second;
    if (w.state == "lost" && w.identity.empty() && now - w.lost_at > forget_after) {
      it = workers_.erase(it);
      continue;
    }
    if (w.state != "lost" && now - w.last_heartbeat > lost_after) {
      w.state = "lost";
      w.lost_at = now;
      lost.push_back(it->first);
    }
    ++it;
  }
  return lost;
}

bool WorkerRegistry::Distrust(const std::string &name, const std::string &why) {
  WorkerEntry *w = Find(name);
  if (w == nullptr || w->distrusted) return false;
  w->distrusted = true;
  w->distrust_reason = why;
  return true;
}

bool WorkerRegistry::NoteUnconfirmed(const std::string &name, int limit) {
  WorkerEntry *w = Find(name);
  if (w == nullptr) return false;
  return ++w->unconfirmed >= limit;
}

uint32_t WorkerRegistry::Allowance(const WorkerEntry &w, uint32_t asked, absl::Time now) const {
  if (!w.quarantined) return asked;
  return now >= w.next_probe ? std::min(asked, 1u) : 0;
}

void WorkerRegistry::Leased(WorkerEntry &w, absl::Time now) {
  if (w.quarantined) w.next_probe = now + options_.quarantine_probe;
}

WorkerRegistry::Health WorkerRegistry::NoteResults(const std::string &name, const std::string &job, int kernel,
                                                   const std::vector<tir::v1::CandidateResult> &results,
                                                   absl::Time now) {
  WorkerEntry *w = Find(name);
  if (w == nullptr || options_.quarantine_after <= 0) return Health::kSame;
  const bool passed = std::any_of(results.begin(), results.end(), [](const tir::v1::CandidateResult &r) {
    return r.verification().verdict() == tir::v1::VERDICT_PASSED;
  });
  if (passed) {
    const bool was = w->quarantined;
    w->quarantined = false;
    w->sick.clear();
    return was ? Health::kReleased : Health::kSame;
  }
  if (results.empty() || !std::all_of(results.begin(), results.end(), Sick)) return Health::kSame;
  w->sick.insert({job, kernel});
  w->next_probe = now + options_.quarantine_probe;
  if (!w->quarantined && static_cast<int>(w->sick.size()) >= options_.quarantine_after) {
    w->quarantined = true;
    return Health::kQuarantined;
  }
  return Health::kSame;
}

}  // namespace tir::dispatch
