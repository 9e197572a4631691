#include "server/store/checkpoints.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::store {
namespace {

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

tir::v1::KernelBundle Bundle(const std::string &key) {
  tir::v1::KernelBundle b;
  b.set_key(key);
  b.set_name("kernels/" + key);
  b.set_arch("host");
  b.add_kernels()->set_binary("binary of " + key);
  return b;
}

std::vector<std::string> Entries(const std::string &dir) {
  std::vector<std::string> out;
  for (const auto &e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CheckpointsTest, ACheckpointIsAWholeStoreAndTheNewestAreKept) {
  const std::string db = Tmp() + "/db1", dir = Tmp() + "/backups1";
  auto store = RocksDbKernelStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutKernel(Bundle("first")).ok());
  // A volume's own directory there is neither counted nor removed.
  std::filesystem::create_directories(dir + "/lost+found");
  Checkpoints c(**store, dir, absl::Hours(1), 2);
  absl::StatusOr<std::string> one = c.Take();
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE((*store)->PutKernel(Bundle("second")).ok());
  absl::StatusOr<std::string> two = c.Take();
  absl::StatusOr<std::string> three = c.Take();
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(Entries(dir).size(), 3u) << "the newest two are kept, and lost+found";
  EXPECT_TRUE(std::filesystem::exists(dir + "/lost+found"));
  EXPECT_TRUE(std::filesystem::exists(*two));
  EXPECT_FALSE(std::filesystem::exists(*one));
  // The newest opens as a store of its own, with what was written before it.
  auto copy = RocksDbKernelStore::Open(*three);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->GetKernel("first")->kernels(0).binary(), "binary of first");
  EXPECT_EQ((*copy)->GetKernel("second")->kernels(0).binary(), "binary of second");
  // Writes after it are not in it.
  ASSERT_TRUE((*store)->PutKernel(Bundle("third")).ok());
  EXPECT_EQ(ReasonOf((*copy)->GetKernel("third").status()), "NOT_FOUND");
}

TEST(CheckpointsTest, TakenEveryIntervalWhileItServes) {
  const std::string db = Tmp() + "/db2", dir = Tmp() + "/backups2";
  auto store = RocksDbKernelStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutKernel(Bundle("k")).ok());
  {
    Checkpoints c(**store, dir, absl::Milliseconds(100), 3);
    const absl::Time end = absl::Now() + absl::Seconds(20);
    while (absl::Now() < end && (!std::filesystem::exists(dir) || Entries(dir).size() < 2)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  const std::vector<std::string> taken = Entries(dir);
  ASSERT_GE(taken.size(), 2u);
  EXPECT_LE(taken.size(), 3u);
  for (const std::string &t : taken) EXPECT_THAT(t, ::testing::Not(::testing::EndsWith(".partial")));
}

}  // namespace
}  // namespace tir::store
