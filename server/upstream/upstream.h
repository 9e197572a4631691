// The tier above a coordinator: another coordinator (the fleet) asked on a
// miss, as XLA's and Inductor's tiered caches and sccache's remote are. The
// per-user local service is the usual lower tier (`tirctl service start
// --upstream ADDR`, $TIR_UPSTREAM); any coordinator may have one.
//
// Upstream is the connection and its health; read_through.h is what the
// coordinator does with its answers. Trust: the upstream is the operator's
// choice, as a client's coordinator is the client's, so its bundles are
// taken as it builds them, after the checks a client makes (its signature
// with `bundle_key` when configured; every binary its hash; the key and
// arch asked) and nothing else.
//
// Health: a call that fails for the upstream's sake (unreachable, deadline,
// refused credentials, overloaded, internal errors, a bundle that fails its
// checks) leaves it alone for `retry`, doubling to `max_retry` while it
// stays down; the calls in that time go to the local path without trying.
// An answer about the request itself (an invalid graph, a limit) fails that
// request's asking only.

#ifndef TIR_SERVER_UPSTREAM_UPSTREAM_H_
#define TIR_SERVER_UPSTREAM_UPSTREAM_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "tir/v1/compiler_service.pb.h"
#include "tir/v1/status.pb.h"

namespace tir::upstream {

struct UpstreamOptions {
  // gRPC target of the coordinator above ("host:port", "unix:PATH").
  std::string address;
  // Its client token ("" : none).
  std::string token;
  // Its bundle key: every bundle it answers must carry its signature ("" :
  // not checked).
  std::string bundle_key;
  // PEM root certificates: TLS when not empty.
  std::string ca_pem;
  // Longest call (a long poll for an operation is shorter still).
  absl::Duration timeout = absl::Seconds(5);
  // Left alone this long after a failure, doubling to `max_retry`.
  absl::Duration retry = absl::Seconds(5);
  absl::Duration max_retry = absl::Minutes(1);
  int max_message_bytes = 64 << 20;
};

// What became of asking the upstream, counted as tir_upstream_requests_total.
enum class Outcome {
  kHit,      // a tuned bundle, checked and kept here
  kPending,  // tuning under way there (followed, or an untuned answer served)
  kFailed,   // no answer: unreachable, refused, or a bundle refused here
  kSkipped,  // not asked: left alone after a failure
};

class Upstream {
 public:
  static absl::StatusOr<std::unique_ptr<Upstream>> Connect(UpstreamOptions options, prometheus::Registry &registry);

  const std::string &address() const { return options_.address; }
  // False while it is left alone after a failure (counted as skipped).
  bool Available();

  // The upstream's answers (its signature checked when a key is set). A
  // failure for the upstream's sake (Failed below) starts its retry time.
  absl::StatusOr<tir::v1::Operation> Compile(tir::v1::CompileRequest request);
  absl::StatusOr<tir::v1::Operation> Wait(const std::string &name, absl::Duration timeout);
  // Its stored bundle of `key` (a dynamic graph's bucket bundle, unsized).
  absl::StatusOr<tir::v1::KernelBundle> Kernel(const std::string &key);
  absl::StatusOr<tir::v1::LookupKernelResponse> Lookup(const tir::v1::LookupKernelRequest &request);

  // OK when `bundle` may be kept and served here under `key` for `arch`:
  // it names them, and every binary is the one its hash names. Else
  // UPSTREAM_BUNDLE_REFUSED (FAILED_PRECONDITION) saying why; the upstream
  // then counts as failed.
  absl::Status Check(const tir::v1::KernelBundle &bundle, const std::string &key, const std::string &arch);

  // Counts what asking came to (the calls and Check above start the retry
  // time themselves).
  void Count(Outcome outcome);
  // The last failure, for a note ("" when none).
  std::string LastError();
  // Whether it took this tier's token for reads only (READ_ONLY_ROLE once):
  // misses are looked up there, never compiled.
  bool read_only() const { return read_only_; }
  void set_read_only() { read_only_ = true; }

  // For the status page; `following`: compiles here waiting on tuning there.
  tir::v1::UpstreamStatus Snapshot(uint32_t following);

 private:
  Upstream(UpstreamOptions options, std::unique_ptr<Client> client, prometheus::Registry &registry);
  // Counts `status` against the upstream when it is the upstream's failure.
  absl::Status Noted(absl::Status status);

  const UpstreamOptions options_;
  const std::unique_ptr<Client> client_;
  std::atomic<bool> read_only_{false};
  prometheus::Family<prometheus::Counter> &requests_;
  absl::Mutex mu_;
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  absl::Time last_error_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
};

// True when `status` says the upstream cannot answer now (rather than that
// the request is bad): the codes of an unreachable, overloaded, misconfigured
// or failing service, and UPSTREAM_BUNDLE_REFUSED and the signature errors.
bool IsUpstreamFailure(const absl::Status &status);

}  // namespace tir::upstream

#endif  // TIR_SERVER_UPSTREAM_UPSTREAM_H_
