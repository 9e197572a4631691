// The check of a store's files before it opens, and the deep read behind
// `--verify-store` and `--repair-store`.
//
// RocksDB itself refuses much damage when the store is opened: a log record
// that fails its checksum or is cut short (kAbsoluteConsistency), a table
// file the MANIFEST lists that is missing or truncated (paranoid checks), a
// closed log the MANIFEST tracks that is missing or shorter. Three kinds of
// damage it opens over, dropping data without a word, and deleting files:
//   1. A MANIFEST that lost the record creating a column family (truncated):
//      the family is created again, empty.
//   2. A MANIFEST that lost records adding table files (truncated at a
//      record's end, or over the part the tracked logs are in): the files it
//      no longer lists are obsolete to RocksDB, and deleted at the open.
//   3. The live write-ahead log, deleted: it is not tracked (only closed
//      logs are), and what was written since the last flush is gone.
// So before the store opens for writing, it is opened read-only (which
// deletes nothing) and:
//   1. every family is looked up in the MANIFEST (ListColumnFamilies);
//   2. a log numbered at or after the MANIFEST's log number must be there
//      (one is from the store's first open on: each open starts a new one);
//   3. every table file in the directory that the MANIFEST does not list is
//      read: one whose records the store has, equal, elsewhere is the output
//      of a flush or compaction a crash cut short (RocksDB removes it, as it
//      should); one holding a record the store lacks is damage. One that
//      cannot be read is a write cut short.

#include "server/store/rocksdb_store_check.h"

#include <algorithm>
#include <map>
#include <cstdarg>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/support/status.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_reader.h"
#include "rocksdb/table_properties.h"
#include "tir/v1/kernel.pb.h"

namespace tir::store::internal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKinds[] = {"bundles", "jobs", "rounds", "operations", "shape checks", "trials"};

// 17 for "000017.sst" with `ext` ".sst".
std::optional<uint64_t> NumberOf(const fs::path& p, absl::string_view ext) {
  if (p.extension().string() != ext) return std::nullopt;
  uint64_t n = 0;
  if (!absl::SimpleAtoi(p.stem().string(), &n)) return std::nullopt;
  return n;
}

absl::string_view View(const rocksdb::Slice& s) { return absl::string_view(s.data(), s.size()); }

std::string FileName(uint64_t number, absl::string_view ext) {
  std::string digits = std::to_string(number);
  if (digits.size() < 6) digits.insert(0, 6 - digits.size(), '0');
  return absl::StrCat(digits, ext);
}

// A read-only RocksDB and its handles, closed on destruction.
struct ReadOnlyDb {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  ~ReadOnlyDb() {
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    if (db) db->Close().PermitUncheckedError();
  }
  rocksdb::ColumnFamilyHandle* Family(absl::string_view name) const {
    for (auto* h : handles) {
      if (h->GetName() == name) return h;
    }
    return nullptr;
  }
};

// The info log of the read-only opens here: none (a read-only open would
// otherwise start a new LOG in the store's directory each time).
class QuietLog : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

rocksdb::ReadOptions FullRead() {
  rocksdb::ReadOptions r;
  r.verify_checksums = true;
  r.fill_cache = false;
  return r;
}

// Orphan table file `path` (not in the MANIFEST): records of it the store
// does not hold, equal, by kind. nullopt when it cannot be read at all.
std::optional<RecordCounts> Uncovered(const ReadOnlyDb& ro, const std::string& path, std::string* family,
                                      std::string* error) {
  rocksdb::SstFileReader reader{rocksdb::Options()};
  rocksdb::Status s = reader.Open(path);
  if (!s.ok()) {
    *error = s.ToString();
    return std::nullopt;
  }
  auto props = reader.GetTableProperties();
  *family = props ? props->column_family_name : "";
  RecordCounts missing;
  rocksdb::ColumnFamilyHandle* handle = ro.Family(*family);
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(FullRead()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string have;
    rocksdb::Status g = handle ? ro.db->Get(FullRead(), handle, it->key(), &have) : rocksdb::Status::NotFound();
    if (!g.ok() || have != it->value()) ++missing.by_kind[KindOf(*family, View(it->key()))];
  }
  if (!it->status().ok()) {
    missing.complete = false;
    *error = it->status().ToString();
  }
  return missing;
}

uint64_t Total(const RecordCounts& c) {
  uint64_t n = 0;
  for (const auto& [kind, count] : c.by_kind) n += count;
  return n;
}

}  // namespace

rocksdb::DBOptions StoreOptions() {
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  options.keep_log_file_num = 4;
  options.paranoid_checks = true;
  // A log that cannot be replayed whole refuses the open (a torn or flipped
  // record, a truncation inside a record) instead of starting from the point
  // before it with what followed silently gone.
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
  // Closed logs are recorded in the MANIFEST with their synced size: one
  // missing or shorter refuses the open. (The live log is not tracked by
  // RocksDB; Inspect checks that one.)
  options.track_and_verify_wals_in_manifest = true;
  options.verify_sst_unique_id_in_manifest = true;
  return options;
}

