// The user's local service with real processes: tirctl (from the runfiles)
// started as `tirctl service serve` by the library, as tirctl and Python do.
// Each test has a cache directory of its own under /tmp (a Unix socket's
// path must be short) and stops its service at the end.

#include "client/local_service.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/process.h"
#include "tests/testing/silent_server.h"

namespace tir::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

mode_t Mode(const std::string &path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

class LocalServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The service finds its runner through the environment it inherits.
    setenv("TIR_WORKER_RUNNER", testing::Runfile("worker/runner/tir-worker-runner").c_str(), 1);
    char dir[] = "/tmp/tir-lst.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    cache_ = root_ + "/cache";
  }
  void TearDown() override {
    absl::StatusOr<bool> stopped = StopLocalService(cache_, absl::Now() + absl::Seconds(30));
    EXPECT_TRUE(stopped.ok()) << stopped.status();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  LocalServiceOptions Options() const {
    LocalServiceOptions o;
    o.cache_dir = cache_;
    o.backend = "host";
    o.idle_timeout = absl::Minutes(2);  // a test that fails to stop it leaves nothing for long
    o.binary = testing::Runfile("client/tirctl");
    return o;
  }
  // The service answers a client with the record's options.
  static absl::Status Answers(const tir::v1::LocalService &s, const std::string &token_override = "-") {
    absl::StatusOr<ClientOptions> co = LocalClientOptions(s);
    if (!co.ok()) return co.status();
    if (token_override != "-") co->token = token_override;
    co->call_timeout = absl::Seconds(10);
    TIR_ASSIGN_OR_RETURN(std::unique_ptr<Client> c, Client::Connect(*co));
    TIR_ASSIGN_OR_RETURN(tir::v1::ListWorkersResponse w, c->ListWorkers());
    if (w.workers_size() != 1) return absl::InternalError(absl::StrCat(w.workers_size(), " workers"));
    return absl::OkStatus();
  }
  // Waits (bounded) until the service is gone: its lock is free. (Without
  // calling it: a call is activity, which an idle service waits out.)
  bool GoneWithin(absl::Duration d) {
    absl::StatusOr<int> fd = OpenLockFile(LocalServicePaths(cache_).lock);
    if (!fd.ok()) return false;
    const absl::Time end = absl::Now() + d;
    bool free = false;
    while (!(free = ::flock(*fd, LOCK_EX | LOCK_NB) == 0) && absl::Now() < end) absl::SleepFor(absl::Milliseconds(20));
    ::close(*fd);
    return free;
  }
  std::string root_, cache_;
};

TEST_F(LocalServiceTest, StartsOnFirstUseAndLaterCallersFindTheSameOne) {
  EXPECT_EQ(FindLocalService(cache_, absl::Now() + absl::Seconds(5)).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<tir::v1::LocalService> first = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(first.ok()) << first.status();
  const LocalServicePaths p(cache_);
  EXPECT_EQ(first->address(), "unix:" + p.sock);
  EXPECT_EQ(first->arch(), "host");
  EXPECT_EQ(first->store(), cache_ + "/store");
  EXPECT_TRUE(first->token_file().empty()) << "a Unix socket needs no token";
  EXPECT_NE(first->pid(), ::getpid()) << "the service is a process of its own";
  EXPECT_TRUE(Answers(*first).ok());
  absl::StatusOr<tir::v1::LocalService> found = FindLocalService(cache_, absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->pid(), first->pid());
  absl::StatusOr<tir::v1::LocalService> again = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->pid(), first->pid()) << "a second caller uses the running service";
  EXPECT_FALSE(std::filesystem::exists(p.log + ".1")) << "started once";
}

TEST_F(LocalServiceTest, SocketLockAndRecordAreThisUsersAlone) {
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(s.ok()) << s.status();
  const LocalServicePaths p(cache_);
  EXPECT_TRUE(S_ISDIR(Mode(p.dir)));
  EXPECT_EQ(Mode(p.dir) & 0777, 0700u);
  EXPECT_TRUE(S_ISSOCK(Mode(p.sock)));
  EXPECT_EQ(Mode(p.sock) & 0777, 0600u);
  for (const std::string &f : {p.lock, p.record, p.log}) {
    EXPECT_TRUE(S_ISREG(Mode(f))) << f;
    EXPECT_EQ(Mode(f) & 0777, 0600u) << f;
  }
  // The lock names the service.
  std::ifstream lock(p.lock);
  int64_t pid = 0;
  lock >> pid;
  EXPECT_EQ(pid, s->pid());
}

