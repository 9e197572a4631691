#include "server/config/config_help.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::config {
namespace {

using ::testing::HasSubstr;

// What an operator reads in `tir-coordinator --help`: every entry by the
// name the JSON file spells, with its meaning and default.
TEST(ConfigHelp, ListsEveryEntryByItsJsonNameWithItsDefault) {
  const std::string help = ConfigHelp();
  EXPECT_THAT(help, HasSubstr("  listen\n      Address to serve gRPC on"));
  EXPECT_THAT(help, HasSubstr("  maxOpsPerGraph\n"));
  EXPECT_THAT(help, HasSubstr("      Operations in one graph (default 20000).\n  maxJobs\n"));
  EXPECT_THAT(help, HasSubstr("  planningBudgetMs, maxPlannedCandidates\n"));
  EXPECT_THAT(help, HasSubstr("  credentialsFile\n"));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("max_ops_per_graph")));
}

}  // namespace
}  // namespace tir::config
