#include "client/local_service_command.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "compiler/support/cli.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/time_util.h"

namespace tir::client {

std::string DescribeLocalService(const tir::v1::LocalService &s, absl::Time now) {
  const absl::Time start =
      absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(s.start_time()));
  std::string out = absl::StrFormat("running: pid %d, %s\n", s.pid(), s.address());
  absl::StrAppendFormat(&out, "  worker:  %s (%s backend)\n", s.arch(), s.backend());
  absl::StrAppendFormat(&out, "  store:   %s\n", s.store());
  absl::StrAppendFormat(&out, "  log:     %s\n", s.log());
  absl::StrAppendFormat(&out, "  binary:  %s (tir %s, %s)\n", s.binary().empty() ? "?" : s.binary(), s.version(),
                        s.codegen_version());
  absl::StrAppendFormat(&out, "  started: %s (up %s); %s\n",
                        absl::FormatTime("%Y-%m-%d %H:%M:%S", start, absl::LocalTimeZone()),
                        absl::FormatDuration(std::max(absl::Trunc(now - start, absl::Seconds(1)), absl::Seconds(1))),
                        s.idle_timeout_seconds() > 0
                            ? absl::StrCat("exits after ", absl::FormatDuration(absl::Seconds(s.idle_timeout_seconds())),
                                           " without calls or running jobs")
                            : "no idle timeout");
  if (!s.token_file().empty()) absl::StrAppendFormat(&out, "  token:   %s (calls need it: TCP)\n", s.token_file());
  if (!s.upstream().empty()) absl::StrAppendFormat(&out, "  upstream: %s\n", s.upstream());
  return out;
}

std::string UpstreamHealth(const tir::v1::LocalService &s, absl::Time deadline) {
  if (s.upstream().empty()) return "";
  ClientOptions o;
  o.address = s.upstream();
  o.max_attempts = 1;
  o.call_timeout = std::min(absl::Seconds(5), std::max(deadline - absl::Now(), absl::Milliseconds(1)));
  absl::Status why;
  if (!s.upstream_token_file().empty()) {
    std::ifstream in(s.upstream_token_file());
    std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.is_open()) why = MakeError(absl::StatusCode::kFailedPrecondition, "NO_TOKEN", "cannot read " + s.upstream_token_file());
    o.token = std::string(absl::StripAsciiWhitespace(token));
  }
  if (why.ok() && !s.upstream_ca_file().empty()) {
    std::ifstream in(s.upstream_ca_file());
    o.tls_root_certs.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.is_open()) why = MakeError(absl::StatusCode::kFailedPrecondition, "NO_CA", "cannot read " + s.upstream_ca_file());
  }
  std::string workers;
  if (why.ok()) {
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
    absl::StatusOr<tir::v1::ListWorkersResponse> r = c.ok() ? (*c)->ListWorkers() : c.status();
    if (r.ok()) {
      std::map<std::string, int> arches;
      for (const tir::v1::WorkerInfo &w : r->workers()) ++arches[w.arch()];
      for (const auto &[arch, n] : arches) absl::StrAppend(&workers, workers.empty() ? "" : ", ", n, " ", arch);
      return absl::StrFormat("  upstream health: answers (workers: %s)\n", workers.empty() ? "none" : workers);
    }
    why = r.status();
  }
  return absl::StrFormat("  upstream health: does not answer (%s: %s); the service tunes here until it does\n",
                         ReasonOf(why), why.message());
}

absl::StatusOr<std::string> ServiceCommand(const std::string &what, const ServiceCommandOptions &o) {
  const std::string cache = o.service.cache_dir.empty() ? CacheDir() : o.service.cache_dir;
  const absl::Time deadline = absl::Now() + o.timeout;
  tir::v1::LocalService service;
  if (what == "status") {
    TIR_ASSIGN_OR_RETURN(service, FindLocalService(cache, deadline));
  } else if (what == "start") {
    LocalServiceOptions so = o.service;
    so.cache_dir = cache;
    TIR_ASSIGN_OR_RETURN(service, EnsureLocalService(so, deadline));
  } else if (what == "stop") {
    absl::StatusOr<tir::v1::LocalService> running = FindLocalService(cache, deadline);
    TIR_ASSIGN_OR_RETURN(bool stopped, StopLocalService(cache, deadline));
    if (!stopped) return std::string("no local service runs\n");
    return running.ok() ? absl::StrCat("stopped (pid ", running->pid(), ")\n") : std::string("stopped\n");
  } else {
    return MakeError(absl::StatusCode::kInvalidArgument, "USAGE", "service takes status, start or stop");
  }
  if (o.json) return LocalServiceJson(service) + "\n";
  return DescribeLocalService(service, absl::Now()) + (what == "status" ? UpstreamHealth(service, deadline) : "");
}

}  // namespace tir::client
