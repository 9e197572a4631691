#include "server/api/forwarded_watch.h"

namespace tir::api {

ForwardedWatch::ForwardedWatch(shards::Forwarder &forwarder, grpc::CallbackServerContext *ctx, std::string name,
                               int shard, std::string client, std::function<void(const grpc::Status &)> done)
    : forwarder_(forwarder), ctx_(ctx), shard_(shard), client_(std::move(client)), done_(std::move(done)) {
  request_.set_name(std::move(name));
  request_.mutable_timeout()->set_seconds(5);
  Poll();
}

void ForwardedWatch::Poll() {
  // One poll at a time, and none once the stream is finished: this object
  // lives until OnDone, which comes after Finish.
  forwarder_.Call(
      shard_, *ctx_, client_,
      [this](shards::Forwarder::Async *async, grpc::ClientContext *cc, std::function<void(grpc::Status)> cb) {
        async->WaitOperation(cc, &request_, &answer_, std::move(cb));
      },
      [this](grpc::Status s) {
        if (!s.ok()) return End(s);
        std::string bytes = answer_.SerializeAsString();
        if (bytes == last_ && !answer_.done()) return Poll();
        last_ = std::move(bytes);
        grpc::Slice slice(last_);
        buffer_ = grpc::ByteBuffer(&slice, 1);
        StartWrite(&buffer_);
      },
      /*wait_for_shard=*/true);
}

void ForwardedWatch::OnWriteDone(bool ok) {
  if (!ok) return End(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
  if (answer_.done()) return End(grpc::Status::OK);
  Poll();
}

void ForwardedWatch::End(const grpc::Status &status) {
  if (finished_) return;
  finished_ = true;
  done_(status);
  Finish(status);
}

}  // namespace tir::api