TEST_F(LocalServiceTest, SimultaneousFirstUsersStartExactlyOneService) {
  // Six `tirctl service start` processes at once, with nothing running.
  constexpr int kClients = 6;
  std::vector<pid_t> pids;
  for (int i = 0; i < kClients; ++i) {
    const std::string out = absl::StrCat(root_, "/start", i, ".json");
    pids.push_back(testing::Spawn({"/bin/sh", "-c",
                                   absl::StrCat("exec '", testing::Runfile("client/tirctl"),
                                                "' service start -o json --backend=host --idle-timeout=120 "
                                                "--timeout=60 --cache-dir='",
                                                cache_, "' >'", out, "'")}));
  }
  std::set<int64_t> services;
  for (int i = 0; i < kClients; ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(pids[i], &status, 0), pids[i]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client " << i;
    std::ifstream in(absl::StrCat(root_, "/start", i, ".json"));
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    tir::v1::LocalService s;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok()) << json;
    services.insert(s.pid());
  }
  EXPECT_EQ(services.size(), 1u) << "every client got the one service";
  EXPECT_FALSE(std::filesystem::exists(LocalServicePaths(cache_).log + ".1")) << "no second service was started";
  EXPECT_EQ(::kill(static_cast<pid_t>(*services.begin()), 0), 0);
}

TEST_F(LocalServiceTest, AKilledServiceIsReplacedAndItsStoreKept) {
  absl::StatusOr<tir::v1::LocalService> first = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(first.ok()) << first.status();
  // A bundle in the store, through the first service.
  const std::string graph =
      "tir.graph @kept(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {\n"
      "  %y = exp %x : tensor<8x16xf32>\n  results %y : tensor<8x16xf32>\n}\n";
  tir::v1::CompileOptions co;
  co.set_target_arch("host");
  {
    absl::StatusOr<ClientOptions> o = LocalClientOptions(*first);
    ASSERT_TRUE(o.ok());
    auto c = Client::Connect(*o);
    ASSERT_TRUE(c.ok());
    auto op = (*c)->Compile(GraphSourceFromText(graph), co);
    ASSERT_TRUE(op.ok()) << op.status();
    auto done = (*c)->Wait(op->name(), absl::Minutes(2));
    ASSERT_TRUE(done.ok() && done->has_response()) << done.status();
  }
  ASSERT_EQ(::kill(static_cast<pid_t>(first->pid()), SIGKILL), 0);
  ASSERT_TRUE(GoneWithin(absl::Seconds(30))) << "a killed service frees its lock";
  const LocalServicePaths p(cache_);
  EXPECT_TRUE(std::filesystem::exists(p.sock)) << "its socket is left behind, stale";
  absl::StatusOr<tir::v1::LocalService> second = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->pid(), first->pid());
  EXPECT_EQ(second->address(), first->address()) << "the stale socket was replaced";
  absl::StatusOr<ClientOptions> o = LocalClientOptions(*second);
  ASSERT_TRUE(o.ok());
  auto c = Client::Connect(*o);
  ASSERT_TRUE(c.ok());
  auto hit = (*c)->Compile(GraphSourceFromText(graph), co);
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_TRUE(hit->done() && hit->metadata().cache_hit()) << "the new service serves the same store";
}

TEST_F(LocalServiceTest, AnIdleServiceExitsAndRemovesItsSocket) {
  LocalServiceOptions o = Options();
  o.idle_timeout = absl::Seconds(1);
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(o, absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->idle_timeout_seconds(), 1u);
  ASSERT_TRUE(GoneWithin(absl::Seconds(30)));
  const LocalServicePaths p(cache_);
  EXPECT_FALSE(std::filesystem::exists(p.sock));
  EXPECT_FALSE(std::filesystem::exists(p.record));
  std::ifstream log(p.log);
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("idle for 1s: stopping"));
}

