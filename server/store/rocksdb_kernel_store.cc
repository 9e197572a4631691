#include "server/store/rocksdb_kernel_store.h"

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"

namespace tir::store {
namespace {

constexpr char kSchemaKey[] = "schema_version";
constexpr uint32_t kMaxPageSize = 1000;
constexpr uint32_t kDefaultPageSize = 100;

// The one adapter from rocksdb::Status to absl::Status.
absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string msg = absl::StrCat("store: ", what, ": ", s.ToString());
  if (s.IsNotFound()) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", msg);
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) {
    return MakeError(absl::StatusCode::kUnavailable, "STORE_UNAVAILABLE", msg);
  }
  if (s.IsCorruption()) {
    return MakeError(absl::StatusCode::kDataLoss, "STORE_CORRUPT",
                     absl::StrCat(msg, ". The store is damaged; `tir-coordinator --repair-store --db=DIR` salvages "
                                  "what can be read and says what it kept"));
  }
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "STORE_LOCKED",
                     absl::StrCat(msg, " (is another coordinator using this --db?)"));
  }
  return MakeError(absl::StatusCode::kInternal, "STORE_ERROR", msg);
}

rocksdb::Slice ToSlice(absl::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

void StripPayload(tir::v1::KernelBundle& bundle) {
  for (auto& k : *bundle.mutable_kernels()) {
    k.clear_binary();
    k.clear_source();
  }
}

}  // namespace

RocksDbKernelStore::RocksDbKernelStore(std::unique_ptr<rocksdb::DB> db,
                                       std::vector<rocksdb::ColumnFamilyHandle*> handles)
    : db_(std::move(db)), handles_(std::move(handles)) {}

RocksDbKernelStore::~RocksDbKernelStore() {
  for (auto* h : handles_) {
    IgnoreError(FromRocks(db_->DestroyColumnFamilyHandle(h), "close column family"),
                "closing the store");
  }
  IgnoreError(FromRocks(db_->Close(), "close"), "closing the store");
}

namespace {

// Corruption is found, not skipped: every block read is checksummed
// (RocksDB's default, kept), files are checked when opened, and a
// write-ahead log that cannot be replayed whole refuses the open (a torn or
// flipped record, a truncation inside a record) instead of starting from the
// point before it with what followed silently gone.
rocksdb::DBOptions StoreOptions() {
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  options.keep_log_file_num = 4;
  options.paranoid_checks = true;
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
  return options;
}

std::vector<rocksdb::ColumnFamilyDescriptor> StoreFamilies() {
  rocksdb::ColumnFamilyOptions cf_options;
  cf_options.paranoid_file_checks = true;
  return {
      {rocksdb::kDefaultColumnFamilyName, cf_options},
      {"kernels", cf_options},
      {"trials", cf_options},
      {"jobs", cf_options},
  };
}

}  // namespace

