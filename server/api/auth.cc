#include "server/api/auth.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/support/status.h"
#include "openssl/crypto.h"
#include "openssl/sha.h"

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

std::string Digest(absl::string_view s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char *>(s.data()), s.size(), d);
  return std::string(reinterpret_cast<const char *>(d), sizeof d);
}

bool Matches(std::optional<absl::string_view> got, const std::string &token) {
  if (!got) return false;
  const std::string want = "Bearer " + token;
  return got->size() == want.size() && CRYPTO_memcmp(got->data(), want.data(), want.size()) == 0;
}

bool ValidIdentity(absl::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// Grants `role`: a credential of that role, or (for a read) of kClient; an
// admin's grants what a client's does.
bool Grants(Role credential, Role role) {
  if (credential == Role::kAdmin) credential = Role::kClient;
  return credential == role || (role == Role::kRead && credential == Role::kClient);
}

absl::Status ReadOnly(absl::string_view method) {
  return MakeError(absl::StatusCode::kPermissionDenied, "READ_ONLY_ROLE",
                   absl::StrCat(method, " writes: the token presented is a read token (role read), which reads only"));
}

}  // namespace

absl::StatusOr<std::vector<Credential>> ParseCredentials(const std::string &text, const std::string &path) {
  auto invalid = [&](int line, const std::string &what) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                     absl::StrCat("credentialsFile ", path, " line ", line, ": ", what));
  };
  std::vector<Credential> out;
  std::set<std::string> tokens;
  std::set<std::pair<Role, std::string>> identities;
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() != 3) return invalid(n, "want \"<role> <identity> <token>\"");
    Credential c;
    c.role = f[0] == "client" ? Role::kClient
             : f[0] == "read"  ? Role::kRead
             : f[0] == "admin" ? Role::kAdmin
             : f[0] == "worker" ? Role::kWorker
                                : Role::kUnknown;
    if (c.role == Role::kUnknown) {
      return invalid(n, absl::StrCat("role must be client, read, admin or worker, got \"", f[0], "\""));
    }
    if (!ValidIdentity(f[1])) return invalid(n, "an identity is 1 to 64 of A-Z a-z 0-9 . _ -");
    if (f[2].size() < 16) return invalid(n, "a token has at least 16 bytes");
    // What an HTTP header value carries as is.
    if (std::any_of(f[2].begin(), f[2].end(), [](char ch) { return ch < 0x21 || ch > 0x7e; })) {
      return invalid(n, "a token is printable ASCII without spaces");
    }
    c.identity = std::string(f[1]);
    c.token = std::string(f[2]);
    // Clients, admins and read-only callers are one namespace (their limits
    // and what they own are the identity's): a name is one of them.
    const Role space = c.role == Role::kWorker ? Role::kWorker : Role::kClient;
    if (!identities.insert({space, c.identity}).second) {
      return invalid(n, "identity " + c.identity + " is listed twice for its role (client, read and admin are one)");
    }
    if (!tokens.insert(c.token).second) return invalid(n, "a token is listed twice (each identity has its own)");
    out.push_back(std::move(c));
  }
  if (out.empty()) {
    // An empty file would leave the service it was meant to close open.
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CONFIG",
                     absl::StrCat("credentialsFile ", path, " has no credentials"));
  }
  return out;
}

bool Tokens::ClientsNeedToken() const {
  return !client.empty() || std::any_of(credentials.begin(), credentials.end(), [](const Credential &c) {
           return c.role == Role::kClient || c.role == Role::kRead || c.role == Role::kAdmin;
         });
}

bool Tokens::WorkersNeedToken() const {
  return !worker.empty() || std::any_of(credentials.begin(), credentials.end(),
                                        [](const Credential &c) { return c.role == Role::kWorker; });
}

Authenticator::Authenticator(Tokens tokens) : tokens_(std::move(tokens)) {
  for (const Credential &c : tokens_.credentials) digests_.push_back(Digest("Bearer " + c.token));
}

Role RoleOf(absl::string_view method) {
  auto it = Table().find(method);
  return it == Table().end() ? Role::kUnknown : it->second;
}

