// The pieces RocksDbKernelStore's open, verify and repair share: the
// RocksDB options of the store, the status adapter, and the check of a
// store's files that runs before anything opens it for writing.

#ifndef TIR_SERVER_STORE_ROCKSDB_STORE_CHECK_H_
#define TIR_SERVER_STORE_ROCKSDB_STORE_CHECK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/status.h"

namespace tir::store::internal {

// The store's options: paranoid checks, WAL tracking in the MANIFEST, a log
// replayed whole or refused, every table file checked as it is written.
rocksdb::DBOptions StoreOptions();
// default (the schema version), kernels, trials, jobs: in this order.
std::vector<rocksdb::ColumnFamilyDescriptor> StoreFamilies();

// The one adapter from rocksdb::Status to absl::Status.
absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what);

// Records by kind: "bundles" (kernels family), "trials", and in the jobs
// family "jobs", "rounds", "operations", "shape checks" (by key prefix, as
// server/ledger lays them out).
struct RecordCounts {
  std::map<std::string, uint64_t> by_kind;
  // False when reading stopped at damage: the counts are lower bounds.
  bool complete = true;
};
std::string KindOf(absl::string_view family, absl::string_view key);
// "5 bundles, 0 jobs, ..." (every kind named, zeros included).
std::string Describe(const RecordCounts& counts);

// What the store's files say, read without changing any of them.
struct Inspection {
  // A store is there (CURRENT or any table or log file).
  bool exists = false;
  // RocksDB opened it read-only.
  bool opened = false;
  // One line per finding, each naming its file.
  std::vector<std::string> damage;
  // Write-ahead logs the MANIFEST expects that are not there.
  bool log_missing = false;
  // A log (or a closed one the MANIFEST tracks) that cannot be replayed
  // whole: the counts are what could be read, skipping its damage.
  bool log_damaged = false;
  // Not damage: files a start leaves or removes, and why.
  std::vector<std::string> notes;
  // With `deep`: every record, by kind.
  RecordCounts counts;
  uint64_t tables = 0, logs = 0;

  bool sound() const { return opened && damage.empty(); }
};

// Reads the store at `path`: CURRENT and the MANIFEST's column families,
// every write-ahead log (replayed whole), the MANIFEST's table files against
// the directory's, and, with `deep`, every block of every table file and
// every record. Never writes (RocksDB read-only).
Inspection Inspect(const std::string& path, bool deep);

// Whether a process (this one included) holds the store's LOCK.
bool Locked(const std::string& path);

}  // namespace tir::store::internal

#endif  // TIR_SERVER_STORE_ROCKSDB_STORE_CHECK_H_
