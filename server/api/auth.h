// Who may call what, in one place: every method of the client API
// (tir.v1.CompilerService) and the worker API (tir.v1.WorkerService) is in
// one table with the role it needs, and the services' call helpers check it
// before any handler runs. Tokens come as "authorization: Bearer <token>"
// metadata and are compared in time independent of where they differ.
//  - client: every client call needs the client token (when one is set);
//  - read: the read calls (operations, kernels, workers) take the read
//    token as well;
//  - worker: every worker call needs the worker token (when one is set).
// Credentials (Tokens::credentials, the config's credentialsFile) give each
// client and worker a token of its own and an identity: a call that presents
// one is that identity's, for limits, request ids, worker names and what it
// owns (its operations, the bundles it asked for). A shared token (or none)
// authenticates the role only: its callers are one anonymous identity ("")
// for ownership, and are told apart by their peer address (or their worker
// session) for limits.
// An admin credential is a client's that also acts on what other identities
// own (DeleteKernel of a bundle others asked for, CancelOperation of
// another's operation).
// A token refused: UNAUTHENTICATED when it is no token of the service (none,
// a wrong one, another service's); PERMISSION_DENIED, READ_ONLY_ROLE, when it
// is a read token (the shared one or a read credential) presented for a
// client call that writes.

#ifndef TIR_SERVER_API_AUTH_H_
#define TIR_SERVER_API_AUTH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"

namespace tir::api {

enum class Role { kClient, kRead, kWorker, kAdmin, kUnknown };

// One identity's token, for one role: kClient (every client call), kRead
// (the read calls), kAdmin (every client call, on what any identity owns)
// or kWorker.
struct Credential {
  Role role = Role::kUnknown;
  std::string identity;  // [A-Za-z0-9._-]{1,64}
  std::string token;
};

// The credentials file: one "<role> <identity> <token>" per line (role
// client, read, admin or worker; tokens of at least 16 bytes, each used
// once; an identity once per role, client, read and admin being one),
// "#" comments and blank lines skipped. Errors name `path` and the line
// (INVALID_CONFIG).
absl::StatusOr<std::vector<Credential>> ParseCredentials(const std::string &text, const std::string &path);

struct Tokens {
  // When not empty, every client call needs it (or, for a read call, `read`).
  std::string client;
  // Allows the read calls only (needs `client`).
  std::string read;
  // Required for every worker call when not empty.
  std::string worker;
  // Per-identity tokens; with any for a service, its calls need a token.
  std::vector<Credential> credentials;
  // Whether the client (client and read calls) or worker service needs a
  // token.
  bool ClientsNeedToken() const;
  bool WorkersNeedToken() const;
};

// The role `method` (its short name, "Compile") needs; kUnknown for a
// method not in the table, which no token opens.
Role RoleOf(absl::string_view method);

class Authenticator {
 public:
  explicit Authenticator(Tokens tokens);
  // OK when the call's credentials grant `method`; `identity` (when given)
  // is then the identity of the credential it presented, "" for a shared
  // token or an open service, and `admin` (when given) whether that
  // credential is an admin's. Errors: UNAUTHENTICATED (no token, a wrong
  // one), PERMISSION_DENIED / READ_ONLY_ROLE (a read token for a client
  // call), INTERNAL for a method the table lacks.
  absl::Status Check(const grpc::ServerContextBase &context, absl::string_view method,
                     std::string *identity = nullptr, bool *admin = nullptr) const;

 private:
  const Tokens tokens_;
  // SHA-256 of "Bearer <token>" for each credential, compared with the
  // presented value's digest for every entry (no early exit, one length):
  // the time says neither which entry matched nor how long a token is.
  std::vector<std::string> digests_;
};

// Who a call counts against for per-client limits and whose request ids it
// uses: "id:<identity>" for a call with a credential of its own, else its
// peer's host (PeerKey: what the caller cannot choose; the "tir-client"
// metadata it may send is a label, not a key).
std::string ClientOf(const grpc::ServerContextBase &context, const std::string &identity = "");
// Whether a ClientOf key is an authenticated identity's (not a host's).
inline bool IsIdentity(const std::string &client) { return client.rfind("id:", 0) == 0; }
// The key of a peer address (ClientOf without a credential): its host.
// "ipv4:A.B.C.D"; for IPv6 its /64, which one host may fill with addresses
// of its own ("ipv6:2001:db8:1:2::/64"); an IPv4-mapped address as its IPv4
// host; and "local" for this machine however it calls: all of 127.0.0.0/8
// (a local caller may bind any of them), ::1, ::ffff:127.x and Unix sockets.
std::string PeerKey(std::string peer);

}  // namespace tir::api

#endif  // TIR_SERVER_API_AUTH_H_
