#include "server/config/config.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

namespace tir::config {
namespace {

absl::Status Invalid(const std::string &m) { return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG", m); }

}  // namespace

absl::Status Finish(tir::v1::CoordinatorConfig &c) {
  if (c.listen().empty()) c.set_listen("127.0.0.1:7070");
  if (c.http_address().empty()) c.set_http_address("127.0.0.1");
  if (c.dashboard_address().empty()) c.set_dashboard_address(c.http_address());
  if (c.max_message_bytes() == 0) c.set_max_message_bytes(64u << 20);
  if (c.heartbeat_interval_ms() == 0) c.set_heartbeat_interval_ms(1000);
  if (c.lost_after_ms() == 0) c.set_lost_after_ms(5000);
  if (c.max_attempts() == 0) c.set_max_attempts(3);
  if (c.lease_timeout_ms() == 0) c.set_lease_timeout_ms(15 * 60 * 1000);
  if (c.tuning_width() == 0) c.set_tuning_width(8);
  if (c.tuning_min_runs() == 0) c.set_tuning_min_runs(5);
  if (c.tuning_budget_ms() == 0) c.set_tuning_budget_ms(20);
  if (c.no_worker().empty()) c.set_no_worker("default");
  if (c.max_ops_per_graph() == 0) c.set_max_ops_per_graph(20000);
  if (c.max_jobs() == 0) c.set_max_jobs(256);
  if (c.max_jobs_per_client() == 0) c.set_max_jobs_per_client(32);
  if (c.max_queue_items() == 0) c.set_max_queue_items(100000);
  if (c.max_operations() == 0) c.set_max_operations(100000);
  if (c.max_server_threads() == 0) c.set_max_server_threads(256);
  if (c.quarantine_after() == 0) c.set_quarantine_after(3);
  if (c.quarantine_probe_ms() == 0) c.set_quarantine_probe_ms(60000);
  if (c.max_planning_queue() == 0) c.set_max_planning_queue(256);
  if (c.planning_budget_ms() == 0) c.set_planning_budget_ms(20000);
  if (c.max_planned_candidates() == 0) c.set_max_planned_candidates(65536);
  if (c.max_kernels_per_graph() == 0) c.set_max_kernels_per_graph(1024);
  if (c.http_threads() == 0) c.set_http_threads(32);
  if (c.http_request_timeout_ms() == 0) c.set_http_request_timeout_ms(5000);
  if (c.max_grpc_memory_bytes() == 0) c.set_max_grpc_memory_bytes(std::max<uint64_t>(256u << 20, 2 * c.max_message_bytes()));
  if (c.max_connection_idle_ms() == 0) c.set_max_connection_idle_ms(300000);
  if (c.max_connection_age_ms() == 0) c.set_max_connection_age_ms(1800000);
  if (c.max_connection_age_grace_ms() == 0) c.set_max_connection_age_grace_ms(300000);
  if (c.shape_buckets().empty()) c.set_shape_buckets("pow2");
  if (c.upstream_timeout_ms() == 0) c.set_upstream_timeout_ms(5000);
  if (c.shard_retry_ms() == 0) c.set_shard_retry_ms(5000);
  if (c.checkpoint_interval_ms() == 0) c.set_checkpoint_interval_ms(3600000);
  if (c.checkpoint_keep() == 0) c.set_checkpoint_keep(3);
  if (!c.checkpoint_dir().empty() && c.checkpoint_dir() == c.db()) return Invalid("checkpoint_dir is the store itself");
  if (!c.shards().empty() && !c.shard_pattern().empty()) return Invalid("shards and shard_pattern exclude each other");
  if (!c.shard_pattern().empty() && c.shard_count() == 0) return Invalid("shard_pattern needs shard_count");
  if (c.upstream_retry_ms() == 0) c.set_upstream_retry_ms(5000);
  if (c.upstream().empty() && (!c.upstream_token_file().empty() || !c.upstream_bundle_key_file().empty() ||
                               !c.upstream_ca_file().empty())) {
    return Invalid("upstream_token_file, upstream_bundle_key_file and upstream_ca_file need upstream");
  }
  if (!c.upstream().empty() && c.upstream() == c.listen()) return Invalid("upstream is this coordinator's own address");
  {
    const std::string &b = c.shape_buckets();
    int64_t n = 0;
    const bool multiple =
        absl::StartsWith(b, "multiple:") && absl::SimpleAtoi(b.substr(9), &n) && n >= 1 && n <= (int64_t{1} << 40);
    if (b != "pow2" && b != "bound" && !multiple) {
      return Invalid("shape_buckets must be pow2, multiple:N (1 <= N <= 2^40) or bound, got \"" + b + "\"");
    }
  }
  if (c.listen().find(':') == std::string::npos) return Invalid("listen must be HOST:PORT, got " + c.listen());
  if (c.metrics_port() > 65535) return Invalid(absl::StrCat("metrics_port ", c.metrics_port(), " is not a port"));
  if (c.dashboard_port() > 65535) return Invalid(absl::StrCat("dashboard_port ", c.dashboard_port(), " is not a port"));
  if (c.dashboard_port() != 0 && c.dashboard_port() == c.metrics_port()) {
    return Invalid("dashboard_port and metrics_port must differ");
  }
  // gRPC takes the limit as an int.
  if (c.max_message_bytes() < (1u << 20) || c.max_message_bytes() > (1ull << 31) - 1) {
    return Invalid(absl::StrCat("max_message_bytes must be between 1 MiB and 2 GiB - 1 byte, got ", c.max_message_bytes()));
  }
  if (c.max_grpc_memory_bytes() < 2 * c.max_message_bytes()) {
    return Invalid(absl::StrCat("max_grpc_memory_bytes (", c.max_grpc_memory_bytes(),
                                ") must be at least twice max_message_bytes (", c.max_message_bytes(),
                                "): a message being received is held in it"));
  }
  if (c.http_threads() < 2 || c.http_threads() > 1024) {
    return Invalid(absl::StrCat("http_threads must be between 2 and 1024, got ", c.http_threads()));
  }
  if (c.http_request_timeout_ms() < 100 || c.http_request_timeout_ms() > 600000) {
    return Invalid(absl::StrCat("http_request_timeout_ms must be between 100 and 600000, got ", c.http_request_timeout_ms()));
  }
  // gRPC takes these as ints.
  for (const auto &[name, value] : {std::pair<const char *, uint32_t>{"max_connection_idle_ms", c.max_connection_idle_ms()},
                                    {"max_connection_age_ms", c.max_connection_age_ms()},
                                    {"max_connection_age_grace_ms", c.max_connection_age_grace_ms()}}) {
    if (value < 100 || value > (1u << 31) - 1) {
      return Invalid(absl::StrCat(name, " must be between 100 and 2^31 - 1, got ", value));
    }
  }
  if (c.lost_after_ms() < 2 * c.heartbeat_interval_ms()) {
    return Invalid(absl::StrCat("lost_after_ms (", c.lost_after_ms(), ") must be at least twice heartbeat_interval_ms (",
                                c.heartbeat_interval_ms(), ")"));
  }
  if (c.lease_timeout_ms() < c.lost_after_ms()) {
    return Invalid(absl::StrCat("lease_timeout_ms (", c.lease_timeout_ms(), ") must be at least lost_after_ms (",
                                c.lost_after_ms(), ")"));
  }
  if (c.tuning_width() > 256) return Invalid(absl::StrCat("tuning_width ", c.tuning_width(), " is over 256"));
  if (c.no_worker() != "default" && c.no_worker() != "fail") {
    return Invalid("no_worker must be \"default\" or \"fail\", got \"" + c.no_worker() + "\"");
  }
  if (c.max_jobs_per_client() > c.max_jobs()) {
    return Invalid(absl::StrCat("max_jobs_per_client (", c.max_jobs_per_client(), ") is over max_jobs (", c.max_jobs(), ")"));
  }
  if (c.planning_threads() > 1024) return Invalid(absl::StrCat("planning_threads ", c.planning_threads(), " is over 1024"));
  if (c.max_server_threads() < 4) return Invalid(absl::StrCat("max_server_threads ", c.max_server_threads(), " is under 4"));
  if (c.http_address().find(':') != std::string::npos && c.http_address().front() != '[') {
    return Invalid("http_address is a host without a port (the ports are dashboard_port and metrics_port), got " +
                   c.http_address());
  }
  if (c.dashboard_address().find(':') != std::string::npos && c.dashboard_address().front() != '[') {
    return Invalid("dashboard_address is a host without a port (the port is dashboard_port), got " +
                   c.dashboard_address());
  }
  if (!c.read_token_file().empty() && c.client_token_file().empty()) {
    return Invalid("read_token_file needs client_token_file (without it every call is open)");
  }
  if (c.tls_cert_file().empty() != c.tls_key_file().empty()) {
    return Invalid("tls_cert_file and tls_key_file go together");
  }
  if (!c.tls_client_ca_file().empty() && c.tls_cert_file().empty()) {
    return Invalid("tls_client_ca_file needs tls_cert_file and tls_key_file");
  }
  for (const std::string &f : {c.tls_cert_file(), c.tls_key_file(), c.tls_client_ca_file(), c.client_token_file(),
                               c.worker_token_file(), c.read_token_file(), c.bundle_key_file(), c.credentials_file(),
                               c.upstream_token_file(), c.upstream_bundle_key_file(), c.upstream_ca_file(),
                               c.shard_ca_file()}) {
    if (!f.empty() && !std::ifstream(f).good()) return Invalid("cannot read " + f);
  }
  return absl::OkStatus();
}

absl::StatusOr<tir::v1::CoordinatorConfig> ParseConfig(const std::string &json) {
  tir::v1::CoordinatorConfig c;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &c, options);
  if (!status.ok()) return Invalid(absl::StrCat("the config file is not a valid CoordinatorConfig: ", status.ToString()));
  TIR_RETURN_IF_ERROR(Finish(c));
  return c;
}

bool IsLoopback(const std::string &address) {
  if (absl::StartsWith(address, "unix:")) return true;
  std::string host = address;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else if (host.find(':') != std::string::npos && host.find(':') == host.rfind(':')) {
    host = host.substr(0, host.find(':'));
  }
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  // An address, parsed: "127.evil.example" is a name, not 127.0.0.0/8.
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

absl::StatusOr<std::string> ReadConfigFile(const std::string &path, const std::string &field, size_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Invalid(absl::StrCat(field, " ", path, ": ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return Invalid(absl::StrCat(field, " ", path, " is a directory, not a file"));
  if (!S_ISREG(st.st_mode)) return Invalid(absl::StrCat(field, " ", path, " is not a regular file"));
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return Invalid(absl::StrCat(field, " ", path, " has ", st.st_size, " bytes; at most ", max_bytes, " are read"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid(absl::StrCat(field, " ", path, ": cannot be read: ", std::strerror(errno)));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Invalid(absl::StrCat(field, " ", path, ": read failed"));
  return s;
}

absl::StatusOr<std::string> ReadSecret(const std::string &path, const std::string &field) {
  TIR_ASSIGN_OR_RETURN(std::string s, ReadConfigFile(path, field, 64 << 10));
  s = std::string(absl::StripAsciiWhitespace(s));
  if (s.empty()) return Invalid(absl::StrCat(field, " ", path, " is empty"));
  return s;
}

}  // namespace tir::config
