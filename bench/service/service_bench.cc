// The service over loopback gRPC, in one process: a coordinator (RocksDB
// store under a temporary directory) and a host worker with its runner.
//  1. Cache hits: Compile of a stored graph (and LookupKernel), with 1, 8 and
//     64 concurrent clients: p50 / p99 latency and calls per second, next to
//     the floor and to what users pick instead, measured in the same run:
//     a bare unary echo of the same bytes on the same gRPC server framework
//     (the transport's floor) and Debian's redis-server on loopback holding
//     a value of the bundle's size (when installed). Where the time goes:
//     Coordinator::Compile in process (no transport), and the answer's
//     serialization alone.
//     Goals: within 1.5 times the echo's p50 and throughput; p99 < 1 ms
//     with one client.
//  2. Tuning efficiency over a suite of host graphs whose candidates are
//     different kernels: candidates measured by the tuner against the pruned
//     space, the tuned winner's time against the exhaustive best (every
//     distinct kernel re-measured in the same runner in this run), and the
//     cost model's rank correlation with the measured times.
//     Goal: within 5% of the exhaustive best (geometric mean) measuring at
//     most 10% of the space.
//  3. Learning from measurements: the cost model calibrated on the other
//     graphs' measurements ranks each kernel's candidates; its top picks and
//     rank correlation before and after.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bench/timing/timing.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Calibration.h"
#include "compiler/target/ArchTable.h"
#include "grpcpp/grpcpp.h"
#include "server/api/server.h"
#include "server/tuning/work_items.h"
#include "tests/testing/net.h"
#include "tir/bench/echo.grpc.pb.h"
#include "worker/host/host_backend.h"
#include "worker/isolation/runner_process.h"
#include "worker/worker.h"

extern char **environ;

namespace {

using tir::bench::MsSince;

// Graphs whose candidates really differ: reductions of several shapes (few
// long rows, many short rows, a column reduction, softmax and layernorm),
// f32 and bf16 matmuls (and bf16 converted to f32 first), a pointwise chain.
const char *kSuite[][2] = {
    {"bias_gelu", R"mlir(
tir.graph @bias_gelu(%x: tensor<256x512xf32>, %b: tensor<1x512xf32>) -> tensor<256x512xf32> {
  %y = add %x, %b : (tensor<256x512xf32>, tensor<1x512xf32>) -> tensor<256x512xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<256x512xf32>
  results %g : tensor<256x512xf32>
})mlir"},
    {"sum_long_rows", R"mlir(
tir.graph @sum_long(%x: tensor<4x262144xf32>) -> tensor<4x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<4x262144xf32> -> tensor<4x1xf32>
  results %s : tensor<4x1xf32>
})mlir"},
    {"max_short_rows", R"mlir(
tir.graph @max_short(%x: tensor<8192x64xf32>) -> tensor<8192x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<8192x64xf32> -> tensor<8192x1xf32>
  results %s : tensor<8192x1xf32>
})mlir"},
    {"column_sum", R"mlir(
tir.graph @colsum(%x: tensor<2048x512xf32>) -> tensor<1x512xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<2048x512xf32> -> tensor<1x512xf32>
  results %s : tensor<1x512xf32>
})mlir"},
    {"softmax", R"mlir(
tir.graph @softmax(%x: tensor<128x1024xf32>) -> tensor<128x1024xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<128x1024xf32> -> tensor<128x1xf32>
  %s = sub %x, %m : (tensor<128x1024xf32>, tensor<128x1xf32>) -> tensor<128x1024xf32>
  %e = exp %s : tensor<128x1024xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<128x1024xf32> -> tensor<128x1xf32>
  %y = div %e, %z : (tensor<128x1024xf32>, tensor<128x1xf32>) -> tensor<128x1024xf32>
  results %y : tensor<128x1024xf32>
})mlir"},
    {"layernorm", R"mlir(
tir.graph @ln(%x: tensor<64x768xf32>, %gamma: tensor<1x768xf32>) -> tensor<64x768xf32> {
  %mu = reduce(%x)<dimensions = [1], reduction_mode = <mean>> : tensor<64x768xf32> -> tensor<64x1xf32>
  %c = sub %x, %mu : (tensor<64x768xf32>, tensor<64x1xf32>) -> tensor<64x768xf32>
  %c2 = mul %c, %c : tensor<64x768xf32>
  %var = reduce(%c2)<dimensions = [1], reduction_mode = <mean>> : tensor<64x768xf32> -> tensor<64x1xf32>
  %eps = constant dense<1.0e-05> : tensor<64x1xf32>
  %ve = add %var, %eps : tensor<64x1xf32>
  %rs = rsqrt %ve : tensor<64x1xf32>
  %n = mul %c, %rs : (tensor<64x768xf32>, tensor<64x1xf32>) -> tensor<64x768xf32>
  %y = mul %n, %gamma : (tensor<64x768xf32>, tensor<1x768xf32>) -> tensor<64x768xf32>
  results %y : tensor<64x768xf32>
})mlir"},
    {"matmul_f32", R"mlir(
tir.graph @mmf(%a: tensor<192x160xf32>, %b: tensor<160x224xf32>) -> tensor<192x224xf32> {
  %c = matmul(%a, %b) : (tensor<192x160xf32>, tensor<160x224xf32>) -> tensor<192x224xf32>
  results %c : tensor<192x224xf32>
})mlir"},
    {"matmul_bf16", R"mlir(
tir.graph @mm(%a: tensor<128x128xbf16>, %b: tensor<128x128xbf16>) -> tensor<128x128xf32> {
  %c = matmul(%a, %b) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xf32>
  results %c : tensor<128x128xf32>
})mlir"},
    {"mlp_converted", R"mlir(
tir.graph @mlp(%x: tensor<128x256xbf16>, %w: tensor<256x128xbf16>) -> tensor<128x128xf32> {
  %xf = convert %x : tensor<128x256xbf16> -> tensor<128x256xf32>
  %wf = convert %w : tensor<256x128xbf16> -> tensor<256x128xf32>
  %y = matmul(%xf, %wf) : (tensor<128x256xf32>, tensor<256x128xf32>) -> tensor<128x128xf32>
  results %y : tensor<128x128xf32>
})mlir"},
};

