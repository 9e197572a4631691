#include "client/local_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "client/bundle_signature.h"
#include "client/embedded.h"
#include "client/local_service.h"
#include "compiler/support/cli.h"
#include "compiler/support/digest.h"
#include "compiler/support/private_dir.h"
#include "compiler/support/status.h"
#include "compiler/support/version.h"
#include "google/protobuf/util/time_util.h"

namespace tir::client {
namespace {

void Log(const std::string &line) {
  std::fprintf(stderr, "%s tir service[%d]: %s\n",
               absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::Now(), absl::LocalTimeZone()).c_str(), ::getpid(),
               line.c_str());
  std::fflush(stderr);
}

// Tells the client that started this service how the start went, once.
class ReadyPipe {
 public:
  explicit ReadyPipe(int fd) : fd_(fd) {
    if (fd_ >= 0) ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
  }
  ~ReadyPipe() { Say("error INTERNAL: the service ended before it was ready"); }
  void Say(const std::string &line) {
    if (fd_ < 0) return;
    const std::string text = line + "\n";
    (void)!::write(fd_, text.data(), text.size());  // a client gone is no error: SIGPIPE is ignored
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// A new file holding `text`, mode 0600, that did not exist before.
absl::Status WriteSecret(const std::string &path, const std::string &text) {
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !ok) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// `lock`: the lock file's descriptor once this process holds it (-1 before).
absl::Status Serve(const ServeOptions &o, ReadyPipe &ready, int &lock) {
  TIR_ASSIGN_OR_RETURN(const std::string cache, LocalCacheDir(o.cache_dir));
  const LocalServicePaths p(cache);
  // The cache (the store is in it) and the service's directory: this
  // user's alone, under directories nobody else can change.
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(cache));
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(p.dir));
  lock = o.lock_fd;
  if (lock < 0) {
    TIR_ASSIGN_OR_RETURN(const int fd, OpenLockFile(p.lock));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char pid[32] = {0};
      (void)!::pread(fd, pid, sizeof(pid) - 1, 0);
      ::close(fd);
      return MakeError(absl::StatusCode::kAlreadyExists, "ALREADY_RUNNING",
                       absl::StrCat("a local service already runs for ", cache, " (pid ", pid,
                                    "); `tirctl service stop` ends it"));
    }
    lock = fd;
  } else {
    // Held for the life of this process, by this process alone: what it
    // starts (the runner, compilers) does not inherit it, so a killed
    // service frees the lock at once.
    ::fcntl(lock, F_SETFD, FD_CLOEXEC);
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  (void)!::ftruncate(lock, 0);
  (void)!::pwrite(lock, pid.data(), pid.size(), 0);
  for (const std::string *f : {&p.record, &p.sock, &p.client_token, &p.worker_token}) ::unlink(f->c_str());

  EmbeddedOptions eo;
  eo.cache_dir = cache;
  eo.backend = o.backend;
  eo.upstream = o.upstream.address;
  eo.upstream_token_file = o.upstream.token_file;
  eo.upstream_bundle_key_file = o.upstream.bundle_key_file;
  eo.upstream_ca_file = o.upstream.ca_file;
  tir::v1::LocalService record;
  if (p.sock.size() <= kMaxSocketPath) {
    eo.listen = "unix:" + p.sock;
  } else {
    // The socket's path does not fit a sockaddr_un: loopback TCP, where any
    // local user could connect, so every call needs a token only this user
    // can read.
    eo.listen = "127.0.0.1:0";
    eo.worker_token = RandomHex(32);
    TIR_RETURN_IF_ERROR(WriteSecret(p.client_token, RandomHex(32)));
    TIR_RETURN_IF_ERROR(WriteSecret(p.worker_token, eo.worker_token));
    eo.client_token_file = p.client_token;
    eo.worker_token_file = p.worker_token;
    record.set_token_file(p.client_token);
  }
  // A SIGTERM from here on stops it cleanly (socket and record removed):
  // `tirctl service stop` may come the moment the record appears.
  absl::Notification signalled;
  SignalWatcher signals([&] { signalled.Notify(); });
  const absl::Time start = absl::Now();
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<EmbeddedService> service, EmbeddedService::Start(eo));
  if (eo.listen != "127.0.0.1:0" && ::chmod(p.sock.c_str(), 0600) != 0) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot chmod ", p.sock, ": ", std::strerror(errno)));
  }
  // Nothing of the caller's working directory is kept busy.
  (void)!::chdir("/");
  record.set_address(service->address());
  record.set_pid(::getpid());
  record.set_backend(service->backend());
  record.set_arch(service->arch());
  record.set_version(kTirVersion);
  record.set_codegen_version(kCodegenVersion);
  record.set_binary(o.binary);
  record.set_store(cache + "/store");
  record.set_log(p.log);
  *record.mutable_start_time() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(start));
  record.set_idle_timeout_seconds(static_cast<uint32_t>(absl::ToInt64Seconds(o.idle_timeout)));
  record.set_upstream(o.upstream.address);
  record.set_upstream_token_file(o.upstream.token_file);
  record.set_upstream_ca_file(o.upstream.ca_file);
  TIR_RETURN_IF_ERROR(WriteLocalServiceRecord(p.record, record));
  Log(absl::StrCat("serving on ", record.address(), " (", record.arch(), " worker, store ", record.store(),
                   record.upstream().empty() ? "" : ", upstream " + record.upstream(), ") after ",
                   absl::FormatDuration(absl::Now() - start),
                   o.idle_timeout > absl::ZeroDuration() ? absl::StrCat("; exits after ", absl::FormatDuration(o.idle_timeout), " idle")
                                                         : "; no idle timeout"));
  ready.Say("ready");

  {
    const api::ClientActivity &activity = service->server().client_activity();
    coordinator::Coordinator &coordinator = service->server().coordinator();
    auto busy = [&] {
      return activity.in_flight() > 0 || coordinator.jobs_in_flight() > 0 || coordinator.queue_depth() > 0;
    };
    // Checked a few times per idle timeout (at most every 5 s).
    const absl::Duration tick = o.idle_timeout > absl::ZeroDuration()
                                    ? std::clamp(o.idle_timeout / 4, absl::Milliseconds(50), absl::Seconds(5))
                                    : absl::InfiniteDuration();
    // Once idle, the record goes first and the socket stays a moment: a
    // client that found the service just before (its probe was the last
    // call) makes its next call within it, and the service stays.
    const absl::Duration grace = std::min(o.idle_timeout / 2, absl::Seconds(2));
    while (!signalled.WaitForNotificationWithTimeout(tick)) {
      if (busy() || absl::Now() - activity.last() < o.idle_timeout) continue;
      const absl::Time last = activity.last();
      ::unlink(p.record.c_str());
      if (signalled.WaitForNotificationWithTimeout(grace)) break;
      if (!busy() && activity.last() == last) break;
      TIR_RETURN_IF_ERROR(WriteLocalServiceRecord(p.record, record));
      Log("a call came as it was going idle: serving on");
    }
  }
  const std::string why =
      signalled.HasBeenNotified() ? "signalled" : absl::StrCat("idle for ", absl::FormatDuration(o.idle_timeout));
  // Found no more, then gone: the record first, so no client picks an
  // address that is about to close; calls in flight finish.
  ::unlink(p.record.c_str());
  ::unlink(p.sock.c_str());
  Log(why + ": stopping");
  service.reset();
  ::unlink(p.client_token.c_str());
  ::unlink(p.worker_token.c_str());
  Log("stopped");
  return absl::OkStatus();  // exiting frees the lock
}

}  // namespace

absl::Status ServeLocalService(const ServeOptions &options) {
  if (options.detach) {
    const pid_t child = ::fork();
    if (child < 0) {
      return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot fork: ", std::strerror(errno)));
    }
    if (child > 0) ::_exit(0);
  }
  ::signal(SIGPIPE, SIG_IGN);
  ::umask(077);
  ReadyPipe ready(options.ready_fd);
  int lock = -1;
  absl::Status s = Serve(options, ready, lock);
  if (!s.ok()) {
    Log(absl::StrCat("cannot serve: ", ReasonOf(s), ": ", s.message()));
    // Free before the client hears why, so it finds no service running.
    if (lock >= 0) ::close(lock);
    ready.Say(absl::StrCat("error ", ReasonOf(s), ": ", absl::StrReplaceAll(s.message(), {{"\n", " "}})));
  }
  return s;
}

}  // namespace tir::client
