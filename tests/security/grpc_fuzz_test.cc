// The gRPC-surface fuzzer: every RPC of both services, sent random and
// mutated requests for a bounded time (TIR_FUZZ_SECONDS, default 20)
// against a live coordinator, from a corpus of real traffic.
//
// The corpus: a real tir-worker and the client library tune, fetch, watch,
// list, cancel and delete through a recording proxy (tests/testing), which
// keeps every request's bytes. The fuzzer then mutates them: bit flips,
// byte inserts and deletes, truncations, splices of two requests (protobuf
// merges what is concatenated), varints too long, random bytes, a request
// sent to another method, and field-level mutations through reflection
// (strings emptied, huge or random; numbers at their extremes; unknown
// enum values; repeated fields grown; messages cleared). Worker calls carry
// a registered worker's session half the time, so mutations reach past the
// session check. Throughout, a worker heartbeats as a real one would.
//
// Asserted: the coordinator never dies or stops answering, no call ends
// UNKNOWN or UNAVAILABLE, every error carries a reason (ErrorInfo), the
// heartbeating worker is never refused or lost, and the real flow still
// works at the end. Figures printed: calls by method, codes, calls/s.

#include <signal.h>

#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/logging.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/net.h"
#include "tests/testing/process.h"
#include "tests/testing/recording_proxy.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using tir::testing::Alive;
using tir::testing::RecordingProxy;
using tir::testing::Runfile;
using tir::testing::Spawn;
using tir::testing::Stop;
using tir::testing::TempDir;

std::string Graph(const std::string &name, int rows) {
  return absl::StrCat("tir.graph @", name, "(%x: tensor<", rows, "x64xf32>) -> tensor<", rows, "x64xf32> {\n",
                      "  %e = exp %x : tensor<", rows, "x64xf32>\n  %y = mul %e, %x : tensor<", rows,
                      "x64xf32>\n  results %y : tensor<", rows, "x64xf32>\n}\n");
}

