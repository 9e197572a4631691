#include "server/store/checkpoints.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::store {

Checkpoints::Checkpoints(RocksDbKernelStore &store, std::string dir, absl::Duration interval, int keep)
    : store_(store), dir_(std::move(dir)), interval_(interval), keep_(std::max(1, keep)) {
  thread_ = std::thread([this] { Loop(); });
}

Checkpoints::~Checkpoints() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void Checkpoints::Loop() {
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) return;
    }
    absl::StatusOr<std::string> taken = Take();
    if (taken.ok()) {
      std::fprintf(stderr, "tir-coordinator: store checkpoint %s\n", taken->c_str());
    } else {
      std::fprintf(stderr, "tir-coordinator: %s\n", std::string(taken.status().message()).c_str());
    }
  }
}

absl::StatusOr<std::string> Checkpoints::Take() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return MakeError(absl::StatusCode::kInternal, "CHECKPOINT_FAILED",
                     absl::StrCat("cannot create ", dir_, ": ", ec.message()));
  }
  // Sortable by time; two in one second get a suffix.
  std::string name = absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
  for (int n = 1; std::filesystem::exists(dir_ + "/" + name, ec); ++n) {
    name = absl::StrCat(absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone()), "-", n);
  }
  const std::string path = dir_ + "/" + name, partial = path + ".partial";
  std::filesystem::remove_all(partial, ec);
  TIR_RETURN_IF_ERROR(store_.Checkpoint(partial));
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    return MakeError(absl::StatusCode::kInternal, "CHECKPOINT_FAILED",
                     absl::StrCat("cannot rename ", partial, ": ", ec.message()));
  }
  // The newest `keep` whole ones stay; a partial one left by a crash goes.
  std::vector<std::string> whole;
  for (const auto &e : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string n = e.path().filename().string();
    if (absl::EndsWith(n, ".partial")) {
      std::filesystem::remove_all(e.path(), ec);
    } else if (e.is_directory()) {
      whole.push_back(n);
    }
  }
  std::sort(whole.begin(), whole.end());
  for (size_t i = 0; i + keep_ < whole.size(); ++i) std::filesystem::remove_all(dir_ + "/" + whole[i], ec);
  return path;
}

}  // namespace tir::store
