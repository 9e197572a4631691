// Who may call what, in one place: every method of the client API
// (tir.v1.CompilerService) and the worker API (tir.v1.WorkerService) is in
// one table with the role it needs, and the services' call helpers check it
// before any handler runs. Tokens come as "authorization: Bearer <token>"
// metadata and are compared in time independent of where they differ.
//  - client: every client call needs the client token (when one is set);
//  - read: the read calls (operations, kernels, workers) take the read
//    token as well;
//  - worker: every worker call needs the worker token (when one is set).

#ifndef TIR_SERVER_API_AUTH_H_
#define TIR_SERVER_API_AUTH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"

namespace tir::api {

struct Tokens {
  // When not empty, every client call needs it (or, for a read call, `read`).
  std::string client;
  // Allows the read calls only (needs `client`).
  std::string read;
  // Required for every worker call when not empty.
  std::string worker;
};

enum class Role { kClient, kRead, kWorker, kUnknown };

// The role `method` (its short name, "Compile") needs; kUnknown for a
// method not in the table, which no token opens.
Role RoleOf(absl::string_view method);

class Authenticator {
 public:
  explicit Authenticator(Tokens tokens) : tokens_(std::move(tokens)) {}
  // OK when the call's credentials grant `method`. Errors: UNAUTHENTICATED
  // (no token, a wrong one), INTERNAL for a method the table lacks.
  absl::Status Check(const grpc::ServerContextBase &context, absl::string_view method) const;

 private:
  const Tokens tokens_;
};

// Who a call counts against for per-client limits and whose request ids it
// uses: its peer's address without the port (what the caller cannot choose;
// the "tir-client" metadata it may send is a label, not a key).
std::string ClientOf(const grpc::ServerContextBase &context);

}  // namespace tir::api

#endif  // TIR_SERVER_API_AUTH_H_
