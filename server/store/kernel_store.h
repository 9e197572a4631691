// Durable storage of kernel bundles, tuning trials and jobs.

#ifndef TIR_SERVER_STORE_KERNEL_STORE_H_
#define TIR_SERVER_STORE_KERNEL_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tir/v1/kernel.pb.h"

namespace tir::store {

// A page of bundles.
struct KernelPage {
  std::vector<tir::v1::KernelBundle> kernels;
  // Empty at the end.
  std::string next_page_token;
};

// Record families besides kernels; each is its own keyspace.
enum class Family { kTrials, kJobs };

// The store. Implementations are thread-safe.
class KernelStore {
 public:
  virtual ~KernelStore() = default;

  // Stores `bundle` under `bundle.key()`, replacing any previous bundle, and
  // returns only once it is durable (synced to the write-ahead log).
  virtual absl::Status PutKernel(const tir::v1::KernelBundle& bundle) = 0;

  // The bundle stored under `key`; NOT_FOUND if none.
  virtual absl::StatusOr<tir::v1::KernelBundle> GetKernel(absl::string_view key) = 0;

  // Deletes the bundle under `key`; returns whether one existed.
  virtual absl::StatusOr<bool> DeleteKernel(absl::string_view key) = 0;

  // Bundles in key order, after `page_token`, at most `page_size`, only of
  // `arch` when not empty. Binaries and sources are stripped.
  virtual absl::StatusOr<KernelPage> ListKernels(uint32_t page_size, absl::string_view page_token,
                                                 absl::string_view arch) = 0;

  // Number of stored bundles and their total size in bytes (approximate).
  virtual absl::StatusOr<std::pair<uint64_t, uint64_t>> KernelStats() = 0;

  // Writes a record of `family`; `sync` makes it durable before returning.
  virtual absl::Status Put(Family family, absl::string_view key, absl::string_view value,
                           bool sync) = 0;

  // Reads a record; NOT_FOUND if none.
  virtual absl::StatusOr<std::string> Get(Family family, absl::string_view key) = 0;

  // Deletes a record (no error if absent).
  virtual absl::Status Delete(Family family, absl::string_view key) = 0;

  // Calls `fn(key, value)` for every record of `family` whose key starts with
  // `prefix`, in key order, until `fn` returns false.
  virtual absl::Status Scan(Family family, absl::string_view prefix,
                            const std::function<bool(absl::string_view, absl::string_view)>& fn) = 0;
};

}  // namespace tir::store

#endif  // TIR_SERVER_STORE_KERNEL_STORE_H_
