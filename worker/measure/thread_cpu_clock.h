// The calling thread's CPU clock: how the host backend times a kernel run.
//
// A host kernel runs on the runner's one thread, so the CPU time that thread
// used across a run is the kernel's own cost. Wall time (the steady clock)
// also counts the time the thread waited while the machine ran other work; on
// a busy machine that wait is larger than the differences between candidates
// and differs from run to run, so it reorders them. The thread's CPU time does
// not count the wait (only what the run itself does: memory stalls, cache
// misses and page faults are still in it, so the spread stays meaningful).

#ifndef TIR_WORKER_MEASURE_THREAD_CPU_CLOCK_H_
#define TIR_WORKER_MEASURE_THREAD_CPU_CLOCK_H_

#include "absl/status/statusor.h"

namespace tir::measure {

// CPU time used so far by the calling thread, in seconds
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)). Only differences between two
// readings on the same thread mean anything. Errors: INTERNAL with errno's
// text when the clock cannot be read.
absl::StatusOr<double> ThreadCpuSeconds();

}  // namespace tir::measure

#endif  // TIR_WORKER_MEASURE_THREAD_CPU_CLOCK_H_
