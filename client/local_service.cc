#include "client/local_service.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/bundle_signature.h"
#include "compiler/support/cli.h"
#include "compiler/support/private_dir.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

extern char **environ;

namespace tir::client {
namespace {

absl::Status Internal(const std::string &what) {
  return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat(what, ": ", std::strerror(errno)));
}

std::string Seconds(absl::Duration d) { return absl::StrCat(absl::ToDoubleSeconds(d), " s"); }

// An existing service directory must be private, under directories only
// root and this user can change; a missing one is fine (nothing runs):
// false then.
absl::StatusOr<bool> CheckServiceDirIfPresent(const std::string &dir) {
  const absl::Status s = CheckTrustedDirectory(dir);
  if (ReasonOf(s) == "NOT_FOUND") return false;
  TIR_RETURN_IF_ERROR(s);
  return true;
}

// True when this descriptor now holds the lock; false when another does.
bool TryLock(int fd) {
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

// The pid the service wrote into its lock file (0 when none).
int64_t LockHolder(const std::string &lock) {
  std::ifstream in(lock);
  int64_t pid = 0;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid) ? pid : 0;
}

// A private file's contents (a token): this user's regular file, no group or
// other access, at most 4 KiB.
absl::StatusOr<std::string> ReadPrivateFile(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Internal("cannot open " + path);
  struct stat st;
  std::string out(4096, '\0');
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) {
    n = ::read(fd, out.data(), out.size());
  } else {
    ::close(fd);
    return MakeError(absl::StatusCode::kFailedPrecondition, "UNSAFE_DIRECTORY",
                     path + " must be a regular file of this user's with mode 0600");
  }
  ::close(fd);
  if (n < 0) return Internal("cannot read " + path);
  out.resize(static_cast<size_t>(n));
  return std::string(absl::StripAsciiWhitespace(out));
}

// The last lines of the service's log, for an error that sends the user there.
std::string LogTail(const std::string &log, int lines = 12) {
  std::ifstream in(log);
  std::vector<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.erase(tail.begin());
  }
  std::string out;
  for (const std::string &l : tail) absl::StrAppend(&out, "\n  ", l);
  return out;
}

absl::Status Untrusted(const std::string &why) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "UNTRUSTED_SERVICE_RECORD",
                   "the local service's record is not trusted: " + why);
}

std::vector<std::string> Lines(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(std::move(line));
  return out;
}

// What process `pid` has open: files (device, inode) and socket inodes.
struct Descriptors {
  std::set<std::pair<dev_t, ino_t>> files;
  std::set<uint64_t> sockets;
};

absl::StatusOr<Descriptors> DescriptorsOf(int64_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/fd");
  DIR *d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return Untrusted(absl::StrCat("cannot list the descriptors of pid ", pid, " (", std::strerror(errno), ")"));
  }
  Descriptors out;
  while (const struct dirent *e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = dir + "/" + e->d_name;
    char link[128];
    const ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
    absl::string_view target(link, n > 0 ? static_cast<size_t>(n) : 0);
    uint64_t inode = 0;
    if (absl::ConsumePrefix(&target, "socket:[") && absl::ConsumeSuffix(&target, "]") &&
        absl::SimpleAtoi(target, &inode)) {
      out.sockets.insert(inode);
      continue;
    }
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) out.files.emplace(st.st_dev, st.st_ino);
  }
  ::closedir(d);
  return out;
}

uint32_t Hex32(const std::string &hex) { return static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16)); }

