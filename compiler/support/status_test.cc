#include "compiler/support/status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2) return MakeError(absl::StatusCode::kInvalidArgument, "ODD", "odd input");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  TIR_ASSIGN_OR_RETURN(int h, Half(x));
  TIR_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::Status CheckEven(int x) {
  TIR_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(Status, ReasonTravelsThroughMacrosAndAnnotate) {
  EXPECT_EQ(*Quarter(8), 2);
  absl::StatusOr<int> bad = Quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ReasonOf(bad.status()), "ODD");
  absl::Status annotated = Annotate(CheckEven(3), "checking");
  EXPECT_EQ(annotated.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(annotated.message(), "checking: odd input");
  EXPECT_EQ(ReasonOf(annotated), "ODD");
}

TEST(Status, ReasonDefaultsFromCode) {
  EXPECT_EQ(ReasonOf(absl::OkStatus()), "");
  EXPECT_EQ(ReasonOf(absl::InternalError("x")), "INTERNAL");
  EXPECT_EQ(ReasonOf(absl::NotFoundError("x")), "NOT_FOUND");
  EXPECT_EQ(ReasonOf(absl::ResourceExhaustedError("x")), "LIMIT_EXCEEDED");
}

}  // namespace
}  // namespace tir
