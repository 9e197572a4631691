// Damaged stores through the real tir-coordinator: a start refuses one and
// names the damage and the repair, deleting nothing; `--verify-store` reports
// it; `--repair-store` says what was lost; the repaired store is served.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/store/rocksdb_kernel_store.h"
#include "tests/testing/net.h"
#include "tests/testing/process.h"
#include "tir/v1/compiler_service.grpc.pb.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using tir::testing::Runfile;
using tir::testing::Spawn;
using tir::testing::Stop;
using tir::testing::TempDir;

struct Exit {
  int code = -1;  // -1: still running at the limit (killed)
  std::string output;
};

// Runs tir-coordinator with `args` to its exit, at most `limit`; its stdout
// and stderr together.
Exit Coordinator(const std::vector<std::string>& args, absl::Duration limit = absl::Seconds(90)) {
  static int runs = 0;
  const std::string out = absl::StrCat(TempDir(), "/coordinator-", ++runs, ".out");
  std::string command = "exec '" + Runfile("server/tir-coordinator") + "'";
  for (const auto& a : args) absl::StrAppend(&command, " '", a, "'");
  absl::StrAppend(&command, " >'", out, "' 2>&1");
  const pid_t pid = Spawn({"/bin/sh", "-c", command});
  Exit exit;
  if (pid <= 0) return exit;
  int status = 0;
  bool done = false;
  for (const absl::Time end = absl::Now() + limit; absl::Now() < end;) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      done = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (!done) {
    Stop(pid, SIGKILL);
  } else if (WIFEXITED(status)) {
    exit.code = WEXITSTATUS(status);
  }
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  exit.output = text.str();
  return exit;
}

std::string Noise(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (auto& c : s) {
    seed = seed * 1103515245u + 12345u;
    c = static_cast<char>(seed >> 16);
  }
  return s;
}

std::string Key(int i) { return absl::StrCat("damage", i); }

// `sessions` of bundles, each session a coordinator's run: its bundles go to
// the log, and the next open flushes them to a table file of their own.
void Ran(const std::string& dir, const std::vector<int>& sessions) {
  int next = 0;
  for (int count : sessions) {
    auto store = tir::store::RocksDbKernelStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < count; ++i, ++next) {
      tir::v1::KernelBundle b;
      b.set_key(Key(next));
      b.set_name("kernels/" + Key(next));
      b.set_arch("host");
      auto* k = b.add_kernels();
      k->set_entry_symbol("tir_kernel_0");
      k->set_binary(Noise(3000, static_cast<unsigned>(next)));
      ASSERT_TRUE((*store)->PutKernel(b).ok());
    }
  }
}

std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// A coordinator serving `dir`; the bundles of `keys` it serves.
int ServedOf(const std::string& dir, int total) {
  const int port = tir::testing::FreePort();
  const pid_t pid = Spawn({Runfile("server/tir-coordinator"), "--db=" + dir, absl::StrCat("--listen=127.0.0.1:", port),
                           "--metrics-port=0", "--dashboard-port=0"});
  auto stub = tir::v1::CompilerService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  int served = -1;
  for (const absl::Time end = absl::Now() + absl::Seconds(60); absl::Now() < end && served < 0;) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    tir::v1::ListWorkersResponse ignored;
    if (!stub->ListWorkers(&ctx, {}, &ignored).ok()) {
      absl::SleepFor(absl::Milliseconds(50));
      continue;
    }
    served = 0;
    for (int i = 0; i < total; ++i) {
      grpc::ClientContext get;
      get.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      tir::v1::GetKernelRequest req;
      req.set_name("kernels/" + Key(i));
      req.set_metadata_only(true);
      tir::v1::KernelBundle bundle;
      const grpc::Status s = stub->GetKernel(&get, req, &bundle);
      if (s.ok()) {
        ++served;
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << Key(i) << ": " << s.error_message();
      }
    }
  }
  EXPECT_TRUE(tir::testing::Alive(pid)) << "the coordinator exited";
  Stop(pid);
  return served;
}

