// Attacks on the coordinator's connections, on loopback, each bounded in
// time and count: slow HTTP clients against the dashboard and /metrics,
// connections that never call, calls that declare a large message and never
// finish it, and one machine calling from many loopback addresses to take
// every other client's share.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel_posix.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/security/attack_fixture.h"
#include "tests/testing/net.h"

namespace tir::security_testing {
namespace {

using ::testing::HasSubstr;

// A TCP connection to loopback `port`, from address `from` when given
// (any of 127.0.0.0/8 is this machine's); -1 when it cannot be made.
int Connect(int port, const std::string &from = "") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (!from.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (inet_pton(AF_INET, from.c_str(), &local.sin_addr) != 1 ||
        bind(fd, reinterpret_cast<sockaddr *>(&local), sizeof(local)) != 0) {
      close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string &bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Whether the server closed `fd` (what it sent before is read and dropped).
bool ClosedByServer(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) continue;
    if (r == 0) return true;
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }
}

// Waits (polling, at most `bound`) until `done`; returns whether it came.
bool WaitUntil(const std::function<bool()> &done, absl::Duration bound) {
  const absl::Time end = absl::Now() + bound;
  while (!done()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return true;
}

// The whole answer to GET `path` on loopback `port` ("" when none comes
// within `bound`: a request that waits behind held connections).
std::string Fetch(int port, const std::string &path, absl::Duration bound = absl::Seconds(20)) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  timeval tv{};
  tv.tv_sec = absl::ToInt64Seconds(bound);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::string out;
  if (SendAll(fd, "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n")) {
    const absl::Time end = absl::Now() + bound;
    char buf[4096];
    for (ssize_t r; absl::Now() < end && (r = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, r);
    if (absl::Now() >= end) out.clear();
  }
  close(fd);
  return out;
}

// The resident memory of process `pid` in bytes (0 when unknown).
int64_t RssOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Just enough HTTP/2 to start gRPC calls on one connection and send all
// of each call's message but its last byte, within the flow-control
// windows the server grants: a client that declares large messages and
// never finishes them. It answers the server's SETTINGS and PINGs, and
// stops a call the server resets or ends.
class PartialSender {
 public:
  PartialSender(int port, int calls, uint32_t declared, const std::string &path, const std::string &token)
      : fd_(Connect(port)) {
    if (fd_ < 0) return;
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
    out_ = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    Frame(0x4, 0, 0, "");  // SETTINGS, none changed
    const std::string prefix = {0, static_cast<char>(declared >> 24), static_cast<char>(declared >> 16),
                                static_cast<char>(declared >> 8), static_cast<char>(declared)};
    for (int i = 0; i < calls; ++i) {
      Call c;
      c.id = 1 + 2 * i;
      c.prefix = prefix;
      c.left = 5 + static_cast<uint64_t>(declared) - 1;
      std::string block;
      for (const auto &[name, value] : std::vector<std::pair<std::string, std::string>>{
               {":method", "POST"},
               {":scheme", "http"},
               {":path", path},
               {":authority", absl::StrCat("127.0.0.1:", port)},
               {"content-type", "application/grpc"},
               {"te", "trailers"},
               {"authorization", "Bearer " + token}}) {
        // A literal field, not indexed, its name and value as they are.
        block += '\0';
        block += static_cast<char>(name.size());
        block += name;
        block += static_cast<char>(value.size());
        block += value;
      }
      Frame(0x1, 0x4, c.id, block);  // HEADERS, END_HEADERS
      calls_.push_back(c);
    }
  }
  ~PartialSender() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return fd_ >= 0; }
  // Nothing more to send: each call has all but its last byte out, or was
  // ended by the server, or the connection is gone.
  bool done() const {
    return closed_ || std::all_of(calls_.begin(), calls_.end(), [](const Call &c) { return c.ended || c.left == 0; });
  }
  uint64_t sent() const { return sent_; }
  int ended() const {
    return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const Call &c) { return c.ended || closed_; }));
  }

  // Reads what the server sent and sends what its windows allow; whether
  // anything moved.
  bool Pump() {
    if (closed_ || fd_ < 0) return false;
    bool moved = false;
    char buf[65536];
    for (;;) {
      const ssize_t r = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (r > 0) {
        in_.append(buf, r);
        moved = true;
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closed_ = true;
      break;
    }
    Parse();
    // One DATA frame per call and round, while little is waiting to go.
    for (Call &c : calls_) {
      if (out_.size() > (256 << 10)) break;
      const int64_t n = std::min<int64_t>({16384, conn_window_, c.window, static_cast<int64_t>(c.left)});
      if (c.ended || n <= 0) continue;
      std::string payload;
      for (int64_t i = 0; i < n; ++i, ++c.offset) payload += c.offset < 5 ? c.prefix[c.offset] : 'x';
      Frame(0x0, 0, c.id, payload);  // DATA, never END_STREAM
      c.left -= n;
      c.window -= n;
      conn_window_ -= n;
      sent_ += n;
      moved = true;
    }
    while (!closed_ && !out_.empty()) {
      const ssize_t w = send(fd_, out_.data(), out_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) {
        out_.erase(0, w);
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) closed_ = true;
      break;
    }
    return moved;
  }

 private:
  struct Call {
    uint32_t id = 0;
    std::string prefix;  // the gRPC message header: not compressed, its length
    uint64_t offset = 0, left = 0;
    int64_t window = 65535;
    bool ended = false;
  };

  void Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string &payload) {
    const uint32_t n = payload.size();
    out_ += {static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n), static_cast<char>(type),
             static_cast<char>(flags),   static_cast<char>(stream >> 24), static_cast<char>(stream >> 16),
             static_cast<char>(stream >> 8), static_cast<char>(stream)};
    out_ += payload;
  }
  static uint32_t Be32(const std::string &s, size_t at) {
    return (uint32_t{static_cast<uint8_t>(s[at])} << 24) | (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(s[at + 3])};
  }
  Call *Find(uint32_t id) {
    for (Call &c : calls_) {
      if (c.id == id) return &c;
    }
    return nullptr;
  }
  void Parse() {
    while (in_.size() >= 9) {
      const uint32_t n = Be32(in_, 0) >> 8;
      if (in_.size() < 9 + n) return;
      const uint8_t type = in_[3], flags = in_[4];
      const uint32_t stream = Be32(in_, 5) & 0x7fffffff;
      const std::string payload = in_.substr(9, n);
      in_.erase(0, 9 + n);
      Call *c = Find(stream);
      if (type == 0x4 && !(flags & 0x1)) {  // SETTINGS: INITIAL_WINDOW_SIZE moves every call's window
        for (size_t at = 0; at + 6 <= payload.size(); at += 6) {
          const uint16_t id = (static_cast<uint8_t>(payload[at]) << 8) | static_cast<uint8_t>(payload[at + 1]);
          if (id != 0x4) continue;
          const int64_t size = Be32(payload, at + 2);
          for (Call &x : calls_) x.window += size - initial_window_;
          initial_window_ = size;
        }
        Frame(0x4, 0x1, 0, "");
      } else if (type == 0x6 && !(flags & 0x1)) {  // PING: answered
        Frame(0x6, 0x1, 0, payload);
      } else if (type == 0x8 && payload.size() == 4) {  // WINDOW_UPDATE
        const int64_t more = Be32(payload, 0) & 0x7fffffff;
        if (stream == 0) {
          conn_window_ += more;
        } else if (c != nullptr) {
          c->window += more;
        }
      } else if (type == 0x3 && c != nullptr) {  // RST_STREAM
        c->ended = true;
      } else if ((type == 0x0 || type == 0x1) && (flags & 0x1) && c != nullptr) {  // END_STREAM: answered
        c->ended = true;
      } else if (type == 0x7 && payload.size() >= 4) {  // GOAWAY: calls past its last id were never taken
        const uint32_t last = Be32(payload, 0) & 0x7fffffff;
        for (Call &x : calls_) x.ended = x.ended || x.id > last;
      }
    }
  }

  const int fd_;
  std::vector<Call> calls_;
  std::string in_, out_;
  int64_t conn_window_ = 65535, initial_window_ = 65535;
  uint64_t sent_ = 0;
  bool closed_ = false;
};

