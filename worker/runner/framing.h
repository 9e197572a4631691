// Length-prefixed protobuf messages on a file descriptor: a 4-byte
// little-endian length, then the serialized message.

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
// DATA_LOSS for an oversized or unparsable frame.
absl::Status ReadFrame(int fd, google::protobuf::MessageLite *message);

}  // namespace tir::runner

#endif  // TIR_WORKER_RUNNER_FRAMING_H_
