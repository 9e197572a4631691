// RocksDbKernelStore::Verify and ::Repair: `tir-coordinator --verify-store`
// and `--repair-store`.
//
// Repair:
//   1. Verify (Inspect, deep). A sound store is left alone.
//   2. A copy of every file as it was goes to `<db>.lost+found/<time>/`
//      (table files hard-linked: they are never written again).
//   3. rocksdb::RepairDB rebuilds the MANIFEST from every table file and log
//      in the directory, setting aside in `<db>/lost/` what it cannot use;
//      the families it found no table file of are created again, empty.
//   4. The readable records of every table file it set aside (one with a
//      damaged block goes whole) are read, forward from its first record
//      and backward from its last, up to the damage.
//   5. The store opens; the salvaged records it lacks are put back.
//   6. Verify again; the answer compares the records by kind before and
//      after and names what was lost.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "compiler/support/status.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/write_batch.h"
#include "server/store/rocksdb_kernel_store.h"
#include "server/store/rocksdb_store_check.h"

namespace tir::store {
namespace {

namespace fs = std::filesystem;
using internal::Describe;
using internal::FromRocks;
using internal::Inspection;
using internal::KindOf;
using internal::RecordCounts;

absl::Status NoStore(const std::string& path) {
  return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", absl::StrCat("no store at ", path));
}

absl::Status InUse(const std::string& path) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "STORE_LOCKED",
                   absl::StrCat("store ", path, " is open (its LOCK is held): stop the coordinator using it first"));
}

// A store's files are there (the LOCK is taken only then: never created in
// a directory that holds no store).
bool HasStore(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::path(path) / "CURRENT", ec)) return true;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.path().extension() == ".sst" || e.path().extension() == ".log") return true;
  }
  return false;
}

// Holds the store's LOCK, so that no coordinator opens it meanwhile.
class StoreLock {
 public:
  explicit StoreLock(const std::string& path) {
    if (!rocksdb::Env::Default()->LockFile(path + "/LOCK", &lock_).ok()) lock_ = nullptr;
  }
  ~StoreLock() { Release(); }
  bool held() const { return lock_ != nullptr; }
  void Release() {
    if (lock_ != nullptr) rocksdb::Env::Default()->UnlockFile(lock_).PermitUncheckedError();
    lock_ = nullptr;
  }

 private:
  rocksdb::FileLock* lock_ = nullptr;
};

std::string Findings(const Inspection& in) {
  std::string out;
  for (const auto& d : in.damage) absl::StrAppend(&out, "\n  - ", d);
  for (const auto& n : in.notes) absl::StrAppend(&out, "\n  note: ", n);
  return out;
}

std::string Counted(const Inspection& in) {
  if (!in.opened && !in.log_damaged) return "none counted: the store does not open";
  return absl::StrCat(in.counts.complete ? "" : "until the damage stopped the reading, ", Describe(in.counts));
}

// A record read out of a damaged table file.
struct Salvaged {
  std::string family, key, value;
};

// What could be read of a damaged table file.
struct Salvage {
  std::string file, family, error;
  uint64_t records = 0;  // live records the file says it holds
  std::vector<Salvaged> read;
};

Salvage SalvageTable(const std::string& file) {
  Salvage out;
  out.file = fs::path(file).filename().string();
  rocksdb::SstFileReader reader{rocksdb::Options()};
  rocksdb::Status s = reader.Open(file);
  if (!s.ok()) {
    out.error = s.ToString();
    return out;
  }
  if (auto props = reader.GetTableProperties()) {
    out.family = props->column_family_name;
    out.records = props->num_entries > props->num_deletions ? props->num_entries - props->num_deletions : 0;
  }
  rocksdb::ReadOptions r;
  r.verify_checksums = true;
  r.fill_cache = false;
  std::set<std::string> seen;
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(r));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    seen.insert(it->key().ToString());
    out.read.push_back({out.family, it->key().ToString(), it->value().ToString()});
  }
  if (!it->status().ok()) out.error = it->status().ToString();
  it.reset(reader.NewIterator(r));
  for (it->SeekToLast(); it->Valid() && !seen.count(it->key().ToString()); it->Prev()) {
    out.read.push_back({out.family, it->key().ToString(), it->value().ToString()});
  }
  return out;
}

std::set<std::string> FilesIn(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.insert(e.path().filename().string());
  return names;
}

