// The coordinator's two background parts that take work off its lock and
// off gRPC's handler threads:
//  - StoreWriter: one thread running store writes (and what follows them)
//    in the order they were posted, so no RocksDB write, synced or not,
//    happens while the coordinator's mutex is held;
//  - WorkPool: a fixed number of threads and a bounded queue for the CPU
//    work of a request (planning, emission, default compiles); a caller
//    waits for its task, and a full queue refuses with LIMIT_EXCEEDED
//    instead of piling up. The queue is fair across clients: each client
//    has its own, served in turn (one task each, round robin); at most an
//    eighth of the bound waits for any one client, one client's tasks take
//    at most half the threads at once (at least one), a client's second
//    task starts only while another thread stays free (so busy clients
//    together never hold the last thread), and a client with nothing
//    running goes before those with tasks running. A client that
//    sends a hundred heavy requests keeps the other threads free for the
//    rest; a newcomer waits for the first thread to free, not for a task of
//    every busy client.

#ifndef TIR_SERVER_COMMON_WORK_QUEUE_H_
#define TIR_SERVER_COMMON_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace tir::common {

class StoreWriter {
 public:
  StoreWriter();
  ~StoreWriter();  // runs what is posted, then stops
  StoreWriter(const StoreWriter &) = delete;
  StoreWriter &operator=(const StoreWriter &) = delete;

  // Runs `task` on the writer thread after everything posted before it.
  void Post(std::function<void()> task);
  // Returns once everything posted before the call has run.
  void Flush();
  // Tasks posted and not yet run.
  size_t pending() const;

 private:
  void Run();
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  uint64_t posted_ ABSL_GUARDED_BY(mu_) = 0, done_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class WorkPool {
 public:
  // `threads` workers (at least 1) and at most `max_queued` tasks waiting.
  WorkPool(int threads, size_t max_queued);
  ~WorkPool();
  WorkPool(const WorkPool &) = delete;
  WorkPool &operator=(const WorkPool &) = delete;

  // Runs `task` on a pool thread and waits for it, in `client`'s turn ("":
  // the coordinator's own work, not capped per client). Errors:
  // RESOURCE_EXHAUSTED / LIMIT_EXCEEDED naming `limit_name` when
  // `max_queued` tasks wait already, or max_queued / 8 of `client`'s (the
  // task does not run); UNAVAILABLE when the pool is stopping. A client's
  // tasks run on at most half the threads at once.
  absl::Status Run(const std::function<void()> &task, const std::string &limit_name = "maxPlanningQueue",
                   const std::string &client = "");
  // Queues `task` for a pool thread and returns at once. Errors: as Run's.
  absl::Status Submit(std::function<void()> task, const std::string &limit_name, const std::string &client = "");

  // Returns once no task waits or runs.
  void Drain();
  // Tasks waiting and running now.
  size_t queued() const;
  int running() const;

 private:
  struct Task;
  void Work();
  absl::Status Admit(const std::string &limit_name, const std::string &client) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Enqueue(Task *task, const std::string &client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next task a thread may take (a client in turn under its share of
  // the threads), or null.
  Task *Next() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasNext() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Eligible(const std::string &client) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const size_t max_queued_, max_per_client_;
  const int threads_count_;
  int max_running_per_client_ = 1;
  mutable absl::Mutex mu_;
  // Waiting tasks by client, and the clients with any in the order they are
  // served.
  std::map<std::string, std::deque<Task *>> queues_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(mu_);
  size_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> running_by_client_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tir::common

#endif  // TIR_SERVER_COMMON_WORK_QUEUE_H_
