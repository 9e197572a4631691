// Calls of a sharded fleet's coordinators to one another: any coordinator
// takes any client call and forwards it to the shard it belongs to (a
// key's owner, an operation's shard), so clients need one address.
//
// A forwarded call carries the caller's own authorization (every shard has
// the same tokens and credentials), so the owner authenticates the caller
// itself: roles, identities, ownership and per-identity limits hold across
// shards, and no shard has to trust another with a caller's identity. The
// one thing lost is the peer address of a caller without a credential of
// its own (a shared token, or none): the owner counts such callers, for
// per-client limits, by the forwarding shard's address.
// It is marked "tir-forwarded": the receiving shard answers it itself and
// never forwards it again (a shard with another shard list cannot loop it).
//
// Calls are asynchronous (gRPC's callback API): a forwarded long poll holds
// no thread. A shard that fails a call (unreachable, deadline) is left alone
// for `retry` and its keys fall to the next shard in their order.

#ifndef TIR_SERVER_SHARDS_FORWARDER_H_
#define TIR_SERVER_SHARDS_FORWARDER_H_

#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/shards/shard_ring.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/status.pb.h"

namespace tir::shards {

struct ForwarderOptions {
  // PEM roots for shards serving TLS ("" : plaintext).
  std::string ca_pem;
  // A shard that failed a call is skipped this long.
  absl::Duration retry = absl::Seconds(5);
  // The token a shard presents for its own lookups at the others (a read or
  // client token of the fleet; "" for a fleet without tokens).
  std::string token;
  int max_message_bytes = 64 << 20;
};

class Forwarder {
 public:
  Forwarder(ShardRing ring, ForwarderOptions options);

  const ShardRing &ring() const { return ring_; }
  // Whether `ctx`'s call came from another shard (answered where it lands).
  static bool Forwarded(const grpc::ServerContextBase &ctx);

  // The shards to try for `key`, in order, ending with this one where the
  // order reaches it: those before it that are not left alone after a
  // failure. {self} when this shard owns the key (or all before it are down).
  std::vector<int> Route(absl::string_view key);
  // Whether `shard` is not left alone after a failure.
  bool Up(int shard);
  // Every shard as this one sees it, for the status page.
  std::vector<tir::v1::ShardStatus> Snapshot();

  // One attempt of a call to `shard` with the caller's authorization, by
  // the caller's deadline: `start` issues it on the stub's async interface
  // with the context given; `done` gets its status on a gRPC thread. A
  // transport failure (UNAVAILABLE without the shard's own answer, or the
  // deadline) leaves the shard alone for `retry`.
  using Async = tir::v1::CompilerService::StubInterface::async_interface;

  // The bundle another shard stores under `key`, asked of the shards after
  // this one in the key's order (the ones that took its keys while it was
  // down): a miss of the owner is not tuned again when the fleet has it.
  // nullopt when none of those that are up has it.
  std::optional<tir::v1::KernelBundle> FindElsewhere(const std::string &key);
  // `wait_for_shard`: a shard that is down (restarting) is waited for until
  // the caller's deadline, for calls no other shard can answer (an
  // operation's); else a down shard fails the call at once, and its keys
  // fall to the next shard.
  void Call(int shard, const grpc::ServerContextBase &in,
            const std::function<void(Async *, grpc::ClientContext *, std::function<void(grpc::Status)>)> &start,
            std::function<void(grpc::Status)> done, bool wait_for_shard = false);

 private:
  void Failed(int shard, const grpc::Status &status);

  const ShardRing ring_;
  const ForwarderOptions options_;
  std::vector<std::unique_ptr<tir::v1::CompilerService::Stub>> stubs_;  // null for self
  absl::Mutex mu_;
  std::vector<absl::Time> down_until_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> forwarded_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> failures_ ABSL_GUARDED_BY(mu_);
};

// Tries `shards` in turn with `attempt` until one answers with more than a
// transport failure (a shard's answer, error or not, is the answer); `local`
// answers for this shard (always last when present). `done` gets the
// answer.
void TryShards(Forwarder &forwarder, std::vector<int> shards,
               std::function<void(int shard, std::function<void(grpc::Status)>)> attempt,
               std::function<void(std::function<void(grpc::Status)>)> local, std::function<void(grpc::Status)> done);

// A transport failure: the shard did not answer (its own errors carry
// tir.v1.Error details).
bool TransportFailure(const grpc::Status &status);

}  // namespace tir::shards

#endif  // TIR_SERVER_SHARDS_FORWARDER_H_
