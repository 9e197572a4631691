#include "worker/runner/framing.h"

#include <errno.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace tir::runner {
namespace {

bool WriteAll(int fd, const char *data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char *data, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite &message) {
  std::string body;
  if (!message.SerializeToString(&body) || body.size() > kMaxFrameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cannot frame a message of ", body.size(), " bytes"));
  }
  const uint32_t n = static_cast<uint32_t>(body.size());
  const char header[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                          static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
  if (!WriteAll(fd, header, 4) || !WriteAll(fd, body.data(), body.size())) {
    return absl::UnavailableError("the other end of the pipe is gone");
  }
  return absl::OkStatus();
}

absl::Status ReadFrame(int fd, google::protobuf::MessageLite *message) {
  unsigned char header[4];
  if (!ReadAll(fd, reinterpret_cast<char *>(header), 4)) return absl::UnavailableError("pipe closed");
  const uint32_t n = header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
  if (n > kMaxFrameBytes) return absl::DataLossError(absl::StrCat("frame of ", n, " bytes is over the limit"));
  std::string body(n, '\0');
  if (!ReadAll(fd, body.data(), n)) return absl::UnavailableError("pipe closed inside a frame");
  if (!message->ParseFromString(body)) return absl::DataLossError("unparsable frame");
  return absl::OkStatus();
}

}  // namespace tir::runner
