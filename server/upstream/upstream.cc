#include "server/upstream/upstream.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/bundle_signature.h"
#include "compiler/support/status.h"

namespace tir::upstream {
namespace {

const char *Label(Outcome o) {
  switch (o) {
    case Outcome::kHit:
      return "hit";
    case Outcome::kPending:
      return "pending";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kSkipped:
      return "skipped";
  }
  return "failed";
}

double UnixSeconds(absl::Time t) { return t == absl::InfinitePast() ? 0 : absl::ToDoubleSeconds(t - absl::UnixEpoch()); }

absl::Status Refused(const std::string &why) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "UPSTREAM_BUNDLE_REFUSED", why);
}

}  // namespace

bool IsUpstreamFailure(const absl::Status &status) {
  const std::string reason = ReasonOf(status);
  // What says the upstream cannot answer anyone now: unreachable, refusing
  // this tier's credentials, not a tir coordinator. A deadline or an
  // internal error may be the request's own (a huge graph): it fails that
  // request's asking only.
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kUnimplemented:
      return true;
    case absl::StatusCode::kPermissionDenied:
      return reason != "READ_ONLY_ROLE";  // a read token: lookups still answer
    default:
      break;
  }
  return reason == "UPSTREAM_BUNDLE_REFUSED" || reason == "BUNDLE_UNSIGNED" || reason == "BUNDLE_KEY_MISMATCH" ||
         reason == "BUNDLE_SIGNATURE_INVALID" || reason == "OPERATION_KEY_CHANGED";
}

absl::StatusOr<std::unique_ptr<Upstream>> Upstream::Connect(UpstreamOptions options, prometheus::Registry &registry) {
  ClientOptions c;
  c.address = options.address;
  c.token = options.token;
  c.tls_root_certs = options.ca_pem;
  c.bundle_key = options.bundle_key;
  c.call_timeout = options.timeout;
  c.max_message_bytes = options.max_message_bytes;
  // One attempt: a down upstream is noticed at once and left alone (the
  // retry time), rather than retried while a client waits.
  c.max_attempts = 1;
  c.client_name = "tir-tier";
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(c));
  return std::unique_ptr<Upstream>(new Upstream(std::move(options), std::move(client), registry));
}

Upstream::Upstream(UpstreamOptions options, std::unique_ptr<Client> client, prometheus::Registry &registry)
    : options_(std::move(options)),
      client_(std::move(client)),
      requests_(prometheus::BuildCounter()
                    .Name("tir_upstream_requests_total")
                    .Help("Misses asked of the upstream tier, by what came of it")
                    .Register(registry)),
      backoff_(options_.retry) {
  for (Outcome o : {Outcome::kHit, Outcome::kPending, Outcome::kFailed, Outcome::kSkipped}) {
    requests_.Add({{"result", Label(o)}});
  }
}

bool Upstream::Available() {
  absl::MutexLock l(&mu_);
  return absl::Now() >= retry_at_;
}

absl::Status Upstream::Noted(absl::Status status) {
  if (status.ok() || !IsUpstreamFailure(status)) return status;
  absl::MutexLock l(&mu_);
  const absl::Time now = absl::Now();
  // Doubling while it stays down: the first failure after a success waits
  // `retry`, each failure of the retry that follows twice as long.
  if (retry_at_ != absl::InfinitePast() && now >= retry_at_) backoff_ = std::min(backoff_ * 2, options_.max_retry);
  retry_at_ = now + backoff_;
  last_error_ = std::string(status.message()).substr(0, 512);
  if (last_error_.empty()) last_error_ = absl::StatusCodeToString(status.code());
  last_error_ = absl::StrCat(ReasonOf(status), ": ", last_error_);
  last_error_time_ = now;
  std::fprintf(stderr, "tir-coordinator: upstream %s failed (%s); asked again in %s\n", options_.address.c_str(),
               last_error_.c_str(), absl::FormatDuration(backoff_).c_str());
  return status;
}

absl::StatusOr<tir::v1::Operation> Upstream::Compile(tir::v1::CompileRequest request) {
  // Request ids are this tier's callers', not the upstream's: each asking is
  // its own request there (it joins the same job by its key).
  request.clear_request_id();
  absl::StatusOr<tir::v1::Operation> op = client_->Compile(std::move(request));
  if (!op.ok()) return Noted(op.status());
  return op;
}

absl::StatusOr<tir::v1::Operation> Upstream::Wait(const std::string &name, absl::Duration timeout) {
  absl::StatusOr<tir::v1::Operation> op = client_->Wait(name, timeout);
  if (!op.ok()) return Noted(op.status());
  return op;
}

absl::StatusOr<tir::v1::KernelBundle> Upstream::Kernel(const std::string &key) {
  absl::StatusOr<tir::v1::KernelBundle> b = client_->GetKernel(key);
  if (!b.ok()) return Noted(b.status());
  return b;
}

absl::StatusOr<tir::v1::LookupKernelResponse> Upstream::Lookup(const tir::v1::LookupKernelRequest &request) {
  absl::StatusOr<tir::v1::LookupKernelResponse> r = client_->Lookup(request.graph(), request.options());
  if (!r.ok()) return Noted(r.status());
  return r;
}

absl::Status Upstream::Check(const tir::v1::KernelBundle &bundle, const std::string &key, const std::string &arch) {
  absl::Status s;
  if (bundle.key() != key) {
    // Another tir, codegen or compiler version keys the graph differently:
    // its kernels are not this tier's to serve.
    s = Refused(absl::StrCat("the upstream answered key ", bundle.key().substr(0, 16), " for key ", key.substr(0, 16),
                             " (another tir, codegen or compiler version?)"));
  } else if (bundle.arch() != arch) {
    s = Refused(absl::StrCat("the upstream answered a bundle for ", bundle.arch(), ", not ", arch));
  } else if (bundle.kernels().empty()) {
    s = Refused("the upstream answered a bundle without kernels");
  } else if (absl::Status hashes = CheckBinaryHashes(bundle); !hashes.ok()) {
    s = Refused(absl::StrCat("the upstream's bundle failed its binary check: ", hashes.message()));
  }
  return Noted(s);
}

void Upstream::Count(Outcome outcome) {
  requests_.Add({{"result", Label(outcome)}}).Increment();
  absl::MutexLock l(&mu_);
  switch (outcome) {
    case Outcome::kHit:
      ++hits_;
      break;
    case Outcome::kPending:
      ++pending_;
      break;
    case Outcome::kFailed:
      ++failures_;
      break;
    case Outcome::kSkipped:
      break;
  }
  // An answer (tuned or under way) says it is up: the next failure waits
  // `retry` again.
  if (outcome == Outcome::kHit || outcome == Outcome::kPending) {
    backoff_ = options_.retry;
    retry_at_ = absl::InfinitePast();
  }
}

std::string Upstream::LastError() {
  absl::MutexLock l(&mu_);
  return last_error_;
}

tir::v1::UpstreamStatus Upstream::Snapshot(uint32_t following) {
  absl::MutexLock l(&mu_);
  tir::v1::UpstreamStatus s;
  s.set_address(options_.address);
  s.set_healthy(absl::Now() >= retry_at_);
  s.set_last_error(last_error_);
  s.set_last_error_time(UnixSeconds(last_error_time_));
  s.set_retry_time(UnixSeconds(retry_at_));
  s.set_hits(hits_);
  s.set_pending(pending_);
  s.set_failures(failures_);
  s.set_following(following);
  return s;
}

}  // namespace tir::upstream
