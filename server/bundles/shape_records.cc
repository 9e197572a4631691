#include "server/bundles/shape_records.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/reference/DynamicShapes.h"

namespace tir::bundles {

std::string BucketText(const tir::v1::KernelBundle &bundle) { return reference::FormatBucket(bundle.buckets()); }

std::optional<tir::v1::ShapeVerification> ShapeRecords::Find(const std::string &key, const std::string &shape) const {
  absl::MutexLock l(&mu_);
  auto it = records_.find(Id(key, shape));
  if (it == records_.end()) return std::nullopt;
  return it->second.record;
}

template <typename Map>
void ShapeRecords::Bound(Map &map, bool force) {
  if (map.empty() || (!force && map.size() < max_entries_)) return;
  std::vector<uint64_t> orders;
  for (const auto &[id, e] : map) orders.push_back(e.order);
  std::nth_element(orders.begin(), orders.begin() + orders.size() / 2, orders.end());
  const uint64_t cut = orders[orders.size() / 2];
  for (auto it = map.begin(); it != map.end();) it = it->second.order < cut ? map.erase(it) : std::next(it);
}

void ShapeRecords::Put(const std::string &key, const std::string &shape, const tir::v1::ShapeVerification &record) {
  absl::MutexLock l(&mu_);
  Bound(records_);
  records_[Id(key, shape)] = {record, next_++};
}

std::optional<tir::v1::KernelBundle> ShapeRecords::Served(const std::string &key, const std::string &shape) const {
  absl::MutexLock l(&mu_);
  auto it = served_.find(Id(key, shape));
  if (it == served_.end()) return std::nullopt;
  return it->second.bundle;
}

void ShapeRecords::PutServed(const std::string &key, const std::string &shape, const tir::v1::KernelBundle &bundle) {
  absl::MutexLock l(&mu_);
  const size_t bytes = bundle.ByteSizeLong();
  if (bytes > max_served_bytes_) return;  // served, not kept
  Bound(served_, served_bytes_ + bytes > max_served_bytes_);
  served_bytes_ = 0;
  for (const auto &[id, c] : served_) served_bytes_ += c.bytes;
  Copy &c = served_[Id(key, shape)];
  served_bytes_ += bytes - c.bytes;
  c = {bundle, next_++, bytes};
}

void ShapeRecords::Forget(const std::string &key) {
  absl::MutexLock l(&mu_);
  const std::string prefix = key + "|";
  for (auto *m : {&records_}) {
    for (auto it = m->lower_bound(prefix); it != m->end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = m->erase(it);
    }
  }
  for (auto it = served_.lower_bound(prefix); it != served_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    served_bytes_ -= it->second.bytes;
    it = served_.erase(it);
  }
  buckets_.erase(key);
}

tir::v1::BucketStatus &ShapeRecords::Bucket(const std::string &key, const tir::v1::KernelBundle &bundle) {
  auto it = buckets_.find(key);
  if (it != buckets_.end()) return it->second;
  if (buckets_.size() >= 4096) {
    // Keep the busier half.
    std::vector<uint64_t> hits;
    for (const auto &[k, b] : buckets_) hits.push_back(b.hits());
    std::nth_element(hits.begin(), hits.begin() + hits.size() / 2, hits.end());
    const uint64_t cut = hits[hits.size() / 2];
    for (auto i = buckets_.begin(); i != buckets_.end();) i = i->second.hits() <= cut ? buckets_.erase(i) : std::next(i);
  }
  tir::v1::BucketStatus &b = buckets_[key];
  b.set_key(key);
  b.set_arch(bundle.arch());
  b.set_bucket(BucketText(bundle));
  if (!bundle.kernels().empty()) b.set_graph(bundle.kernels(0).graph().name());
  return b;
}

void ShapeRecords::NoteHit(const std::string &key, const tir::v1::KernelBundle &bundle) {
  absl::MutexLock l(&mu_);
  tir::v1::BucketStatus &b = Bucket(key, bundle);
  b.set_hits(b.hits() + 1);
}

void ShapeRecords::NoteVerified(const std::string &key, const tir::v1::KernelBundle &bundle, bool passed) {
  absl::MutexLock l(&mu_);
  tir::v1::BucketStatus &b = Bucket(key, bundle);
  if (passed) b.set_shapes_verified(b.shapes_verified() + 1); else b.set_shapes_failed(b.shapes_failed() + 1);
}

std::vector<tir::v1::BucketStatus> ShapeRecords::Top(size_t n) const {
  absl::MutexLock l(&mu_);
  std::vector<tir::v1::BucketStatus> out;
  for (const auto &[k, b] : buckets_) out.push_back(b);
  std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.hits() != b.hits() ? a.hits() > b.hits() : a.key() < b.key();
  });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace tir::bundles
