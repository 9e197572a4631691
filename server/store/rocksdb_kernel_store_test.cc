#include "server/store/rocksdb_kernel_store.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler/support/status.h"
#include "rocksdb/db.h"
#include "server/store/rocksdb_store_check.h"

namespace tir::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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
  EXPECT_THAT(*report, HasSubstr("after the repair: "));
  EXPECT_THAT(*report, Not(HasSubstr("sound")));
  auto repaired = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  auto page = (*repaired)->ListKernels(1000, "", "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_LT(page->kernels.size(), 28u);
  EXPECT_THAT(*report, HasSubstr("after the repair: " + std::to_string(page->kernels.size()) + " bundles"));
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

// The damage an outside attack found a start would serve over, dropping
// bundles without a word: a truncated MANIFEST, the live log deleted, a
// flipped block in a table file.
namespace tir::store {
namespace {

namespace fs = std::filesystem;

// Incompressible, so that a table file has several blocks.
std::string Noise(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (auto& c : s) {
    seed = seed * 1103515245u + 12345u;
    c = static_cast<char>(seed >> 16);
  }
  return s;
}

tir::v1::KernelBundle BigBundle(int i) {
  tir::v1::KernelBundle b = Bundle("k" + std::to_string(100 + i), "sm_90a");
  b.mutable_kernels(0)->set_binary(Noise(3000, static_cast<unsigned>(i)));
  return b;
}

int Files(const std::string& dir, const std::string& ext) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ext;
  return n;
}

std::vector<std::string> FilesOf(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ext) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t Served(const std::string& dir) {
  auto store = RocksDbKernelStore::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return 0;
  auto page = (*store)->ListKernels(1000, "", "");
  EXPECT_TRUE(page.ok()) << page.status();
  return page.ok() ? page->kernels.size() : 0;
}

// A store as a coordinator that ran a while leaves it: `batches` of
// `per_batch` bundles, each batch flushed to its own table file by the same
// RocksDB (one MANIFEST, an edit per flush), as RocksDbKernelStore keys them.
void Ran(const std::string& dir, int batches, int per_batch) {
  ASSERT_TRUE(RocksDbKernelStore::Open(dir).ok());  // the schema version
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(internal::StoreOptions(), dir, internal::StoreFamilies(), &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteOptions w;
  w.sync = true;
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < per_batch; ++i) {
      ASSERT_TRUE(db->Put(w, handles[1], BigBundle(b * per_batch + i).key(),
                          BigBundle(b * per_batch + i).SerializeAsString())
                      .ok());
    }
    ASSERT_TRUE(db->Put(w, handles[3], "job/j" + std::to_string(b), "job").ok());
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions(), {handles[1], handles[3]}).ok());
  }
  for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
}

std::string ManifestOf(const std::string& dir) {
  std::string name;
  std::ifstream(dir + "/CURRENT") >> name;
  return dir + "/" + name;
}

TEST(RocksDbKernelStoreDamage, ATruncatedManifestIsRefusedAtEveryCutNeverServedShortAndRepairKeepsEveryBundle) {
  const std::string built = FreshDir("manifest_built");
  Ran(built, 6, 3);
  ASSERT_EQ(Served(built), 18u);
  const uint64_t size = fs::file_size(ManifestOf(built));
  int refused = 0;
  for (uint64_t cut = size / 10; cut < size; cut += std::max<uint64_t>(1, size / 23)) {
    SCOPED_TRACE("MANIFEST cut to " + std::to_string(cut) + " of " + std::to_string(size) + " bytes");
    const std::string dir = FreshDir("manifest_cut");
    fs::copy(built, dir, fs::copy_options::recursive);
    fs::resize_file(ManifestOf(dir), cut);
    const int tables = Files(dir, ".sst");
    auto store = RocksDbKernelStore::Open(dir);
    if (store.ok()) {
      // Only a cut that loses nothing may open.
      EXPECT_EQ((*store)->ListKernels(1000, "", "")->kernels.size(), 18u);
      continue;
    }
    ++refused;
    EXPECT_EQ(ReasonOf(store.status()), "STORE_CORRUPT") << store.status();
    EXPECT_THAT(std::string(store.status().message()), HasSubstr("--repair-store"));
    EXPECT_EQ(Files(dir, ".sst"), tables) << "a refused start deletes no table file";
    auto check = RocksDbKernelStore::Verify(dir);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_FALSE(check->sound) << check->report;
    EXPECT_THAT(check->report, HasSubstr("damaged"));
    auto report = RocksDbKernelStore::Repair(dir);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_THAT(*report, HasSubstr("after the repair: 18 bundles, 6 jobs"));
    EXPECT_THAT(*report, HasSubstr("lost: nothing"));
    EXPECT_EQ(Served(dir), 18u) << *report;
  }
  EXPECT_GT(refused, 10);
}