// Spearman's rank correlation of two equally long series.
double RankCorrelation(const std::vector<double> &a, const std::vector<double> &b) {
  auto ranks = [](const std::vector<double> &v) {
    std::vector<size_t> order(v.size());
    for (size_t i = 0; i < v.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size(); ++i) r[order[i]] = static_cast<double>(i);
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  if (n < 2) return 0;
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// The transport's floor: answers every call with a fixed payload.
class EchoService final : public tir::bench::Echo::Service {
 public:
  explicit EchoService(std::string payload) : payload_(std::move(payload)) {}
  grpc::Status Echo(grpc::ServerContext *, const tir::bench::EchoRequest *, tir::bench::EchoResponse *out) override {
    out->set_payload(payload_);
    return grpc::Status::OK;
  }

 private:
  std::string payload_;
};

// A blocking RESP client of one connection (GET and SET only).
class Redis {
 public:
  static std::unique_ptr<Redis> Connect(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
      close(fd);
      return nullptr;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return std::unique_ptr<Redis>(new Redis(fd));
  }
  ~Redis() { close(fd_); }
  bool Set(const std::string &key, const std::string &value) {
    Send({"SET", key, value});
    std::string line;
    return ReadLine(&line) && line == "+OK";
  }
  // The value's length, or -1 on error.
  int64_t Get(const std::string &key) {
    Send({"GET", key});
    std::string line;
    if (!ReadLine(&line) || line.empty() || line[0] != '$') return -1;
    const int64_t n = std::atoll(line.c_str() + 1);
    if (n < 0) return -1;
    std::string data;
    if (!ReadBytes(static_cast<size_t>(n) + 2, &data)) return -1;
    return n;
  }

 private:
  explicit Redis(int fd) : fd_(fd) {}
  void Send(const std::vector<std::string> &args) {
    std::string out = absl::StrCat("*", args.size(), "\r\n");
    for (const std::string &a : args) absl::StrAppend(&out, "$", a.size(), "\r\n", a, "\r\n");
    for (size_t off = 0; off < out.size();) {
      const ssize_t w = write(fd_, out.data() + off, out.size() - off);
      if (w <= 0) return;
      off += static_cast<size_t>(w);
    }
  }
  bool Fill() {
    char tmp[65536];
    const ssize_t r = read(fd_, tmp, sizeof(tmp));
    if (r <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(r));
    return true;
  }
  bool ReadLine(std::string *line) {
    for (;;) {
      const size_t end = buf_.find("\r\n");
      if (end != std::string::npos) {
        *line = buf_.substr(0, end);
        buf_.erase(0, end + 2);
        return true;
      }
      if (!Fill()) return false;
    }
  }
  bool ReadBytes(size_t n, std::string *out) {
    while (buf_.size() < n) {
      if (!Fill()) return false;
    }
    *out = buf_.substr(0, n);
    buf_.erase(0, n);
    return true;
  }
  int fd_;
  std::string buf_;
};

// Starts Debian's redis-server on loopback `port` without persistence; -1
// when it is not installed or does not answer.
pid_t StartRedis(int port) {
  const char *path = "/usr/bin/redis-server";
  if (access(path, X_OK) != 0) return -1;
  std::vector<std::string> argv = {path, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning"};
  std::vector<char *> args;
  for (auto &a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, path, nullptr, nullptr, args.data(), environ) != 0) return -1;
  for (int i = 0; i < 100; ++i) {
    if (Redis::Connect(port)) return pid;
    absl::SleepFor(absl::Milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// `clients` threads calling `call` (false: a failed call) for `seconds`:
// latencies in ms, and whether every call succeeded.
template <typename MakeCall>
bool Loop(int clients, double seconds, const MakeCall &make, std::vector<double> *ms) {
  std::vector<std::vector<double>> per(clients);
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto call = make();
      const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      while (std::chrono::steady_clock::now() < end) {
        auto t0 = std::chrono::steady_clock::now();
        if (!call()) failed = true;
        per[c].push_back(MsSince(t0));
      }
    });
  }
  for (auto &t : threads) t.join();
  for (auto &p : per) ms->insert(ms->end(), p.begin(), p.end());
  return !failed;
}

tir::v1::CompileRequest Request(const char *text) {
  tir::v1::CompileRequest r;
  r.mutable_graph()->set_mlir_text(text);
  r.mutable_options()->set_target_arch("host");
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  std::string runner = (self.parent_path().parent_path().parent_path() / "worker/runner/tir-worker-runner").string();
  // [--cache-hits-only] [RUNNER]: part 1 only (for profiling it).
  bool hitsOnly = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--cache-hits-only") {
      hitsOnly = true;
    } else {
      runner = argv[i];
    }
  }
  const std::string dir = (std::filesystem::temp_directory_path() / absl::StrCat("tir-service-bench-", getpid())).string();
  tir::v1::CoordinatorConfig config;
  config.set_listen("127.0.0.1:0");
  config.set_db(dir + "/db");
  config.set_heartbeat_interval_ms(200);
  config.set_lost_after_ms(2000);
  auto server = tir::api::CoordinatorServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "service bench: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
  tir::worker::WorkerOptions wo;
  wo.runner_path = runner;
  wo.compile_threads = 2;
  wo.lease_wait = absl::Milliseconds(500);
  tir::worker::Worker worker(wo, std::make_unique<tir::worker::HostBackend>(dir + "/host"),
                             grpc::CreateChannel(address, grpc::InsecureChannelCredentials()), nullptr);
  std::thread workerThread([&] { worker.Run(); });
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = tir::v1::CompilerService::NewStub(channel);
  while (worker.name().empty()) absl::SleepFor(absl::Milliseconds(50));

  // Tune the suite (this also stores what the cache-hit part looks up).
  std::printf("service bench (loopback gRPC, host backend, %u cores)\n", std::thread::hardware_concurrency());
  std::vector<tir::v1::KernelBundle> tuned;
  for (auto &[name, text] : kSuite) {
    grpc::ClientContext ctx;
    tir::v1::Operation op;
    auto t0 = std::chrono::steady_clock::now();
    grpc::Status s = stub->Compile(&ctx, Request(text), &op);
    while (s.ok() && !op.done()) {
      grpc::ClientContext w;
      tir::v1::WaitOperationRequest req;
      req.set_name(op.name());
      req.mutable_timeout()->set_seconds(10);
      s = stub->WaitOperation(&w, req, &op);
    }
    if (!s.ok() || !op.has_response()) {
      std::fprintf(stderr, "service bench: %s did not tune: %s %s\n", name, s.error_message().c_str(),
                   op.error().message().c_str());
      return 1;
    }
    if (!hitsOnly) std::printf("  tuned %-12s in %7.0f ms: %u of %u candidates measured, %d kernel(s)\n", name, MsSince(t0),
                op.response().tuning().candidates_measured(), op.response().tuning().candidates_total(),
                op.response().kernels_size());
    tuned.push_back(op.response());
    if (hitsOnly) break;  // the first graph is the one looked up
  }

  // 1. Cache hits, against the transport's floor and Redis.
  const tir::v1::CompileRequest hitRequest = Request(kSuite[0][1]);
  tir::v1::LookupKernelRequest lookupRequest;
  *lookupRequest.mutable_graph() = hitRequest.graph();
  *lookupRequest.mutable_options() = hitRequest.options();
  tir::v1::Operation hitAnswer;
  {
    grpc::ClientContext ctx;
    if (!stub->Compile(&ctx, hitRequest, &hitAnswer).ok() || !hitAnswer.metadata().cache_hit()) {
      std::fprintf(stderr, "service bench: the repeat was no cache hit\n");
      return 1;
    }
  }
  const size_t answerBytes = hitAnswer.ByteSizeLong(), bundleBytes = hitAnswer.response().ByteSizeLong();
  // The echo: the same request bytes in, an answer of the same size out, on
  // a server built as the coordinator's is.
  EchoService echo(std::string(answerBytes, 'x'));
  grpc::ServerBuilder eb;
  int echoPort = 0;
  grpc::ResourceQuota quota("tir-bench-echo");
  quota.SetMaxThreads(256);
  eb.SetResourceQuota(quota);
  eb.SetMaxReceiveMessageSize(64 << 20);
  eb.SetMaxSendMessageSize(64 << 20);
  eb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &echoPort);
  eb.RegisterService(&echo);
  std::unique_ptr<grpc::Server> echoServer = eb.BuildAndStart();
  auto echoChannel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", echoPort), grpc::InsecureChannelCredentials());
  tir::bench::EchoRequest echoRequest;
  echoRequest.set_payload(hitRequest.SerializeAsString());
  const int redisPort = tir::testing::FreePort();
  const pid_t redis = StartRedis(redisPort);
  if (redis > 0) {
    auto r = Redis::Connect(redisPort);
    if (!r || !r->Set("bundle", std::string(bundleBytes, 'b'))) {
      std::fprintf(stderr, "service bench: redis SET failed\n");
      return 1;
    }
  }
  std::printf("  cache hits: answer %zu bytes (bundle %zu), request %zu bytes; Redis %s\n", answerBytes, bundleBytes,
              hitRequest.ByteSizeLong(), redis > 0 ? "on loopback, GET of a value of the bundle's size"
                                                  : "not installed (apt-get install redis-server): not measured");
  struct Figures {
    double p50 = 0, p99 = 0, rate = 0;
  };
  auto measure = [&](int clients, const auto &make) -> std::optional<Figures> {
    std::vector<double> warm, ms;
    Loop(clients, 0.3, make, &warm);
    const double seconds = 2.0;
    if (!Loop(clients, seconds, make, &ms)) return std::nullopt;
    return Figures{Percentile(ms, 0.5) * 1e3, Percentile(ms, 0.99) * 1e3, ms.size() / seconds};
  };
  auto compileCall = [&] {
    auto st = tir::v1::CompilerService::NewStub(channel);
    return [st = std::shared_ptr<tir::v1::CompilerService::Stub>(std::move(st)), &hitRequest] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      tir::v1::Operation out;
      return st->Compile(&ctx, hitRequest, &out).ok() && out.metadata().cache_hit();
    };
  };
  auto lookupCall = [&] {
    auto st = std::shared_ptr<tir::v1::CompilerService::Stub>(tir::v1::CompilerService::NewStub(channel));
    return [st, &lookupRequest] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      tir::v1::LookupKernelResponse out;
      return st->LookupKernel(&ctx, lookupRequest, &out).ok() && out.found();
    };
  };
  auto echoCall = [&] {
    auto st = std::shared_ptr<tir::bench::Echo::Stub>(tir::bench::Echo::NewStub(echoChannel));
    return [st, &echoRequest, answerBytes] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      tir::bench::EchoResponse out;
      return st->Echo(&ctx, echoRequest, &out).ok() && out.payload().size() == answerBytes;
    };
  };
  auto redisCall = [&] {
    std::shared_ptr<Redis> r = Redis::Connect(redisPort);
    return [r, bundleBytes] { return r && r->Get("bundle") == static_cast<int64_t>(bundleBytes); };
  };
  for (int clients : {1, 8, 64}) {
    auto tc = measure(clients, compileCall);
    auto tl = measure(clients, lookupCall);
    auto te = measure(clients, echoCall);
    std::optional<Figures> tr;
    if (redis > 0) tr = measure(clients, redisCall);
    if (!tc || !tl || !te || (redis > 0 && !tr)) {
      std::fprintf(stderr, "service bench: a call failed with %d clients\n", clients);
      return 1;
    }
    auto row = [&](const char *what, const Figures &f) {
      std::printf("    %2d client%s %-13s p50 %6.0f us  p99 %6.0f us  %7.0f calls/s", clients, clients == 1 ? " " : "s",
                  what, f.p50, f.p99, f.rate);
    };
    row("echo", *te);
    std::printf("  (the transport's floor)\n");
    if (tr) {
      row("redis GET", *tr);
      std::printf("\n");
    }
    for (const auto &[what, f] : {std::pair<const char *, Figures>{"Compile", *tc}, {"LookupKernel", *tl}}) {
      row(what, f);
      std::printf("  x%.2f echo p50, x%.2f its rate", f.p50 / te->p50, te->rate / f.rate);
      if (tr) std::printf("; x%.1f redis p50, x%.1f its rate", f.p50 / tr->p50, tr->rate / f.rate);
      if (clients == 1) {
        std::printf("  (goals: x1.5 echo %s, p99 < 1000 us %s)", f.p50 <= 1.5 * te->p50 ? "met" : "NOT met",
                    f.p99 < 1000 ? "met" : "NOT met");
      } else {
        std::printf("  (goal x1.5 echo rate: %s)", te->rate <= 1.5 * f.rate ? "met" : "NOT met");
      }
      std::printf("\n");
    }
  }
  {
    // Where the time goes: the cache path without the transport, and the
    // answer's serialization alone (one thread, in process).
    std::vector<double> path, serialize;
    tir::coordinator::Coordinator &coordinator = (*server)->coordinator();
    for (int i = 0; i < 3000; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      absl::StatusOr<tir::v1::Operation> op = coordinator.Compile(hitRequest);
      path.push_back(MsSince(t0));
      if (!op.ok() || !op->metadata().cache_hit()) {
        std::fprintf(stderr, "service bench: an in-process hit failed\n");
        return 1;
      }
      t0 = std::chrono::steady_clock::now();
      std::string bytes = op->SerializeAsString();
      serialize.push_back(MsSince(t0));
    }
    std::printf("    in process: Coordinator::Compile hit p50 %.0f us p99 %.0f us; serializing the answer p50 %.0f us\n",
                Percentile(path, 0.5) * 1e3, Percentile(path, 0.99) * 1e3, Percentile(serialize, 0.5) * 1e3);
  }
  if (!hitsOnly) {
    // 1b. Dynamic shapes: a softmax over a run-time row count. The bucket is
    // tuned once; a shape asked for the first time costs one check on the
    // worker (its kernels verified at exactly that shape); after that the
    // shape is a cache hit like a static graph's.
    const char *dynamicSoftmax = R"mlir(
tir.graph @softmax_rows(%x: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x512xf32> -> tensor<?x1xf32>
  %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x512xf32>
  %s = sub %x, %mb : tensor<?x512xf32>
  %e = exp %s : tensor<?x512xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<?x512xf32> -> tensor<?x1xf32>
  %zb = broadcast %z : tensor<?x1xf32> -> tensor<?x512xf32>
  %y = div %e, %zb : tensor<?x512xf32>
  results %y : tensor<?x512xf32>
})mlir";
    auto at = [&](int rows) {
      tir::v1::CompileRequest r = Request(dynamicSoftmax);
      tir::v1::ShapeHint *h = r.mutable_options()->add_shape_hints();
      h->set_input(0);
      h->add_shape(rows);
      h->add_shape(512);
      return r;
    };
    auto compileAndWait = [&](const tir::v1::CompileRequest &r, tir::v1::Operation *op) {
      grpc::ClientContext ctx;
      grpc::Status s = stub->Compile(&ctx, r, op);
      while (s.ok() && !op->done()) {
        grpc::ClientContext w;
        tir::v1::WaitOperationRequest req;
        req.set_name(op->name());
        req.mutable_timeout()->set_seconds(10);
        s = stub->WaitOperation(&w, req, op);
      }
      return s.ok() && op->has_response();
    };
    tir::v1::Operation op;
    auto t0 = std::chrono::steady_clock::now();
    if (!compileAndWait(at(300), &op)) {
      std::fprintf(stderr, "service bench: the dynamic softmax did not tune: %s\n", op.error().message().c_str());
      return 1;
    }
    const double tuneMs = MsSince(t0);
    std::vector<double> firstTime;
    for (int rows = 301; rows <= 320; ++rows) {
      t0 = std::chrono::steady_clock::now();
      if (!compileAndWait(at(rows), &op) || !op.metadata().shape_checked()) {
        std::fprintf(stderr, "service bench: shape %d was not checked: %s\n", rows, op.error().message().c_str());
        return 1;
      }
      firstTime.push_back(MsSince(t0));
    }
    const tir::v1::CompileRequest bucketHit = at(310);
    auto bucketCall = [&] {
      auto st = std::shared_ptr<tir::v1::CompilerService::Stub>(tir::v1::CompilerService::NewStub(channel));
      return [st, &bucketHit] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        tir::v1::Operation out;
        return st->Compile(&ctx, bucketHit, &out).ok() && out.metadata().cache_hit();
      };
    };
    auto tb = measure(1, bucketCall);
    auto ts = measure(1, compileCall);
    auto te = measure(1, echoCall);
    if (!tb || !ts || !te) {
      std::fprintf(stderr, "service bench: a dynamic-shape call failed\n");
      return 1;
    }
    std::printf("  dynamic shapes (softmax over ?x512 rows, bucket 257..512, tuned at 512):\n");
    std::printf("    tuning the bucket (first shape, 300 rows, with its check): %7.0f ms\n", tuneMs);
    std::printf("    a first-time shape (20 shapes, 301..320 rows; one check per kernel on the worker): p50 %6.1f ms"
                "  max %6.1f ms  (x%.3f of the bucket's tuning)\n",
                Percentile(firstTime, 0.5), Percentile(firstTime, 1.0), Percentile(firstTime, 0.5) / tuneMs);
    std::printf("    a bucket hit (a verified shape, 1 client): p50 %6.0f us  p99 %6.0f us  %7.0f calls/s"
                "  x%.2f a static graph's hit p50 (%0.f us), x%.2f echo p50\n",
                tb->p50, tb->p99, tb->rate, tb->p50 / ts->p50, ts->p50, tb->p50 / te->p50);
  }
  echoServer->Shutdown();
  if (redis > 0) {
    kill(redis, SIGTERM);
    waitpid(redis, nullptr, 0);
  }
  if (hitsOnly) {
    worker.Stop();
    workerThread.join();
    (*server)->Shutdown();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return 0;
  }

  // 2. Tuning efficiency: every kept candidate of every kernel (merged by
  // source hash), re-measured here; the tuner's winner against the best.
  tir::isolation::RunnerProcess proc({runner, "--backend=host"});
  tir::worker::HostBackend backend(dir + "/exhaustive");
  auto ctx = tir::makeTirContext();
  double logRatio = 0, logFraction = 0, rhoSum = 0;
  int kernels = 0, rhoCount = 0;
  // Every distinct kernel measured, as a cost-model data point (for the
  // leave-one-graph-out calibration below).
  struct Measured {
    size_t graph;
    std::vector<tir::planning::TrialPoint> points;
    size_t space = 0;
  };
  std::vector<Measured> measuredKernels;
  for (size_t g = 0; g < std::size(kSuite); ++g) {
    auto loaded = tir::LoadGraphText(kSuite[g][1], ctx.get());
    tir::v1::MeasurementPolicy policy;
    policy.set_min_runs(10);
    policy.mutable_time_budget()->set_nanos(50'000'000);
    policy.set_verify(true);
    policy.set_seed(3);
    if (!loaded.ok()) return 1;
    auto all = tir::tuning::BuildWorkItems(loaded->graph, *tir::target::LookupArch("host"), 1 << 20, policy);
    if (!all.ok()) return 1;
    for (size_t k = 0; k < all->size(); ++k) {
      const tir::v1::WorkItem &item = (*all)[k].item;
      if (!proc.Prepare(item, absl::Minutes(5)).ok()) return 1;
      std::vector<double> t(item.candidates_size(), INFINITY), predicted, measured;
      for (int i = 0; i < item.candidates_size(); ++i) {
        auto bin = backend.Compile(item.candidates(i), "host");
        if (!bin.ok()) continue;
        auto r = proc.Measure(i, bin->path, absl::Seconds(120));
        if (r.ok() && r->verification().verdict() == tir::v1::VERDICT_PASSED) {
          t[i] = r->measurement().median_seconds();
          predicted.push_back(item.candidates(i).candidate().predicted_seconds());
          measured.push_back(t[i]);
        }
      }
      Measured mk{g, {}, static_cast<size_t>((*all)[k].space_size)};
      for (int i = 0; i < item.candidates_size(); ++i) {
        if (!std::isfinite(t[i])) continue;
        const tir::v1::Candidate &c = item.candidates(i).candidate();
        tir::planning::TrialPoint p;
        p.key = absl::StrCat(kSuite[g][0], "/", k, "/", item.candidates(i).candidate_index());
        p.arch = "host";
        p.kind = c.kernel_kind();
        p.params.insert(c.params().begin(), c.params().end());
        p.inputs.insert(c.model_inputs().begin(), c.model_inputs().end());
        p.predicted = c.predicted_seconds();
        p.measured = t[i];
        mk.points.push_back(std::move(p));
      }
      measuredKernels.push_back(std::move(mk));
      // The winner's position: its candidate, or the one it was merged into.
      const tir::v1::KernelEntry &entry = tuned[g].kernels(k);
      const uint32_t winner = entry.candidate().rank();
      int at = -1;
      for (int i = 0; i < item.candidates_size() && at < 0; ++i) {
        const tir::v1::CandidateWork &c = item.candidates(i);
        if (c.candidate_index() == winner) at = i;
        for (uint32_t m : c.merged_candidate_indices()) {
          if (m == winner) at = i;
        }
      }
      // TIR_BENCH_VERBOSE=1: every candidate's prediction and time.
      if (std::getenv("TIR_BENCH_VERBOSE")) {
        for (int i = 0; i < item.candidates_size(); ++i) {
          std::string params;
          for (const auto &[p, v] : item.candidates(i).candidate().params()) absl::StrAppend(&params, " ", p, "=", v);
          std::printf("    #%-3u predicted %9.3f ms measured %9.3f ms %s\n", item.candidates(i).candidate_index(),
                      item.candidates(i).candidate().predicted_seconds() * 1e3, t[i] * 1e3, params.c_str());
        }
      }
      const double best = *std::min_element(t.begin(), t.end());
      const double won = at >= 0 ? t[at] : INFINITY;
      const double ratio = won / best;
      const double rho = RankCorrelation(predicted, measured);
      std::printf("  %-14s kernel %zu: %3d distinct kernels, tuned winner #%-3u %9.3f ms, exhaustive best %9.3f ms, "
                  "x%.3f; model rank correlation %+.2f\n",
                  kSuite[g][0], k, item.candidates_size(), winner, won * 1e3, best * 1e3, ratio, rho);
      logRatio += std::log(ratio);
      rhoSum += rho;
      ++rhoCount;
      ++kernels;
    }
    logFraction += std::log(static_cast<double>(tuned[g].tuning().candidates_measured()) /
                            std::max(1u, tuned[g].tuning().candidates_total()));
  }
  const double gmRatio = std::exp(logRatio / kernels), gmFraction = std::exp(logFraction / std::size(kSuite));
  std::printf("  tuning: winner within x%.3f of the exhaustive best (goal <= 1.05: %s), measuring %.1f%% of the space "
              "(goal <= 10%%: %s), geometric means; cost model rank correlation %+.2f (mean over kernels)\n",
              gmRatio, gmRatio <= 1.05 ? "met" : "NOT met", 100 * gmFraction, gmFraction <= 0.10 ? "met" : "NOT met",
              rhoCount ? rhoSum / rhoCount : 0.0);
  // 3. Learning from measurements: for each kernel, the model calibrated on
  // the other graphs' measurements (never its own) ranks its candidates; the
  // best measured among its top picks (as many as the tuner measures) against
  // the exhaustive best, and the rank correlation, before and after.
  double logBefore = 0, logAfter = 0, rhoBefore = 0, rhoAfter = 0;
  int evaluated = 0;
  for (const Measured &mk : measuredKernels) {
    if (mk.points.size() < 3) continue;
    std::vector<tir::planning::TrialPoint> others;
    for (const Measured &o : measuredKernels) {
      if (o.graph != mk.graph) others.insert(others.end(), o.points.begin(), o.points.end());
    }
    const tir::planning::Calibration cal = tir::planning::Calibration::Fit(others);
    const tir::planning::Correction *fit = cal.Find("host", mk.points[0].kind);
    std::vector<double> before, after, times;
    for (const tir::planning::TrialPoint &p : mk.points) {
      before.push_back(p.predicted);
      const std::vector<double> x = tir::planning::Features(p.kind, p.params, p.inputs);
      double dot = 0;
      for (size_t i = 0; fit && i < x.size() && i < fit->weights.size(); ++i) dot += fit->weights[i] * x[i];
      after.push_back(p.predicted * std::exp(std::clamp(dot, -5.0, 5.0)));
      times.push_back(p.measured);
    }
    const size_t width = std::max<size_t>(2, static_cast<size_t>(mk.space * 0.10));
    auto pick = [&](const std::vector<double> &model) {
      std::vector<size_t> order(model.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return model[a] < model[b]; });
      double best = INFINITY;
      for (size_t i = 0; i < order.size() && i < width; ++i) best = std::min(best, times[order[i]]);
      return best;
    };
    const double exhaustive = *std::min_element(times.begin(), times.end());
    logBefore += std::log(pick(before) / exhaustive);
    logAfter += std::log(pick(after) / exhaustive);
    rhoBefore += RankCorrelation(before, times);
    rhoAfter += RankCorrelation(after, times);
    ++evaluated;
  }
  if (evaluated > 0) {
    std::printf("  calibration (leave one graph out, %d kernels): model's top picks within x%.3f of the best -> x%.3f "
                "calibrated; rank correlation %+.2f -> %+.2f\n",
                evaluated, std::exp(logBefore / evaluated), std::exp(logAfter / evaluated), rhoBefore / evaluated,
                rhoAfter / evaluated);
  }
  proc.Shutdown();
  worker.Stop();
  workerThread.join();
  (*server)->Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
