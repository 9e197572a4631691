#include "server/shards/forwarder.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/bundle_signature.h"
#include "compiler/support/digest.h"

namespace tir::shards {

bool TransportFailure(const grpc::Status &status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE && status.error_details().empty();
}

namespace {

std::string Metadata(const grpc::ServerContextBase &ctx, const char *name) {
  auto it = ctx.client_metadata().find(name);
  return it == ctx.client_metadata().end() ? "" : std::string(it->second.data(), std::min<size_t>(it->second.size(), 256));
}

// Compares without stopping at the first difference.
bool SameBytes(const std::string &a, const std::string &b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool Forwarder::Forwarded(const grpc::ServerContextBase &ctx) const {
  return SameBytes(Metadata(ctx, "tir-forwarded"), marker_);
}

std::string Forwarder::ForwardedFor(const grpc::ServerContextBase &ctx) const {
  return Forwarded(ctx) ? Metadata(ctx, "tir-forwarded-for") : "";
}

Forwarder::Forwarder(ShardRing ring, ForwarderOptions options)
    : ring_(std::move(ring)),
      options_(std::move(options)),
      marker_(Sha256Hex("tir-forwarded\n" + options_.secret)),
      down_until_(ring_.size(), absl::InfinitePast()),
      forwarded_(ring_.size(), 0),
      failures_(ring_.size(), 0) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  // A restarted shard is found again soon, not after the default backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options_.ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.ca_pem;
    creds = grpc::SslCredentials(ssl);
  }
  for (size_t i = 0; i < ring_.size(); ++i) {
    stubs_.push_back(static_cast<int>(i) == ring_.self()
                         ? nullptr
                         : tir::v1::CompilerService::NewStub(grpc::CreateCustomChannel(ring_.address(i), creds, args)));
  }
}

bool Forwarder::Up(int shard) {
  absl::MutexLock l(&mu_);
  return absl::Now() >= down_until_[shard];
}

std::vector<int> Forwarder::Route(absl::string_view key) {
  std::vector<int> out;
  for (int shard : ring_.Order(key)) {
    if (shard == ring_.self()) {
      out.push_back(shard);
      break;
    }
    if (Up(shard)) out.push_back(shard);
  }
  return out;
}

std::optional<tir::v1::KernelBundle> Forwarder::FindElsewhere(const std::string &key) {
  const std::vector<int> order = ring_.Order(key);
  bool after = false;
  for (int shard : order) {
    if (shard == ring_.self()) {
      after = true;
      continue;
    }
    if (!after || !Up(shard)) continue;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (!options_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.token);
    ctx.AddMetadata("tir-forwarded", marker_);
    tir::v1::GetKernelRequest request;
    request.set_name("kernels/" + key);
    tir::v1::KernelBundle bundle;
    const grpc::Status s = stubs_[shard]->GetKernel(&ctx, request, &bundle);
    // Kept only as the fleet signed it (the shards share its key).
    if (s.ok() && bundle.key() == key && bundle.tuning().tuned() &&
        (options_.bundle_key.empty() || CheckBundleSignature(bundle, options_.bundle_key).ok())) {
      return bundle;
    }
    if (TransportFailure(s)) Failed(shard, s);
  }
  return std::nullopt;
}

std::vector<tir::v1::ShardStatus> Forwarder::Snapshot() {
  absl::MutexLock l(&mu_);
  std::vector<tir::v1::ShardStatus> out;
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < ring_.size(); ++i) {
    tir::v1::ShardStatus s;
    s.set_address(ring_.address(i));
    s.set_self(static_cast<int>(i) == ring_.self());
    s.set_up(now >= down_until_[i]);
    s.set_forwarded(forwarded_[i]);
    s.set_failures(failures_[i]);
    out.push_back(std::move(s));
  }
  return out;
}

void Forwarder::Failed(int shard, const grpc::Status &status) {
  absl::MutexLock l(&mu_);
  ++failures_[shard];
  down_until_[shard] = absl::Now() + options_.retry;
  std::fprintf(stderr, "tir-coordinator: shard %s failed a forwarded call (%s); its keys go to the next shard for %s\n",
               ring_.address(shard).c_str(), status.error_message().c_str(),
               absl::FormatDuration(options_.retry).c_str());
}

void Forwarder::Call(int shard, const grpc::ServerContextBase &in, const std::string &client,
                     const std::function<void(Async *, grpc::ClientContext *, std::function<void(grpc::Status)>)> &start,
                     std::function<void(grpc::Status)> done, bool wait_for_shard) {
  auto ctx = std::make_shared<grpc::ClientContext>();
  ctx->set_wait_for_ready(wait_for_shard);
  // The caller's deadline, and at most `max_call`: a caller without one
  // still gets an answer in bounded time.
  ctx->set_deadline(std::min(in.deadline(), absl::ToChronoTime(absl::Now() + options_.max_call)));
  const auto &md = in.client_metadata();
  for (const char *name : {"authorization", "tir-client"}) {
    auto it = md.find(name);
    if (it != md.end()) ctx->AddMetadata(name, std::string(it->second.data(), it->second.size()));
  }
  ctx->AddMetadata("tir-forwarded", marker_);
  ctx->AddMetadata("tir-forwarded-for", client.substr(0, 256));
  bool stopping;
  {
    absl::MutexLock l(&mu_);
    stopping = stopping_;
    if (!stopping) {
      ++forwarded_[shard];
      in_flight_.insert(ctx.get());
    }
  }
  if (stopping) {
    done(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is shutting down"));
    return;
  }
  start(stubs_[shard]->async(), ctx.get(), [this, shard, ctx, done = std::move(done)](grpc::Status s) {
    {
      absl::MutexLock l(&mu_);
      in_flight_.erase(ctx.get());
    }
    if (TransportFailure(s)) Failed(shard, s);
    done(s);
  });
}

void Forwarder::Stop() {
  absl::MutexLock l(&mu_);
  stopping_ = true;
  for (grpc::ClientContext *ctx : in_flight_) ctx->TryCancel();
}

void TryShards(Forwarder &forwarder, std::vector<int> shards,
               std::function<void(int shard, std::function<void(grpc::Status)>)> attempt,
               std::function<void(std::function<void(grpc::Status)>)> local, std::function<void(grpc::Status)> done) {
  if (shards.empty()) {
    done(grpc::Status(grpc::StatusCode::UNAVAILABLE, "no shard answers"));
    return;
  }
  const int shard = shards.front();
  if (shard == forwarder.ring().self()) {
    local(std::move(done));
    return;
  }
  shards.erase(shards.begin());
  attempt(shard, [&forwarder, shards = std::move(shards), attempt, local, done](grpc::Status s) mutable {
    // The shard's own answer (an error included) is the answer; without
    // one, the key falls to the next shard (this one at the latest).
    if (!TransportFailure(s) || shards.empty()) {
      done(s);
      return;
    }
    TryShards(forwarder, std::move(shards), std::move(attempt), std::move(local), std::move(done));
  });
}

}  // namespace tir::shards
