#include "tests/testing/recording_proxy.h"

#include <thread>

#include "absl/synchronization/mutex.h"

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace tir::testing {
namespace {

std::string Bytes(const grpc::ByteBuffer &b) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!b.Dump(&slices).ok()) return out;
  for (const grpc::Slice &s : slices) out.append(reinterpret_cast<const char *>(s.begin()), s.size());
  return out;
}

// Waits for the next event of `cq` (the only one outstanding); its ok bit.
bool Next(grpc::CompletionQueue &cq) {
  void *tag = nullptr;
  bool ok = false;
  return cq.Next(&tag, &ok) && ok;
}

}  // namespace

// One call: its request read, then forwarded upstream on a thread of its
// own (a test proxy: a few calls at a time), each answer written back in
// turn, and the upstream's status returned.
class RecordingProxy::Forward : public grpc::ServerGenericBidiReactor {
 public:
  Forward(RecordingProxy *proxy, grpc::GenericCallbackServerContext *ctx) : proxy_(proxy), ctx_(ctx) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the proxy read no request"));
      return;
    }
    proxy_->Record(ctx_->method(), Bytes(request_));
    std::thread([this] { Run(); }).detach();
  }

  void OnWriteDone(bool ok) override {
    write_ok_ = ok;
    written_->Notify();
  }

  // The caller went away: so does the upstream call.
  void OnCancel() override {
    absl::MutexLock l(&mu_);
    cancelled_ = true;
    if (upstream_ != nullptr) upstream_->TryCancel();
  }

  void OnDone() override { delete this; }

 private:
  void Run() {
    grpc::Status status;
    {
      grpc::ClientContext upstream;
      for (const auto &[key, value] : ctx_->client_metadata()) {
        const std::string k(key.data(), key.size());
        if (k.rfind("grpc-", 0) == 0 || k.rfind(":", 0) == 0 || k == "user-agent" || k == "te") continue;
        upstream.AddMetadata(k, std::string(value.data(), value.size()));
      }
      upstream.set_deadline(ctx_->deadline());
      {
        absl::MutexLock l(&mu_);
        upstream_ = &upstream;
        if (cancelled_) upstream.TryCancel();
      }
      grpc::CompletionQueue cq;
      std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = proxy_->stub_->PrepareCall(&upstream, ctx_->method(), &cq);
      call->StartCall(nullptr);
      bool ok = Next(cq);
      if (ok) {
        call->Write(request_, nullptr);
        ok = Next(cq);
      }
      if (ok) {
        call->WritesDone(nullptr);
        ok = Next(cq);
      }
      while (ok) {
        grpc::ByteBuffer answer;
        call->Read(&answer, nullptr);
        if (!Next(cq)) break;
        written_ = std::make_unique<absl::Notification>();
        StartWrite(&answer);
        written_->WaitForNotification();
        if (!write_ok_) {
          upstream.TryCancel();
          break;
        }
      }
      call->Finish(&status, nullptr);
      Next(cq);
      cq.Shutdown();
      void *tag;
      bool drained;
      while (cq.Next(&tag, &drained)) {
      }
      absl::MutexLock l(&mu_);
      upstream_ = nullptr;
    }
    Finish(status);  // the last use of this: OnDone deletes it
  }

  RecordingProxy *const proxy_;
  grpc::GenericCallbackServerContext *const ctx_;
  grpc::ByteBuffer request_;
  std::unique_ptr<absl::Notification> written_;
  bool write_ok_ = false;
  absl::Mutex mu_;
  grpc::ClientContext *upstream_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

class RecordingProxy::Service : public grpc::CallbackGenericService {
 public:
  explicit Service(RecordingProxy *proxy) : proxy_(proxy) {}
  grpc::ServerGenericBidiReactor *CreateReactor(grpc::GenericCallbackServerContext *ctx) override {
    return new Forward(proxy_, ctx);
  }

 private:
  RecordingProxy *const proxy_;
};

std::unique_ptr<RecordingProxy> RecordingProxy::Start(const std::string &upstream) {
  std::unique_ptr<RecordingProxy> p(new RecordingProxy());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  p->upstream_ = grpc::CreateCustomChannel(upstream, grpc::InsecureChannelCredentials(), args);
  p->stub_ = std::make_unique<grpc::GenericStub>(p->upstream_);
  p->service_ = std::make_unique<Service>(p.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &p->port_);
  builder.RegisterCallbackGenericService(p->service_.get());
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  p->server_ = builder.BuildAndStart();
  if (!p->server_ || p->port_ == 0) return nullptr;
  return p;
}

RecordingProxy::~RecordingProxy() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

void RecordingProxy::Record(const std::string &method, std::string bytes) {
  absl::MutexLock l(&mu_);
  recorded_.emplace_back(method, std::move(bytes));
}

std::vector<std::pair<std::string, std::string>> RecordingProxy::Recorded() const {
  absl::MutexLock l(&mu_);
  return recorded_;
}

}  // namespace tir::testing
