// Calls of a sharded fleet's coordinators to one another: any coordinator
// takes any client call and forwards it to the shard it belongs to (a
// key's owner, an operation's shard), so clients need one address.
//
// A forwarded call carries the caller's own authorization (every shard has
// the same tokens and credentials), so the owner authenticates the caller
// itself: roles, identities, ownership and per-identity limits hold across
// shards, and no shard has to trust another with a caller's identity.
// It is marked "tir-forwarded" with a value only the shards can make (a
// digest of the fleet's shared secret: its bundle key, else its worker
// token): the receiving shard answers it itself and never forwards it again
// (a shard with another shard list cannot loop it), and takes the caller's
// client key ("tir-forwarded-for": its identity or its host, for per-client
// limits and request ids) from it. A client that sends the header without
// the value is an ordinary client.
//
// Calls are asynchronous (gRPC's callback API): a forwarded long poll holds
// no thread. A shard that fails a call (unreachable, deadline) is left alone
// for `retry` and its keys fall to the next shard in their order.

#ifndef TIR_SERVER_SHARDS_FORWARDER_H_
#define TIR_SERVER_SHARDS_FORWARDER_H_

#include <functional>
#include <optional>
#include <set>
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
  // The fleet's shared secret the forwarded marker is made from ("" : a
  // fleet without tokens or keys, where anyone may do anything anyway).
  std::string secret;
  // Every bundle a shard keeps from another must be signed with it ("" :
  // not checked).
  std::string bundle_key;
  // Longest wait of a forwarded call whose caller set none or a longer one.
  absl::Duration max_call = absl::Minutes(10);
  int max_message_bytes = 64 << 20;
};

class Forwarder {
 public:
  Forwarder(ShardRing ring, ForwarderOptions options);

  const ShardRing &ring() const { return ring_; }
  // Whether `ctx`'s call came from another shard (answered where it lands):
  // it carries the marker only shards can make.
  bool Forwarded(const grpc::ServerContextBase &ctx) const;
  // For a forwarded call: the client key the forwarding shard gave
  // ("" : none, or not forwarded).
  std::string ForwardedFor(const grpc::ServerContextBase &ctx) const;

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
  // `client`: the caller's client key, sent along.
  void Call(int shard, const grpc::ServerContextBase &in, const std::string &client,
            const std::function<void(Async *, grpc::ClientContext *, std::function<void(grpc::Status)>)> &start,
            std::function<void(grpc::Status)> done, bool wait_for_shard = false);
  // Cancels every forwarded call in flight, and answers later ones
  // UNAVAILABLE at once (the server is going away).
  void Stop();
  bool stopping() {
    absl::MutexLock l(&mu_);
    return stopping_;
  }

 private:
  void Failed(int shard, const grpc::Status &status);

  const ShardRing ring_;
  const ForwarderOptions options_;
  const std::string marker_;
  std::vector<std::unique_ptr<tir::v1::CompilerService::Stub>> stubs_;  // null for self
  absl::Mutex mu_;
  std::vector<absl::Time> down_until_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> forwarded_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> failures_ ABSL_GUARDED_BY(mu_);
  std::set<grpc::ClientContext *> in_flight_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Tries `shards` in turn with `attempt` until one answers with more than a
// transport failure (a shard's answer, error or not, is the answer); `local`
// answers for this shard (always last when present). `done` gets the
// answer.
void TryShards(Forwarder &forwarder, std::vector<int> shards,
               std::function<void(int shard, std::function<void(grpc::Status)>)> attempt,
               std::function<void(std::function<void(grpc::Status)>)> local, std::function<void(grpc::Status)> done);

// A shard that did not answer: UNAVAILABLE without tir.v1.Error details
// (its own errors carry them). A deadline is the caller's, never a shard
// failure: a caller cannot make a shard look down by asking it to hurry.
bool TransportFailure(const grpc::Status &status);

}  // namespace tir::shards

#endif  // TIR_SERVER_SHARDS_FORWARDER_H_
