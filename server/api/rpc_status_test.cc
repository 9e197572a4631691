#include "server/api/rpc_status.h"

#include "compiler/support/status.h"
#include "gtest/gtest.h"
#include "tir/v1/error.pb.h"

namespace tir::api {
namespace {

TEST(RpcStatusTest, AnErrorCarriesItsReasonAsDetails) {
  const grpc::Status s = ToGrpc(MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no operation x"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "NOT_FOUND: no operation x");
  tir::v1::Error e;
  ASSERT_TRUE(e.ParseFromString(s.error_details()));
  EXPECT_EQ(e.reason(), "NOT_FOUND");
  EXPECT_EQ(e.message(), "no operation x");
}

// A request's bytes echoed in its error (an 8 KB name) would make an answer
// whose metadata the caller refuses: messages are bounded and valid UTF-8.
TEST(RpcStatusTest, EchoedInputIsBoundedAndValidUtf8) {
  const grpc::Status s =
      ToGrpc(MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no operation " + std::string(8192, 'A')));
  EXPECT_LT(s.error_message().size(), 1200u);
  EXPECT_NE(s.error_message().find("(8205 bytes in all)"), std::string::npos) << s.error_message();
  EXPECT_LT(s.error_details().size(), 1200u);
  EXPECT_EQ(ShownMessage("a\xff" "b\x01" "c\n\xc2\xb5s \xe2\x80"), "a?b?c\n\xc2\xb5s ??");
  EXPECT_EQ(ShownMessage("ok"), "ok");
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
  EXPECT_EQ(ShownMessage("\xc0\xaf|\xe0\x80\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xf5\x80\x80\x80"),
            "??|???|???|????|????");
  EXPECT_EQ(ShownMessage("\xf0\x9f\x98\x80 \xe2\x82\xac"), "\xf0\x9f\x98\x80 \xe2\x82\xac");
}

}  // namespace
}  // namespace tir::api
