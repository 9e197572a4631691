// A gRPC proxy on loopback that forwards every call, whatever its method,
// to an upstream server and records each request's bytes: real traffic of
// real clients and workers (tir-worker, the client library), captured as a
// corpus for the gRPC-surface fuzzer. Metadata (tokens, worker sessions)
// and the caller's deadline go upstream; answers, streams and statuses
// (with their error details) come back as the upstream sent them.

#ifndef TIR_TESTS_TESTING_RECORDING_PROXY_H_
#define TIR_TESTS_TESTING_RECORDING_PROXY_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace tir::testing {

class RecordingProxy {
 public:
  // Serves on a free loopback port; null when it cannot listen.
  static std::unique_ptr<RecordingProxy> Start(const std::string &upstream);
  ~RecordingProxy();

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Every request seen so far: (full method name, serialized request).
  std::vector<std::pair<std::string, std::string>> Recorded() const;

 private:
  class Forward;
  class Service;
  RecordingProxy() = default;
  void Record(const std::string &method, std::string bytes);

  std::shared_ptr<grpc::Channel> upstream_;
  std::unique_ptr<grpc::GenericStub> stub_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, std::string>> recorded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tir::testing

#endif  // TIR_TESTS_TESTING_RECORDING_PROXY_H_
