// KernelStore on RocksDB: column families "kernels", "trials" and "jobs", and
// the schema version in the default family.

#ifndef TIR_SERVER_STORE_ROCKSDB_KERNEL_STORE_H_
#define TIR_SERVER_STORE_ROCKSDB_KERNEL_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "server/store/kernel_store.h"

namespace tir::store {

class RocksDbKernelStore : public KernelStore {
 public:
  // The on-disk schema this code reads and writes.
  static constexpr int kSchemaVersion = 1;

  // Opens (creating if needed) the store at `path`. A store written with
  // another schema version is refused with FAILED_PRECONDITION.
  // Damage is DATA_LOSS / STORE_CORRUPT, never a silent start and never a
  // file deleted: a write-ahead log that cannot be replayed whole, one the
  // MANIFEST names that is missing, a MANIFEST that lost a column family or
  // no longer lists a table file holding records the store does not have
  // elsewhere (a truncated MANIFEST), a block whose checksum fails. The
  // message names the file and the repair (`tir-coordinator --repair-store`).
  static absl::StatusOr<std::unique_ptr<RocksDbKernelStore>> Open(const std::string& path);
  // Opens an existing store to read it, beside the process that has it open
  // (the local service): what it had written when this opens. Writes fail.
  // NOT_FOUND-like errors from RocksDB when there is no store at `path`.
  static absl::StatusOr<std::unique_ptr<RocksDbKernelStore>> OpenReadOnly(const std::string& path);

  // What Verify found.
  struct Check {
    // Every file and every block read, nothing missing or left out.
    bool sound = false;
    // For the operator: the files, what was wrong with each, the records by
    // kind (bundles, jobs, rounds, operations, shape checks, trials).
    std::string report;
  };
  // Reads the store at `path` whole without changing it: the MANIFEST's
  // files against the directory, every log, every block of every table file
  // (checksums), every record (bundles parsed). STORE_LOCKED while a
  // coordinator has it open; NOT_FOUND when there is no store.
  static absl::StatusOr<Check> Verify(const std::string& path);
  // Salvages a damaged store and says what it lost: Verify first (a sound
  // store is left alone and the answer says "sound"), then a copy of every
  // file as it was into `<path>.lost+found/<time>/`, rocksdb::RepairDB, the
  // readable records of damaged table files put back, and Verify again. The
  // answer gives the records by kind before and after, the files damaged,
  // missing or set aside, and the count lost.
  static absl::StatusOr<std::string> Repair(const std::string& path);

  ~RocksDbKernelStore() override;
  // A consistent copy of the store at `dir` (which must not exist), taken
  // while it serves: RocksDB's checkpoint (the table files hard-linked where
  // `dir` is on the same file system, else copied, and the live write-ahead
  // log copied).
  // It opens as a store of its own: a backup, restored by putting it back
  // as the store's directory.
  absl::Status Checkpoint(const std::string& dir);

  absl::Status PutKernel(const tir::v1::KernelBundle& bundle) override;
  absl::StatusOr<tir::v1::KernelBundle> GetKernel(absl::string_view key) override;
  absl::StatusOr<bool> DeleteKernel(absl::string_view key) override;
  absl::StatusOr<KernelPage> ListKernels(uint32_t page_size, absl::string_view page_token,
                                         absl::string_view arch) override;
  absl::StatusOr<std::pair<uint64_t, uint64_t>> KernelStats() override;
  absl::Status Put(Family family, absl::string_view key, absl::string_view value,
                   bool sync) override;
  absl::StatusOr<std::string> Get(Family family, absl::string_view key) override;
  absl::Status Delete(Family family, absl::string_view key) override;
  absl::Status Scan(Family family, absl::string_view prefix,
                    const std::function<bool(absl::string_view, absl::string_view)>& fn) override;

 private:
  RocksDbKernelStore(std::unique_ptr<rocksdb::DB> db,
                     std::vector<rocksdb::ColumnFamilyHandle*> handles);
  rocksdb::ColumnFamilyHandle* Handle(Family family) const;

  std::unique_ptr<rocksdb::DB> db_;
  // default, kernels, trials, jobs.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace tir::store

#endif  // TIR_SERVER_STORE_ROCKSDB_KERNEL_STORE_H_
