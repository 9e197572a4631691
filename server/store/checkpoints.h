// Backups of a coordinator's store while it serves: a RocksDB checkpoint
// (RocksDbKernelStore::Checkpoint) into <dir>/<UTC time> every `interval`,
// the newest `keep` kept. A checkpoint is written under a ".partial" name
// and renamed once whole, so a directory without it is a complete store; an
// operator (or a sidecar) copies them off the node. Restore: stop the
// coordinator, put one back as its `db`, start it (unfinished jobs resume).

#ifndef TIR_SERVER_STORE_CHECKPOINTS_H_
#define TIR_SERVER_STORE_CHECKPOINTS_H_

#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/rocksdb_kernel_store.h"

namespace tir::store {

class Checkpoints {
 public:
  // Takes the first checkpoint one `interval` after the start.
  Checkpoints(RocksDbKernelStore &store, std::string dir, absl::Duration interval, int keep);
  ~Checkpoints();

  // One checkpoint now (and the oldest beyond `keep` removed): its path.
  // Errors: CHECKPOINT_FAILED.
  absl::StatusOr<std::string> Take();

 private:
  void Loop();

  RocksDbKernelStore &store_;
  const std::string dir_;
  const absl::Duration interval_;
  const int keep_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tir::store

#endif  // TIR_SERVER_STORE_CHECKPOINTS_H_