// Copies every file of the store as it is into a new folder beside it.
absl::StatusOr<std::string> KeepAside(const std::string& path) {
  fs::path db = fs::path(path).lexically_normal();
  if (db.filename().empty()) db = db.parent_path();
  const std::string stamp = absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
  fs::path aside = fs::path(db.string() + ".lost+found") / stamp;
  std::error_code ec;
  for (int i = 2; fs::exists(aside, ec); ++i) aside = fs::path(db.string() + ".lost+found") / absl::StrCat(stamp, "-", i);
  fs::create_directories(aside, ec);
  if (ec) {
    return MakeError(absl::StatusCode::kInternal, "STORE_ERROR",
                     absl::StrCat("cannot create ", aside.string(), " for a copy of the store: ", ec.message()));
  }
  fs::permissions(aside.parent_path(), fs::perms::owner_all, ec);
  fs::permissions(aside, fs::perms::owner_all, ec);
  for (const auto& e : fs::directory_iterator(db)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == "LOCK" || name.rfind("LOG", 0) == 0) continue;
    ec.clear();
    if (e.path().extension() == ".sst") fs::create_hard_link(e.path(), aside / name, ec);
    if (e.path().extension() != ".sst" || ec) {
      ec.clear();
      fs::copy_file(e.path(), aside / name, ec);
    }
    if (ec) {
      return MakeError(absl::StatusCode::kInternal, "STORE_ERROR",
                       absl::StrCat("cannot copy ", e.path().string(), " to ", aside.string(), ": ", ec.message(),
                                    "; nothing was repaired"));
    }
  }
  return aside.string();
}

}  // namespace

absl::StatusOr<RocksDbKernelStore::Check> RocksDbKernelStore::Verify(const std::string& path) {
  if (!fs::is_directory(path) || !HasStore(path)) return NoStore(path);
  StoreLock lock(path);
  if (!lock.held()) return InUse(path);
  const Inspection in = internal::Inspect(path, /*deep=*/true);
  if (!in.exists) return NoStore(path);
  Check check;
  check.sound = in.sound();
  if (check.sound) {
    check.report = absl::StrCat("store ", path, " is sound: ", in.tables, " table files and ", in.logs,
                                " logs, every block read and its checksum right; ", Describe(in.counts),
                                Findings(in));
  } else {
    check.report = absl::StrCat("store ", path, " is damaged:", Findings(in), "\nrecords readable: ", Counted(in),
                                "\n`tir-coordinator --repair-store --db=", path,
                                "` salvages what can be read, keeps a copy of every file and says what was lost");
  }
  return check;
}

