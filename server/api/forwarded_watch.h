// WatchOperation of an operation another shard of a sharded fleet holds:
// the stream here follows it there with long polls (WaitOperation, 5 s
// each), writing each state that differs from the last, until it is done.
// No thread waits: the polls are gRPC callback calls, and the next poll
// starts when the client has taken the last write.

#ifndef TIR_SERVER_API_FORWARDED_WATCH_H_
#define TIR_SERVER_API_FORWARDED_WATCH_H_

#include <functional>
#include <string>

#include "grpcpp/grpcpp.h"
#include "server/shards/forwarder.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::api {

class ForwardedWatch : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // `done` counts the stream's outcome once it ends.
  ForwardedWatch(shards::Forwarder &forwarder, grpc::CallbackServerContext *ctx, std::string name, int shard,
                 std::string client, std::function<void(const grpc::Status &)> done);
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Poll();
  void End(const grpc::Status &status);

  shards::Forwarder &forwarder_;
  grpc::CallbackServerContext *const ctx_;
  const int shard_;
  const std::string client_;
  const std::function<void(const grpc::Status &)> done_;
  tir::v1::WaitOperationRequest request_;
  tir::v1::Operation answer_;
  std::string last_;
  grpc::ByteBuffer buffer_;
  bool finished_ = false;
};

}  // namespace tir::api

#endif  // TIR_SERVER_API_FORWARDED_WATCH_H_
