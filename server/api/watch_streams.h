// WatchOperation without a thread per stream: each stream is a callback
// reactor, and one pump thread looks at every stream's operation every
// 100 ms, writing it when it changed. A stream whose client does not read
// holds no thread and at most one message: the next write waits for the
// last (until the client reads or its connection goes). Every
// stream of one operation version writes the same serialized bytes (one
// copy, shared by reference however many streams send it). At most
// kMaxPerClient streams per client (an identity, else a host: ClientOf),
// kMaxAnonymous of them for all callers without a credential of their own
// together (the rest is kept for identities), and kMaxStreams in all
// (RESOURCE_EXHAUSTED, LIMIT_EXCEEDED "maxWatchStreams").

#ifndef TIR_SERVER_API_WATCH_STREAMS_H_
#define TIR_SERVER_API_WATCH_STREAMS_H_

#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_callback.h"
#include "server/api/auth.h"
#include "server/coordinator/coordinator.h"

namespace tir::api {

class WatchStreams {
 public:
  static constexpr size_t kMaxStreams = 1024;
  static constexpr size_t kMaxPerClient = 16;
  static constexpr size_t kMaxAnonymous = kMaxStreams / 2;

  // `done` counts each stream's outcome (method, status) once it ends.
  WatchStreams(coordinator::Coordinator *c, std::function<void(const absl::Status &)> done);
  ~WatchStreams();
  // Stops the pump (before the coordinator goes); idempotent.
  void Stop();

  // A stream of operation `name` for `client`; `allowed` (the call's
  // authorization) or a limit ends it at once.
  grpc::ServerWriteReactor<grpc::ByteBuffer> *Start(grpc::CallbackServerContext *ctx, const std::string &name,
                                                    const std::string &client, absl::Status allowed);
  size_t size() const;

  class Stream;

 private:
  void Pump();
  void Remove(Stream *s);

  coordinator::Coordinator *const c_;
  const std::function<void(const absl::Status &)> done_;
  mutable absl::Mutex mu_;
  std::map<Stream *, std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> per_client_ ABSL_GUARDED_BY(mu_);
  size_t anonymous_ ABSL_GUARDED_BY(mu_) = 0;  // streams of clients without an identity
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread pump_;
};

}  // namespace tir::api

#endif  // TIR_SERVER_API_WATCH_STREAMS_H_