std::vector<rocksdb::ColumnFamilyDescriptor> StoreFamilies() {
  rocksdb::ColumnFamilyOptions cf_options;
  // Every table file written (flush, compaction) is read back whole.
  cf_options.paranoid_file_checks = true;
  return {
      {rocksdb::kDefaultColumnFamilyName, cf_options},
      {"kernels", cf_options},
      {"trials", cf_options},
      {"jobs", cf_options},
  };
}

absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string msg = absl::StrCat("store: ", what, ": ", s.ToString());
  if (s.IsNotFound()) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", msg);
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) {
    return MakeError(absl::StatusCode::kUnavailable, "STORE_UNAVAILABLE", msg);
  }
  if (s.IsCorruption()) {
    return MakeError(absl::StatusCode::kDataLoss, "STORE_CORRUPT",
                     absl::StrCat(msg,
                                  ". The store is damaged; `tir-coordinator --verify-store --db=DIR` reports it whole, "
                                  "`tir-coordinator --repair-store --db=DIR` salvages what can be read and says what "
                                  "was lost"));
  }
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "STORE_LOCKED",
                     absl::StrCat(msg, " (is another coordinator using this --db?)"));
  }
  return MakeError(absl::StatusCode::kInternal, "STORE_ERROR", msg);
}

std::string KindOf(absl::string_view family, absl::string_view key) {
  if (family == "kernels") return "bundles";
  if (family == "trials") return "trials";
  if (family == "jobs") {
    if (absl::StartsWith(key, "job/")) return "jobs";
    if (absl::StartsWith(key, "round/")) return "rounds";
    if (absl::StartsWith(key, "op/")) return "operations";
    if (absl::StartsWith(key, "shape/")) return "shape checks";
    return "other job records";
  }
  if (family == rocksdb::kDefaultColumnFamilyName) return "schema records";
  return absl::StrCat("records of family '", family, "'");
}

std::string Describe(const RecordCounts& counts) {
  std::vector<std::string> parts;
  for (const char* kind : kKinds) {
    auto it = counts.by_kind.find(kind);
    parts.push_back(absl::StrCat(it == counts.by_kind.end() ? 0 : it->second, " ", kind));
  }
  for (const auto& [kind, n] : counts.by_kind) {
    if (kind == "schema records" || std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds)) continue;
    parts.push_back(absl::StrCat(n, " ", kind));
  }
  return absl::StrJoin(parts, ", ");
}

bool Locked(const std::string& path) {
  rocksdb::FileLock* lock = nullptr;
  if (!rocksdb::Env::Default()->LockFile(path + "/LOCK", &lock).ok()) return true;
  rocksdb::Env::Default()->UnlockFile(lock).PermitUncheckedError();
  return false;
}

