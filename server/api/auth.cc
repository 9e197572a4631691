#include "server/api/auth.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "openssl/crypto.h"

namespace tir::api {
namespace {

const std::map<absl::string_view, Role> &Table() {
  static const auto *table = new std::map<absl::string_view, Role>{
      {"Compile", Role::kClient},         {"CancelOperation", Role::kClient}, {"DeleteKernel", Role::kClient},
      {"GetOperation", Role::kRead},      {"WaitOperation", Role::kRead},     {"WatchOperation", Role::kRead},
      {"GetKernel", Role::kRead},         {"LookupKernel", Role::kRead},      {"ListKernels", Role::kRead},
      {"ListWorkers", Role::kRead},       {"RegisterWorker", Role::kWorker},  {"Heartbeat", Role::kWorker},
      {"LeaseWork", Role::kWorker},       {"ReportResult", Role::kWorker},    {"Drain", Role::kWorker},
      {"ReturnWork", Role::kWorker},
  };
  return *table;
}

// The bearer token a call presents (nullopt: no authorization metadata).
std::optional<absl::string_view> Presented(const grpc::ServerContextBase &context) {
  const auto &md = context.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return std::nullopt;
  return absl::string_view(it->second.data(), it->second.size());
}

bool Matches(std::optional<absl::string_view> got, const std::string &token) {
  if (!got) return false;
  const std::string want = "Bearer " + token;
  return got->size() == want.size() && CRYPTO_memcmp(got->data(), want.data(), want.size()) == 0;
}

}  // namespace

Role RoleOf(absl::string_view method) {
  auto it = Table().find(method);
  return it == Table().end() ? Role::kUnknown : it->second;
}

absl::Status Authenticator::Check(const grpc::ServerContextBase &context, absl::string_view method) const {
  const Role role = RoleOf(method);
  if (role == Role::kUnknown) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                     absl::StrCat("method ", method, " has no role in the authorization table"));
  }
  const std::string &token = role == Role::kWorker ? tokens_.worker : tokens_.client;
  if (token.empty()) return absl::OkStatus();
  const std::optional<absl::string_view> got = Presented(context);
  if (Matches(got, token)) return absl::OkStatus();
  if (role == Role::kRead && !tokens_.read.empty() && Matches(got, tokens_.read)) return absl::OkStatus();
  return MakeError(absl::StatusCode::kUnauthenticated, "UNAUTHENTICATED",
                   got ? "wrong token" : "this call needs a token (authorization: Bearer <token>)");
}

std::string ClientOf(const grpc::ServerContextBase &context) {
  // Not the "tir-client" metadata: the caller chooses it, so a key made of
  // it would let one client pass for many (it is a label in logs only).
  std::string peer = context.peer();  // "ipv4:127.0.0.1:5555", "ipv6:[::1]:5555", "unix:..."
  const size_t colon = peer.rfind(':');
  if (colon != std::string::npos && colon > peer.find(':')) peer.resize(colon);
  return peer;
}

}  // namespace tir::api
