#include "server/store/checkpoints.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
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
  // The store's copies: this user's directory, not a link, nobody else's to
  // read or plant in.
  struct stat st;
  if (ec || ::lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      ::chmod(dir_.c_str(), 0700) != 0) {
    return MakeError(absl::StatusCode::kInternal, "CHECKPOINT_FAILED",
                     absl::StrCat("cannot use ", dir_, " for checkpoints: not a directory of this user's",
                                  ec ? ": " + ec.message() : ""));
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
  // Only what this names (a volume's lost+found and anything else is left
  // alone and not counted).
  static const std::regex kName(R"(\d{8}T\d{6}Z(-\d+)?)");
  std::vector<std::string> whole;
  for (const auto &e : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string n = e.path().filename().string();
    if (absl::EndsWith(n, ".partial") && std::regex_match(n.substr(0, n.size() - 8), kName)) {
      std::filesystem::remove_all(e.path(), ec);
    } else if (e.is_directory(ec) && !e.is_symlink(ec) && std::regex_match(n, kName)) {
      whole.push_back(n);
    }
  }
  // By time, then by the suffix of those taken in one second.
  std::sort(whole.begin(), whole.end(), [](const std::string &a, const std::string &b) {
    const std::string ta = a.substr(0, 16), tb = b.substr(0, 16);
    if (ta != tb) return ta < tb;
    return std::atoi(a.size() > 17 ? a.c_str() + 17 : "0") < std::atoi(b.size() > 17 ? b.c_str() + 17 : "0");
  });
  for (size_t i = 0; i + keep_ < whole.size(); ++i) std::filesystem::remove_all(dir_ + "/" + whole[i], ec);
  return path;
}

}  // namespace tir::store
