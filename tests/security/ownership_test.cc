// Clients acting on each other, against a live coordinator: a bundle or an
// operation is deleted or cancelled only by its owner (the identity that
// asked for it) or an admin, and a bundle two identities asked for by an
// admin only, across a restart too; a read credential's writes are
// forbidden (PERMISSION_DENIED), not unauthenticated. And two smaller
// holes: a broadcast no tile can grid is refused with a reason (it answered
// INTERNAL), and requests answered at once do not fill the store with
// their graphs.

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/KernelBuild.h"
#include "tests/security/attack_fixture.h"
#include "tir/v1/error.pb.h"

namespace tir::security_testing {
namespace {

using ::testing::HasSubstr;

constexpr char kTeamA[] = "team-a-token-0123456789";
constexpr char kTeamB[] = "team-b-token-0123456789";
constexpr char kViewer[] = "viewer-token-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789";

std::string ReasonOf(const grpc::Status &s) {
  tir::v1::Error e;
  return e.ParseFromString(s.error_details()) ? e.reason() : "";
}

class Ownership : public Security {
 protected:
  static grpc::Status Cancel(const std::string &name, const std::string &token, tir::v1::Operation *out = nullptr) {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::CancelOperationRequest r;
    r.set_name(name);
    tir::v1::Operation ignored;
    return clients_->CancelOperation(&ctx, r, out ? out : &ignored);
  }
  static grpc::Status Delete(const std::string &key, const std::string &token,
                             tir::v1::DeleteKernelResponse *out = nullptr) {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::DeleteKernelRequest r;
    r.set_name("kernels/" + key);
    tir::v1::DeleteKernelResponse ignored;
    return clients_->DeleteKernel(&ctx, r, out ? out : &ignored);
  }
  static grpc::Status GetKernel(const std::string &key, const std::string &token) {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::GetKernelRequest r;
    r.set_name("kernels/" + key);
    r.set_metadata_only(true);
    tir::v1::KernelBundle b;
    return clients_->GetKernel(&ctx, r, &b);
  }
  static grpc::Status CompileMode(const std::string &text, tir::v1::CompileMode mode, const std::string &token,
                                  tir::v1::Operation *op) {
    grpc::ClientContext ctx;
    Token(ctx, token);
    tir::v1::CompileRequest r;
    r.mutable_graph()->set_mlir_text(text);
    r.mutable_options()->set_target_arch("host");
    r.mutable_options()->set_mode(mode);
    return clients_->Compile(&ctx, r, op);
  }
  // A tuned bundle of `text` stored for `token`'s request: a worker is live
  // while it is asked for (so the operation waits), then an honest one
  // serves it.
  static std::string Tuned(const std::string &text, const std::string &token) {
    Register(tir::codegen::ToolchainOf("host"));
    tir::v1::Operation op;
    const grpc::Status s = Compile(text, &op, "", token);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(op.done()) << "a live worker: the operation waits for tuning";
    const tir::v1::Operation done = PlayHonest(op.name());
    EXPECT_TRUE(done.has_response()) << done.error().message();
    return done.response().key();
  }
  // Restarts the coordinator on the same store and config (SIGTERM: it
  // writes what it holds and exits).
  static void Restart() {
    Stop(pid_, SIGTERM);
    pid_ = Spawn({Runfile("server/tir-coordinator"), "--config=" + *dir_ + ".json"});
    for (int i = 0; i < 600; ++i) {
      if (ListWorkers().ok()) return;
      absl::SleepFor(absl::Milliseconds(50));
    }
    FAIL() << "the coordinator did not start again";
  }
  static uint64_t StoreBytes() {
    uint64_t n = 0;
    std::error_code ec;
    for (const auto &e : std::filesystem::recursive_directory_iterator(*dir_, ec)) {
      if (e.is_regular_file(ec)) n += e.file_size(ec);
    }
    return n;
  }
};

// 9. team-b neither deletes team-a's bundle nor cancels team-a's operation;
// team-a does both; the viewer (read role) is forbidden either write.
TEST_F(Ownership, AClientCannotDeleteOrCancelAnothersWork) {
  const std::string key = Tuned(Graph("owned_a", 40), kTeamA);
  ASSERT_FALSE(key.empty());
  tir::v1::DeleteKernelResponse deleted;
  grpc::Status s = Delete(key, kTeamB, &deleted);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(ReasonOf(s), "NOT_OWNER");
  EXPECT_FALSE(deleted.deleted());
  s = Delete(key, "client-token");
  EXPECT_EQ(ReasonOf(s), "NOT_OWNER") << "the shared token is one more identity, not team-a";
  s = Delete(key, kViewer);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(ReasonOf(s), "READ_ONLY_ROLE");
  // Still served to team-a, from the cache.
  EXPECT_TRUE(GetKernel(key, kTeamA).ok());
  tir::v1::Operation hit;
  ASSERT_TRUE(Compile(Graph("owned_a", 40), &hit, "", kTeamA).ok());
  EXPECT_TRUE(hit.metadata().cache_hit());

  // An operation in flight: team-b cannot cancel it by its name.
  Register(tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("owned_op", 48), &op, "", kTeamA).ok());
  ASSERT_FALSE(op.done());
  s = Cancel(op.name(), kTeamB);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(ReasonOf(s), "NOT_OWNER");
  s = Cancel(op.name(), kViewer);
  EXPECT_EQ(ReasonOf(s), "READ_ONLY_ROLE");
  EXPECT_FALSE(Get(op.name()).done()) << "not cancelled";
  tir::v1::Operation cancelled;
  ASSERT_TRUE(Cancel(op.name(), kTeamA, &cancelled).ok());
  EXPECT_EQ(cancelled.error().reason(), "CANCELLED");