TEST(StoreDamage, ALostLogIsRefusedAtStartReportedRepairedAndWhatSurvivedIsServed) {
  const std::string dir = TempDir() + "/lost-log";
  fs::remove_all(dir);
  Ran(dir, {3, 5});  // three flushed to a table file (at the second open), five only in the live log
  std::string log;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log" && fs::file_size(e.path()) > 0) log = e.path().string();
  }
  ASSERT_FALSE(log.empty());
  fs::remove(log);
  const std::set<std::string> files = Names(dir);

  const Exit start = Coordinator({"--db=" + dir, absl::StrCat("--listen=127.0.0.1:", tir::testing::FreePort()),
                                  "--metrics-port=0", "--dashboard-port=0"});
  EXPECT_EQ(start.code, 1) << "a store that lost its log must not be served as if whole: " << start.output;
  EXPECT_THAT(start.output, HasSubstr("the write-ahead log is missing"));
  EXPECT_THAT(start.output, HasSubstr("--repair-store"));
  EXPECT_THAT(start.output, Not(HasSubstr("serving on port")));
  EXPECT_EQ(Names(dir), files) << "a refused start changes no file";

  const Exit verify = Coordinator({"--verify-store", "--db=" + dir});
  EXPECT_EQ(verify.code, 1) << verify.output;
  EXPECT_THAT(verify.output, HasSubstr("is damaged"));
  EXPECT_THAT(verify.output, HasSubstr(".log"));

  const Exit repair = Coordinator({"--repair-store", "--db=" + dir});
  EXPECT_EQ(repair.code, 0) << repair.output;
  EXPECT_THAT(repair.output, HasSubstr("after the repair: 3 bundles"));
  EXPECT_THAT(repair.output, HasSubstr("lost: what only the missing write-ahead log held"));
  EXPECT_THAT(repair.output, HasSubstr(".lost+found/"));

  const Exit sound = Coordinator({"--verify-store", "--db=" + dir});
  EXPECT_EQ(sound.code, 0) << sound.output;
  EXPECT_THAT(sound.output, HasSubstr("is sound"));
  EXPECT_EQ(ServedOf(dir, 8), 3);
}

TEST(StoreDamage, AFlippedTableBlockIsReportedAndRepairNamesTheCountLost) {
  const std::string dir = TempDir() + "/flipped-block";
  fs::remove_all(dir);
  Ran(dir, {5, 5, 5, 0});  // three table files of five bundles
  std::vector<std::string> tables;
  for (const auto& e : fs::directory_iterator(dir)) {
    // The bundles' (the schema version's is a small one).
    if (e.path().extension() == ".sst" && fs::file_size(e.path()) > 5 * 3000) tables.push_back(e.path().string());
  }
  std::sort(tables.begin(), tables.end());
  ASSERT_EQ(tables.size(), 3u);
  {
    std::fstream f(tables[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(tables[1]) / 4));
    f.write("\xde\xad\xbe\xef\xde\xad\xbe\xef", 8);
  }
  const std::string victim = fs::path(tables[1]).filename().string();

  const Exit verify = Coordinator({"--verify-store", "--db=" + dir});
  EXPECT_EQ(verify.code, 1) << verify.output;
  EXPECT_THAT(verify.output, HasSubstr(victim));
  EXPECT_THAT(verify.output, HasSubstr("checksum mismatch"));

  const Exit repair = Coordinator({"--repair-store", "--db=" + dir});
  EXPECT_EQ(repair.code, 0) << repair.output;
  EXPECT_THAT(repair.output, Not(HasSubstr("nothing to repair")));
  EXPECT_THAT(repair.output, Not(HasSubstr("is sound")));
  EXPECT_THAT(repair.output, HasSubstr(victim));

  const int served = ServedOf(dir, 15);
  EXPECT_GE(served, 10) << "the other table files are whole";
  EXPECT_LT(served, 15);
  EXPECT_THAT(repair.output, HasSubstr(absl::StrCat("after the repair: ", served, " bundles")));
  EXPECT_THAT(repair.output, HasSubstr(absl::StrCat("lost: ", 15 - served, " bundles")));
}

}  // namespace