// Every method of both services: full name and request type.
std::vector<std::pair<std::string, const google::protobuf::Descriptor *>> Methods() {
  std::vector<std::pair<std::string, const google::protobuf::Descriptor *>> out;
  for (const google::protobuf::ServiceDescriptor *s :
       {tir::v1::CompileRequest::descriptor()->file()->FindServiceByName("CompilerService"),
        tir::v1::LeaseWorkRequest::descriptor()->file()->FindServiceByName("WorkerService")}) {
    for (int i = 0; i < s->method_count(); ++i) {
      out.emplace_back(absl::StrCat("/", s->full_name(), "/", s->method(i)->name()), s->method(i)->input_type());
    }
  }
  return out;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  size_t Below(size_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Coin() { return rng_() & 1; }

  // Byte-level: one of the classic mutations of `in`.
  std::string Bytes(std::string s, const std::string &other) {
    switch (Below(8)) {
      case 0:  // bit flips
        for (int f = 0, n = 1 + static_cast<int>(Below(4)); f < n && !s.empty(); ++f) s[Below(s.size())] ^= 1 << Below(8);
        return s;
      case 1:  // truncation
        return s.substr(0, Below(s.size() + 1));
      case 2: {  // random bytes inserted
        std::string junk(1 + Below(16), '\0');
        for (char &c : junk) c = static_cast<char>(rng_());
        return s.insert(Below(s.size() + 1), junk);
      }
      case 3:  // bytes deleted
        if (!s.empty()) s.erase(Below(s.size()), 1 + Below(8));
        return s;
      case 4:  // splice: protobuf merges a concatenation
        return s.substr(0, Below(s.size() + 1)) + other.substr(Below(other.size() + 1));
      case 5:  // a varint that never ends, or a length past the end
        return s.insert(Below(s.size() + 1), Coin() ? std::string(11, '\xff') : std::string("\x0a\xff\xff\xff\xff\x0f", 6));
      case 6: {  // random message
        std::string r(Below(400), '\0');
        for (char &c : r) c = static_cast<char>(rng_());
        return r;
      }
      default:  // a field repeated many times
        return s + std::string(s.substr(0, std::min<size_t>(s.size(), 64))) + s;
    }
  }

  // Field-level, through reflection: a few fields of `m` (and of the
  // messages in it) set to values a well-behaved caller would not send.
  void Fields(Message &m, int depth = 0) {
    const google::protobuf::Descriptor *d = m.GetDescriptor();
    const Reflection *r = m.GetReflection();
    if (d->field_count() == 0) return;
    for (int n = 0, count = 1 + static_cast<int>(Below(3)); n < count; ++n) {
      const FieldDescriptor *f = d->field(static_cast<int>(Below(d->field_count())));
      if (f->is_map()) {
        continue;
      }
      if (f->is_repeated()) {
        if (Coin()) {
          r->ClearField(&m, f);
          continue;
        }
        const int add = static_cast<int>(1 + Below(Coin() ? 4 : 200));
        for (int i = 0; i < add; ++i) AddOne(m, f, depth);
        continue;
      }
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_STRING: r->SetString(&m, f, String()); break;
        case FieldDescriptor::CPPTYPE_INT32: r->SetInt32(&m, f, static_cast<int32_t>(Int())); break;
        case FieldDescriptor::CPPTYPE_INT64: r->SetInt64(&m, f, Int()); break;
        case FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(&m, f, static_cast<uint32_t>(Int())); break;
        case FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(&m, f, static_cast<uint64_t>(Int())); break;
        case FieldDescriptor::CPPTYPE_DOUBLE: r->SetDouble(&m, f, Double()); break;
        case FieldDescriptor::CPPTYPE_FLOAT: r->SetFloat(&m, f, static_cast<float>(Double())); break;
        case FieldDescriptor::CPPTYPE_BOOL: r->SetBool(&m, f, !r->GetBool(m, f)); break;
        case FieldDescriptor::CPPTYPE_ENUM: r->SetEnumValue(&m, f, static_cast<int>(Int())); break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth < 3 && Coin()) {
            Fields(*r->MutableMessage(&m, f), depth + 1);
          } else {
            r->ClearField(&m, f);
          }
          break;
      }
    }
  }

 private:
  void AddOne(Message &m, const FieldDescriptor *f, int depth) {
    const Reflection *r = m.GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: r->AddString(&m, f, String()); break;
      case FieldDescriptor::CPPTYPE_INT32: r->AddInt32(&m, f, static_cast<int32_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_INT64: r->AddInt64(&m, f, Int()); break;
      case FieldDescriptor::CPPTYPE_UINT32: r->AddUInt32(&m, f, static_cast<uint32_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_UINT64: r->AddUInt64(&m, f, static_cast<uint64_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_DOUBLE: r->AddDouble(&m, f, Double()); break;
      case FieldDescriptor::CPPTYPE_FLOAT: r->AddFloat(&m, f, static_cast<float>(Double())); break;
      case FieldDescriptor::CPPTYPE_BOOL: r->AddBool(&m, f, Coin()); break;
      case FieldDescriptor::CPPTYPE_ENUM: r->AddEnumValue(&m, f, static_cast<int>(Int())); break;
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        Message *added = r->AddMessage(&m, f);
        if (r->FieldSize(m, f) > 1 && Coin()) added->CopyFrom(r->GetRepeatedMessage(m, f, 0));
        if (depth < 3 && Coin()) Fields(*added, depth + 1);
        break;
      }
    }
  }
  std::string String() {
    switch (Below(6)) {
      case 0: return "";
      case 1: return std::string(1 + Below(8192), 'A');
      case 2: return std::string(Below(2) ? "workers/" : "operations/") + std::to_string(rng_());
      case 3: return std::string(Below(64), '[') + "1" + std::string(Below(64), ']');
      case 4: return std::string("\0a\xc2\xb5\xe2\x80\xa8\xff", 8);  // NUL, µ, U+2028, then a byte that is not UTF-8
      default: {  // printable ASCII (it parses: proto3 strings are UTF-8)
        std::string s(Below(64), '\0');
        for (char &c : s) c = static_cast<char>(0x20 + rng_() % 95);
        return s;
      }
    }
  }
  int64_t Int() {
    static const int64_t kEdges[] = {0, -1, 1, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 1 << 30, 4096, 17};
    return Coin() ? kEdges[Below(10)] : static_cast<int64_t>(rng_());
  }
  double Double() {
    static const double kEdges[] = {0, -1, 1e308, -1e308, 1e-320, std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::infinity()};
    return kEdges[Below(7)];
  }
  std::mt19937_64 rng_;
};

class GrpcFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir() + "/grpcfuzz";
    port_ = tir::testing::FreePort();
    const std::string config = dir_ + ".json";
    std::ofstream(config) << "{\"listen\": \"127.0.0.1:" << port_ << "\", \"db\": \"" << dir_ << "\", \"workDir\": \""
                          << dir_ << "-work\", \"tuningWidth\": 2, \"lostAfterMs\": 20000, \"heartbeatIntervalMs\": 500}";
    coordinator_ = Spawn({Runfile("server/tir-coordinator"), "--config=" + config});
    channel_ = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
    for (int i = 0; i < 300 && !Answers(); ++i) absl::SleepFor(absl::Milliseconds(50));
    ASSERT_TRUE(Answers()) << "the coordinator did not start";
  }
  void TearDown() override {
    Stop(worker_);
    Stop(coordinator_, SIGKILL);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  bool Answers() {
    tir::v1::ListWorkersResponse out;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return tir::v1::CompilerService::NewStub(channel_)->ListWorkers(&ctx, {}, &out).ok();
  }

  // Real traffic through the proxy: a tir-worker tunes what the client
  // library compiles, and the client reads it every way it can.
  void RecordRealTraffic(RecordingProxy &proxy) {
    worker_ = Spawn({Runfile("worker/tir-worker"), "--coordinator=" + proxy.address(), "--backend=host",
                     "--compile-threads=2", "--work-dir=" + dir_ + "-worker",
                     "--runner=" + Runfile("worker/runner/tir-worker-runner")});
    tir::ClientOptions options;
    options.address = proxy.address();
    absl::StatusOr<std::unique_ptr<tir::Client>> client = tir::Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    tir::Client &c = **client;
    for (int i = 0; i < 200; ++i) {
      absl::StatusOr<tir::v1::ListWorkersResponse> w = c.ListWorkers();
      if (w.ok() && w->workers_size() > 0) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    tir::v1::CompileOptions compile;
    compile.set_target_arch("host");
    absl::StatusOr<tir::v1::Operation> op = c.Compile(tir::GraphSourceFromText(Graph("real", 16)), compile);
    ASSERT_TRUE(op.ok()) << op.status();
    absl::StatusOr<tir::v1::Operation> done = c.Watch(op->name(), absl::Minutes(3), [](const tir::v1::Operation &) {});
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_TRUE(done->has_response()) << done->error().message();
    key_ = done->response().key();
    EXPECT_TRUE(c.GetOperation(op->name()).ok());
    EXPECT_TRUE(c.Wait(op->name(), absl::Seconds(1)).ok());
    EXPECT_TRUE(c.GetKernel(key_, true).ok());
    EXPECT_TRUE(c.Lookup(tir::GraphSourceFromText(Graph("real", 16)), compile).ok());
    EXPECT_TRUE(c.ListKernels(10, "", "").ok());
    EXPECT_TRUE(c.Compile(tir::GraphSourceFromText(Graph("real", 16)), compile).ok()) << "a cache hit";
    absl::StatusOr<tir::v1::Operation> other = c.Compile(tir::GraphSourceFromText(Graph("cancelled", 24)), compile);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_TRUE(c.Cancel(other->name()).ok());
    absl::StatusOr<tir::v1::Operation> third = c.Compile(tir::GraphSourceFromText(Graph("deleted", 32)), compile);
    ASSERT_TRUE(third.ok());
    absl::StatusOr<tir::v1::Operation> tuned = c.Watch(third->name(), absl::Minutes(3), [](const tir::v1::Operation &) {});
    ASSERT_TRUE(tuned.ok() && tuned->has_response());
    EXPECT_TRUE(c.DeleteKernel(tuned->response().key()).ok());
    Stop(worker_);  // SIGTERM: it drains through the proxy
    worker_ = -1;
  }

  std::string dir_;
  int port_ = 0;
  pid_t coordinator_ = -1, worker_ = -1;
  std::shared_ptr<grpc::Channel> channel_;
  std::string key_;
};

TEST_F(GrpcFuzz, EveryRpcSurvivesMutatedRealTraffic) {
  // Serializing a string field that is not UTF-8 is the point here, not
  // something to log thousands of times.
  google::protobuf::SetLogHandler(nullptr);
  std::unique_ptr<RecordingProxy> proxy = RecordingProxy::Start(address());
  ASSERT_NE(proxy, nullptr);
  RecordRealTraffic(*proxy);
  if (HasFatalFailure()) return;
  // The corpus, by method.
  std::map<std::string, std::vector<std::string>> corpus;
  for (auto &[method, bytes] : proxy->Recorded()) corpus[method].push_back(std::move(bytes));
  for (const char *m : {"Compile", "WatchOperation", "GetOperation", "WaitOperation", "GetKernel", "LookupKernel",
                        "ListKernels", "CancelOperation", "DeleteKernel", "ListWorkers"}) {
    EXPECT_FALSE(corpus[absl::StrCat("/tir.v1.CompilerService/", m)].empty()) << m << " is not in the real traffic";
  }
  for (const char *m : {"RegisterWorker", "Heartbeat", "LeaseWork", "ReportResult", "Drain"}) {
    EXPECT_FALSE(corpus[absl::StrCat("/tir.v1.WorkerService/", m)].empty()) << m << " is not in the real traffic";
  }
  size_t seeds = 0;
  for (const auto &[m, v] : corpus) seeds += v.size();

  // A worker of the fuzzer's own: its session lets mutated calls past the
  // session check. Another heartbeats throughout and must never be refused.
  auto workers = tir::v1::WorkerService::NewStub(channel_);
  auto registerOne = [&](tir::v1::RegisterWorkerResponse *out) {
    grpc::ClientContext ctx;
    tir::v1::RegisterWorkerRequest r;
    r.mutable_capabilities()->set_backend("host");
    r.mutable_capabilities()->set_arch("host");
    return workers->RegisterWorker(&ctx, r, out);
  };
  tir::v1::RegisterWorkerResponse fuzzed, steady;
  ASSERT_TRUE(registerOne(&fuzzed).ok());
  ASSERT_TRUE(registerOne(&steady).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> beats{0}, refused{0};
  std::string refusal;
  std::thread heartbeat([&] {
    auto stub = tir::v1::WorkerService::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
    while (!stop) {
      grpc::ClientContext ctx;
      ctx.AddMetadata("tir-worker-session", steady.session());
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      tir::v1::HeartbeatRequest hb;
      hb.set_name(steady.name());
      tir::v1::HeartbeatResponse out;
      grpc::Status s = stub->Heartbeat(&ctx, hb, &out);
      ++beats;
      if (!s.ok() || out.reregister()) {
        if (refused++ == 0) refusal = s.ok() ? "told to register again" : s.error_message();
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
  });

  const char *env = std::getenv("TIR_FUZZ_SECONDS");
  const absl::Duration budget = absl::Seconds(env != nullptr ? std::max(1, std::atoi(env)) : 20);
  Mutator mutate(20261204);
  grpc::GenericStub stub(channel_);
  const auto methods = Methods();
  std::map<std::string, int> calls;
  std::map<grpc::StatusCode, int> codes;
  std::map<grpc::StatusCode, std::string> example;
  int total = 0;
  const absl::Time start = absl::Now();
  while (absl::Now() - start < budget) {
    const auto &[method, type] = methods[mutate.Below(methods.size())];
    // A seed of this method, or (one time in eight) of any other.
    std::vector<std::string> *pool = &corpus[method];
    if (pool->empty() || mutate.Below(8) == 0) {
      auto it = corpus.begin();
      std::advance(it, mutate.Below(corpus.size()));
      pool = &it->second;
    }
    const std::string seed = pool->empty() ? "" : (*pool)[mutate.Below(pool->size())];
    const std::string other = pool->empty() ? "" : (*pool)[mutate.Below(pool->size())];
    std::string bytes;
    const bool worker = method.find("WorkerService") != std::string::npos;
    if (mutate.Coin()) {
      bytes = mutate.Bytes(seed, other);
    } else {
      // Field-level: parsed as the method's request, fields mutated.
      std::unique_ptr<Message> m(google::protobuf::MessageFactory::generated_factory()->GetPrototype(type)->New());
      (void)m->ParsePartialFromString(seed);
      mutate.Fields(*m);
      if (worker && mutate.Coin()) {
        if (const FieldDescriptor *name = type->FindFieldByName("name")) {
          m->GetReflection()->SetString(m.get(), name, fuzzed.name());
        }
      }
      bytes = m->SerializePartialAsString();
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    if (worker && mutate.Coin()) ctx.AddMetadata("tir-worker-session", fuzzed.session());
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::CompletionQueue cq;
    grpc::Status status;
    void *tag;
    bool ok;
    if (method == "/tir.v1.CompilerService/WatchOperation") {
      // Server streaming: a message or two, then the stream is left.
      auto call = stub.PrepareCall(&ctx, method, &cq);
      call->StartCall(nullptr);
      cq.Next(&tag, &ok);
      if (ok) {
        call->Write(request, nullptr);
        cq.Next(&tag, &ok);
      }
      if (ok) {
        call->WritesDone(nullptr);
        cq.Next(&tag, &ok);
      }
      for (int i = 0; ok && i < 2; ++i) {
        grpc::ByteBuffer answer;
        call->Read(&answer, nullptr);
        cq.Next(&tag, &ok);
      }
      if (ok) ctx.TryCancel();
      call->Finish(&status, nullptr);
      cq.Next(&tag, &ok);
      if (status.error_code() == grpc::StatusCode::CANCELLED) status = grpc::Status::OK;  // ours
    } else {
      grpc::ByteBuffer answer;
      auto call = stub.PrepareUnaryCall(&ctx, method, request, &cq);
      call->StartCall();
      call->Finish(&answer, &status, nullptr);
      cq.Next(&tag, &ok);
    }
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    ++calls[method];
    ++codes[status.error_code()];
    ++total;
    if (!status.ok()) example.emplace(status.error_code(), status.error_message().substr(0, 70));
    EXPECT_NE(status.error_code(), grpc::StatusCode::UNKNOWN) << method << ": " << status.error_message();
    EXPECT_TRUE(status.ok() || !status.error_details().empty() ||
                status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
        << method << ": code " << status.error_code() << " \"" << status.error_message() << "\" has no reason";
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE || !Alive(coordinator_)) {
      ADD_FAILURE() << method << ": the coordinator went away (" << status.error_message() << ")";
      break;
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  stop = true;
  heartbeat.join();
  EXPECT_TRUE(Alive(coordinator_)) << "the coordinator died";
  EXPECT_TRUE(Answers()) << "and still serves";
  EXPECT_EQ(refused, 0) << "the steady worker's heartbeat was refused " << refused << " of " << beats
                        << " times: " << refusal;
  EXPECT_EQ(calls.size(), methods.size()) << "every method was called";
  // The real flow still works: the tuned bundle is served.
  tir::ClientOptions options;
  options.address = address();
  auto client = tir::Client::Connect(options);
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->GetKernel(key_, true).ok());

  std::string byMethod, byCode;
  for (const auto &[m, n] : calls) absl::StrAppend(&byMethod, " ", m.substr(m.rfind('/') + 1), "=", n);
  for (const auto &[code, n] : codes) {
    absl::StrAppend(&byCode, " ", static_cast<int>(code), ":", n, example.count(code) ? " (" + example[code] + ")" : "",
                    ";");
  }
  std::printf("grpc fuzz: %zu seeds of real traffic over %zu methods; %d calls in %.1f s (%.0f/s); %d heartbeats, %d "
              "refused\n  calls:%s\n  codes:%s\n",
              seeds, corpus.size(), total, seconds, total / seconds, beats.load(), refused.load(), byMethod.c_str(),
              byCode.c_str());
}

}  // namespace