absl::StatusOr<std::string> RocksDbKernelStore::Repair(const std::string& path) {
  if (!fs::is_directory(path) || !HasStore(path)) return NoStore(path);
  StoreLock lock(path);
  if (!lock.held()) return InUse(path);

  // 1.
  const Inspection before = internal::Inspect(path, /*deep=*/true);
  if (!before.exists) return NoStore(path);
  if (before.sound()) {
    return absl::StrCat("store ", path, " is sound (", before.tables, " table files and ", before.logs,
                        " logs, every block read; ", Describe(before.counts), "): nothing to repair");
  }
  std::string report = absl::StrCat("store ", path, " was damaged:", Findings(before), "\nbefore the repair: ",
                                    Counted(before));

  // 2.
  TIR_ASSIGN_OR_RETURN(const std::string aside, KeepAside(path));
  absl::StrAppend(&report, "\na copy of every file as it was: ", aside);

  // 3.
  const fs::path lost_dir = fs::path(path) / "lost";
  const std::set<std::string> lost_before = FilesIn(lost_dir);
  lock.Release();
  TIR_RETURN_IF_ERROR(FromRocks(rocksdb::RepairDB(path, internal::StoreOptions(), internal::StoreFamilies()),
                                absl::StrCat("repair ", path, " (a copy of every file as it was is in ", aside, ")")));
  {
    // RepairDB lists only the families it found table files of: the others
    // (empty ones) are created again here, as the first open created them.
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    TIR_RETURN_IF_ERROR(FromRocks(
        rocksdb::DB::Open(internal::StoreOptions(), path, internal::StoreFamilies(), &handles, &raw),
        absl::StrCat("open ", path, " after the repair (a copy of every file as it was is in ", aside, ")")));
    std::unique_ptr<rocksdb::DB> db(raw);
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    TIR_RETURN_IF_ERROR(FromRocks(db->Close(), "close after the repair"));
  }
  std::vector<std::string> set_aside;
  for (const auto& name : FilesIn(lost_dir)) {
    if (!lost_before.count(name)) set_aside.push_back(name);
  }
  absl::StrAppend(&report, "\nrocksdb::RepairDB rebuilt the MANIFEST from the table files and logs",
                  set_aside.empty() ? "" : absl::StrCat("; it set aside in ", lost_dir.string(), ": ",
                                                        absl::StrJoin(set_aside, ", "),
                                                        " (logs and old MANIFESTs after their records were "
                                                        "kept; table files it could not read whole)"));

  // 4. What it set aside whole.
  std::vector<Salvage> salvages;
  for (const auto& name : set_aside) {
    if (fs::path(name).extension() == ".sst") salvages.push_back(SalvageTable((lost_dir / name).string()));
  }

  // 5.
  std::map<std::string, uint64_t> unread;  // by kind, in damaged table files
  std::vector<std::string> lines;           // what was lost
  {
    auto store = Open(path);
    if (!store.ok()) {
      return Annotate(store.status(), absl::StrCat("store ", path, " does not open after the repair (a copy of every "
                                                   "file as it was is in ", aside, ")"));
    }
    rocksdb::WriteBatch batch;
    for (const Salvage& s : salvages) {
      uint64_t put_back = 0;
      for (const Salvaged& r : s.read) {
        rocksdb::ColumnFamilyHandle* handle = nullptr;
        for (auto* h : (*store)->handles_) {
          if (h->GetName() == r.family) handle = h;
        }
        if (handle == nullptr) continue;
        std::string have;
        if ((*store)->db_->Get(rocksdb::ReadOptions(), handle, r.key, &have).IsNotFound()) {
          TIR_RETURN_IF_ERROR(FromRocks(batch.Put(handle, r.key, r.value), "salvage"));
          ++put_back;
        }
      }
      const uint64_t lost = s.records > s.read.size() ? s.records - s.read.size() : 0;
      if (lost > 0) {
        const std::string kind = s.family == "jobs" ? std::string("job records") : KindOf(s.family, "");
        unread[kind] += lost;
        lines.push_back(absl::StrCat(lost, " ", kind, " in blocks of ", s.file, " that cannot be read"));
      }
      absl::StrAppend(&report, "\nsalvaged from ", s.file, " (", s.family.empty() ? "family unknown" : s.family,
                      ", ", s.records, " records): ", s.read.size(), " read, ", put_back, " put back, ", lost,
                      " in blocks that cannot be read", s.error.empty() ? "" : absl::StrCat(" (", s.error, ")"));
    }
    rocksdb::WriteOptions w;
    w.sync = true;
    if (batch.Count() > 0) TIR_RETURN_IF_ERROR(FromRocks((*store)->db_->Write(w, &batch), "put back salvaged records"));
  }

  // 6.
  const Inspection after = internal::Inspect(path, /*deep=*/true);
  if (!after.sound()) {
    return MakeError(absl::StatusCode::kDataLoss, "STORE_CORRUPT",
                     absl::StrCat(report, "\nthe repaired store is still damaged:", Findings(after),
                                  "\n(a copy of every file as it was is in ", aside, ")"));
  }
  absl::StrAppend(&report, "\nafter the repair: ", Describe(after.counts), " readable; every block read");

  if (before.counts.complete && (before.opened || before.log_damaged)) {
    for (const auto& [kind, n] : before.counts.by_kind) {
      auto it = after.counts.by_kind.find(kind);
      const uint64_t now = it == after.counts.by_kind.end() ? 0 : it->second;
      if (n > now + unread[kind] && kind != "schema records") {
        lines.push_back(absl::StrCat(n - now - unread[kind], " ", kind, " fewer than before the repair"));
      }
    }
  }
  if (before.log_missing) {
    lines.push_back("what only the missing write-ahead log held (written since the last flush; how many records "
                    "cannot be told)");
  }
  if (before.log_damaged) {
    lines.push_back("what the damaged write-ahead log held past its damage (how many records cannot be told)");
  }
  std::string none = "nothing";
  if (!before.opened && !before.log_damaged) {
    none = "nothing found lost (the store did not open, so its records were not counted before: every table file "
           "RocksDB could not use and every record salvaged from one is named above)";
  }
  absl::StrAppend(&report, "\nlost: ", lines.empty() ? none : absl::StrJoin(lines, ", "));
  return report;
}

}  // namespace tir::store