absl::StatusOr<std::string> RocksDbKernelStore::Repair(const std::string& path) {
  if (!std::filesystem::is_directory(path)) {
    return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", absl::StrCat("no store at ", path));
  }
  std::string before = "it opens as it is";
  {
    auto opened = Open(path);
    if (opened.ok()) return absl::StrCat("store ", path, " is sound: nothing to repair");
    // A lock, a permission, another schema: not damage, and not repaired.
    if (ReasonOf(opened.status()) != "STORE_CORRUPT") return opened.status();
    before = std::string(opened.status().message());
  }
  TIR_RETURN_IF_ERROR(FromRocks(rocksdb::RepairDB(path, StoreOptions(), StoreFamilies()), "repair " + path));
  // What is left, bundle by bundle.
  auto store = Open(path);
  if (!store.ok()) return store.status();
  uint64_t bundles = 0, unreadable = 0;
  std::unique_ptr<rocksdb::Iterator> it((*store)->db_->NewIterator(rocksdb::ReadOptions(), (*store)->handles_[1]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    tir::v1::KernelBundle b;
    if (b.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      ++bundles;
    } else {
      ++unreadable;
    }
  }
  return absl::StrCat("store ", path, " was damaged (", before, "); repaired: ", bundles,
                      " bundles readable, ", unreadable,
                      " unreadable; log records and table blocks that could not be read were dropped, and "
                      "graphs whose bundles were in them compile again on their next request");
}

absl::StatusOr<std::unique_ptr<RocksDbKernelStore>> RocksDbKernelStore::Open(
    const std::string& path) {
  // RocksDB creates the store's directory but not its parents.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const rocksdb::DBOptions options = StoreOptions();
  const std::vector<rocksdb::ColumnFamilyDescriptor> families = StoreFamilies();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  TIR_RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(options, path, families, &handles, &raw), "open " + path));
  std::unique_ptr<RocksDbKernelStore> store(
      new RocksDbKernelStore(std::unique_ptr<rocksdb::DB>(raw), std::move(handles)));

  std::string version;
  rocksdb::Status s = store->db_->Get(rocksdb::ReadOptions(), store->handles_[0], kSchemaKey, &version);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions w;
    w.sync = true;
    TIR_RETURN_IF_ERROR(FromRocks(
        store->db_->Put(w, store->handles_[0], kSchemaKey, std::to_string(kSchemaVersion)),
        "write schema version"));
  } else {
    TIR_RETURN_IF_ERROR(FromRocks(s, "read schema version"));
    int v = 0;
    if (!absl::SimpleAtoi(version, &v) || v != kSchemaVersion) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "STORE_SCHEMA_MISMATCH",
                       absl::StrCat("store at ", path, " has schema version '", version,
                                    "', this build reads version ", kSchemaVersion));
    }
  }
  return store;
}

absl::StatusOr<std::unique_ptr<RocksDbKernelStore>> RocksDbKernelStore::OpenReadOnly(const std::string& path) {
  rocksdb::DBOptions options = StoreOptions();
  options.create_if_missing = false;
  options.create_missing_column_families = false;
  // The writer may be appending to the log as it is read: its last record,
  // half written, is not damage here.
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  TIR_RETURN_IF_ERROR(FromRocks(rocksdb::DB::OpenForReadOnly(options, path, StoreFamilies(), &handles, &raw),
                                "open " + path + " to read"));
  std::unique_ptr<RocksDbKernelStore> store(
      new RocksDbKernelStore(std::unique_ptr<rocksdb::DB>(raw), std::move(handles)));
  std::string version;
  rocksdb::Status s = store->db_->Get(rocksdb::ReadOptions(), store->handles_[0], kSchemaKey, &version);
  if (!s.IsNotFound()) {
    TIR_RETURN_IF_ERROR(FromRocks(s, "read schema version"));
    int v = 0;
    if (!absl::SimpleAtoi(version, &v) || v != kSchemaVersion) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "STORE_SCHEMA_MISMATCH",
                       absl::StrCat("store at ", path, " has schema version '", version,
                                    "', this build reads version ", kSchemaVersion));
    }
  }
  return store;
}

rocksdb::ColumnFamilyHandle* RocksDbKernelStore::Handle(Family family) const {
  return family == Family::kTrials ? handles_[2] : handles_[3];
}

absl::Status RocksDbKernelStore::PutKernel(const tir::v1::KernelBundle& bundle) {
  if (bundle.key().empty()) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                     "kernel bundle has no key");
  }
  std::string value;
  if (!bundle.SerializeToString(&value)) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", "could not serialize bundle");
  }
  rocksdb::WriteOptions w;
  w.sync = true;  // An acknowledged kernel survives a crash.
  return FromRocks(db_->Put(w, handles_[1], bundle.key(), value), "put kernel");
}

