// What the coordinator knows about the shapes its dynamic bundles serve:
// for each (bundle key, shape) the verification record (ShapeVerification:
// every kernel checked against the reference at exactly that shape), the
// sized copy served for it (signed, ready to answer a hit), and per bucket
// the hits and verified shapes the dashboard shows.
//
// Records are persisted by the coordinator ("shape/<key>/<shape>" in the
// jobs family) and read back on a miss here; this is the in-memory side.
// Bounded: at `max_entries` records (or sized copies), or sized copies of
// `max_served_bytes` in all, the oldest half is dropped (records reload
// from the store, copies are sized again). A new bundle under a key (retuned)
// or a deleted one forgets the key's records: they were for other kernels.
//
// Thread-safe (its own mutex: the cache-hit path never takes the
// coordinator's).

#ifndef TIR_SERVER_BUNDLES_SHAPE_RECORDS_H_
#define TIR_SERVER_BUNDLES_SHAPE_RECORDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tir/v1/kernel.pb.h"
#include "tir/v1/status.pb.h"

namespace tir::bundles {

class ShapeRecords {
 public:
  explicit ShapeRecords(size_t max_entries = 65536, size_t max_served_bytes = size_t{256} << 20)
      : max_entries_(max_entries), max_served_bytes_(max_served_bytes) {}

  std::optional<tir::v1::ShapeVerification> Find(const std::string &key, const std::string &shape) const;
  void Put(const std::string &key, const std::string &shape, const tir::v1::ShapeVerification &record);

  // The sized, signed copy served for (key, shape), once made.
  std::optional<tir::v1::KernelBundle> Served(const std::string &key, const std::string &shape) const;
  void PutServed(const std::string &key, const std::string &shape, const tir::v1::KernelBundle &bundle);

  // Drops everything about `key`.
  void Forget(const std::string &key);

  // Bucket statistics: a hit answered from (key)'s bundle, a shape verified
  // or refused there.
  void NoteHit(const std::string &key, const tir::v1::KernelBundle &bundle);
  void NoteVerified(const std::string &key, const tir::v1::KernelBundle &bundle, bool passed);
  // The buckets with the most hits, at most `n`.
  std::vector<tir::v1::BucketStatus> Top(size_t n) const;

 private:
  static std::string Id(const std::string &key, const std::string &shape) { return key + "|" + shape; }
  tir::v1::BucketStatus &Bucket(const std::string &key, const tir::v1::KernelBundle &bundle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the older half of `map` when it holds max_entries_ (or `force`).
  template <typename Map>
  void Bound(Map &map, bool force = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_entries_, max_served_bytes_;
  mutable absl::Mutex mu_;
  // Insertion order is kept by a counter so the oldest go first.
  struct Record {
    tir::v1::ShapeVerification record;
    uint64_t order = 0;
  };
  struct Copy {
    tir::v1::KernelBundle bundle;
    uint64_t order = 0;
    size_t bytes = 0;
  };
  size_t served_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Record> records_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Copy> served_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, tir::v1::BucketStatus> buckets_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

// "0:0=257..512 1=5..8" from a bundle's buckets.
std::string BucketText(const tir::v1::KernelBundle &bundle);

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_SHAPE_RECORDS_H_
