// The user's local service: one tir service (a coordinator and a worker,
// client/embedded.h) per user and cache directory, shared by every process
// of that user (tirctl, Python, C++ clients), as sccache and Bazel run
// theirs. The first client that needs it starts it; it exits after an idle
// time.
//
// Its files live in <cache_dir>/service, a directory only the user may use
// (0700, owner checked; UNSAFE_DIRECTORY otherwise):
//   lock          held (flock) by the service for its whole life, and by a
//                 client while it starts one; holds the service's pid
//   sock          the gRPC Unix socket (0600)
//   service.json  the service's record (tir.v1.LocalService), written once it
//                 answers, removed when it exits
//   service.log   its log (the previous run's in service.log.1)
//   client.token, worker.token
//                 only where <dir>/sock is too long for a Unix socket path:
//                 the service then listens on loopback TCP and every call
//                 needs the client token (0600)
//
// Trusting the record: service.json names an address, and the address of a
// dead service may have been taken since by anyone (a loopback TCP port,
// by another local user). The record is trusted only when its pid is a live
// process of this user's that has the lock file open while the lock is held
// and owns the socket listening at the recorded address (/proc: its
// descriptors, /proc/net/unix or tcp); otherwise it is stale, is removed
// once nobody holds the lock, and a fresh service is started. No call, and
// no token, goes to an address before that (VerifyLocalService).
//
// Starting (EnsureLocalService):
//  1. a service whose record is trusted (above) and that answers
//     (ListWorkers) is used;
//  2. else a client that takes the lock (flock LOCK_NB) knows no service
//     runs: it removes what a dead one left, starts `BINARY service serve`
//     detached (its own session, fds 0-2 to the log, the locked descriptor
//     handed over, so the lock passes to the service without a gap) and
//     waits for its "ready" on a pipe;
//  3. a client that cannot take the lock (another is starting one, or one
//     runs and does not answer yet) polls 1 until its deadline.
// Simultaneous first users thus start exactly one service. A killed
// service's lock is released by the kernel, so the next client replaces it.
// The store is the service's alone (<cache_dir>/store): a process never
// opens a private one when the service cannot start, it gets the error.

#ifndef TIR_CLIENT_LOCAL_SERVICE_H_
#define TIR_CLIENT_LOCAL_SERVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "tir/v1/local_service.pb.h"

namespace tir::client {

// <cache_dir>/service.
std::string LocalServiceDir(const std::string &cache_dir);

// `cache_dir` ("" : the user's, UserCacheDir()) absolute and normalized, as
// the service and its clients name it. Errors: NO_CACHE_DIRECTORY.
absl::StatusOr<std::string> LocalCacheDir(const std::string &cache_dir);

// How long a service started now stays up without client calls or running
// jobs: $TIR_SERVICE_IDLE_TIMEOUT seconds (0: forever), else 15 minutes.
absl::Duration DefaultIdleTimeout();

// The fleet a service asks on a miss (server/upstream/read_through.h).
struct UpstreamSetting {
  // Its gRPC address ("" : none).
  std::string address;
  // Files (absolute paths) of its client token, of its bundle key (its
  // bundles must be signed with it) and of its CA (PEM: TLS); "" for none.
  std::string token_file;
  std::string bundle_key_file;
  std::string ca_file;
};
// $TIR_UPSTREAM, $TIR_UPSTREAM_TOKEN_FILE, $TIR_UPSTREAM_BUNDLE_KEY_FILE and
// $TIR_UPSTREAM_CA_FILE (paths made absolute).
UpstreamSetting UpstreamFromEnvironment();

struct LocalServiceOptions {
  // "" : $XDG_CACHE_HOME/tir, else ~/.cache/tir (NO_CACHE_DIRECTORY when
  // the user has neither).
  std::string cache_dir;
  // For a service started by this call: its worker's backend (auto, host,
  // cuda), its idle timeout (zero: none).
  std::string backend = "auto";
  absl::Duration idle_timeout = DefaultIdleTimeout();
  // For a service started by this call: the fleet it asks on a miss. A
  // running service keeps the upstream it was started with (its record
  // names it).
  UpstreamSetting upstream = UpstreamFromEnvironment();
  // The binary started as the service (run as `BINARY service serve ...`):
  // tirctl. "" : FindTirctl().
  std::string binary;
};

// tirctl for a client that starts the service: $TIR_BIN_DIR/tirctl (or
// $TIR_BIN_DIR/client/tirctl), else on PATH. NOT_FOUND otherwise.
absl::StatusOr<std::string> FindTirctl();

// The running service's record, once it is trusted and answers by
// `deadline` (a probe of at most 2 s). NOT_FOUND: none runs (nobody holds
// the lock; a stale record is removed). UNAVAILABLE: one holds the lock and
// does not answer, or its record is not trusted yet (starting, or stuck;
// the message names its pid and log). UNSAFE_DIRECTORY.
absl::StatusOr<tir::v1::LocalService> FindLocalService(const std::string &cache_dir, absl::Time deadline);

// The running service, started first when none runs. Errors:
// UNSAFE_DIRECTORY; SERVICE_START_FAILED (the service's own reason, and its
// log); NOT_FOUND (no tirctl to start); DEADLINE_EXCEEDED when no service
// answers by `deadline` (still starting, or one that holds the lock and
// never answers).
absl::StatusOr<tir::v1::LocalService> EnsureLocalService(const LocalServiceOptions &options, absl::Time deadline);

// Stops the running service (SIGTERM; it finishes the calls in flight) and
// waits until it is gone. False when none ran. DEADLINE_EXCEEDED when it is
// still there at `deadline`.
absl::StatusOr<bool> StopLocalService(const std::string &cache_dir, absl::Time deadline);

// OK when `service` (read from <cache_dir>/service/service.json) names this
// user's running service: the address is the service directory's socket or
// loopback TCP with the directory's token file; the pid is a live process
// of this user's; it has the lock file open and the lock is held; and the
// socket listening at the address (every one that takes connections there:
// loopback and any-address, IPv4 and IPv6) is one of its descriptors.
// UNTRUSTED_SERVICE_RECORD (FAILED_PRECONDITION) saying which fails.
absl::Status VerifyLocalService(const std::string &cache_dir, const tir::v1::LocalService &service);

// `base` pointed at the service: its address, and its client token when it
// serves on TCP (only for a record VerifyLocalService trusts).
absl::StatusOr<ClientOptions> LocalClientOptions(const tir::v1::LocalService &service, ClientOptions base = {});

// The service's record as JSON (what service.json holds).
std::string LocalServiceJson(const tir::v1::LocalService &service);

// The files of the service's directory, for the service itself and tests.
struct LocalServicePaths {
  explicit LocalServicePaths(const std::string &cache_dir);
  std::string dir, lock, sock, record, log, client_token, worker_token;
};

// A Unix socket path longer than this does not fit sockaddr_un.
inline constexpr size_t kMaxSocketPath = 107;

// Opens (creating, 0600, close-on-exec) the lock file: a regular file of
// this user's, not a link. Errors: UNSAFE_DIRECTORY, INTERNAL.
absl::StatusOr<int> OpenLockFile(const std::string &path);
// service.json, written whole (a new file renamed over the old, 0600) or
// read (NOT_FOUND when there is none).
absl::Status WriteLocalServiceRecord(const std::string &path, const tir::v1::LocalService &service);
absl::StatusOr<tir::v1::LocalService> ReadLocalServiceRecord(const std::string &path);

}  // namespace tir::client

#endif  // TIR_CLIENT_LOCAL_SERVICE_H_
