#include "server/store/rocksdb_kernel_store.h"

#include <filesystem>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/support/status.h"
#include "rocksdb/db.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "server/store/rocksdb_store_check.h"

namespace tir::store {
namespace {

using internal::FromRocks;
using internal::StoreFamilies;
using internal::StoreOptions;

constexpr char kSchemaKey[] = "schema_version";
constexpr uint32_t kMaxPageSize = 1000;
constexpr uint32_t kDefaultPageSize = 100;

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

absl::StatusOr<std::unique_ptr<RocksDbKernelStore>> RocksDbKernelStore::Open(
    const std::string& path) {
  // RocksDB creates the store's directory but not its parents.
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Damage RocksDB would open over, dropping records and deleting files
  // (see rocksdb_store_check.cc): refused here, before anything is written.
  internal::Inspection before = internal::Inspect(path, /*deep=*/false);
  if (!before.damage.empty()) {
    if (internal::Locked(path)) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "STORE_LOCKED",
                       absl::StrCat("store: open ", path, ": its LOCK is held (is another coordinator using this --db?)"));
    }
    return MakeError(absl::StatusCode::kDataLoss, "STORE_CORRUPT",
                     absl::StrCat("store ", path, " is damaged and was not opened (no file was changed): ",
                                  absl::StrJoin(before.damage, "; "),
                                  ". `tir-coordinator --verify-store --db=", path,
                                  "` reports it whole; `tir-coordinator --repair-store --db=", path,
                                  "` salvages what can be read, keeps a copy of every file and says what was lost"));
  }
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

absl::Status RocksDbKernelStore::Checkpoint(const std::string& dir) {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // Never flushed for it: the copy takes the live write-ahead log with it
  // (copied, up to the last synced write), so it opens as this store would
  // after a crash at that moment, every acknowledged write in it.
  if (s.ok()) s = checkpoint->CreateCheckpoint(dir, std::numeric_limits<uint64_t>::max());
  if (!s.ok()) {
    return MakeError(absl::StatusCode::kInternal, "CHECKPOINT_FAILED",
                     absl::StrCat("cannot checkpoint the store into ", dir, ": ", s.ToString()));
  }
  return absl::OkStatus();
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
