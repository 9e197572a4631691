#include "compiler/nvrtc/compile_cache.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/ThreadPool.h"

namespace tir::nvrtc {
namespace {

std::string ReadFile(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

CompileCache::CompileCache(std::string directory) : directory_(std::move(directory)) {
  if (!directory_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(directory_, ec);
  }
}

std::string CompileCache::Key(const std::string &source, const CompileOptions &options) {
  llvm::SHA256 h;
  auto add = [&](const std::string &s) {
    const std::string len = absl::StrCat(s.size(), ":");
    h.update(llvm::StringRef(len));
    h.update(llvm::StringRef(s));
  };
  add("tir-nvrtc-cache-v1");
  add(Version());
  add(source);
  add(options.arch);
  add(options.line_info ? "lineinfo" : "");
  for (const std::string &o : options.extra_options) add(o);
  for (const auto &[name, text] : options.headers) {
    add(name);
    add(text);
  }
  const std::array<uint8_t, 32> d = h.final();
  return llvm::toHex(llvm::ArrayRef<uint8_t>(d.data(), d.size()), /*LowerCase=*/true);
}

absl::StatusOr<CompiledKernel> CompileCache::Compile(const std::string &source, const CompileOptions &options,
                                                     bool *hit) {
  const std::string key = Key(source, options);
  std::shared_ptr<Entry> entry;
  bool owner = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      entry = std::make_shared<Entry>();
      entries_[key] = entry;
      owner = true;
    } else {
      entry = it->second;
    }
  }
  if (!owner) {
    // Someone else compiles (or compiled) it: wait for the result.
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(+[](Entry *e) { return e->done; }, entry.get()));
    ++stats_.hits;
    if (hit) *hit = true;
    return entry->result;
  }
  absl::StatusOr<CompiledKernel> result;
  bool fromDisk = false;
  const std::filesystem::path file = directory_.empty() ? std::filesystem::path() : std::filesystem::path(directory_) / (key + ".cubin");
  if (!directory_.empty() && std::filesystem::exists(file)) {
    CompiledKernel k;
    k.cubin = ReadFile(file);
    k.log = ReadFile(std::filesystem::path(directory_) / (key + ".log"));
    if (std::filesystem::exists(std::filesystem::path(directory_) / (key + ".ptx"))) {
      k.ptx = ReadFile(std::filesystem::path(directory_) / (key + ".ptx"));
    }
    std::ifstream meta(std::filesystem::path(directory_) / (key + ".meta"));
    meta >> k.registers >> k.spill_bytes >> k.shared_bytes >> k.seconds;
    result = k;
    fromDisk = true;
  } else {
    result = CompileToCubin(source, options);
    if (result.ok() && !directory_.empty()) {
      const std::string tmp = file.string() + ".tmp";
      std::ofstream(tmp, std::ios::binary) << result->cubin;
      std::ofstream(std::filesystem::path(directory_) / (key + ".log")) << result->log;
      std::ofstream(std::filesystem::path(directory_) / (key + ".ptx")) << result->ptx;
      std::ofstream(std::filesystem::path(directory_) / (key + ".meta"))
          << result->registers << " " << result->spill_bytes << " " << result->shared_bytes << " " << result->seconds;
      std::error_code ec;
      std::filesystem::rename(tmp, file, ec);  // atomic publish
    }
  }
  absl::MutexLock lock(&mu_);
  entry->result = result;
  entry->done = true;
  if (fromDisk) ++stats_.hits; else ++stats_.misses;
  if (hit) *hit = fromDisk;
  return result;
}

std::vector<absl::StatusOr<CompiledKernel>> CompileCache::CompileAll(
    const std::vector<std::pair<std::string, CompileOptions>> &jobs, int threads) {
  std::vector<absl::StatusOr<CompiledKernel>> results(jobs.size(), absl::UnknownError("not run"));
  llvm::ThreadPool pool(llvm::hardware_concurrency(static_cast<unsigned>(std::max(1, threads))));
  for (size_t i = 0; i < jobs.size(); ++i) {
    pool.async([this, &jobs, &results, i] { results[i] = Compile(jobs[i].first, jobs[i].second); });
  }
  pool.wait();
  return results;
}

CompileCache::Stats CompileCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace tir::nvrtc