// An ordinary crash: a compaction recorded in the MANIFEST, the process
// killed before its input files were deleted. The inputs hold old values
// and keys deleted since; they are no loss, and the start opens.
TEST(RocksDbKernelStoreDamage, ACompactionsLeftoverInputsAreNoLoss) {
  const std::string dir = FreshDir("compaction_leftover");
  Ran(dir, 3, 3);
  const std::string aside = FreshDir("compaction_inputs");
  fs::create_directories(aside);
  for (const std::string& f : FilesOf(dir, ".sst")) fs::copy_file(f, aside + "/" + fs::path(f).filename().string());
  {
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(internal::StoreOptions(), dir, internal::StoreFamilies(), &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions w;
    w.sync = true;
    // Deleted and overwritten since the inputs were written.
    ASSERT_TRUE(db->Delete(w, handles[1], BigBundle(0).key()).ok());
    ASSERT_TRUE(db->Put(w, handles[1], BigBundle(1).key(), BigBundle(101).SerializeAsString()).ok());
    ASSERT_TRUE(db->Delete(w, handles[3], "job/j0").ok());
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions(), {handles[1], handles[3]}).ok());
    rocksdb::CompactRangeOptions all;
    all.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    for (int f : {1, 3}) ASSERT_TRUE(db->CompactRange(all, handles[f], nullptr, nullptr).ok());
    for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  // The inputs put back, as a crash before their deletion leaves them.
  for (const auto& e : fs::directory_iterator(aside)) {
    const fs::path to = fs::path(dir) / e.path().filename();
    if (!fs::exists(to)) fs::copy_file(e.path(), to);
  }
  auto check = RocksDbKernelStore::Verify(dir);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->sound) << check->report;
  EXPECT_THAT(check->report, HasSubstr("the input of a compaction a crash left behind"));
  EXPECT_EQ(Served(dir), 8u) << "nine bundles, one deleted";
}

TEST(RocksDbKernelStoreDamage, HalfAManifestNamesWhatItNoLongerLists) {
  const std::string dir = FreshDir("manifest_half");
  Ran(dir, 6, 3);
  // At a record's end the MANIFEST reads whole: only the files it lists
  // against the directory's tell that records are missing.
  const std::string manifest = ManifestOf(dir);
  const uint64_t size = fs::file_size(manifest);
  std::string verdict;
  for (uint64_t cut = size / 2; cut < size && verdict.empty(); ++cut) {
    const std::string copy = FreshDir("manifest_half_copy");
    fs::copy(dir, copy, fs::copy_options::recursive);
    fs::resize_file(ManifestOf(copy), cut);
    auto check = RocksDbKernelStore::Verify(copy);
    ASSERT_TRUE(check.ok()) << check.status();
    if (check->report.find("is not in MANIFEST") != std::string::npos) verdict = check->report;
  }
  ASSERT_FALSE(verdict.empty()) << "no cut after the half left a table file unlisted";
  EXPECT_THAT(verdict, HasSubstr(".sst (kernels) is not in MANIFEST-"));
  EXPECT_THAT(verdict, HasSubstr("a start would delete it"));
}