// The inodes of the sockets that take connections made to `port` on
// 127.0.0.1: listening there or on the any-address, IPv4 or IPv6 (an IPv6
// any-address socket takes IPv4 connections too).
std::set<uint64_t> TcpListeners(int port) {
  std::set<uint64_t> out;
  for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    const bool v6 = absl::EndsWith(table, "6");
    for (const std::string &line : Lines(table)) {
      std::istringstream in(line);
      std::vector<std::string> f;
      for (std::string w; f.size() < 10 && in >> w;) f.push_back(w);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (f.size() < 10 || f[3] != "0A") continue;  // 0A: LISTEN
      const size_t colon = f[1].find(':');
      if (colon == std::string::npos || static_cast<int>(Hex32(f[1].substr(colon + 1))) != port) continue;
      const std::string addr = f[1].substr(0, colon);
      // Addresses as the kernel prints them: each 32-bit word in network
      // order read as a host integer.
      bool reaches = false;
      if (!v6 && addr.size() == 8) {
        const uint32_t a = Hex32(addr);
        reaches = a == 0 || a == htonl(INADDR_LOOPBACK);
      } else if (v6 && addr.size() == 32) {
        const uint32_t w[4] = {Hex32(addr.substr(0, 8)), Hex32(addr.substr(8, 8)), Hex32(addr.substr(16, 8)),
                               Hex32(addr.substr(24, 8))};
        reaches = (w[0] | w[1] | w[2] | w[3]) == 0 ||
                  (w[0] == 0 && w[1] == 0 && w[2] == htonl(0xffff) && w[3] == htonl(INADDR_LOOPBACK));
      }
      uint64_t inode = 0;
      if (reaches && absl::SimpleAtoi(f[9], &inode)) out.insert(inode);
    }
  }
  return out;
}

// The inodes of the Unix sockets listening at `path`.
std::set<uint64_t> UnixListeners(const std::string &path) {
  std::set<uint64_t> out;
  for (const std::string &line : Lines("/proc/net/unix")) {
    // Num RefCount Protocol Flags Type St Inode Path (the path may hold spaces).
    std::istringstream in(line);
    std::string num, refs, protocol, flags, type, state, inode_text;
    if (!(in >> num >> refs >> protocol >> flags >> type >> state >> inode_text)) continue;
    std::string rest;
    std::getline(in, rest);
    const size_t start = rest.find_first_not_of(' ');
    if (start == std::string::npos || rest.substr(start) != path) continue;
    uint64_t inode = 0;
    if ((Hex32(flags) & 0x10000) != 0 && absl::SimpleAtoi(inode_text, &inode)) out.insert(inode);  // __SO_ACCEPTCON
  }
  return out;
}

// One ListWorkers call: the service answers.
absl::Status Probe(const tir::v1::LocalService &service, absl::Time deadline) {
  TIR_ASSIGN_OR_RETURN(ClientOptions co, LocalClientOptions(service));
  auto channel = grpc::CreateChannel(co.address, grpc::InsecureChannelCredentials());
  auto stub = tir::v1::CompilerService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  if (!co.token.empty()) ctx.AddMetadata("authorization", "Bearer " + co.token);
  tir::v1::ListWorkersRequest request;
  tir::v1::ListWorkersResponse response;
  return FromGrpc(stub->ListWorkers(&ctx, request, &response));
}

void RemoveLeftovers(const LocalServicePaths &p) {
  for (const std::string *f : {&p.record, &p.sock, &p.client_token, &p.worker_token}) ::unlink(f->c_str());
}

