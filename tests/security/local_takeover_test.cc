// Another local user against a user's local service, cache and build
// directories: a stale service record whose loopback port the attacker
// took, a build directory planted where `tirctl emit` builds (with a
// runtime header carrying the attacker's code), links planted where tirctl
// writes bundles, a cache under the attacker's directory. Each is refused
// or ignored: no call (no token) reaches the attacker, none of its code
// runs, no file outside the victim's directories is written.
//
// The attacker is uid 65534 (nobody) where the test can act as another
// user (root outside a user namespace: chown, setuid in a child); else it
// is another process of the same user, and what it plants is open to
// everyone (mode 0777), which any local user could have written.

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/local_service.h"
#include "compiler/support/cli.h"
#include "compiler/support/private_dir.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/security/attack_fixture.h"
#include "tests/testing/process.h"
#include "tir/v1/kernel.pb.h"

namespace tir::security_testing {
namespace {

using ::testing::HasSubstr;
using tir::client::EnsureLocalService;
using tir::client::LocalServiceOptions;
using tir::client::LocalServicePaths;

constexpr uid_t kOther = 65534;  // nobody

std::string Slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

mode_t Mode(const std::string &path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// `script` run by /bin/sh: its exit status (-1 when it did not exit).
int Sh(const std::string &script) {
  const pid_t pid = Spawn({"/bin/sh", "-c", script});
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Quote(const std::string &s) { return "'" + s + "'"; }

// Whether this test can make files another user's (root outside a user
// namespace that maps no other user).
bool CanActAsAnotherUser() {
  if (::geteuid() != 0) return false;
  char probe[] = "/tmp/tir-probe.XXXXXX";
  const int fd = ::mkstemp(probe);
  if (fd < 0) return false;
  const bool ok = ::fchown(fd, kOther, kOther) == 0;
  ::close(fd);
  ::unlink(probe);
  return ok;
}

// Makes `path` and what is under it the attacker's: nobody's, or (where the
// test cannot act as another user) writable by everyone.
void HandToAttacker(const std::string &path) {
  const bool chown = CanActAsAnotherUser();
  std::vector<std::filesystem::path> all = {path};
  for (const auto &e : std::filesystem::recursive_directory_iterator(path)) all.push_back(e.path());
  for (const auto &p : all) {
    if (chown) {
      ASSERT_EQ(::lchown(p.c_str(), kOther, kOther), 0) << p;
    } else if (!std::filesystem::is_symlink(p)) {
      ASSERT_EQ(::chmod(p.c_str(), std::filesystem::is_directory(p) ? 0777 : 0666), 0) << p;
    }
  }
}

// Every entry under `dir` with its size and modification time: what shows
// a write.
std::map<std::string, std::string> Snapshot(const std::string &dir) {
  std::map<std::string, std::string> out;
  for (const auto &e : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st;
    if (::lstat(e.path().c_str(), &st) != 0) continue;
    out[e.path().string()] = absl::StrCat(st.st_mode, " ", st.st_size, " ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  }
  return out;
}

// The attacker's listener on 127.0.0.1:`port` (a child process, nobody's
// where the test can act as another user): reports each connection ("C")
// and every byte it receives on a pipe.
class Squatter {
 public:
  explicit Squatter(int port) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return;
    const bool other = CanActAsAnotherUser();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(out[0]);
      if (other) {
        (void)!::setgroups(0, nullptr);
        (void)!::setgid(kOther);
        (void)!::setuid(kOther);
      }
      const int s = ::socket(AF_INET, SOCK_STREAM, 0);
      const int one = 1;
      ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const char ready = ::bind(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 && ::listen(s, 64) == 0 ? 'R' : 'F';
      (void)!::write(out[1], &ready, 1);
      for (;;) {
        const int c = ::accept(s, nullptr, nullptr);
        if (c < 0) continue;
        (void)!::write(out[1], "C", 1);
        char buf[4096];
        for (ssize_t n; (n = ::read(c, buf, sizeof(buf))) > 0;) (void)!::write(out[1], buf, static_cast<size_t>(n));
        ::close(c);
      }
    }
    ::close(out[1]);
    fd_ = out[0];
    char ready = 0;
    bound_ = pid_ > 0 && ::read(fd_, &ready, 1) == 1 && ready == 'R';
  }
  ~Squatter() { Got(); }
  bool bound() const { return bound_; }
  // Ends it: what it got (empty: no connection at all).
  std::string Got() {
    if (pid_ > 0) Stop(pid_, SIGKILL);
    pid_ = -1;
    std::string got;
    if (fd_ >= 0) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd_, buf, sizeof(buf))) > 0;) got.append(buf, static_cast<size_t>(n));
      ::close(fd_);
      fd_ = -1;
    }
    got_ += got;
    return got_;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool bound_ = false;
  std::string got_;
};

class LocalTakeover : public Security {
 protected:
  void SetUp() override {
    // The services started here find their runner through the environment.
    setenv("TIR_WORKER_RUNNER", Runfile("worker/runner/tir-worker-runner").c_str(), 1);
    char dir[] = "/tmp/tir-takeover.XXXXXX";  // short: a Unix socket's path must fit
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override {
    for (const std::string &cache : caches_) {
      absl::StatusOr<bool> stopped = tir::client::StopLocalService(cache, absl::Now() + absl::Seconds(30));
      EXPECT_TRUE(stopped.ok()) << stopped.status();
    }
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    Security::TearDown();
  }
  static std::string Tirctl() { return Runfile("client/tirctl"); }
  LocalServiceOptions Service(const std::string &cache) {
    caches_.push_back(cache);
    LocalServiceOptions o;
    o.cache_dir = cache;
    o.backend = "host";
    o.idle_timeout = absl::Minutes(2);  // a service a failed test leaves does not stay long
    o.binary = Tirctl();
    return o;
  }
  // Waits (bounded) until nobody holds the service's lock.
  static bool LockFreeWithin(const std::string &cache, absl::Duration d) {
    absl::StatusOr<int> fd = tir::client::OpenLockFile(LocalServicePaths(cache).lock);
    if (!fd.ok()) return false;
    const absl::Time end = absl::Now() + d;
    bool free = false;
    while (!(free = ::flock(*fd, LOCK_EX | LOCK_NB) == 0) && absl::Now() < end) absl::SleepFor(absl::Milliseconds(20));
    ::close(*fd);
    return free;
  }
  std::string root_;
  std::vector<std::string> caches_;
};

// Item 5: the service (on TCP: its cache path is too long for a Unix
// socket) is killed, its record stays, and another user binds its port.
TEST_F(LocalTakeover, AStaleRecordsPortTakenByAnotherUserGetsNoCallNorTokenAndAFreshServiceStarts) {
  const std::string cache = root_ + "/" + std::string(60, 'd') + "/" + std::string(60, 'e') + "/cache";
  ASSERT_GT(LocalServicePaths(cache).sock.size(), tir::client::kMaxSocketPath);
  const LocalServiceOptions o = Service(cache);
  absl::StatusOr<tir::v1::LocalService> first = EnsureLocalService(o, absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(absl::StartsWith(first->address(), "127.0.0.1:")) << first->address();
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(first->address().substr(first->address().find(':') + 1), &port));
  ASSERT_EQ(::kill(static_cast<pid_t>(first->pid()), SIGKILL), 0);
  ASSERT_TRUE(LockFreeWithin(cache, absl::Seconds(30)));
  ASSERT_TRUE(std::filesystem::exists(LocalServicePaths(cache).record)) << "an unclean exit leaves the record";
  Squatter squatter(port);
  ASSERT_TRUE(squatter.bound()) << "the attacker binds the dead service's port " << port;

  const absl::Status trust = tir::client::VerifyLocalService(cache, *first);
  EXPECT_EQ(ReasonOf(trust), "UNTRUSTED_SERVICE_RECORD") << trust;
  // The victim's tirctl (through the recorded address, before this fix).
  const std::string out = root_ + "/workers.out", err = root_ + "/workers.err";
  EXPECT_EQ(Sh(absl::StrCat("exec ", Quote(Tirctl()), " workers --backend=host --idle-timeout=120 --timeout=60 --cache-dir=",
                            Quote(cache), " >", Quote(out), " 2>", Quote(err))),
            0)
      << Slurp(err);
  // And the library (C++ clients; Python asks tirctl to start one).
  absl::StatusOr<tir::v1::LocalService> fresh = EnsureLocalService(o, absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_NE(fresh->pid(), first->pid()) << "a fresh service was started";
  EXPECT_NE(fresh->address(), first->address()) << "on a port of its own";
  EXPECT_TRUE(tir::client::VerifyLocalService(cache, *fresh).ok());
  const std::string got = squatter.Got();
  EXPECT_TRUE(got.empty()) << "the attacker's listener got a connection (and with it the client token): " << got.size()
                           << " bytes";
}

// Item 6: `tirctl emit FILE --arch host` in a directory everyone may write
// to (as /tmp), where another user planted ./tir-<graph>/ with a completed
// header directory whose runtime header runs the attacker's code when a
// kernel built with it loads (--verify loads it).
TEST_F(LocalTakeover, EmitInASharedDirectoryUsesNoBuildDirectoryAnotherUserPlanted) {
  const std::string mine = root_ + "/mine", cache = mine + "/cache", graph = mine + "/planted.mlir";
  ASSERT_TRUE(MakeTrustedDirectory(mine).ok());
  { std::ofstream(graph) << Graph("planted", 8); }
  const std::string marker = root_ + "/planted-code-ran";
  // The attacker's tree: what emit makes, its header directory complete
  // ("ready"), the runtime header given a constructor of the attacker's, no
  // precompiled header or kernel objects left, so a kernel built there
  // compiles against the planted header.
  const std::string scratch = root_ + "/scratch/tir-planted";
  ASSERT_EQ(Sh(absl::StrCat("exec ", Quote(Tirctl()), " emit ", Quote(graph), " --arch host --cache-dir=", Quote(cache),
                            " -o ", Quote(scratch), " >/dev/null 2>&1")),
            0);
  std::string headers;
  for (const auto &e : std::filesystem::directory_iterator(scratch + "/.build")) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, "headers-")) {
      headers = e.path().string();
    } else if (e.is_directory()) {
      std::filesystem::remove_all(e.path());
    }
  }
  ASSERT_FALSE(headers.empty());
  ASSERT_TRUE(std::filesystem::exists(headers + "/ready"));
  for (const auto &e : std::filesystem::directory_iterator(headers)) {
    if (e.path().extension() == ".gch") std::filesystem::remove(e.path());
  }
  {
    std::ofstream(headers + "/tir_runtime.h", std::ios::app)
        << "\n#include <cstdio>\n__attribute__((constructor)) static void tir_planted() {\n  if (FILE *f = std::fopen(\""
        << marker << "\", \"w\")) std::fclose(f);\n}\n";
  }
  std::filesystem::remove(scratch + "/planted_k0.host.so");
  const std::string shared = root_ + "/shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // as /tmp
  std::filesystem::rename(scratch, shared + "/tir-planted");
  HandToAttacker(shared + "/tir-planted");
  const std::map<std::string, std::string> before = Snapshot(shared + "/tir-planted");

