// Loopback helpers for tests that start real servers.

#ifndef TIR_TESTS_TESTING_NET_H_
#define TIR_TESTS_TESTING_NET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace tir::testing {

// A loopback port nothing listens on at the moment.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a));
  socklen_t n = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

// The whole HTTP/1.0 answer (headers and body) to GET `path` on loopback
// `port` with `headers` ("Name: value\r\n" lines; a Host: localhost when
// they name none); "" when nothing answers.
inline std::string HttpGet(int port, const std::string &path, const std::string &headers = "") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
    const bool host = headers.find("Host:") != std::string::npos;
    const std::string req = "GET " + path + " HTTP/1.0\r\n" + (host ? "" : "Host: localhost\r\n") + headers + "\r\n";
    (void)!write(fd, req.data(), req.size());
    char buf[4096];
    for (ssize_t r; (r = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, r);
  }
  close(fd);
  return out;
}

}  // namespace tir::testing

#endif  // TIR_TESTS_TESTING_NET_H_
