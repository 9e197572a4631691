// The coordinator's operations in memory: one per compile request that did
// not hit the cache, named "operations/" and 16 random hex digits (unique for
// the life of the store: a name is never drawn twice while it is kept, and
// 64 random bits make a repeat across restarts negligible), with the job it
// waits for, a version that changes with its progress, and the request ids
// that name it (a retried Compile gets the same operation).
//
// Bounded: at `max_operations` kept, finished operations are dropped oldest
// first (a tenth at a time) to make room; they answer from the store after
// that (Coordinator::GetOperation). Finished ones are also dropped
// after `keep` (Prune).
//
// Not thread-safe: Operations (operations.h) guards it.

#ifndef TIR_SERVER_OPERATIONS_OPERATION_TABLE_H_
#define TIR_SERVER_OPERATIONS_OPERATION_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::operations {

class OperationTable {
 public:
  struct Entry {
    tir::v1::Operation op;
    std::string job;      // the job key it waits for ("" once done)
    int64_t version = 0;  // changes whenever op does
    std::string owner;    // the identity that asked for it ("" anonymous)
  };

  // Names: "operations/", `prefix` (a shard's tag and "-" in a sharded
  // fleet, shards/shard_ring.h) and 16 hex digits from the CSPRNG.
  explicit OperationTable(uint32_t max_operations, std::string prefix = "");

  // A new operation for `key` on `arch`, not done, at STAGE_VERIFYING.
  // Errors: RESOURCE_EXHAUSTED / LIMIT_EXCEEDED (maxOperations) when the
  // table is full and none of it is done.
  absl::StatusOr<std::string> New(const std::string &arch, const std::string &key);
  // Puts back an operation from before a restart under its own name
  // (no-op when the name is taken).
  void Restore(const std::string &name, const std::string &arch, const std::string &key);

  Entry *Find(const std::string &name);
  const Entry *Find(const std::string &name) const;
  bool Contains(const std::string &name) const { return entries_.count(name) > 0; }
  // Marks it done with `result` (a bundle or an error); false when unknown
  // or done already.
  bool Finish(const std::string &name, const absl::StatusOr<tir::v1::KernelBundle> &result);
  // Sets the progress of an operation not done yet.
  void SetProgress(const std::string &name, const tir::v1::CompileProgress &progress);

  // Request ids: the operation a request id named, while it is kept.
  void RememberRequest(const std::string &request_id, const std::string &name);
  const Entry *ByRequest(const std::string &request_id) const;

  // Drops operations done for longer than `keep` before `now`, and the
  // request ids of operations no longer kept.
  void Prune(absl::Time now, absl::Duration keep);

  size_t size() const { return entries_.size(); }

 private:
  uint32_t max_;
  std::string prefix_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> requests_;
};

// tir.v1.Error of a failed status (code, reason, message).
tir::v1::Error ErrorOf(const absl::Status &s);

}  // namespace tir::operations

#endif  // TIR_SERVER_OPERATIONS_OPERATION_TABLE_H_