  const std::string emit = absl::StrCat("cd ", Quote(shared), " && exec ", Quote(Tirctl()), " emit ", Quote(graph),
                                        " --arch host --verify --cache-dir=", Quote(cache), " >", Quote(root_ + "/emit.out"),
                                        " 2>", Quote(root_ + "/emit.err"));
  EXPECT_EQ(Sh(emit), 1);
  EXPECT_THAT(Slurp(root_ + "/emit.err"), HasSubstr("UNSAFE_DIRECTORY"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the planted header's code ran as the victim";
  EXPECT_EQ(Snapshot(shared + "/tir-planted"), before) << "the victim wrote into the planted directory";

  // Without the planted tree, the victim's own directory: made 0700, built.
  std::filesystem::remove_all(shared + "/tir-planted");
  EXPECT_EQ(Sh(emit), 0) << Slurp(root_ + "/emit.err");
  EXPECT_TRUE(std::filesystem::exists(shared + "/tir-planted/planted_k0.host.so"));
  EXPECT_EQ(Mode(shared + "/tir-planted"), 0700u);
  EXPECT_EQ(Mode(shared + "/tir-planted/.build"), 0700u);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// Item 6: links planted where tirctl writes a bundle (bundles/<key>.pb in
// the cache, and an -o path) are replaced, never written through; a cache
// under another user's directory is refused before anything is written.
TEST_F(LocalTakeover, ALinkAtABundlesPathIsReplacedAndACacheUnderAnotherUsersDirectoryRefused) {
  const std::string text = Graph("linked", 16);
  tir::v1::Operation op;
  const grpc::Status submitted = Compile(text, &op);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  if (!op.done()) op = PlayHonest(op.name());
  ASSERT_TRUE(op.done() && op.has_response()) << op.DebugString();
  const std::string key = op.response().key();
  ASSERT_EQ(key.size(), 64u);
  const std::string graph = root_ + "/linked.mlir";
  { std::ofstream(graph) << text; }
  const std::string victim = root_ + "/victim.txt";
  { std::ofstream(victim) << "precious\n"; }
  const auto compile = [&](const std::string &cache, const std::string &extra) {
    return Sh(absl::StrCat("exec ", Quote(Tirctl()), " compile ", Quote(graph), " --server=127.0.0.1:", port_,
                           " --token-file=", Quote(*dir_ + ".client"), " --arch host --timeout=60 --cache-dir=",
                           Quote(cache), extra, " >", Quote(root_ + "/compile.out"), " 2>", Quote(root_ + "/compile.err")));
  };

  // The user's own cache, a link where the bundle goes.
  const std::string cache = root_ + "/cache", bundle = cache + "/bundles/" + key + ".pb";
  ASSERT_TRUE(MakeTrustedDirectory(cache + "/bundles").ok());
  std::filesystem::create_symlink(victim, bundle);
  EXPECT_EQ(compile(cache, ""), 0) << Slurp(root_ + "/compile.err");
  EXPECT_TRUE(Slurp(victim) == "precious\n") << "the bundle was written through the link";
  EXPECT_FALSE(std::filesystem::is_symlink(bundle));
  tir::v1::KernelBundle written;
  EXPECT_TRUE(written.ParseFromString(Slurp(bundle)) && written.key() == key);
  // An -o path that is a link.
  const std::string out = root_ + "/out.pb";
  std::filesystem::create_symlink(victim, out);
  EXPECT_EQ(compile(cache, " -o " + Quote(out)), 0) << Slurp(root_ + "/compile.err");
  EXPECT_TRUE(Slurp(victim) == "precious\n") << "written through the link";
  EXPECT_FALSE(std::filesystem::is_symlink(out));

  // A cache under a directory another user made in a shared one (as
  // /tmp/.cache, where a cache without HOME once went), with a link planted.
  const std::string shared = root_ + "/shared", theirs = shared + "/.cache";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  std::filesystem::create_directories(theirs + "/tir/bundles");
  std::filesystem::create_symlink(victim, theirs + "/tir/bundles/" + key + ".pb");
  HandToAttacker(theirs);
  EXPECT_EQ(compile(theirs + "/tir", ""), 1);
  EXPECT_THAT(Slurp(root_ + "/compile.err"), HasSubstr("UNSAFE_DIRECTORY"));
  EXPECT_TRUE(Slurp(victim) == "precious\n") << "written through the link";
  // Nor does a local service start there.
  LocalServiceOptions there;
  there.cache_dir = theirs + "/tir";
  there.backend = "host";
  there.binary = Tirctl();
  absl::StatusOr<tir::v1::LocalService> s = EnsureLocalService(there, absl::Now() + absl::Seconds(30));
  EXPECT_EQ(ReasonOf(s.status()), "UNSAFE_DIRECTORY") << s.status();
  EXPECT_FALSE(std::filesystem::exists(theirs + "/tir/service"));
}

// Item 6: without HOME and XDG_CACHE_HOME the cache is the passwd entry's
// home's, never a directory under /tmp.
TEST_F(LocalTakeover, WithoutHomeOrXdgTheCacheIsNeverUnderTmp) {
  std::map<std::string, std::optional<std::string>> saved;
  for (const char *v : {"HOME", "XDG_CACHE_HOME"}) {
    const char *was = std::getenv(v);
    saved[v] = was ? std::optional<std::string>(was) : std::nullopt;
    unsetenv(v);
  }
  const std::string dir = tir::CacheDir();
  const struct passwd *pw = ::getpwuid(::geteuid());
  if (pw != nullptr && pw->pw_dir != nullptr && pw->pw_dir[0] == '/') {
    EXPECT_EQ(dir, std::string(pw->pw_dir) + "/.cache/tir");
  } else {
    EXPECT_EQ(ReasonOf(tir::UserCacheDir().status()), "NO_CACHE_DIRECTORY");
  }
  EXPECT_FALSE(absl::StartsWith(dir, "/tmp")) << dir;
  for (const auto &[name, value] : saved) {
    if (value) setenv(name.c_str(), value->c_str(), 1);
  }
}

}  // namespace
}  // namespace tir::security_testing
