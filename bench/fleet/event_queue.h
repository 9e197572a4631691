// The simulated clock and its event queue.
//
// Events are small typed records (kind + two integer arguments), not
// closures: the fleet model pops tens of millions of them per scenario, and a
// switch over `kind` keeps each one a few nanoseconds. Ties in time pop in
// the order they were pushed (a sequence number), so a run is deterministic
// for a given seed.

#ifndef TIR_BENCH_FLEET_EVENT_QUEUE_H_
#define TIR_BENCH_FLEET_EVENT_QUEUE_H_

#include <cstdint>
#include <queue>
#include <vector>

namespace tir::fleet {

struct Event {
  double time = 0;  // seconds of simulated time
  uint64_t seq = 0;
  int kind = 0;
  int32_t a = 0;
  int64_t b = 0;
};

class EventQueue {
 public:
  // Schedules `kind(a, b)` at `time` (never before now()).
  void Push(double time, int kind, int32_t a = 0, int64_t b = 0) {
    heap_.push(Event{time < now_ ? now_ : time, next_seq_++, kind, a, b});
  }
  bool empty() const { return heap_.empty(); }
  // Removes the earliest event and advances the clock to its time.
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    now_ = e.time;
    ++popped_;
    return e;
  }
  double now() const { return now_; }
  double next_time() const { return heap_.top().time; }
  uint64_t popped() const { return popped_; }

 private:
  struct Later {
    bool operator()(const Event &x, const Event &y) const {
      return x.time != y.time ? x.time > y.time : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  double now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t popped_ = 0;
};

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_EVENT_QUEUE_H_
