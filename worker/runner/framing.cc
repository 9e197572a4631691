#include "worker/runner/framing.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/util/delimited_message_util.h"

namespace tir::runner {

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite &message) {
  const size_t size = message.ByteSizeLong();
  if (size > kMaxFrameBytes) return absl::InvalidArgumentError(absl::StrCat("cannot frame a message of ", size, " bytes"));
  google::protobuf::io::FileOutputStream out(fd);
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(message, &out) || !out.Flush()) {
    return absl::UnavailableError("the other end of the pipe is gone");
  }
  return absl::OkStatus();
}

absl::Status ReadFrame(int fd, google::protobuf::MessageLite *message) {
  // The stream reads what the pipe holds: the one message the other end
  // wrote (each end writes one, then waits for the answer), never more.
  google::protobuf::io::FileInputStream in(fd);
  google::protobuf::io::CodedInputStream coded(&in);
  coded.SetTotalBytesLimit(static_cast<int>(kMaxFrameBytes) + 16);
  bool eof = false;
  if (google::protobuf::util::ParseDelimitedFromCodedStream(message, &coded, &eof)) return absl::OkStatus();
  if (eof) return absl::UnavailableError("pipe closed");
  if (in.GetErrno() != 0) return absl::UnavailableError(absl::StrCat("pipe read failed (errno ", in.GetErrno(), ")"));
  return absl::DataLossError("an oversized, truncated or unparsable frame");
}

}  // namespace tir::runner