Inspection Inspect(const std::string& path, bool deep) {
  Inspection in;
  std::error_code ec;
  std::map<uint64_t, std::string> tables, logs;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (auto n = NumberOf(e.path(), ".sst")) tables[*n] = e.path().string();
    if (auto n = NumberOf(e.path(), ".log")) logs[*n] = e.path().string();
  }
  in.tables = tables.size();
  in.logs = logs.size();
  const bool has_current = fs::exists(fs::path(path) / "CURRENT", ec);
  in.exists = has_current || !tables.empty() || !logs.empty();
  if (!in.exists) return in;
  std::string manifest = "the MANIFEST";
  if (!has_current) {
    in.damage.push_back(absl::StrCat("CURRENT is missing: ", tables.size(), " table files and ", logs.size(),
                                     " logs are there, but nothing names the MANIFEST that lists them"));
    return in;
  }
  std::ifstream(fs::path(path) / "CURRENT") >> manifest;

  // 1. The families.
  rocksdb::DBOptions options = StoreOptions();
  options.create_if_missing = false;
  options.create_missing_column_families = false;
  options.info_log = std::make_shared<QuietLog>();
  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(options, path, &names);
  if (!s.ok()) {
    in.damage.push_back(absl::StrCat(manifest, " cannot be read: ", s.ToString()));
    return in;
  }
  for (const auto& family : StoreFamilies()) {
    if (std::find(names.begin(), names.end(), family.name) == names.end()) {
      in.damage.push_back(absl::StrCat(manifest, " does not list the column family '", family.name,
                                       "' (truncated or damaged): a start would create it empty, and delete the "
                                       "table files holding its records"));
    }
  }
  if (!in.damage.empty()) return in;

  // The logs are replayed here, whole or refused.
  ReadOnlyDb ro;
  rocksdb::DB* raw = nullptr;
  s = rocksdb::DB::OpenForReadOnly(options, path, StoreFamilies(), &ro.handles, &raw);
  ro.db.reset(raw);
  if (!s.ok()) {
    in.damage.push_back(absl::StrCat("the store does not open (", manifest, ", its logs and table files): ",
                                     s.ToString()));
    if (!s.IsCorruption()) return in;
    // Where the damage is in a log, what can be read past it is counted.
    rocksdb::DBOptions tolerant = options;
    tolerant.wal_recovery_mode = rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords;
    // (Tracking stays on: off, a read-only open of a store with tracked logs
    // trips an assertion in RocksDB 7.8.)
    ro.handles.clear();
    raw = nullptr;
    if (!rocksdb::DB::OpenForReadOnly(tolerant, path, StoreFamilies(), &ro.handles, &raw).ok()) return in;
    ro.db.reset(raw);
    in.log_damaged = true;
    in.counts.complete = false;
  } else {
    in.opened = true;
  }

  // 2. The live log.
  uint64_t log_number = 0;
  ro.db->GetIntProperty("rocksdb.min-log-number-to-keep", &log_number);
  if (log_number > 0 && (logs.empty() || logs.rbegin()->first < log_number)) {
    in.log_missing = true;
    in.damage.push_back(absl::StrCat("the write-ahead log is missing: ", manifest, " expects one numbered ",
                                     FileName(log_number, ".log"), " or later (every start opens one), and ",
                                     logs.empty() ? std::string("there is none")
                                                  : absl::StrCat("the last there is ", FileName(logs.rbegin()->first, ".log")),
                                     ": what was written since the last flush is gone"));
  }

  // 3. Table files the MANIFEST does not list.
  std::vector<rocksdb::LiveFileMetaData> live;
  ro.db->GetLiveFilesMetaData(&live);
  std::map<uint64_t, std::string> live_family;
  for (const auto& f : live) {
    if (auto n = NumberOf(fs::path(f.name).filename(), ".sst")) live_family[*n] = f.column_family_name;
  }
  // Per family, the newest table file the MANIFEST lists: file numbers only
  // grow, so an unlisted file older than it was made before an edit that
  // survived (a compaction's input, left by a crash before its deletion:
  // old values and keys deleted since, not a loss), while a file the
  // MANIFEST lost (a flush whose edit a truncation took) is newer than
  // every file of its family that it lists.
  std::map<std::string, uint64_t> newest;
  for (const auto& [number, family] : live_family) newest[family] = std::max(newest[family], number);
  for (const auto& [number, file] : tables) {
    if (live_family.count(number)) continue;
    std::string family, error;
    std::optional<RecordCounts> missing = Uncovered(ro, file, &family, &error);
    const std::string name = FileName(number, ".sst");
    if (missing && Total(*missing) > 0 && newest.count(family) && number < newest[family]) {
      in.notes.push_back(absl::StrCat(name, " is not in ", manifest, " and is older than ",
                                      FileName(newest[family], ".sst"), " of ", family,
                                      ", which is: the input of a compaction a crash left behind (its old values and "
                                      "deleted keys are no loss); a start removes it"));
      continue;
    }
    if (!missing) {
      in.notes.push_back(absl::StrCat(name, " is not in ", manifest, " and cannot be read (", error,
                                      "): a write a crash cut short; a start removes it"));
    } else if (Total(*missing) == 0 && missing->complete) {
      in.notes.push_back(absl::StrCat(name, " is not in ", manifest, " and holds nothing the store lacks: the ",
                                      "output of a flush or compaction a crash cut short; a start removes it"));
    } else {
      in.damage.push_back(absl::StrCat(name, " (", family, ") is not in ", manifest, " but holds ",
                                       Describe(*missing), missing->complete ? "" : absl::StrCat(" and more (", error, ")"),
                                       " that the store does not (the MANIFEST is truncated or damaged): a start "
                                       "would delete it"));
    }
  }
  if (!deep) return in;

  // Every block of every table file: named file by file.
  std::set<std::string> damaged;
  for (const auto& f : live) {
    const std::string file = (fs::path(path) / fs::path(f.name).filename()).string();
    rocksdb::SstFileReader reader{rocksdb::Options()};
    rocksdb::Status v = reader.Open(file);
    if (v.ok()) v = reader.VerifyChecksum(FullRead());
    if (!v.ok()) {
      damaged.insert(file);
      in.damage.push_back(absl::StrCat(fs::path(file).filename().string(), " (", f.column_family_name, ", ",
                                       f.num_entries, " records): ", v.ToString()));
    }
  }
  s = ro.db->VerifyChecksum(FullRead());
  if (!s.ok() && damaged.empty()) in.damage.push_back(absl::StrCat("checksums: ", s.ToString()));

  // Every record.
  for (auto* handle : ro.handles) {
    std::unique_ptr<rocksdb::Iterator> it(ro.db->NewIterator(FullRead(), handle));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string kind = KindOf(handle->GetName(), View(it->key()));
      ++in.counts.by_kind[kind];
      if (kind == "bundles") {
        tir::v1::KernelBundle bundle;
        if (!bundle.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
          in.damage.push_back(absl::StrCat("bundle kernels/", it->key().ToString(), " does not parse"));
        }
      }
    }
    if (!it->status().ok()) {
      in.counts.complete = false;
      if (damaged.empty()) {
        in.damage.push_back(absl::StrCat("reading family ", handle->GetName(), ": ", it->status().ToString()));
      }
    }
  }
  return in;
}

}  // namespace tir::store::internal
