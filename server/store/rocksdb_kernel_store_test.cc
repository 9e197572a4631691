#include "server/store/rocksdb_kernel_store.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler/support/status.h"

namespace tir::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::filesystem::path p = std::filesystem::path(tmp ? tmp : "/tmp") / name;
  std::filesystem::remove_all(p);
  return p.string();
}

tir::v1::KernelBundle Bundle(const std::string& key, const std::string& arch) {
  tir::v1::KernelBundle b;
  b.set_key(key);
  b.set_name("kernels/" + key);
  b.set_arch(arch);
  auto* k = b.add_kernels();
  k->set_entry_symbol("tir_kernel_0");
  k->set_binary(std::string("\x7f" "ELF\0payload", 12));
  k->set_source("extern \"C\" __global__ void tir_kernel_0() {}");
  return b;
}

TEST(RocksDbKernelStore, PutGetSurvivesReopen) {
  const std::string dir = FreshDir("reopen");
  {
    auto store = RocksDbKernelStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutKernel(Bundle("k1", "sm_90a")).ok());
    ASSERT_TRUE((*store)->Put(Family::kTrials, "k1/0", "trial", /*sync=*/false).ok());
  }
  auto store = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto got = (*store)->GetKernel("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->arch(), "sm_90a");
  EXPECT_EQ(got->kernels(0).binary(), std::string("\x7f" "ELF\0payload", 12));
  EXPECT_EQ(*(*store)->Get(Family::kTrials, "k1/0"), "trial");
}

TEST(RocksDbKernelStore, MissingKernelIsNotFound) {
  auto store = RocksDbKernelStore::Open(FreshDir("missing"));
  ASSERT_TRUE(store.ok());
  auto got = (*store)->GetKernel("nope");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("kernels/nope"));
  EXPECT_EQ(*(*store)->DeleteKernel("nope"), false);
}

TEST(RocksDbKernelStore, DeleteRemoves) {
  auto store = RocksDbKernelStore::Open(FreshDir("delete"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->PutKernel(Bundle("k", "sm_80")).ok());
  EXPECT_EQ(*(*store)->DeleteKernel("k"), true);
  EXPECT_EQ((*store)->GetKernel("k").status().code(), absl::StatusCode::kNotFound);
}

TEST(RocksDbKernelStore, ListPagesInKeyOrderFiltersByArchAndStripsBinaries) {
  auto store = RocksDbKernelStore::Open(FreshDir("list"));
  ASSERT_TRUE(store.ok());
  for (const char* key : {"e", "a", "d", "b", "c"}) {
    ASSERT_TRUE((*store)->PutKernel(Bundle(key, key[0] == 'c' ? "sm_80" : "sm_90a")).ok());
  }
  std::vector<std::string> keys;
  std::string token;
  int pages = 0;
  do {
    auto page = (*store)->ListKernels(2, token, "sm_90a");
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& b : page->kernels) {
      keys.push_back(b.key());
      EXPECT_TRUE(b.kernels(0).binary().empty());
      EXPECT_EQ(b.kernels(0).entry_symbol(), "tir_kernel_0");
    }
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_THAT(keys, ElementsAre("a", "b", "d", "e"));
  EXPECT_EQ(pages, 2);
  auto stats = (*store)->KernelStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->first, 5u);
}

TEST(RocksDbKernelStore, ScanVisitsPrefixOnly) {
  auto store = RocksDbKernelStore::Open(FreshDir("scan"));
  ASSERT_TRUE(store.ok());
  for (const char* key : {"job1/a", "job1/b", "job2/a"}) {
    ASSERT_TRUE((*store)->Put(Family::kJobs, key, key, true).ok());
  }
  std::vector<std::string> seen;
  ASSERT_TRUE((*store)
                  ->Scan(Family::kJobs, "job1/",
                         [&](absl::string_view k, absl::string_view) {
                           seen.emplace_back(k);
                           return true;
                         })
                  .ok());
  EXPECT_THAT(seen, ElementsAre("job1/a", "job1/b"));
}

TEST(RocksDbKernelStore, SecondOpenOfSameDirectoryIsRefusedClearly) {
  const std::string dir = FreshDir("locked");
  auto first = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(first.ok());
  auto second = RocksDbKernelStore::Open(dir);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(ReasonOf(second.status()), "STORE_LOCKED");
}

TEST(RocksDbKernelStore, ReadOnlyOpensBesideTheWriterAndSeesWhatItWrote) {
  const std::string dir = FreshDir("beside");
  auto writer = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->PutKernel(Bundle("k1", "host")).ok());
  auto reader = RocksDbKernelStore::OpenReadOnly(dir);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto got = (*reader)->GetKernel("k1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->arch(), "host");
  auto stats = (*reader)->KernelStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->first, 1u);
  EXPECT_FALSE((*reader)->PutKernel(Bundle("k2", "host")).ok()) << "a read-only view writes nothing";
  EXPECT_FALSE(RocksDbKernelStore::OpenReadOnly(FreshDir("nothing-here")).ok());
}

}  // namespace
}  // namespace tir::store

namespace tir::store {
namespace {

// A store as a crash leaves it: its bundles only in the (synced) log.
std::string CrashCopy(const std::string& name, int bundles) {
  const std::string live = FreshDir(name + "_live"), copy = FreshDir(name);
  auto store = RocksDbKernelStore::Open(live);
  EXPECT_TRUE(store.ok()) << store.status();
  for (int i = 0; i < bundles; ++i) EXPECT_TRUE((*store)->PutKernel(Bundle("k" + std::to_string(i), "sm_90a")).ok());
  std::filesystem::copy(live, copy, std::filesystem::copy_options::recursive);
  return copy;
}

std::string LogOf(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log" && e.file_size() > 0) return e.path().string();
  }
  return "";
}

TEST(RocksDbKernelStoreDurability, AFlippedLogIsReportedNotSilentlyDroppedAndRepairSaysWhatWasKept) {
  const std::string dir = CrashCopy("flipped", 28);
  const std::string log = LogOf(dir);
  ASSERT_FALSE(log.empty());
  {
    std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(log) / 2));
    f.write("\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef\xde\xad\xbe\xef", 16);
  }
  auto refused = RocksDbKernelStore::Open(dir);
  ASSERT_FALSE(refused.ok()) << "a damaged log must not open as if whole";
  EXPECT_EQ(ReasonOf(refused.status()), "STORE_CORRUPT");
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--repair-store"));
  auto report = RocksDbKernelStore::Repair(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(*report, HasSubstr("bundles readable"));
  auto repaired = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  auto page = (*repaired)->ListKernels(1000, "", "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_LT(page->kernels.size(), 28u);
  EXPECT_THAT(*report, HasSubstr(std::to_string(page->kernels.size()) + " bundles readable"));
}

TEST(RocksDbKernelStoreDurability, ATruncatedLogIsReported) {
  const std::string dir = CrashCopy("truncated", 28);
  const std::string log = LogOf(dir);
  ASSERT_FALSE(log.empty());
  std::filesystem::resize_file(log, std::filesystem::file_size(log) - 7);
  auto refused = RocksDbKernelStore::Open(dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ReasonOf(refused.status()), "STORE_CORRUPT");
}

TEST(RocksDbKernelStoreDurability, ASoundStoreIsLeftAlone) {
  const std::string dir = CrashCopy("sound", 3);
  auto report = RocksDbKernelStore::Repair(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(*report, HasSubstr("sound"));
  auto store = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->ListKernels(1000, "", "")->kernels.size(), 3u);
}

}  // namespace
}  // namespace tir::store
