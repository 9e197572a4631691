// Deadlines end to end: a coordinator that accepts and never answers costs a
// client the timeout it was given, connecting included, and no more.

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/service_commands.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/silent_server.h"

namespace tir {
namespace {

// What a caller gets from a service that does not answer in time.
bool TimedOut(const absl::Status &s) {
  return s.code() == absl::StatusCode::kDeadlineExceeded || s.code() == absl::StatusCode::kUnavailable;
}

// The most a call may overrun its deadline here (a loaded two-core machine).
constexpr absl::Duration kSlack = absl::Seconds(2);

const char kGraph[] =
    "tir.graph @g(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {\n"
    "  %y = exp %x : tensor<8x16xf32>\n  results %y : tensor<8x16xf32>\n}\n";

std::unique_ptr<Client> ClientOf(const std::string &address) {
  ClientOptions o;
  o.address = address;
  o.call_timeout = absl::Seconds(30);  // what each call would wait without a deadline
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok());
  return std::move(*c);
}

tir::v1::CompileOptions Host() {
  tir::v1::CompileOptions o;
  o.set_target_arch("host");
  return o;
}

TEST(Deadline, AServiceThatAcceptsAndNeverAnswersCostsTheDeadline) {
  testing::SilentServer silent;  // TCP accepted, no HTTP/2 ever
  auto c = ClientOf(silent.address());
  absl::Time start = absl::Now();
  c->set_deadline(start + absl::Seconds(1));
  absl::StatusOr<tir::v1::Operation> op = c->Compile(GraphSourceFromText(kGraph), Host());
  EXPECT_TRUE(TimedOut(op.status())) << op.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1) + kSlack);
  start = absl::Now();
  c->set_deadline(start + absl::Seconds(1));
  absl::StatusOr<tir::v1::Operation> waited = c->Wait("operations/0123456789abcdef", absl::Hours(1));
  EXPECT_TRUE(TimedOut(waited.status())) << waited.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1) + kSlack);
  EXPECT_GE(silent.accepted(), 1) << "the connection was made, and nothing answered";
}

TEST(Deadline, ACompileCommandEndsByItsTimeout) {
  testing::SilentServer silent;
  auto c = ClientOf(silent.address());
  client::CompileCommandOptions o;
  o.arch = "host";
  o.timeout = absl::Seconds(1);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> out = client::CompileCommand(*c, kGraph, o);
  EXPECT_TRUE(TimedOut(out.status())) << out.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1) + kSlack);
  EXPECT_EQ(c->deadline(), absl::InfiniteFuture()) << "the command's deadline is its own";
}

// A CompilerService whose handlers hold every call until the caller gives
// up (or `wait_honoured`: WaitOperation answers "not done" at the timeout
// the request asks for, as the coordinator does).
class StuckService final : public tir::v1::CompilerService::Service {
 public:
  explicit StuckService(bool wait_honoured = false) : wait_honoured_(wait_honoured) {}
  grpc::Status Compile(grpc::ServerContext *ctx, const tir::v1::CompileRequest *, tir::v1::Operation *) override {
    return Hold(ctx);
  }
  grpc::Status WaitOperation(grpc::ServerContext *ctx, const tir::v1::WaitOperationRequest *r,
                             tir::v1::Operation *op) override {
    if (!wait_honoured_) return Hold(ctx);
    const absl::Duration asked = absl::Seconds(r->timeout().seconds()) + absl::Nanoseconds(r->timeout().nanos());
    release_.WaitForNotificationWithTimeout(asked);
    op->set_name(r->name());
    op->mutable_metadata()->set_key("k");
    return grpc::Status::OK;
  }
  grpc::Status WatchOperation(grpc::ServerContext *ctx, const tir::v1::WatchOperationRequest *,
                              grpc::ServerWriter<tir::v1::Operation> *) override {
    return Hold(ctx);
  }
  void Release() { release_.Notify(); }

 private:
  grpc::Status Hold(grpc::ServerContext *ctx) {
    while (!ctx->IsCancelled() && !release_.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "released");
  }
  bool wait_honoured_;
  absl::Notification release_;
};

class Served {
 public:
  explicit Served(StuckService *service) : service_(service) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(service);
    server_ = b.BuildAndStart();
  }
  ~Served() {
    service_->Release();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  StuckService *service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(Deadline, AServerWhoseHandlersNeverReturnCostsTheDeadline) {
  StuckService service;
  Served served(&service);
  auto c = ClientOf(served.address());
  for (const char *call : {"Compile", "Wait", "Watch"}) {
    const absl::Time start = absl::Now();
    c->set_deadline(start + absl::Seconds(1));
    absl::Status s;
    if (std::string(call) == "Compile") s = c->Compile(GraphSourceFromText(kGraph), Host()).status();
    if (std::string(call) == "Wait") s = c->Wait("operations/0123456789abcdef", absl::Hours(1)).status();
    if (std::string(call) == "Watch") s = c->Watch("operations/0123456789abcdef", absl::Hours(1), nullptr).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << call << ": " << s;
    EXPECT_LT(absl::Now() - start, absl::Seconds(1) + kSlack) << call;
  }
}

TEST(Deadline, WaitAnswersWithTheOperationAsItIsWhenItsTimeIsUp) {
  // The coordinator answers a long poll at the time asked; the client asks
  // for a little less than its deadline leaves, so the answer comes first.
  StuckService service(/*wait_honoured=*/true);
  Served served(&service);
  auto c = ClientOf(served.address());
  absl::Time start = absl::Now();
  c->set_deadline(start + absl::Seconds(1));
  absl::StatusOr<tir::v1::Operation> op = c->Wait("operations/0123456789abcdef", absl::Hours(1));
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_FALSE(op->done());
  EXPECT_LT(absl::Now() - start, absl::Seconds(1) + kSlack);
  c->set_deadline(absl::InfiniteFuture());
  start = absl::Now();
  op = c->Wait("operations/0123456789abcdef", absl::Milliseconds(500));
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500) + kSlack);
}

}  // namespace
}  // namespace tir