  ASSERT_TRUE(Delete(key, kTeamA, &deleted).ok());
  EXPECT_TRUE(deleted.deleted());
  EXPECT_EQ(GetKernel(key, kTeamA).error_code(), grpc::StatusCode::NOT_FOUND);
}

// A bundle two identities asked for serves both: neither deletes it from
// under the other; an admin does. An admin cancels another's operation.
TEST_F(Ownership, ASharedBundleIsDeletedByAnAdminOnly) {
  const std::string key = Tuned(Graph("shared", 56), kTeamA);
  ASSERT_FALSE(key.empty());
  tir::v1::Operation hit;
  ASSERT_TRUE(Compile(Graph("shared", 56), &hit, "", kTeamB).ok());
  ASSERT_TRUE(hit.metadata().cache_hit());
  for (const char *token : {kTeamA, kTeamB}) {
    const grpc::Status s = Delete(key, token);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << token;
    EXPECT_EQ(ReasonOf(s), "NOT_OWNER") << token;
    EXPECT_THAT(s.error_message(), HasSubstr("an admin")) << token;
  }
  EXPECT_TRUE(GetKernel(key, kTeamB).ok());
  tir::v1::DeleteKernelResponse deleted;
  ASSERT_TRUE(Delete(key, kAdmin, &deleted).ok());
  EXPECT_TRUE(deleted.deleted());

  Register(tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("admin_cancels", 64), &op, "", kTeamB).ok());
  ASSERT_FALSE(op.done());
  tir::v1::Operation cancelled;
  ASSERT_TRUE(Cancel(op.name(), kAdmin, &cancelled).ok());
  EXPECT_EQ(cancelled.error().reason(), "CANCELLED");
}

// Who owns what is in the store: after a restart team-b still cannot
// cancel team-a's restored operation nor delete its bundle.
TEST_F(Ownership, OwnershipSurvivesARestart) {
  const std::string key = Tuned(Graph("kept_owner", 72), kTeamA);
  ASSERT_FALSE(key.empty());
  Register(tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("kept_op", 80), &op, "", kTeamA).ok());
  ASSERT_FALSE(op.done());
  Restart();
  EXPECT_FALSE(Get(op.name()).done()) << "the job resumes under the operation's name";
  grpc::Status s = Cancel(op.name(), kTeamB);
  EXPECT_EQ(ReasonOf(s), "NOT_OWNER") << s.error_message();
  s = Delete(key, kTeamB);
  EXPECT_EQ(ReasonOf(s), "NOT_OWNER") << s.error_message();
  EXPECT_TRUE(Cancel(op.name(), kTeamA).ok());
  tir::v1::DeleteKernelResponse deleted;
  ASSERT_TRUE(Delete(key, kTeamA, &deleted).ok());
  EXPECT_TRUE(deleted.deleted());
}

// Minor: a broadcast to 2^48 elements (within the type's limit, but more
// blocks than any grid holds at any tile) answered INTERNAL; it is refused
// as an invalid request naming the kernel and why.
TEST_F(Ownership, ABroadcastNoTileCanGridIsRefusedWithAReason) {
  const std::string text =
      "tir.graph @huge(%x: tensor<1x1xf32>) -> tensor<16777216x16777216xf32> {\n"
      "  %y = broadcast %x : tensor<1x1xf32> -> tensor<16777216x16777216xf32>\n"
      "  results %y : tensor<16777216x16777216xf32>\n}\n";
  for (tir::v1::CompileMode mode : {tir::v1::COMPILE_MODE_HEURISTIC_NOW, tir::v1::COMPILE_MODE_WAIT}) {
    tir::v1::Operation op;
    const grpc::Status s = CompileMode(text, mode, kTeamA, &op);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_EQ(ReasonOf(s), "LIMIT_EXCEEDED") << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("more blocks than a grid holds"));
  }
}

// Minor: a request answered at once (the heuristic's default) whose graph
// is large does not store that graph for its background job: twelve such
// requests of 1.5 MB graphs (26 MB of WAL before) leave the store about
// as it was.
TEST_F(Ownership, RequestsAnsweredAtOnceDoNotStoreTheirLargeGraphs) {
  const uint64_t before = StoreBytes();
  // A graph made large by a comment (a different graph each time: one job
  // each, as many as the three identities' job limits allow).
  const std::string padding = "// " + std::string(1500000, 'x') + "\n";
  int answered = 0;
  for (const std::string token : {"team-c-token-0123456789", "team-d-token-0123456789", "client-token"}) {
    for (int i = 0; i < 4; ++i) {
      tir::v1::Operation op;
      const grpc::Status s = CompileMode(padding + Graph(absl::StrCat("big", answered), 8 * (100 + answered)),
                                         tir::v1::COMPILE_MODE_HEURISTIC_NOW, token, &op);
      ASSERT_TRUE(s.ok()) << s.error_message();
      EXPECT_TRUE(op.done());
      EXPECT_TRUE(op.has_response()) << op.error().message();
      ++answered;
    }
  }
  const uint64_t after = StoreBytes();
  EXPECT_LT(after, before + (uint64_t{4} << 20))
      << "the store grew from " << before << " to " << after << " bytes for " << answered
      << " requests answered at once";
}

}  // namespace
}  // namespace tir::security_testing