// The attack fixture's coordinator with small network limits: HTTP servers
// of kHttpThreads threads that give a client kHttpTimeoutMs for its
// request, connections closed after kIdleMs without a call, and gRPC
// buffers bounded at kQuotaBytes.
class NetworkLimits : public Security {
 protected:
  static constexpr int kHttpThreads = 8;
  static constexpr int kHttpTimeoutMs = 3000;
  static constexpr int kIdleMs = 2000;
  static constexpr int64_t kMessageBytes = 16 << 20;
  static constexpr int64_t kQuotaBytes = 64 << 20;

  static void SetUpTestSuite() {
    metrics_ = tir::testing::FreePort();
    StartCoordinator(absl::StrCat(", \"metricsPort\": ", metrics_, ", \"httpThreads\": ", kHttpThreads,
                                  ", \"httpRequestTimeoutMs\": ", kHttpTimeoutMs, ", \"maxConnectionIdleMs\": ", kIdleMs,
                                  ", \"maxMessageBytes\": ", kMessageBytes, ", \"maxGrpcMemoryBytes\": ", kQuotaBytes));
  }

  static inline int metrics_;
};

// Slow clients that hold connections (each sent part of a request line and
// waits), fewer than the threads, leave /healthz and /metrics answering
// while they hold them (four took the dashboard, two /metrics).
TEST_F(NetworkLimits, SlowHttpClientsLeaveHealthAndMetricsAnswering) {
  std::vector<int> slow;
  for (int port : {dashboard_, metrics_}) {
    for (int i = 0; i < kHttpThreads - 2; ++i) {
      const int fd = Connect(port);
      ASSERT_GE(fd, 0);
      ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: loc"));
      slow.push_back(fd);
    }
  }
  const std::string health = Fetch(dashboard_, "/healthz");
  EXPECT_THAT(health, HasSubstr("200 OK"));
  EXPECT_THAT(health, HasSubstr("ok"));
  EXPECT_THAT(Fetch(metrics_, "/metrics"), HasSubstr("tir_build_info"));
  // They were answered while the slow clients held their connections, not
  // once those were cut.
  int open = 0;
  for (int fd : slow) open += !ClosedByServer(fd);
  EXPECT_EQ(open, static_cast<int>(slow.size()));
  for (int fd : slow) close(fd);
}