TEST(RocksDbKernelStoreDamage, ADeletedLiveLogIsRefusedAndRepairNamesItAndServesWhatWasFlushed) {
  const std::string dir = FreshDir("wal_deleted");
  {
    auto store = RocksDbKernelStore::Open(dir);
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*store)->PutKernel(BigBundle(i)).ok());
  }
  {
    // Opening flushed those three to a table file; these five are only in
    // the log.
    auto store = RocksDbKernelStore::Open(dir);
    ASSERT_TRUE(store.ok());
    for (int i = 3; i < 8; ++i) ASSERT_TRUE((*store)->PutKernel(BigBundle(i)).ok());
  }
  std::string log;
  for (const auto& f : FilesOf(dir, ".log")) {
    if (fs::file_size(f) > 0) log = f;
  }
  ASSERT_FALSE(log.empty());
  fs::remove(log);
  const int tables = Files(dir, ".sst");

  auto refused = RocksDbKernelStore::Open(dir);
  ASSERT_FALSE(refused.ok()) << "a store that lost its log must not serve what is left as if whole";
  EXPECT_EQ(ReasonOf(refused.status()), "STORE_CORRUPT");
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("write-ahead log"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("is missing"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--repair-store"));
  EXPECT_EQ(Files(dir, ".sst"), tables);

  auto check = RocksDbKernelStore::Verify(dir);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_FALSE(check->sound);
  EXPECT_THAT(check->report, HasSubstr(".log"));
  EXPECT_THAT(check->report, HasSubstr("3 bundles"));

  auto report = RocksDbKernelStore::Repair(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(*report, HasSubstr("lost: what only the missing write-ahead log held"));
  EXPECT_THAT(*report, HasSubstr("after the repair: 3 bundles"));
  EXPECT_EQ(Served(dir), 3u);
  auto again = RocksDbKernelStore::Verify(dir);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->sound) << again->report;
}

TEST(RocksDbKernelStoreDamage, AFlippedTableBlockIsFoundRepairedAndTheLossCounted) {
  const std::string dir = FreshDir("sst_flipped");
  for (int session = 0; session < 4; ++session) {
    // Each open flushes the previous session's five bundles to a table file.
    auto store = RocksDbKernelStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; session < 3 && i < 5; ++i) ASSERT_TRUE((*store)->PutKernel(BigBundle(session * 5 + i)).ok());
  }
  const std::vector<std::string> tables = FilesOf(dir, ".sst");
  ASSERT_GE(tables.size(), 3u);
  const std::string victim = tables[1];
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(victim) / 4));
    f.write("\xde\xad\xbe\xef\xde\xad\xbe\xef", 8);
  }
  const std::string victim_name = fs::path(victim).filename().string();

  auto check = RocksDbKernelStore::Verify(dir);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_FALSE(check->sound);
  EXPECT_THAT(check->report, HasSubstr(victim_name));
  EXPECT_THAT(check->report, HasSubstr("checksum"));

  auto report = RocksDbKernelStore::Repair(dir);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(*report, Not(HasSubstr("nothing to repair")));
  EXPECT_THAT(*report, HasSubstr(victim_name));
  const size_t served = Served(dir);
  EXPECT_LT(served, 15u);
  EXPECT_GT(served, 10u) << "the readable records of the damaged file are put back";
  EXPECT_THAT(*report, HasSubstr("after the repair: " + std::to_string(served) + " bundles"));
  EXPECT_THAT(*report, HasSubstr("lost: " + std::to_string(15 - served) + " bundles"));
  // The file as it was is kept.
  const std::string marker = "a copy of every file as it was: ";
  const size_t at = report->find(marker);
  ASSERT_NE(at, std::string::npos);
  const std::string aside = report->substr(at + marker.size(), report->find('\n', at) - at - marker.size());
  EXPECT_TRUE(fs::exists(fs::path(aside) / victim_name)) << aside;
  auto again = RocksDbKernelStore::Verify(dir);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->sound) << again->report;
  EXPECT_THAT(again->report, HasSubstr(std::to_string(served) + " bundles"));
}

TEST(RocksDbKernelStoreDamage, VerifyAndRepairWaitForTheStoreToBeClosed) {
  const std::string dir = FreshDir("in_use");
  auto store = RocksDbKernelStore::Open(dir);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(ReasonOf(RocksDbKernelStore::Verify(dir).status()), "STORE_LOCKED");
  EXPECT_EQ(ReasonOf(RocksDbKernelStore::Repair(dir).status()), "STORE_LOCKED");
  store->reset();
  auto check = RocksDbKernelStore::Verify(dir);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->sound) << check->report;
  EXPECT_EQ(RocksDbKernelStore::Verify(FreshDir("none")).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tir::store