absl::StatusOr<tir::v1::KernelBundle> RocksDbKernelStore::GetKernel(absl::string_view key) {
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[1], ToSlice(key), &value);
  if (s.IsNotFound()) {
    return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND",
                     absl::StrCat("no kernel stored under kernels/", key));
  }
  TIR_RETURN_IF_ERROR(FromRocks(s, "get kernel"));
  tir::v1::KernelBundle bundle;
  if (!bundle.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return MakeError(absl::StatusCode::kDataLoss, "STORE_CORRUPT",
                     absl::StrCat("stored bundle kernels/", key, " does not parse"));
  }
  return bundle;
}

absl::StatusOr<bool> RocksDbKernelStore::DeleteKernel(absl::string_view key) {
  std::string ignored;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[1], ToSlice(key), &ignored);
  if (s.IsNotFound()) return false;
  TIR_RETURN_IF_ERROR(FromRocks(s, "get kernel"));
  rocksdb::WriteOptions w;
  w.sync = true;
  TIR_RETURN_IF_ERROR(FromRocks(db_->Delete(w, handles_[1], ToSlice(key)), "delete kernel"));
  return true;
}

absl::StatusOr<KernelPage> RocksDbKernelStore::ListKernels(uint32_t page_size,
                                                           absl::string_view page_token,
                                                           absl::string_view arch) {
  if (page_size == 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  KernelPage page;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[1]));
  if (page_token.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(ToSlice(page_token));
    // The token is the last key of the previous page: start after it.
    if (it->Valid() && it->key() == ToSlice(page_token)) it->Next();
  }
  for (; it->Valid(); it->Next()) {
    tir::v1::KernelBundle bundle;
    if (!bundle.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return MakeError(absl::StatusCode::kDataLoss, "STORE_CORRUPT",
                       absl::StrCat("stored bundle kernels/", it->key().ToString(), " does not parse"));
    }
    if (!arch.empty() && bundle.arch() != arch) continue;
    if (page.kernels.size() == page_size) {
      page.next_page_token = page.kernels.back().key();
      break;
    }
    StripPayload(bundle);
    page.kernels.push_back(std::move(bundle));
  }
  TIR_RETURN_IF_ERROR(FromRocks(it->status(), "list kernels"));
  return page;
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> RocksDbKernelStore::KernelStats() {
  // RocksDB's own estimates: cheap at any size, exact enough for a gauge.
  uint64_t count = 0, sst = 0, memtable = 0;
  db_->GetIntProperty(handles_[1], "rocksdb.estimate-num-keys", &count);
  db_->GetIntProperty(handles_[1], "rocksdb.total-sst-files-size", &sst);
  db_->GetIntProperty(handles_[1], "rocksdb.cur-size-all-mem-tables", &memtable);
  return std::make_pair(count, sst + memtable);
}

absl::Status RocksDbKernelStore::Put(Family family, absl::string_view key,
                                     absl::string_view value, bool sync) {
  rocksdb::WriteOptions w;
  w.sync = sync;
  return FromRocks(db_->Put(w, Handle(family), ToSlice(key), ToSlice(value)), "put");
}

absl::StatusOr<std::string> RocksDbKernelStore::Get(Family family, absl::string_view key) {
  std::string value;
  TIR_RETURN_IF_ERROR(
      FromRocks(db_->Get(rocksdb::ReadOptions(), Handle(family), ToSlice(key), &value),
                absl::StrCat("get ", key)));
  return value;
}

absl::Status RocksDbKernelStore::Delete(Family family, absl::string_view key) {
  rocksdb::WriteOptions w;
  w.sync = true;
  return FromRocks(db_->Delete(w, Handle(family), ToSlice(key)), "delete");
}

absl::Status RocksDbKernelStore::Scan(
    Family family, absl::string_view prefix,
    const std::function<bool(absl::string_view, absl::string_view)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), Handle(family)));
  for (it->Seek(ToSlice(prefix)); it->Valid() && it->key().starts_with(ToSlice(prefix));
       it->Next()) {
    if (!fn(absl::string_view(it->key().data(), it->key().size()),
            absl::string_view(it->value().data(), it->value().size()))) {
      break;
    }
  }
  return FromRocks(it->status(), "scan");
}

}  // namespace tir::store
