#include "server/api/server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <fstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "prometheus/gauge.h"
#include "server/config/config.h"
#include "server/api/rpc_status.h"
#include "server/shards/forwarder.h"
#include "server/shards/shard_ring.h"
#include "server/store/rocksdb_kernel_store.h"

namespace tir::api {
namespace {

// INVALID_CONFIG with OpenSSL's reason unless `cert` is a PEM certificate
// and `key` the PEM private key of it (gRPC would only say it cannot serve).
absl::Status CheckKeyPair(const std::string &cert, const std::string &key, const tir::v1::CoordinatorConfig &config) {
  auto invalid = [](const std::string &what) {
    unsigned long e = ERR_get_error();
    char reason[256] = {0};
    if (e != 0) ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                     e != 0 ? absl::StrCat(what, " (", reason, ")") : what);
  };
  std::unique_ptr<BIO, decltype(&BIO_free)> certBio(BIO_new_mem_buf(cert.data(), static_cast<int>(cert.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> x509(PEM_read_bio_X509(certBio.get(), nullptr, nullptr, nullptr), X509_free);
  if (!x509) return invalid(absl::StrCat("tlsCertFile ", config.tls_cert_file(), " holds no PEM certificate"));
  std::unique_ptr<BIO, decltype(&BIO_free)> keyBio(BIO_new_mem_buf(key.data(), static_cast<int>(key.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(PEM_read_bio_PrivateKey(keyBio.get(), nullptr, nullptr, nullptr),
                                                           EVP_PKEY_free);
  if (!pkey) return invalid(absl::StrCat("tlsKeyFile ", config.tls_key_file(), " holds no PEM private key"));
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return invalid(absl::StrCat("tlsKeyFile ", config.tls_key_file(), " is not the key of tlsCertFile ",
                                config.tls_cert_file(), "'s certificate"));
  }
  return absl::OkStatus();
}

// The dashboard's and /metrics' threads and request timeout.
dashboard::HttpLimits HttpLimitsOf(const tir::v1::CoordinatorConfig &config) {
  dashboard::HttpLimits l;
  l.threads = static_cast<int>(config.http_threads());
  l.request_timeout_ms = static_cast<int>(config.http_request_timeout_ms());
  return l;
}

// How long connections live: an idle one (no call) is closed after
// maxConnectionIdleMs, every one after maxConnectionAgeMs (its calls given
// maxConnectionAgeGraceMs to end; a call still receiving a message then is
// cut), one that never finishes its HTTP/2 handshake after 20 s (or the
// idle time, when shorter). The server pings a silent client every 2
// minutes and drops it after 20 s without an answer; a client that pings
// more often than once a minute without data is sent GOAWAY after two
// strikes.
void ConfigureConnections(const tir::v1::CoordinatorConfig &config, grpc::ServerBuilder &builder) {
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, static_cast<int>(config.max_connection_idle_ms()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, static_cast<int>(config.max_connection_age_ms()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             static_cast<int>(config.max_connection_age_grace_ms()));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(std::min<uint32_t>(20000, config.max_connection_idle_ms())));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 120000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 60000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
}

// The shard list of a sharded fleet and this shard's place in it.
absl::StatusOr<shards::ShardRing> RingOf(const tir::v1::CoordinatorConfig &config) {
  std::vector<std::string> list(config.shards().begin(), config.shards().end());
  std::string self = config.shard_self();
  if (!config.shard_pattern().empty()) {
    TIR_ASSIGN_OR_RETURN(list, shards::ShardAddresses(config.shard_pattern(), static_cast<int>(config.shard_count())));
    if (self.empty()) {
      // A StatefulSet's pod: its host name ends with its ordinal.
      char host[256] = {0};
      ::gethostname(host, sizeof(host) - 1);
      const std::string name = host;
      const size_t dash = name.rfind('-');
      int index = -1;
      if (dash == std::string::npos || !absl::SimpleAtoi(name.substr(dash + 1), &index) || index < 0 ||
          index >= static_cast<int>(list.size())) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                         "shard_self is not set and the host name " + name + " does not end with a shard index below " +
                             absl::StrCat(list.size()));
      }
      self = list[index];
    }
  }
  return shards::ShardRing::Make(std::move(list), self);
}

}  // namespace

// The tokens that open the dashboard's status: the read and client tokens
// (none when no client token is set: the gRPC read calls are open then too).
// The tokens that open the dashboard: any that grants the read calls (none
// when the client API is open).
static std::vector<std::string> DashboardTokens(const Tokens &tokens) {
  std::vector<std::string> out;
  if (!tokens.ClientsNeedToken()) return out;
  for (const std::string *t : {&tokens.client, &tokens.read}) {
    if (!t->empty()) out.push_back(*t);
  }
  for (const Credential &c : tokens.credentials) {
    if (c.role == Role::kClient || c.role == Role::kRead || c.role == Role::kAdmin) out.push_back(c.token);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(const tir::v1::CoordinatorConfig &input) {
  tir::v1::CoordinatorConfig config = input;
  TIR_RETURN_IF_ERROR(config::Finish(config));
  // absl's Mutex deadlock detector keeps a process-wide graph of every lock
  // taken, under its own lock: a cost on every call of a serving process.
  // The locking order is checked by the thread-safety annotations instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (config.db().empty()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG", "db is required");
  auto s = std::unique_ptr<CoordinatorServer>(new CoordinatorServer());
  s->registry_ = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge()
      .Name("tir_build_info")
      .Help("tir version and codegen version of this coordinator")
      .Register(*s->registry_)
      .Add({{"version", kTirVersion}, {"codegen", kCodegenVersion}})
      .Set(1);
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<store::RocksDbKernelStore> db, store::RocksDbKernelStore::Open(config.db()));
  if (!config.checkpoint_dir().empty()) {
    s->checkpoints_ = std::make_unique<store::Checkpoints>(*db, config.checkpoint_dir(),
                                                           absl::Milliseconds(config.checkpoint_interval_ms()),
                                                           static_cast<int>(config.checkpoint_keep()));
  }
  s->store_ = std::move(db);
  coordinator::CoordinatorOptions o;
  o.heartbeat_interval = absl::Milliseconds(config.heartbeat_interval_ms());
  o.lost_after = absl::Milliseconds(config.lost_after_ms());
  o.max_attempts = static_cast<int>(config.max_attempts());
  o.lease_timeout = absl::Milliseconds(config.lease_timeout_ms());
  o.tuner.width = static_cast<int>(config.tuning_width());
  o.tuner.min_runs = static_cast<int>(config.tuning_min_runs());
  o.tuner.budget_seconds = config.tuning_budget_ms() * 1e-3;
  o.default_without_worker = config.no_worker() == "default";
  o.work_dir = config.work_dir().empty() ? config.db() + "/work" : config.work_dir();
  o.limits.max_ops_per_graph = config.max_ops_per_graph();
  o.limits.max_jobs = config.max_jobs();
  o.limits.max_jobs_per_client = config.max_jobs_per_client();
  o.limits.max_queue_items = config.max_queue_items();
  o.limits.max_operations = config.max_operations();
  o.limits.max_message_bytes = config.max_message_bytes();
  o.limits.max_planning_queue = config.max_planning_queue();
  o.limits.planning_budget_ms = config.planning_budget_ms();
  o.limits.max_planned_candidates = config.max_planned_candidates();
  o.limits.max_kernels_per_graph = config.max_kernels_per_graph();
  o.planning_threads = static_cast<int>(config.planning_threads());
  o.quarantine_after = static_cast<int>(config.quarantine_after());
  o.quarantine_probe = absl::Milliseconds(config.quarantine_probe_ms());
  o.shape_buckets = config.shape_buckets();
  // Waiting LeaseWork calls hold server threads: at most half of them.
  o.max_lease_waits = std::max<uint32_t>(1, config.max_server_threads() / 2);
  if (!config.bundle_key_file().empty()) {
    TIR_ASSIGN_OR_RETURN(o.bundle_key, config::ReadSecret(config.bundle_key_file(), "bundleKeyFile"));
  }
  // Off loopback, the upstream's answers are code this tier's clients run:
  // its channel is TLS, or its bundles carry the signature of a key given
  // here, or the operator said otherwise.
  if (!config.upstream().empty() && !config::IsLoopback(config.upstream()) && config.upstream_ca_file().empty() &&
      config.upstream_bundle_key_file().empty() && !config.insecure()) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "INSECURE_UPSTREAM",
                     "refusing upstream " + config.upstream() +
                         " off loopback without upstreamCaFile (TLS) or upstreamBundleKeyFile: its bundles, code "
                         "this tier's clients run, and the token sent to it would cross the network unchecked. Set "
                         "one, or pass --insecure (config \"insecure\": true)");
  }
  o.upstream.address = config.upstream();
  o.upstream.timeout = absl::Milliseconds(config.upstream_timeout_ms());
  o.upstream.retry = absl::Milliseconds(config.upstream_retry_ms());
  o.upstream.max_retry = std::max(o.upstream.retry, absl::Minutes(1));
  o.upstream.max_message_bytes = static_cast<int>(config.max_message_bytes());
  if (!config.upstream_token_file().empty()) {
    TIR_ASSIGN_OR_RETURN(o.upstream.token, config::ReadSecret(config.upstream_token_file(), "upstreamTokenFile"));
  }
  if (!config.upstream_bundle_key_file().empty()) {
    TIR_ASSIGN_OR_RETURN(o.upstream.bundle_key,
                         config::ReadSecret(config.upstream_bundle_key_file(), "upstreamBundleKeyFile"));
  }
  if (!config.upstream_ca_file().empty()) {
    TIR_ASSIGN_OR_RETURN(o.upstream.ca_pem, config::ReadConfigFile(config.upstream_ca_file(), "upstreamCaFile", 1 << 20));
  }
  Tokens tokens;
  if (!config.client_token_file().empty()) {
    TIR_ASSIGN_OR_RETURN(tokens.client, config::ReadSecret(config.client_token_file(), "clientTokenFile"));
  }
  if (!config.read_token_file().empty()) {
    TIR_ASSIGN_OR_RETURN(tokens.read, config::ReadSecret(config.read_token_file(), "readTokenFile"));
  }
  if (!config.worker_token_file().empty()) {
    TIR_ASSIGN_OR_RETURN(tokens.worker, config::ReadSecret(config.worker_token_file(), "workerTokenFile"));
  }
  if (!config.credentials_file().empty()) {
    TIR_ASSIGN_OR_RETURN(std::string text,
                         config::ReadConfigFile(config.credentials_file(), "credentialsFile", 1 << 20));
    TIR_ASSIGN_OR_RETURN(tokens.credentials, ParseCredentials(text, config.credentials_file()));
    const bool reads = std::any_of(tokens.credentials.begin(), tokens.credentials.end(),
                                   [](const Credential &c) { return c.role == Role::kRead; });
    const bool writes = !tokens.client.empty() ||
                        std::any_of(tokens.credentials.begin(), tokens.credentials.end(),
                                    [](const Credential &c) {
                                      return c.role == Role::kClient || c.role == Role::kAdmin;
                                    });
    for (const Credential &c : tokens.credentials) {
      if (c.token == tokens.client || c.token == tokens.read || c.token == tokens.worker) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                         "credentialsFile " + config.credentials_file() + ": the token of " + c.identity +
                             " is also a shared token file's; each identity has its own");
      }
    }
    if (reads && !writes) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                       "credentialsFile " + config.credentials_file() +
                           " has read credentials but no client token or client credential: no one could compile");
    }
  }
  // Off loopback, a coordinator without a worker token lets anyone who
  // reaches the port register as a worker and have its binaries served.
  if (!config::IsLoopback(config.listen()) && !tokens.WorkersNeedToken() && !config.insecure()) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "INSECURE_LISTEN",
                     "refusing to serve on " + config.listen() +
                         " without workerTokenFile or worker credentials: anyone who reaches the port could register as a "
                         "worker. Set workerTokenFile or credentialsFile (and client tokens) with TLS, listen on loopback, or pass --insecure "
                         "(config \"insecure\": true)");
  }
  // The dashboard is plain HTTP: off loopback the read token its page sends
  // would cross the network in the clear.
  if (config.dashboard_port() > 0 && !config::IsLoopback(config.dashboard_address()) && tokens.ClientsNeedToken() &&
      !config.insecure()) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "INSECURE_LISTEN",
                     "refusing to serve the dashboard on " + config.dashboard_address() +
                         " with client tokens set: it is plain HTTP, and the token its page sends would cross the "
                         "network in the clear. Bind dashboardAddress to loopback (reach it through kubectl "
                         "port-forward, an SSH tunnel or a TLS proxy), or pass --insecure (config \"insecure\": "
                         "true)");
  }
  // Tokens in the clear off loopback are anyone's who can see the traffic.
  if (!config::IsLoopback(config.listen()) && config.tls_cert_file().empty() && !config.insecure()) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "INSECURE_LISTEN",
                     "refusing to serve on " + config.listen() +
                         " without TLS: its tokens would cross the network in the clear. Set tlsCertFile and "
                         "tlsKeyFile, listen on loopback, or pass --insecure (config \"insecure\": true)");
  }
  std::shared_ptr<shards::Forwarder> forwarder;
  if (!config.shards().empty() || !config.shard_pattern().empty()) {
    TIR_ASSIGN_OR_RETURN(shards::ShardRing ring, RingOf(config));
    o.shard_tag = ring.tag(ring.self());
    shards::ForwarderOptions fo;
    fo.retry = absl::Milliseconds(config.shard_retry_ms());
    fo.max_message_bytes = static_cast<int>(config.max_message_bytes());
    fo.token = !tokens.read.empty() ? tokens.read : tokens.client;
    fo.bundle_key = o.bundle_key;
    fo.secret = !o.bundle_key.empty() ? o.bundle_key : tokens.worker;
    if (fo.secret.empty() && tokens.ClientsNeedToken()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                       "a sharded fleet with client tokens needs bundleKeyFile or workerTokenFile: the shards mark "
                       "the calls they forward with a secret they share");
    }
    if (!config.tls_cert_file().empty() && config.shard_ca_file().empty()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                       "the shards serve TLS (tlsCertFile): set shardCaFile, the CA their certificates are checked "
                       "against when they call one another");
    }
    if (!config.shard_ca_file().empty()) {
      TIR_ASSIGN_OR_RETURN(fo.ca_pem, config::ReadConfigFile(config.shard_ca_file(), "shardCaFile", 1 << 20));
    }
    std::fprintf(stderr, "tir-coordinator: shard %d of %zu (%s)\n", ring.self(), ring.size(),
                 ring.address(ring.self()).c_str());
    forwarder = std::make_shared<shards::Forwarder>(std::move(ring), std::move(fo));
    o.find_elsewhere = [forwarder](const std::string &key) { return forwarder->FindElsewhere(key); };
    o.describe_shards = [forwarder](tir::v1::ServiceStatus &s) {
      for (tir::v1::ShardStatus &shard : forwarder->Snapshot()) *s.add_shards() = std::move(shard);
    };
  }
  s->coordinator_ = std::make_unique<coordinator::Coordinator>(o, s->store_, s->registry_);
  s->compiler_ = std::make_unique<CompilerServiceImpl>(s->coordinator_.get(), tokens, *s->registry_, forwarder);
  s->workers_ = std::make_unique<WorkerServiceImpl>(s->coordinator_.get(), tokens, *s->registry_);

  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!config.tls_cert_file().empty()) {
    grpc::SslServerCredentialsOptions ssl(config.tls_client_ca_file().empty()
                                              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    TIR_ASSIGN_OR_RETURN(std::string cert, config::ReadConfigFile(config.tls_cert_file(), "tlsCertFile"));
    TIR_ASSIGN_OR_RETURN(std::string key, config::ReadConfigFile(config.tls_key_file(), "tlsKeyFile"));
    TIR_RETURN_IF_ERROR(CheckKeyPair(cert, key, config));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!config.tls_client_ca_file().empty()) {
      TIR_ASSIGN_OR_RETURN(ssl.pem_root_certs, config::ReadConfigFile(config.tls_client_ca_file(), "tlsClientCaFile"));
    }
    creds = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // A bounded server: at most this many threads serve calls (a flood of
  // clients waits for one instead of growing the process without bound),
  // and the memory of its connections' buffers (messages being received
  // among them) is bounded: past the quota gRPC cancels calls ("Buffers
  // full"), closes idle connections and turns new ones away until it is
  // back under it (a sender as fast as loopback may overshoot it for a
  // moment: it reclaims behind it).
  grpc::ResourceQuota quota("tir-coordinator");
  quota.SetMaxThreads(static_cast<int>(config.max_server_threads()));
  quota.Resize(static_cast<size_t>(config.max_grpc_memory_bytes()));
  builder.SetResourceQuota(quota);
  ConfigureConnections(config, builder);
  builder.AddListeningPort(config.listen(), creds, &s->port_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MalformedRequestInterceptor());
  interceptors.push_back(ClientActivityInterceptor(s->activity_.get()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes()));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes()));
  builder.RegisterService(s->compiler_.get());
  builder.RegisterService(s->workers_.get());
  s->server_ = builder.BuildAndStart();
  if (!s->server_ || s->port_ == 0) {
    return MakeError(absl::StatusCode::kUnavailable, "LISTEN_FAILED",
                     "cannot serve on " + config.listen() +
                         " (the address is taken or not this machine's; gRPC's log above says which)");
  }
  TIR_RETURN_IF_ERROR(s->coordinator_->Start());
  if (config.dashboard_port() > 0) {
    TIR_ASSIGN_OR_RETURN(s->dashboard_,
                         dashboard::Dashboard::Start(s->coordinator_.get(),
                                                     absl::StrCat(config.dashboard_address(), ":", config.dashboard_port()),
                                                     DashboardTokens(tokens), HttpLimitsOf(config)));
  }
  if (config.metrics_port() > 0) {
    const std::string address = absl::StrCat(config.http_address(), ":", config.metrics_port());
    try {
      // civetweb reports a failed bind by throwing.
      s->exposer_ = std::make_unique<prometheus::Exposer>(dashboard::CivetOptions(address, HttpLimitsOf(config)));
    } catch (const std::exception &e) {
      return MakeError(absl::StatusCode::kUnavailable, "LISTEN_FAILED",
                       absl::StrCat("/metrics cannot serve on ", address, ": ", e.what()));
    }
    s->exposer_->RegisterCollectable(s->registry_);
  }
  return s;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

void CoordinatorServer::Wait() {
  if (server_) server_->Wait();
}

void CoordinatorServer::Shutdown() {
  checkpoints_.reset();
  dashboard_.reset();
  if (compiler_) compiler_->StopForwarding();  // forwarded calls hold their callers' open
  if (coordinator_) coordinator_->Shutdown();  // wakes long polls
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (compiler_) compiler_->DrainSlowCalls();
}

}  // namespace tir::api