// More slow clients than threads, some sending a byte at a time: each is
// cut once its request time is up, and /healthz and /metrics answer again.
TEST_F(NetworkLimits, SlowHttpClientsAreCutAtTheRequestTimeout) {
  std::vector<int> slow;
  for (int port : {dashboard_, metrics_}) {
    for (int i = 0; i < 2 * kHttpThreads; ++i) {
      const int fd = Connect(port);
      ASSERT_GE(fd, 0);
      ASSERT_TRUE(SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: local"));
      slow.push_back(fd);
    }
  }
  std::vector<bool> closed(slow.size(), false);
  const bool all = WaitUntil(
      [&] {
        bool every = true;
        for (size_t i = 0; i < slow.size(); ++i) {
          if (closed[i]) continue;
          closed[i] = ClosedByServer(slow[i]);
          if (!closed[i] && i % 2 == 0) (void)send(slow[i], "h", 1, MSG_NOSIGNAL);  // trickling
          every = every && closed[i];
        }
        return every;
      },
      absl::Seconds(60));
  EXPECT_TRUE(all) << std::count(closed.begin(), closed.end(), false) << " of " << slow.size()
                   << " slow connections still held";
  EXPECT_THAT(Fetch(dashboard_, "/healthz"), HasSubstr("200 OK"));
  EXPECT_THAT(Fetch(metrics_, "/metrics"), HasSubstr("tir_build_info"));
  for (int fd : slow) close(fd);
}

// Connections that never call are closed: ones that send nothing at all,
// ones that open HTTP/2 and go quiet, and a real client's channel once it
// has been idle (it reconnects for its next call).
TEST_F(NetworkLimits, IdleConnectionsAreClosed) {
  std::vector<int> held;
  for (int i = 0; i < 20; ++i) {
    const int silent = Connect(port_);
    ASSERT_GE(silent, 0);
    held.push_back(silent);
    const int quiet = Connect(port_);
    ASSERT_GE(quiet, 0);
    // The client preface and an empty SETTINGS frame, then nothing.
    ASSERT_TRUE(SendAll(quiet, std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\0\0\0\4\0\0\0\0\0", 9)));
    held.push_back(quiet);
  }
  std::vector<bool> closed(held.size(), false);
  const bool all = WaitUntil(
      [&] {
        for (size_t i = 0; i < held.size(); ++i) closed[i] = closed[i] || ClosedByServer(held[i]);
        return std::all_of(closed.begin(), closed.end(), [](bool c) { return c; });
      },
      absl::Seconds(60));
  EXPECT_TRUE(all) << std::count(closed.begin(), closed.end(), false) << " of " << held.size()
                   << " idle connections still held";
  for (int fd : held) close(fd);

  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
  auto stub = tir::v1::CompilerService::NewStub(channel);
  auto list = [&] {
    grpc::ClientContext ctx;
    Token(ctx, "read-token");
    tir::v1::ListWorkersResponse out;
    return stub->ListWorkers(&ctx, {}, &out);
  };
  ASSERT_TRUE(list().ok());
  EXPECT_TRUE(WaitUntil([&] { return channel->GetState(false) != GRPC_CHANNEL_READY; }, absl::Seconds(60)))
      << "the idle channel's connection was kept";
  EXPECT_TRUE(list().ok()) << "a client whose idle connection was closed calls again";
}

// Calls that declare a large message and send all of it but the last byte
// (24 calls of 16 MiB on four connections: 384 MiB if it were all held)
// are cut once gRPC's buffers pass its quota: the coordinator's memory
// stays bounded by it, and it answers others meanwhile and after.
TEST_F(NetworkLimits, PartialMessagesStayWithinTheMemoryQuota) {
  const int64_t before = RssOf(pid_);
  ASSERT_GT(before, 0);
  std::vector<std::unique_ptr<PartialSender>> senders;
  for (int i = 0; i < 4; ++i) {
    senders.push_back(std::make_unique<PartialSender>(port_, 6, static_cast<uint32_t>(kMessageBytes - 4096),
                                                      "/tir.v1.CompilerService/Compile", "client-token"));
    ASSERT_TRUE(senders.back()->connected());
  }
  int64_t peak = before;
  absl::Time moved = absl::Now();
  const absl::Time end = absl::Now() + absl::Seconds(120);
  // Until every call has sent what it will, the server ended it, or it
  // opens no more window for 3 s.
  while (absl::Now() < end) {
    bool any = false, done = true;
    for (auto &s : senders) {
      any = s->Pump() || any;
      done = done && s->done();
    }
    peak = std::max(peak, RssOf(pid_));
    if (done) break;
    if (any) {
      moved = absl::Now();
    } else if (absl::Now() - moved > absl::Seconds(3)) {
      break;
    } else {
      absl::SleepFor(absl::Milliseconds(5));
    }
  }
  uint64_t sent = 0;
  int ended = 0;
  for (auto &s : senders) {
    sent += s->sent();
    ended += s->ended();
  }
  // gRPC reclaims behind a sender as fast as loopback: it may overshoot its
  // quota for a moment, never without bound (all 384 MiB were held before).
  EXPECT_LT(peak - before, 3 * kQuotaBytes)
      << "the coordinator went from " << (before >> 20) << " MiB to " << (peak >> 20) << " MiB; " << (sent >> 20)
      << " MiB sent in 24 unfinished calls, " << ended << " of them ended by the server";
  EXPECT_GT(ended, 0) << "no unfinished call was cut";
  // Others are answered while the unfinished calls are held, and after.
  EXPECT_TRUE(ListWorkers().ok());
  senders.clear();
  tir::v1::Operation op;
  const grpc::Status compiled = Compile(Graph("after_partial_messages", 24), &op);
  EXPECT_TRUE(compiled.ok()) << compiled.error_message();
}

// One machine is one host, whichever loopback address it calls from: 66
// addresses of 127/8, each opening as many WatchOperation streams as it
// may with the shared (anonymous) token, get one client's share between
// them, and a client with a credential of its own still watches.
TEST_F(NetworkLimits, LoopbackAddressesAreOneHost) {
  const Registered w = Register();  // a worker that never leases: the operation stays open
  ASSERT_FALSE(w.name.empty());
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("watched_by_many", 88), &op).ok());
  ASSERT_FALSE(op.done());
  tir::v1::WatchOperationRequest req;
  req.set_name(op.name());
  struct Watch {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<tir::v1::Operation>> reader;
  };
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<Watch>> open;
  int refused = 0;
  std::string refusal;
  for (int a = 2; a < 2 + 66; ++a) {
    const int fd = Connect(port_, absl::StrCat("127.0.0.", a));
    ASSERT_GE(fd, 0) << "cannot call from 127.0.0." << a;
    channels.push_back(grpc::CreateInsecureChannelFromFd(absl::StrCat("127.0.0.1:", port_), fd));
    auto stub = tir::v1::CompilerService::NewStub(channels.back());
    // As many as one client may open (16), and one more.
    for (int i = 0; i < 17; ++i) {
      auto watch = std::make_unique<Watch>();
      Token(watch->ctx, "client-token");
      watch->reader = stub->WatchOperation(&watch->ctx, req);
      tir::v1::Operation first;
      if (watch->reader->Read(&first)) {
        open.push_back(std::move(watch));
        continue;
      }
      const grpc::Status s = watch->reader->Finish();
      ++refused;
      EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
      refusal = s.error_message();
      break;
    }
  }
  EXPECT_LE(open.size(), 16u) << "every loopback address had a client's share of its own";
  EXPECT_GE(open.size(), 1u);
  EXPECT_THAT(refusal, HasSubstr("maxWatchStreams"));
  // A client with a credential of its own is not locked out by them.
  {
    Watch mine;
    Token(mine.ctx, "team-a-token-0123456789");
    mine.reader = clients_->WatchOperation(&mine.ctx, req);
    tir::v1::Operation first;
    if (mine.reader->Read(&first)) {
      EXPECT_EQ(first.name(), op.name());
      mine.ctx.TryCancel();
      while (mine.reader->Read(&first)) {
      }
      (void)mine.reader->Finish();
    } else {
      ADD_FAILURE() << "team-a's stream was refused: " << mine.reader->Finish().error_message();
    }
  }
  for (auto &watch : open) {
    watch->ctx.TryCancel();
    tir::v1::Operation ignored;
    while (watch->reader->Read(&ignored)) {
    }
    (void)watch->reader->Finish();
  }
}

}  // namespace
}  // namespace tir::security_testing