TEST_F(LocalServiceTest, StopEndsItAndSaysWhenNoneRan) {
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<bool> stopped = StopLocalService(cache_, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(*stopped);
  EXPECT_EQ(FindLocalService(cache_, absl::Now() + absl::Seconds(5)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(LocalServicePaths(cache_).sock));
  stopped = StopLocalService(cache_, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_FALSE(*stopped);
}

TEST_F(LocalServiceTest, APathTooLongForAUnixSocketServesLoopbackTcpWithAToken) {
  cache_ = root_ + "/" + std::string(60, 'd') + "/" + std::string(60, 'e') + "/cache";
  ASSERT_GT(LocalServicePaths(cache_).sock.size(), kMaxSocketPath);
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->address(), StartsWith("127.0.0.1:"));
  ASSERT_FALSE(s->token_file().empty());
  EXPECT_EQ(Mode(s->token_file()) & 0777, 0600u);
  EXPECT_TRUE(Answers(*s).ok()) << "with the token";
  EXPECT_EQ(ReasonOf(Answers(*s, "")), "UNAUTHENTICATED") << "other local users cannot call it";
  EXPECT_EQ(ReasonOf(Answers(*s, "guess")), "UNAUTHENTICATED");
}

TEST_F(LocalServiceTest, AServiceThatHoldsTheLockAndNeverAnswersCostsTheTimeout) {
  // What a hung service looks like: the lock held, a record, a socket that
  // accepts and says nothing.
  const LocalServicePaths p(cache_);
  ASSERT_TRUE(std::filesystem::create_directories(p.dir));
  ::chmod(p.dir.c_str(), 0700);
  absl::StatusOr<int> lock = OpenLockFile(p.lock);
  ASSERT_TRUE(lock.ok());
  ASSERT_EQ(::flock(*lock, LOCK_EX | LOCK_NB), 0);
  testing::SilentServer silent(p.sock);
  tir::v1::LocalService record;
  record.set_address(silent.address());
  record.set_pid(::getpid());
  ASSERT_TRUE(WriteLocalServiceRecord(p.record, record).ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(Options(), start + absl::Seconds(1));
  const absl::Duration took = absl::Now() - start;
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDeadlineExceeded) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("does not answer"));
  EXPECT_LT(took, absl::Seconds(3)) << "a service that never answers costs the timeout, not more";
  EXPECT_GE(silent.accepted(), 1) << "the probe did connect";
  EXPECT_FALSE(std::filesystem::exists(cache_ + "/store")) << "no store of its own instead";
  ::close(*lock);
  ::unlink(p.record.c_str());
}

TEST_F(LocalServiceTest, AServiceThatCannotStartSaysWhyAndNoStoreIsMade) {
  LocalServiceOptions o = Options();
  o.binary = "/bin/false";  // exits at once, saying nothing
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(o, absl::Now() + absl::Seconds(30));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ReasonOf(s.status()), "SERVICE_START_FAILED") << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("exited while starting"));
  o.binary = root_ + "/no-such-tirctl";
  s = EnsureLocalService(o, absl::Now() + absl::Seconds(30));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ReasonOf(s.status()), "SERVICE_START_FAILED") << s.status();
  EXPECT_FALSE(std::filesystem::exists(cache_ + "/store"));
  // The service's own reason comes back: here a cuda worker without a GPU.
  o = Options();
  o.backend = "cuda";
  s = EnsureLocalService(o, absl::Now() + absl::Seconds(60));
  if (!s.ok()) {
    EXPECT_EQ(ReasonOf(s.status()), "SERVICE_START_FAILED") << s.status();
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("CUDA_DRIVER_UNAVAILABLE"));
    EXPECT_EQ(FindLocalService(cache_, absl::Now() + absl::Seconds(5)).status().code(), absl::StatusCode::kNotFound);
  }
}

