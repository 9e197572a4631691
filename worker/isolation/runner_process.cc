#include "worker/isolation/runner_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "worker/runner/framing.h"

extern char **environ;

namespace tir::isolation {
namespace {

absl::Status RunnerFailed(const std::string &m) {
  return MakeError(absl::StatusCode::kUnavailable, "RUNNER_FAILED", m);
}

absl::Status RunnerUnavailable(const std::string &path, const std::string &why) {
  return MakeError(absl::StatusCode::kUnavailable, "RUNNER_UNAVAILABLE",
                   absl::StrCat("the runner ", path, " did not start: ", why));
}

// A descriptor at 10 or above, close-on-exec, replacing `fd`.
int High(int fd) {
  const int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

}  // namespace

RunnerProcess::RunnerProcess(std::vector<std::string> argv, absl::Duration hello_deadline)
    : argv_(std::move(argv)), hello_deadline_(hello_deadline) {
  // A write to a child that just died must be an error, not a signal that
  // ends the daemon.
  signal(SIGPIPE, SIG_IGN);
}

RunnerProcess::~RunnerProcess() { Shutdown(); }

absl::Status RunnerProcess::Start() {
  int down[2], up[2];
  if (pipe(down) != 0) return RunnerFailed(absl::StrCat("pipe: ", strerror(errno)));
  if (pipe(up) != 0) {
    close(down[0]);
    close(down[1]);
    return RunnerFailed(absl::StrCat("pipe: ", strerror(errno)));
  }
  for (int *fd : {&down[0], &down[1], &up[0], &up[1]}) *fd = High(*fd);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, down[0], 3);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, up[1], 4);
  std::vector<char *> args;
  for (std::string &a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(down[0]);
  close(up[1]);
  if (rc != 0) {
    close(down[1]);
    close(up[0]);
    return RunnerUnavailable(argv_[0], strerror(rc));
  }
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  current_prepared_ = false;
  // The hello: the child started and its backend is ready.
  tir::v1::RunnerResponse hello;
  std::string why;
  switch (Await(hello_deadline_, &hello, &why)) {
    case Outcome::kDied: return RunnerUnavailable(argv_[0], absl::StrCat(why, " before it said hello"));
    case Outcome::kTimedOut:
      return RunnerUnavailable(argv_[0], absl::StrCat("no hello within ", absl::FormatDuration(hello_deadline_)));
    case Outcome::kAnswered: break;
  }
  if (!hello.has_hello()) {
    Reap(true, nullptr);
    return RunnerUnavailable(argv_[0], "its first message was not a hello (is it tir-worker-runner?)");
  }
  if (!hello.error_reason().empty()) {
    Reap(false, nullptr);
    return RunnerUnavailable(argv_[0], absl::StrCat(hello.error_reason(), ": ", hello.error_message()));
  }
  if (started_once_) ++restarts_;
  started_once_ = true;
  return absl::OkStatus();
}

absl::Status RunnerProcess::EnsureStarted() {
  if (pid_ > 0) return absl::OkStatus();
  return Start();
}

void RunnerProcess::Reap(bool kill, std::string *how) {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ <= 0) return;
  if (kill) ::kill(pid_, SIGKILL);
  int status = 0;
  // The pipe reported the death; the exit status follows within moments.
  for (int i = 0; i < 2000; ++i) {
    const pid_t r = waitpid(pid_, &status, i < 1000 ? WNOHANG : 0);
    if (r == pid_ || r < 0) break;
    if (i == 999) ::kill(pid_, SIGKILL);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (how != nullptr) {
    if (WIFSIGNALED(status)) {
      *how = absl::StrCat("the runner was ended by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
    } else if (WIFEXITED(status)) {
      *how = absl::StrCat("the runner exited with code ", WEXITSTATUS(status));
    } else {
      *how = "the runner stopped";
    }
  }
  pid_ = -1;
}

RunnerProcess::Outcome RunnerProcess::Call(const tir::v1::RunnerRequest &request, absl::Duration deadline,
                                           tir::v1::RunnerResponse *response, std::string *died) {
  if (!runner::WriteFrame(to_child_, request).ok()) {
    Reap(false, died);
    return Outcome::kDied;
  }
  return Await(deadline, response, died);
}

RunnerProcess::Outcome RunnerProcess::Await(absl::Duration deadline, tir::v1::RunnerResponse *response,
                                            std::string *died) {
  const absl::Time end = absl::Now() + deadline;
  for (;;) {
    const int64_t left = absl::ToInt64Milliseconds(end - absl::Now());
    if (left <= 0) {
      Reap(true, nullptr);
      return Outcome::kTimedOut;
    }
    pollfd p{from_child_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    if (!runner::ReadFrame(from_child_, response).ok()) {
      Reap(false, died);
      return Outcome::kDied;
    }
    if (response->runner_exiting()) Reap(false, nullptr);  // the next request starts a fresh one
    return Outcome::kAnswered;
  }
}

absl::Status RunnerProcess::Prepare(const tir::v1::WorkItem &item, absl::Duration deadline) {
  current_ = item;
  current_prepared_ = false;
  if (pid_ <= 0) TIR_RETURN_IF_ERROR(Start());
  tir::v1::RunnerRequest request;
  *request.mutable_prepare() = item;
  tir::v1::RunnerResponse response;
  std::string died;
  switch (Call(request, deadline, &response, &died)) {
    case Outcome::kDied: return RunnerFailed("preparing the work item: " + died);
    case Outcome::kTimedOut:
      return RunnerFailed(absl::StrCat("preparing the work item took over ", absl::FormatDuration(deadline)));
    case Outcome::kAnswered: break;
  }
  if (!response.error_reason().empty()) {
    return MakeError(absl::StatusCode::kInvalidArgument, response.error_reason(), response.error_message());
  }
  current_prepared_ = true;
  return absl::OkStatus();
}

absl::StatusOr<tir::v1::CandidateResult> RunnerProcess::Measure(uint32_t candidate, const std::string &binary_path,
                                                                absl::Duration deadline) {
  if (!current_) return MakeError(absl::StatusCode::kFailedPrecondition, "NO_ITEM", "no work item is prepared");
  if (pid_ <= 0 || !current_prepared_) {
    // A fresh child after a fault: make the item current again first.
    TIR_RETURN_IF_ERROR(Prepare(*current_, std::max(deadline, absl::Seconds(60))));
  }
  tir::v1::RunnerRequest request;
  request.set_candidate(candidate);
  request.set_binary_path(binary_path);
  tir::v1::RunnerResponse response;
  std::string died;
  tir::v1::CandidateResult result;
  if (candidate < static_cast<uint32_t>(current_->candidates_size())) {
    result.set_candidate_index(current_->candidates(candidate).candidate_index());
  }
  switch (Call(request, deadline, &response, &died)) {
    case Outcome::kDied:
      result.mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
      result.mutable_verification()->set_detail(died);
      return result;
    case Outcome::kTimedOut:
      result.mutable_verification()->set_verdict(tir::v1::VERDICT_TIMEOUT);
      result.mutable_verification()->set_detail(
          absl::StrCat("no answer within ", absl::FormatDuration(deadline), "; the runner was killed"));
      return result;
    case Outcome::kAnswered: break;
  }
  if (!response.error_reason().empty()) {
    return MakeError(absl::StatusCode::kInvalidArgument, response.error_reason(), response.error_message());
  }
  return response.result();
}

void RunnerProcess::Shutdown() {
  if (pid_ <= 0) return;
  // Closing its input ends the runner's loop; a runner stuck in a kernel is killed.
  close(to_child_);
  to_child_ = -1;
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Reap(true, nullptr);
}

}  // namespace tir::isolation
