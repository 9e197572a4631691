// A server that accepts connections and never answers, nor reads: a hung
// service as a client sees it (the TCP or Unix connection opens, nothing
// comes back).

#ifndef TIR_TESTS_TESTING_SILENT_SERVER_H_
#define TIR_TESTS_TESTING_SILENT_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tir::testing {

class SilentServer {
 public:
  // On a free loopback TCP port ("127.0.0.1:PORT").
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a));
    socklen_t n = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &n);
    address_ = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    Serve();
  }
  // On a Unix socket at `path` ("unix:PATH").
  explicit SilentServer(const std::string &path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    unlink(path.c_str());
    bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a));
    address_ = "unix:" + path;
    Serve();
  }
  ~SilentServer() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept
    thread_.join();
    close(fd_);
    std::lock_guard<std::mutex> l(mu_);
    for (int c : accepted_) close(c);
  }
  std::string address() const { return address_; }
  int accepted() {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(accepted_.size());
  }

 private:
  void Serve() {
    listen(fd_, 64);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          return;
        }
        std::lock_guard<std::mutex> l(mu_);
        accepted_.push_back(c);  // held open, never read or written
      }
    });
  }
  int fd_ = -1;
  std::string address_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> accepted_;
};

}  // namespace tir::testing

#endif  // TIR_TESTS_TESTING_SILENT_SERVER_H_