// Starts `binary service serve` detached: its own session, stdin from
// /dev/null, stdout and stderr to the log, the locked `lock_fd` as fd 3 and
// the write end of a pipe as fd 4 (nothing else); it forks once more and
// its first process exits (reaped here), so the service is nobody's child.
// Returns the pipe's read end, where the service says "ready" or why not.
absl::StatusOr<int> Spawn(const std::string &binary, const LocalServiceOptions &o, const std::string &cache,
                          const LocalServicePaths &p, int lock_fd) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return Internal("cannot make a pipe");
  // Each run's log on its own; the one before is kept beside it.
  ::rename(p.log.c_str(), (p.log + ".1").c_str());
  const int log = ::open(p.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  // Out of the way of 0-4 first, so no dup2 below overwrites another's source.
  const int lock_hi = ::fcntl(lock_fd, F_DUPFD_CLOEXEC, 10);
  const int ready_hi = ::fcntl(pipefd[1], F_DUPFD_CLOEXEC, 10);
  auto close_all = [&] {
    for (int fd : {pipefd[1], log, null, lock_hi, ready_hi}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (log < 0 || null < 0 || lock_hi < 0 || ready_hi < 0) {
    const absl::Status s = Internal("cannot prepare the service's descriptors (log " + p.log + ")");
    close_all();
    ::close(pipefd[0]);
    return s;
  }
  std::vector<std::string> argv = {binary,
                                   "service",
                                   "serve",
                                   "--detach",
                                   "--cache-dir=" + cache,
                                   "--backend=" + o.backend,
                                   absl::StrCat("--idle-timeout=", absl::ToInt64Seconds(o.idle_timeout)),
                                   "--lock-fd=3",
                                   "--ready-fd=4"};
  // The service reads none of its caller's environment for these: they
  // are its flags (an empty one turns the environment's off).
  argv.push_back("--upstream=" + o.upstream.address);
  argv.push_back("--upstream-token-file=" + o.upstream.token_file);
  argv.push_back("--upstream-bundle-key-file=" + o.upstream.bundle_key_file);
  argv.push_back("--upstream-ca-file=" + o.upstream.ca_file);
  std::vector<char *> args;
  for (std::string &a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, null, 0);
  posix_spawn_file_actions_adddup2(&fa, log, 1);
  posix_spawn_file_actions_adddup2(&fa, log, 2);
  posix_spawn_file_actions_adddup2(&fa, lock_hi, 3);
  posix_spawn_file_actions_adddup2(&fa, ready_hi, 4);
  posix_spawn_file_actions_addclosefrom_np(&fa, 5);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGHUP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close_all();
  if (rc != 0) {
    ::close(pipefd[0]);
    return MakeError(absl::StatusCode::kUnavailable, "SERVICE_START_FAILED",
                     absl::StrCat("cannot start the local service (", binary, "): ", std::strerror(rc)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return pipefd[0];
}

// Waits on the pipe for the service's "ready" (or "error REASON: message").
absl::Status AwaitReady(int fd, absl::Time deadline, const LocalServicePaths &p, absl::Duration waited_from) {
  std::string got;
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      ::close(fd);
      return MakeError(absl::StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED",
                       absl::StrCat("the local service did not start within ", Seconds(waited_from),
                                    " (it goes on starting; its log: ", p.log, ")"));
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) continue;
    char buf[512];
    const ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r > 0) {
      got.append(buf, static_cast<size_t>(r));
      if (got.find('\n') == std::string::npos) continue;
    }
    ::close(fd);
    const std::string line = got.substr(0, got.find('\n'));
    if (line == "ready") return absl::OkStatus();
    if (absl::StartsWith(line, "error ")) {
      return MakeError(absl::StatusCode::kUnavailable, "SERVICE_START_FAILED",
                       absl::StrCat("the local service did not start: ", line.substr(6), " (its log: ", p.log, ")"));
    }
    return MakeError(absl::StatusCode::kUnavailable, "SERVICE_START_FAILED",
                     absl::StrCat("the local service exited while starting; its log, ", p.log, ":", LogTail(p.log)));
  }
}

// A process that has exited but is not yet reaped (state Z or X in
// /proc/<pid>/stat) holds nothing: its service is gone.
bool Ended(int64_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  if (!in.is_open()) return true;
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return stat.empty();
  const char state = stat[paren + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

LocalServicePaths::LocalServicePaths(const std::string &cache_dir)
    : dir(cache_dir + "/service"),
      lock(dir + "/lock"),
      sock(dir + "/sock"),
      record(dir + "/service.json"),
      log(dir + "/service.log"),
      client_token(dir + "/client.token"),
      worker_token(dir + "/worker.token") {}

std::string LocalServiceDir(const std::string &cache_dir) { return LocalServicePaths(cache_dir).dir; }

absl::StatusOr<std::string> LocalCacheDir(const std::string &cache_dir) {
  std::string cache = cache_dir;
  if (cache.empty()) {
    TIR_ASSIGN_OR_RETURN(cache, UserCacheDir());
  }
  std::error_code ec;
  cache = std::filesystem::absolute(cache, ec).lexically_normal().string();
  while (cache.size() > 1 && cache.back() == '/') cache.pop_back();
  return cache;
}

absl::Status VerifyLocalService(const std::string &cache_dir, const tir::v1::LocalService &service) {
  TIR_ASSIGN_OR_RETURN(const std::string cache, LocalCacheDir(cache_dir));
  const LocalServicePaths p(cache);
  const std::string &address = service.address();
  const int64_t pid = service.pid();
  int port = 0;
  const bool unix_socket = address == "unix:" + p.sock;
  if (!unix_socket) {
    absl::string_view rest = address;
    if (!absl::ConsumePrefix(&rest, "127.0.0.1:") || !absl::SimpleAtoi(rest, &port) || port <= 0 || port > 65535) {
      return Untrusted(absl::StrCat("its address ", address, " is neither ", p.sock, " nor a loopback TCP port"));
    }
  }
  if (!service.token_file().empty() && service.token_file() != p.client_token) {
    return Untrusted(absl::StrCat("its token file ", service.token_file(), " is not ", p.client_token));
  }
  if (!unix_socket && service.token_file().empty()) return Untrusted("it names TCP and no token file");
  if (pid <= 0) return Untrusted("it names no process");
  struct stat st;
  if (::stat(absl::StrCat("/proc/", pid).c_str(), &st) != 0 || Ended(pid)) {
    return Untrusted(absl::StrCat("its process (pid ", pid, ") is gone: the service ended without removing it"));
  }
  if (st.st_uid != ::geteuid()) {
    return Untrusted(absl::StrCat("pid ", pid, " is another user's process (uid ", st.st_uid, ")"));
  }
  TIR_ASSIGN_OR_RETURN(const Descriptors fds, DescriptorsOf(pid));
  struct stat lock;
  if (::lstat(p.lock.c_str(), &lock) != 0 || !S_ISREG(lock.st_mode) || lock.st_uid != ::geteuid()) {
    return Untrusted(p.lock + " is missing or not this user's file");
  }
  if (fds.files.count({lock.st_dev, lock.st_ino}) == 0) {
    return Untrusted(absl::StrCat("pid ", pid, " does not hold ", p.lock, " (it is not the service)"));
  }
  {
    TIR_ASSIGN_OR_RETURN(const int fd, OpenLockFile(p.lock));
    const bool free = TryLock(fd);
    ::close(fd);
    if (free) return Untrusted(absl::StrCat("nobody holds ", p.lock));
  }
  const std::set<uint64_t> listening = unix_socket ? UnixListeners(p.sock) : TcpListeners(port);
  if (listening.empty()) return Untrusted(absl::StrCat("nothing listens at ", address));
  for (uint64_t inode : listening) {
    if (fds.sockets.count(inode) == 0) {
      return Untrusted(absl::StrCat("a socket listening at ", address, " is not pid ", pid,
                                    "'s: another process holds that address"));
    }
  }
  return absl::OkStatus();
}

absl::Duration DefaultIdleTimeout() {
  int64_t seconds = 0;
  const char *env = std::getenv("TIR_SERVICE_IDLE_TIMEOUT");
  if (env != nullptr && absl::SimpleAtoi(env, &seconds) && seconds >= 0) return absl::Seconds(seconds);
  return absl::Minutes(15);
}

UpstreamSetting UpstreamFromEnvironment() {
  auto env = [](const char *name) {
    const char *v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  auto path = [&](const char *name) {
    const std::string v = env(name);
    if (v.empty()) return v;
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::absolute(v, ec);
    return ec ? v : p.lexically_normal().string();
  };
  return {env("TIR_UPSTREAM"), path("TIR_UPSTREAM_TOKEN_FILE"), path("TIR_UPSTREAM_BUNDLE_KEY_FILE"),
          path("TIR_UPSTREAM_CA_FILE")};
}

absl::StatusOr<std::string> FindTirctl() {
  std::vector<std::string> candidates;
  if (const char *bin = std::getenv("TIR_BIN_DIR"); bin != nullptr && *bin) {
    candidates.push_back(std::string(bin) + "/tirctl");
    candidates.push_back(std::string(bin) + "/client/tirctl");
  }
  if (const char *path = std::getenv("PATH"); path != nullptr) {
    for (absl::string_view d : absl::StrSplit(path, ':', absl::SkipEmpty())) candidates.push_back(absl::StrCat(d, "/tirctl"));
  }
  for (const std::string &c : candidates) {
    if (::access(c.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(c)) return c;
  }
  return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND",
                   "the local service is started as `tirctl service serve`, and no tirctl was found in $TIR_BIN_DIR "
                   "or on PATH");
}

absl::StatusOr<int> OpenLockFile(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return errno == ELOOP ? MakeError(absl::StatusCode::kFailedPrecondition, "UNSAFE_DIRECTORY",
                                      path + " is a symbolic link, not the local service's lock file")
                          : Internal("cannot open " + path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    return MakeError(absl::StatusCode::kFailedPrecondition, "UNSAFE_DIRECTORY",
                     path + " must be a regular file of this user's (the local service's lock)");
  }
  return fd;
}

std::string LocalServiceJson(const tir::v1::LocalService &service) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(service, &out, o);
  return out;
}

absl::Status WriteLocalServiceRecord(const std::string &path, const tir::v1::LocalService &service) {
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Internal("cannot create " + tmp);
  const std::string json = LocalServiceJson(service);
  bool ok = true;
  for (size_t done = 0; ok && done < json.size();) {
    const ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status s = Internal("cannot write " + path);
    ::unlink(tmp.c_str());
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<tir::v1::LocalService> ReadLocalServiceRecord(const std::string &path) {
  std::ifstream in(path);
  if (!in) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no local service record at " + path);
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  tir::v1::LocalService service;
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = true;  // written by a newer tir
  if (!google::protobuf::util::JsonStringToMessage(json, &service, o).ok() || service.address().empty()) {
    // Half written by a service that died (writes are renamed into place,
    // so only a damaged disk does this): treated as no record.
    return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", path + " is not a local service record");
  }
  return service;
}

absl::StatusOr<ClientOptions> LocalClientOptions(const tir::v1::LocalService &service, ClientOptions base) {
  base.address = service.address();
  if (!service.token_file().empty()) {
    TIR_ASSIGN_OR_RETURN(base.token, ReadPrivateFile(service.token_file()));
  }
  return base;
}

absl::StatusOr<tir::v1::LocalService> FindLocalService(const std::string &cache_dir, absl::Time deadline) {
  TIR_ASSIGN_OR_RETURN(const std::string cache, LocalCacheDir(cache_dir));
  const LocalServicePaths p(cache);
  TIR_ASSIGN_OR_RETURN(const bool present, CheckServiceDirIfPresent(p.dir));
  if (!present) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no local service runs for " + p.dir);
  absl::StatusOr<tir::v1::LocalService> record = ReadLocalServiceRecord(p.record);
  absl::Status trust = absl::OkStatus(), probe = absl::OkStatus();
  if (record.ok()) {
    // Nothing is sent to an address before the record is trusted.
    trust = VerifyLocalService(cache, *record);
    if (trust.ok()) {
      probe = Probe(*record, std::min(deadline, absl::Now() + absl::Seconds(2)));
      if (probe.ok()) return record;
    }
  }
  if (!std::filesystem::exists(p.lock)) {
    return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no local service runs for " + p.dir);
  }
  TIR_ASSIGN_OR_RETURN(int fd, OpenLockFile(p.lock));
  const bool free = TryLock(fd);
  // Nobody holds the lock: what is there is a dead service's (a stale
  // record, socket and token), removed while the lock is held here.
  if (free) RemoveLeftovers(p);
  ::close(fd);
  if (free) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no local service runs for " + p.dir);
  return MakeError(absl::StatusCode::kUnavailable, "UNAVAILABLE",
                   absl::StrCat("the local service (pid ", LockHolder(p.lock), ") holds ", p.lock,
                                !record.ok()  ? " and is starting (no record yet)"
                                : !trust.ok() ? absl::StrCat(" and is starting (", trust.message(), ")")
                                              : absl::StrCat(" and does not answer at ", record->address(), " (",
                                                             probe.message(), ")"),
                                "; its log: ", p.log));
}

absl::StatusOr<tir::v1::LocalService> EnsureLocalService(const LocalServiceOptions &options, absl::Time deadline) {
  TIR_ASSIGN_OR_RETURN(const std::string cache, LocalCacheDir(options.cache_dir));
  const LocalServicePaths p(cache);
  // The cache (its store, bundles, builds) and the service's directory:
  // this user's alone, under directories nobody else can change.
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(cache));
  TIR_RETURN_IF_ERROR(MakeTrustedDirectory(p.dir));
  const absl::Time begin = absl::Now();
  bool started = false;
  absl::Status last = absl::OkStatus();
  for (;;) {
    absl::StatusOr<tir::v1::LocalService> record = ReadLocalServiceRecord(p.record);
    bool trusted = false;
    if (record.ok()) {
      // Nothing is sent to an address before the record is trusted: a
      // stale one (its service gone) is replaced below.
      last = VerifyLocalService(cache, *record);
      trusted = last.ok();
      if (trusted) last = Probe(*record, std::min(deadline, absl::Now() + absl::Seconds(2)));
      if (trusted && last.ok()) return record;
    }
    if (!started) {
      TIR_ASSIGN_OR_RETURN(int fd, OpenLockFile(p.lock));
      if (TryLock(fd)) {
        // Nobody holds the lock: no service runs, and whatever is in the
        // directory is a dead one's.
        RemoveLeftovers(p);
        absl::StatusOr<std::string> binary = options.binary.empty() ? FindTirctl() : options.binary;
        absl::StatusOr<int> ready = binary.ok() ? Spawn(*binary, options, cache, p, fd) : binary.status();
        ::close(fd);  // the service holds the lock through its own descriptor
        if (!ready.ok()) return ready.status();
        started = true;
        TIR_RETURN_IF_ERROR(AwaitReady(*ready, deadline, p, deadline - begin));
        continue;
      }
      ::close(fd);
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      const int64_t pid = LockHolder(p.lock);
      return MakeError(
          absl::StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED",
          absl::StrCat("no local service answered within ", Seconds(deadline - begin), ": ",
                       record.ok() && trusted
                           ? absl::StrCat("the one at ", record->address(), " (pid ", record->pid(),
                                          ") does not answer (", last.message(), ")")
                           : absl::StrCat("one is starting (pid ", pid, " holds ", p.lock, ")",
                                          record.ok() ? absl::StrCat("; ", last.message()) : ""),
                       "; its log: ", p.log, "; `tirctl service stop` ends it"));
    }
    absl::SleepFor(std::min(left, absl::Milliseconds(20)));
  }
}

absl::StatusOr<bool> StopLocalService(const std::string &cache_dir, absl::Time deadline) {
  TIR_ASSIGN_OR_RETURN(const std::string cache, LocalCacheDir(cache_dir));
  const LocalServicePaths p(cache);
  TIR_ASSIGN_OR_RETURN(const bool present, CheckServiceDirIfPresent(p.dir));
  if (!present || !std::filesystem::exists(p.lock)) return false;
  TIR_ASSIGN_OR_RETURN(int fd, OpenLockFile(p.lock));
  if (TryLock(fd)) {
    RemoveLeftovers(p);
    ::close(fd);
    return false;
  }
  const int64_t pid = LockHolder(p.lock);
  // The holder is a service of tir's (`... service serve ...`) and this
  // user's, not another process that got the pid of a dead one.
  std::ifstream cmdline(absl::StrCat("/proc/", pid, "/cmdline"));
  const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  struct stat owner;
  if (pid <= 0 || args.find(std::string("service\0serve\0", 14)) == std::string::npos ||
      ::stat(absl::StrCat("/proc/", pid).c_str(), &owner) != 0 || owner.st_uid != ::geteuid()) {
    ::close(fd);
    return MakeError(absl::StatusCode::kFailedPrecondition, "FAILED_PRECONDITION",
                     absl::StrCat(p.lock, " is held by pid ", pid, ", which is not a tir service; not stopped"));
  }
  if (::kill(static_cast<pid_t>(pid), SIGTERM) != 0 && errno != ESRCH) {
    const absl::Status s = Internal(absl::StrCat("cannot signal the local service (pid ", pid, ")"));
    ::close(fd);
    return s;
  }
  // Gone once its lock is free.
  for (;;) {
    if (TryLock(fd)) {
      RemoveLeftovers(p);  // what a service killed before its cleanup left
      ::close(fd);
      return true;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      ::close(fd);
      return MakeError(absl::StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED",
                       absl::StrCat("the local service (pid ", pid, ") is still running; its log: ", p.log));
    }
    absl::SleepFor(std::min(left, absl::Milliseconds(20)));
  }
}

}  // namespace tir::client