TEST_F(LocalServiceTest, ARecordIsTrustedOnlyForTheLiveServiceThatHoldsItsLockAndSocket) {
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(Options(), absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(VerifyLocalService(cache_, *s).ok()) << VerifyLocalService(cache_, *s);
  const auto untrusted = [&](const tir::v1::LocalService &r) { return ReasonOf(VerifyLocalService(cache_, r)); };
  tir::v1::LocalService r = *s;
  r.set_pid(::getpid());  // a process of this user's, neither the lock's holder nor the socket's
  EXPECT_EQ(untrusted(r), "UNTRUSTED_SERVICE_RECORD");
  r = *s;
  r.set_pid(1);
  EXPECT_EQ(untrusted(r), "UNTRUSTED_SERVICE_RECORD");
  r = *s;
  r.set_pid(0);
  EXPECT_EQ(untrusted(r), "UNTRUSTED_SERVICE_RECORD");
  r = *s;
  r.set_address("unix:" + root_ + "/elsewhere");
  EXPECT_EQ(untrusted(r), "UNTRUSTED_SERVICE_RECORD");
  r = *s;
  r.set_address("127.0.0.1:1");  // TCP without the directory's token file
  EXPECT_EQ(untrusted(r), "UNTRUSTED_SERVICE_RECORD");
  r.set_token_file(root_ + "/token");
  EXPECT_EQ(untrusted(r), "UNTRUSTED_SERVICE_RECORD");
  // Killed: the record stays behind and is trusted no more; the next
  // client removes it (the lock is free) and finds no service.
  ASSERT_EQ(::kill(static_cast<pid_t>(s->pid()), SIGKILL), 0);
  ASSERT_TRUE(GoneWithin(absl::Seconds(30)));
  // The lock is freed while the process still exits; it is gone once it
  // has no /proc entry or is a zombie nobody has reaped yet.
  const auto exited = [pid = s->pid()] {
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    return !in.is_open() || stat.empty() || (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
  };
  for (const absl::Time end = absl::Now() + absl::Seconds(30); !exited() && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(exited());
  const LocalServicePaths p(cache_);
  ASSERT_TRUE(std::filesystem::exists(p.record)) << "an unclean exit leaves the record";
  const absl::Status stale = VerifyLocalService(cache_, *s);
  EXPECT_EQ(ReasonOf(stale), "UNTRUSTED_SERVICE_RECORD");
  EXPECT_THAT(std::string(stale.message()), HasSubstr("gone"));
  EXPECT_EQ(FindLocalService(cache_, absl::Now() + absl::Seconds(5)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(p.record)) << "the stale record is cleared";
}

TEST_F(LocalServiceTest, ASocketAtTheRecordedAddressHeldByAnotherProcessIsNotTrusted) {
  // This process holds the lock and is named by the record; another
  // process listens at the socket.
  const LocalServicePaths p(cache_);
  ASSERT_TRUE(std::filesystem::create_directories(p.dir));
  ::chmod(cache_.c_str(), 0700);
  ::chmod(p.dir.c_str(), 0700);
  absl::StatusOr<int> lock = OpenLockFile(p.lock);
  ASSERT_TRUE(lock.ok());
  ASSERT_EQ(::flock(*lock, LOCK_EX | LOCK_NB), 0);
  tir::v1::LocalService record;
  record.set_address("unix:" + p.sock);
  record.set_pid(::getpid());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t other = ::fork();
  if (other == 0) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, p.sock.c_str(), sizeof(a.sun_path) - 1);
    const char ok = ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 && ::listen(fd, 4) == 0 ? 'R' : 'F';
    (void)!::write(ready[1], &ok, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char got = 0;
  ASSERT_EQ(::read(ready[0], &got, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(got, 'R');
  const absl::Status s = VerifyLocalService(cache_, record);
  EXPECT_EQ(ReasonOf(s), "UNTRUSTED_SERVICE_RECORD") << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("another process holds that address"));
  testing::Stop(other, SIGKILL);
  ::unlink(p.sock.c_str());
  // The same, listening here: trusted.
  {
    testing::SilentServer silent(p.sock);
    EXPECT_TRUE(VerifyLocalService(cache_, record).ok()) << VerifyLocalService(cache_, record);
  }
  ::close(*lock);
  EXPECT_EQ(ReasonOf(VerifyLocalService(cache_, record)), "UNTRUSTED_SERVICE_RECORD") << "no lock held";
}

TEST_F(LocalServiceTest, AnUnsafeDirectoryIsRefused) {
  ASSERT_TRUE(std::filesystem::create_directories(root_ + "/elsewhere"));
  ASSERT_TRUE(std::filesystem::create_directories(cache_));
  std::filesystem::create_directory_symlink(root_ + "/elsewhere", LocalServicePaths(cache_).dir);
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(Options(), absl::Now() + absl::Seconds(30));
  EXPECT_EQ(ReasonOf(s.status()), "UNSAFE_DIRECTORY") << s.status();
  EXPECT_EQ(ReasonOf(FindLocalService(cache_, absl::Now() + absl::Seconds(5)).status()), "UNSAFE_DIRECTORY");
  EXPECT_FALSE(std::filesystem::exists(cache_ + "/store"));
  std::filesystem::remove(LocalServicePaths(cache_).dir);
  // A cache under a directory anyone may write to (not sticky): refused
  // before anything is made in it.
  const std::string shared = root_ + "/shared";
  ASSERT_TRUE(std::filesystem::create_directories(shared));
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  LocalServiceOptions o = Options();
  o.cache_dir = shared + "/cache";
  s = EnsureLocalService(o, absl::Now() + absl::Seconds(30));
  EXPECT_EQ(ReasonOf(s.status()), "UNSAFE_DIRECTORY") << s.status();
  EXPECT_FALSE(std::filesystem::exists(o.cache_dir));
}

}  // namespace
}  // namespace tir::client
