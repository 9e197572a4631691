// Inputs that cost the parser more than their size says, sent to a live
// coordinator over loopback, some with only the read token: each is refused
// before MLIR parses it, the coordinator keeps answering, and two clients
// flooding it with graphs to parse leave a thread for a third.

#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/security/attack_fixture.h"
#include "tir/v1/compiler_service.grpc.pb.h"

namespace {

using ::testing::HasSubstr;
using namespace tir::security_testing;  // NOLINT: the suite's fixture and moves

grpc::Status Lookup(tir::v1::CompilerService::Stub *stub, const std::string &text, const std::string &token) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  tir::v1::LookupKernelRequest lookup;
  lookup.mutable_graph()->set_mlir_text(text);
  lookup.mutable_options()->set_target_arch("host");
  tir::v1::LookupKernelResponse found;
  return stub->LookupKernel(&ctx, lookup, &found);
}

// A graph whose module carries an affine map of `terms` copies of `term`
// and no brackets but its own.
std::string AffineBomb(int terms, const std::string &term) {
  std::string expr = "d0";
  expr.reserve(expr.size() + terms * term.size());
  for (int i = 0; i < terms; ++i) expr += term;
  return absl::StrCat("module attributes {test.map = affine_map<(d0) -> (", expr, ")>} {\n", Graph("bomb", 4), "}\n");
}

// 1. A 9 MB affine map without brackets (3 million terms) overflowed the
// parser's stack through LookupKernel with only the read token; 60,000 mod
// terms burned 45 s of CPU first. Both are refused before parsing.
TEST_F(Security, AffineMapsOfMillionsOfTermsAreRefusedThroughTheReadToken) {
  grpc::Status s = Lookup(clients_, AffineBomb(3000000, "+d0"), "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("affine map of 3000000 operators"));
  s = Lookup(clients_, AffineBomb(60000, " mod 3 + d0"), "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("affine map of 120000 operators"));
  tir::v1::Operation op;
  s = Compile(AffineBomb(3000000, "+d0"), &op);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  // Spelled to slip past a scan for `affine_map<`: a comment before the
  // '<' (MLIR's lexer skips it), and the terms in parenthesized groups.
  std::string expr = "d0";
  for (int i = 0; i < 3000000; ++i) expr += "+d0";
  s = Lookup(clients_,
             absl::StrCat("module attributes {test.map = affine_map// x\n<(d0) -> (", expr, ")>} {\n",
                          Graph("hidden", 4), "}\n"),
             "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("operators in a row"));
  s = Lookup(clients_, AffineBomb(1000000, "+(d0+d0)"), "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
}

// 2. A rank-100000 tensor type (800 KB) took 213 s before the rank limit
// refused it; it is refused before a type is built, in an argument and in
// an attribute.
TEST_F(Security, TypesOfHugeRankAreRefusedBeforeTheyAreBuilt) {
  std::string dims;
  for (int i = 0; i < 100000; ++i) dims += "1x";
  const std::string type = "tensor<" + dims + "f32>";
  grpc::Status s = Lookup(clients_,
                          absl::StrCat("tir.graph @r(%x: ", type, ") -> ", type, " {\n  results %x : ", type, "\n}\n"),
                          "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("rank 100000, above the limit of 8"));
  s = Lookup(clients_, absl::StrCat("module attributes {test.t = ", type, "} {\n", Graph("rank", 4), "}\n"),
             "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  // A comment before the '<' and spaces around the `x`s, as MLIR's lexer
  // takes them.
  std::string spaced;
  for (int i = 0; i < 100000; ++i) spaced += "1 x ";
  s = Lookup(clients_,
             absl::StrCat("module attributes {test.t = tensor// x\n<", spaced, "f32>} {\n", Graph("spaced", 4), "}\n"),
             "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("rank 100000"));
}

// 3. Text with far more ops than maxOpsPerGraph allows is refused before it
// is parsed, by its assignments.
TEST_F(Security, TextOfTooManyOpsIsRefusedBeforeParsing) {
  grpc::Status s = Lookup(clients_, ExpChain(200000), "read-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("maxOpsPerGraph"));
  EXPECT_THAT(s.error_message(), HasSubstr("assignments"));
}

// 4. Two identities sending four heavy requests each at once held another
// team's small compile until they were done: at half the threads each they
// held them all. A client's second task now waits while it would take the
// last free thread (and the planning pool has at least three), so the third
// team's compile is answered while the floods still run.
TEST_F(Security, TwoFloodingClientsLeaveAThreadForAThird) {
  const std::string flood = MatmulChain(9995);  // planned until maxKernelsPerGraph refuses it
  std::atomic<int> finished{0};
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::thread> callers;
  for (const std::string token : {"team-a-token-0123456789", "team-b-token-0123456789"}) {
    for (int i = 0; i < 4; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      contexts.back()->AddMetadata("authorization", "Bearer " + token);
      callers.emplace_back([&, ctx = contexts.back().get(), token, i] {
        tir::v1::CompileRequest r;
        // Each its own bytes (a request known by its bytes skips the parse).
        r.mutable_graph()->set_mlir_text(absl::StrCat("// ", token, " ", i, "\n", flood));
        r.mutable_options()->set_target_arch("host");
        tir::v1::Operation out;
        (void)clients_->Compile(ctx, r, &out);
        ++finished;
      });
    }
  }
  absl::SleepFor(absl::Milliseconds(150));  // the floods take the threads they may
  // The third team's request parses a small graph: a thread free for it
  // answers it at once, before any flooding call (each plans 10,000
  // kernels) ends; under the old shares it waited for the first to end.
  const grpc::Status s = Lookup(clients_, Graph("third", 24), "team-d-token-0123456789");
  const int behind = finished;
  std::cout << behind << " of the 8 flooding calls had finished when the third team was answered\n";
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(behind, 0) << "the third team's request waited for a flooding call to end";
  for (auto &ctx : contexts) ctx->TryCancel();
  for (std::thread &t : callers) t.join();
}

}  // namespace