absl::Status Authenticator::Check(const grpc::ServerContextBase &context, absl::string_view method,
                                  std::string *identity, bool *admin) const {
  if (identity != nullptr) identity->clear();
  if (admin != nullptr) *admin = false;
  const Role role = RoleOf(method);
  if (role == Role::kUnknown) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                     absl::StrCat("method ", method, " has no role in the authorization table"));
  }
  if (role == Role::kWorker ? !tokens_.WorkersNeedToken() : !tokens_.ClientsNeedToken()) return absl::OkStatus();
  const std::optional<absl::string_view> got = Presented(context);
  if (got && !tokens_.credentials.empty()) {
    const std::string presented = Digest(*got);
    int found = -1;
    for (size_t i = 0; i < digests_.size(); ++i) {
      const bool same = CRYPTO_memcmp(presented.data(), digests_[i].data(), presented.size()) == 0;
      if (same && found < 0) found = static_cast<int>(i);
    }
    if (found >= 0 && Grants(tokens_.credentials[found].role, role)) {
      if (identity != nullptr) *identity = tokens_.credentials[found].identity;
      if (admin != nullptr) *admin = tokens_.credentials[found].role == Role::kAdmin;
      return absl::OkStatus();
    }
    // Who the caller is is known, and that it may only read.
    if (found >= 0 && role == Role::kClient && tokens_.credentials[found].role == Role::kRead) return ReadOnly(method);
  }
  const std::string &token = role == Role::kWorker ? tokens_.worker : tokens_.client;
  if (!token.empty() && Matches(got, token)) return absl::OkStatus();
  if (!tokens_.read.empty() && Matches(got, tokens_.read)) {
    if (role == Role::kRead) return absl::OkStatus();
    if (role == Role::kClient) return ReadOnly(method);
  }
  return MakeError(absl::StatusCode::kUnauthenticated, "UNAUTHENTICATED",
                   got ? "wrong token" : "this call needs a token (authorization: Bearer <token>)");
}

std::string PeerKey(std::string peer) {
  // "ipv4:127.0.0.1:5555", "ipv6:[::1]:5555" (or %5B...%5D), "unix:...".
  // This machine is one host, however it calls: any of 127.0.0.0/8 (a
  // caller binds whichever it likes), ::1, ::ffff:127.x and Unix sockets.
  if (absl::StartsWith(peer, "unix:") || absl::StartsWith(peer, "unix-abstract:")) return "local";
  const bool v6 = absl::StartsWith(peer, "ipv6:");
  if (!v6 && !absl::StartsWith(peer, "ipv4:")) {
    const size_t colon = peer.rfind(':');
    if (colon != std::string::npos && colon > peer.find(':')) peer.resize(colon);
    return peer;
  }
  std::string host = peer.substr(5);
  if (v6) {
    host = absl::StrReplaceAll(host, {{"%5B", "["}, {"%5D", "]"}, {"%5b", "["}, {"%5d", "]"}});
    if (!host.empty() && host.front() == '[') host = host.substr(1, host.find(']') - 1);
    if (const size_t zone = host.find('%'); zone != std::string::npos) host.resize(zone);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    host.resize(colon);
  }
  in_addr a4;
  if (v6) {
    in6_addr a6;
    if (inet_pton(AF_INET6, host.c_str(), &a6) != 1) return "ipv6:" + host;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return "local";
    if (!IN6_IS_ADDR_V4MAPPED(&a6)) {
      // One host holds a /64 (it may take any address in it): the /64 is
      // the key.
      std::memset(a6.s6_addr + 8, 0, 8);
      char text[INET6_ADDRSTRLEN];
      inet_ntop(AF_INET6, &a6, text, sizeof text);
      return absl::StrCat("ipv6:", text, "/64");
    }
    std::memcpy(&a4.s_addr, a6.s6_addr + 12, 4);  // an IPv4 host: keyed as one
  } else if (inet_pton(AF_INET, host.c_str(), &a4) != 1) {
    return "ipv4:" + host;
  }
  if ((ntohl(a4.s_addr) >> 24) == 127) return "local";
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a4, text, sizeof text);
  return absl::StrCat("ipv4:", text);
}

std::string ClientOf(const grpc::ServerContextBase &context, const std::string &identity) {
  if (!identity.empty()) return "id:" + identity;
  // Not the "tir-client" metadata: the caller chooses it, so a key made of
  // it would let one client pass for many (it is a label in logs only).
  return PeerKey(context.peer());
}

}  // namespace tir::api
