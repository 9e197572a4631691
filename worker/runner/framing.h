// Protobuf messages on a pipe, delimited as protobuf's own utilities write
// them (a varint length, then the message: util/delimited_message_util.h).
// The daemon and its runner take turns: each end writes one message and
// waits for the other's, so a reader never finds more than one in the pipe.

#ifndef TIR_WORKER_RUNNER_FRAMING_H_
#define TIR_WORKER_RUNNER_FRAMING_H_

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"

namespace tir::runner {

// Largest frame accepted (work items carry sources and graphs, not tensors).
inline constexpr uint32_t kMaxFrameBytes = 256u << 20;

// Writes one frame. Errors: UNAVAILABLE when the other end is gone.
absl::Status WriteFrame(int fd, const google::protobuf::MessageLite &message);

// Reads one frame. Errors: UNAVAILABLE at end of file or on a read error,
// DATA_LOSS for an oversized, truncated or unparsable frame.
absl::Status ReadFrame(int fd, google::protobuf::MessageLite *message);

}  // namespace tir::runner

#endif  // TIR_WORKER_RUNNER_FRAMING_H_
