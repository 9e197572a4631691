// For tests: a RocksDB kernel store in a fresh directory of the test's own
// (under the test's temporary directory, named after the running test).

#ifndef TIR_SERVER_STORE_TEST_STORE_H_
#define TIR_SERVER_STORE_TEST_STORE_H_

#include <filesystem>
#include <memory>

#include "gtest/gtest.h"
#include "server/store/rocksdb_kernel_store.h"

namespace tir::store {

// Null (with a test failure added) when the store cannot be opened.
inline std::shared_ptr<KernelStore> FreshTestStore() {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  auto s = RocksDbKernelStore::Open(dir.string());
  if (!s.ok()) {
    ADD_FAILURE() << "cannot open a store at " << dir << ": " << s.status();
    return nullptr;
  }
  return std::shared_ptr<KernelStore>(*std::move(s));
}

}  // namespace tir::store

#endif  // TIR_SERVER_STORE_TEST_STORE_H_
