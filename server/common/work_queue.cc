#include "server/common/work_queue.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::common {

StoreWriter::StoreWriter() : thread_([this] { Run(); }) {}

StoreWriter::~StoreWriter() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void StoreWriter::Post(std::function<void()> task) {
  absl::MutexLock l(&mu_);
  tasks_.push_back(std::move(task));
  ++posted_;
}

void StoreWriter::Flush() {
  absl::MutexLock l(&mu_);
  struct Until {
    const uint64_t *done;
    uint64_t target;
  } until{&done_, posted_};
  mu_.Await(absl::Condition(+[](Until *u) { return *u->done >= u->target; }, &until));
}

size_t StoreWriter::pending() const {
  absl::MutexLock l(&mu_);
  return tasks_.size();
}

void StoreWriter::Run() {
  absl::MutexLock l(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](StoreWriter *w) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !w->tasks_.empty() || w->stopping_; }, this));
    if (tasks_.empty()) return;  // stopping, and everything ran
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    mu_.Unlock();
    task();
    mu_.Lock();
    ++done_;
  }
}

struct WorkPool::Task {
  std::function<void()> fn;
  bool done = false;
  bool detached = false;  // Submit's: deleted once run
  std::string client;     // whose turn it ran in (set when taken)
};

WorkPool::WorkPool(int threads, size_t max_queued)
    : max_queued_(max_queued),
      max_per_client_(std::max<size_t>(1, max_queued / 8)),
      threads_count_(std::max(1, threads)),
      max_running_per_client_(std::max(1, std::max(1, threads) / 2)) {
  for (int k = 0; k < std::max(1, threads); ++k) threads_.emplace_back([this] { Work(); });
}

WorkPool::~WorkPool() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  for (std::thread &t : threads_) t.join();
}

absl::Status WorkPool::Admit(const std::string &limit_name, const std::string &client) const {
  if (stopping_) return MakeError(absl::StatusCode::kUnavailable, "SHUTTING_DOWN", "the coordinator is stopping");
  if (waiting_ >= max_queued_) {
    return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                     absl::StrCat("limit ", limit_name, "=", max_queued_, " reached: ", waiting_,
                                  " requests wait behind ", running_, " running"));
  }
  if (!client.empty()) {
    auto it = queues_.find(client);
    if (it != queues_.end() && it->second.size() >= max_per_client_) {
      return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                       absl::StrCat("limit ", limit_name, "=", max_queued_, " reached for this client: ",
                                    it->second.size(), " of its requests wait (one client may have an eighth, ",
                                    max_per_client_, ")"));
    }
  }
  return absl::OkStatus();
}

void WorkPool::Enqueue(Task *task, const std::string &client) {
  std::deque<Task *> &q = queues_[client];
  if (q.empty()) turns_.push_back(client);
  q.push_back(task);
  ++waiting_;
}

absl::Status WorkPool::Run(const std::function<void()> &fn, const std::string &limit_name, const std::string &client) {
  Task task{fn};
  absl::MutexLock l(&mu_);
  if (absl::Status s = Admit(limit_name, client); !s.ok()) return s;
  Enqueue(&task, client);
  mu_.Await(absl::Condition(+[](Task *t) { return t->done; }, &task));
  return absl::OkStatus();
}

absl::Status WorkPool::Submit(std::function<void()> fn, const std::string &limit_name, const std::string &client) {
  absl::MutexLock l(&mu_);
  if (absl::Status s = Admit(limit_name, client); !s.ok()) return s;
  Task *task = new Task{std::move(fn)};
  task->detached = true;
  Enqueue(task, client);
  return absl::OkStatus();
}

void WorkPool::Drain() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](WorkPool *p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->waiting_ == 0 && p->running_ == 0; }, this));
}

size_t WorkPool::queued() const {
  absl::MutexLock l(&mu_);
  return waiting_;
}

int WorkPool::running() const {
  absl::MutexLock l(&mu_);
  return running_;
}

bool WorkPool::Eligible(const std::string &client) const {
  if (client.empty()) return true;
  auto it = running_by_client_.find(client);
  if (it == running_by_client_.end()) return true;
  // A client with a task running takes another only under its share, and
  // only while a thread stays free for a client with nothing running: two
  // clients (or any number) each at its share cannot hold every thread.
  return it->second < max_running_per_client_ && running_ + 1 < threads_count_;
}

bool WorkPool::HasNext() const {
  for (const std::string &c : turns_) {
    if (Eligible(c)) return true;
  }
  return false;
}

WorkPool::Task *WorkPool::Next() {
  // A client with nothing running goes first (a newcomer waits for a free
  // thread, not for every busy client's next task), then the turns in order.
  size_t i = 0;
  while (i < turns_.size() && running_by_client_.count(turns_[i]) > 0) ++i;
  if (i == turns_.size()) {
    for (i = 0; i < turns_.size() && !Eligible(turns_[i]); ++i) {
    }
  }
  if (i < turns_.size()) {
    auto q = queues_.find(turns_[i]);
    Task *task = q->second.front();
    q->second.pop_front();
    --waiting_;
    std::string who = std::move(turns_[i]);
    turns_.erase(turns_.begin() + static_cast<std::ptrdiff_t>(i));
    if (q->second.empty()) {
      queues_.erase(q);
    } else {
      turns_.push_back(who);  // one task, then the back of the line
    }
    task->client = std::move(who);
    return task;
  }
  return nullptr;
}

void WorkPool::Work() {
  absl::MutexLock l(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](WorkPool *p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->stopping_ || p->HasNext(); }, this));
    Task *task = Next();
    if (task == nullptr) {
      // Stopping: what waits still runs (each client under its share of
      // the threads, its running tasks finishing first).
      if (waiting_ == 0) return;
      mu_.Await(absl::Condition(
          +[](WorkPool *p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->HasNext() || p->waiting_ == 0; }, this));
      continue;
    }
    ++running_by_client_[task->client];
    ++running_;
    mu_.Unlock();
    task->fn();
    mu_.Lock();
    --running_;
    if (--running_by_client_[task->client] == 0) running_by_client_.erase(task->client);
    // Its turn was the task just run: the client goes behind those waiting.
    if (auto t = std::find(turns_.begin(), turns_.end(), task->client); t != turns_.end()) {
      std::string who = std::move(*t);
      turns_.erase(t);
      turns_.push_back(std::move(who));
    }
    if (task->detached) {
      delete task;
    } else {
      task->done = true;
    }
  }
}

}  // namespace tir::common
