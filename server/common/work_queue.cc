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
};

WorkPool::WorkPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int k = 0; k < std::max(1, threads); ++k) threads_.emplace_back([this] { Work(); });
}

WorkPool::~WorkPool() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  for (std::thread &t : threads_) t.join();
}

absl::Status WorkPool::Admit(const std::string &limit_name) const {
  if (stopping_) return MakeError(absl::StatusCode::kUnavailable, "SHUTTING_DOWN", "the coordinator is stopping");
  if (queue_.size() >= max_queued_) {
    return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                     absl::StrCat("limit ", limit_name, "=", max_queued_, " reached: ", queue_.size(),
                                  " requests wait behind ", running_, " running"));
  }
  return absl::OkStatus();
}

absl::Status WorkPool::Run(const std::function<void()> &fn, const std::string &limit_name) {
  Task task{fn};
  absl::MutexLock l(&mu_);
  if (absl::Status s = Admit(limit_name); !s.ok()) return s;
  queue_.push_back(&task);
  mu_.Await(absl::Condition(+[](Task *t) { return t->done; }, &task));
  return absl::OkStatus();
}

absl::Status WorkPool::Submit(std::function<void()> fn, const std::string &limit_name) {
  absl::MutexLock l(&mu_);
  if (absl::Status s = Admit(limit_name); !s.ok()) return s;
  Task *task = new Task{std::move(fn)};
  task->detached = true;
  queue_.push_back(task);
  return absl::OkStatus();
}

void WorkPool::Drain() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](WorkPool *p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->queue_.empty() && p->running_ == 0; }, this));
}

size_t WorkPool::queued() const {
  absl::MutexLock l(&mu_);
  return queue_.size();
}

int WorkPool::running() const {
  absl::MutexLock l(&mu_);
  return running_;
}

void WorkPool::Work() {
  absl::MutexLock l(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](WorkPool *p) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !p->queue_.empty() || p->stopping_; }, this));
    if (queue_.empty()) return;
    Task *task = queue_.front();
    queue_.pop_front();
    ++running_;
    mu_.Unlock();
    task->fn();
    mu_.Lock();
    --running_;
    if (task->detached) {
      delete task;
    } else {
      task->done = true;
    }
  }
}

}  // namespace tir::common
