#include "server/config/config.h"

#include <string>
#include <utility>
#include <vector>

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::config {
namespace {

using ::testing::HasSubstr;

TEST(ParseConfig, FillsDefaults) {
  auto c = ParseConfig(R"({"db": "/tmp/x", "metricsPort": 9100})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen(), "127.0.0.1:7070");
  EXPECT_EQ(c->http_address(), "127.0.0.1");
  EXPECT_EQ(c->max_ops_per_graph(), 20000u);
  EXPECT_EQ(c->max_jobs(), 256u);
  EXPECT_EQ(c->max_jobs_per_client(), 32u);
  EXPECT_EQ(c->max_queue_items(), 100000u);
  EXPECT_EQ(c->max_operations(), 100000u);
  EXPECT_EQ(c->quarantine_after(), 3u);
  EXPECT_EQ(c->metrics_port(), 9100u);
  EXPECT_EQ(c->tuning_width(), 8u);
  EXPECT_EQ(c->no_worker(), "default");
}

TEST(ParseConfig, RefusesUnknownFieldsAndBadValuesNamingTheField) {
  auto unknown = ParseConfig(R"({"listn": "x:1"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(ReasonOf(unknown.status()), "INVALID_CONFIG");
  EXPECT_THAT(unknown.status().message(), HasSubstr("listn"));
  auto lost = ParseConfig(R"({"heartbeatIntervalMs": 1000, "lostAfterMs": 1500})");
  ASSERT_FALSE(lost.ok());
  EXPECT_THAT(lost.status().message(), HasSubstr("lost_after_ms"));
  auto mode = ParseConfig(R"({"noWorker": "wait"})");
  ASSERT_FALSE(mode.ok());
  EXPECT_THAT(mode.status().message(), HasSubstr("no_worker"));
  auto tls = ParseConfig(R"({"tlsCertFile": "/nonexistent.pem"})");
  ASSERT_FALSE(tls.ok());
  EXPECT_THAT(tls.status().message(), HasSubstr("tls_cert_file and tls_key_file"));
  auto perClient = ParseConfig(R"({"maxJobs": 4, "maxJobsPerClient": 8})");
  ASSERT_FALSE(perClient.ok());
  EXPECT_THAT(perClient.status().message(), HasSubstr("max_jobs_per_client"));
  auto read = ParseConfig(R"({"readTokenFile": "/etc/hostname"})");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("read_token_file needs client_token_file"));
  auto notJson = ParseConfig("listen: 1");
  ASSERT_FALSE(notJson.ok());
  EXPECT_EQ(ReasonOf(notJson.status()), "INVALID_CONFIG");
}

// The network's limits have safe defaults, the memory quota holds at least
// two of the largest messages, and a value gRPC or civetweb could not take
// is refused naming its field.
TEST(ParseConfig, NetworkLimitsHaveSafeDefaultsAndBounds) {
  auto c = ParseConfig("{}");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http_threads(), 32u);
  EXPECT_EQ(c->http_request_timeout_ms(), 5000u);
  EXPECT_EQ(c->max_grpc_memory_bytes(), 256u << 20);
  EXPECT_EQ(c->max_connection_idle_ms(), 300000u);
  EXPECT_EQ(c->max_connection_age_ms(), 1800000u);
  EXPECT_EQ(c->max_connection_age_grace_ms(), 300000u);
  auto big = ParseConfig(R"({"maxMessageBytes": 268435456})");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->max_grpc_memory_bytes(), 512u << 20) << "the default quota grows with the largest message";
  for (const auto &[json, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"maxGrpcMemoryBytes": 67108864})", "max_grpc_memory_bytes"},
           {R"({"maxMessageBytes": 33554432, "maxGrpcMemoryBytes": 50331648})", "max_grpc_memory_bytes"},
           {R"({"httpThreads": 1})", "http_threads"},
           {R"({"httpThreads": 5000})", "http_threads"},
           {R"({"httpRequestTimeoutMs": 10})", "http_request_timeout_ms"},
           {R"({"maxConnectionIdleMs": 3000000000})", "max_connection_idle_ms"},
           {R"({"maxConnectionAgeMs": 50})", "max_connection_age_ms"}}) {
    auto bad = ParseConfig(json);
    ASSERT_FALSE(bad.ok()) << json;
    EXPECT_EQ(ReasonOf(bad.status()), "INVALID_CONFIG");
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(field)) << json;
  }
  auto small = ParseConfig(
      R"({"maxMessageBytes": 1048576, "maxGrpcMemoryBytes": 2097152, "maxConnectionIdleMs": 500, "httpThreads": 2})");
  EXPECT_TRUE(small.ok()) << small.status();
}

TEST(ReadConfigFile, NamesTheFieldAndWhatIsWrongWithTheFile) {
  const std::string dir = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  auto isDir = ReadSecret(dir, "clientTokenFile");
  ASSERT_FALSE(isDir.ok());
  EXPECT_EQ(ReasonOf(isDir.status()), "INVALID_CONFIG");
  EXPECT_THAT(std::string(isDir.status().message()), ::testing::HasSubstr("clientTokenFile"));
  EXPECT_THAT(std::string(isDir.status().message()), ::testing::HasSubstr("is a directory"));
  auto missing = ReadConfigFile(dir + "/no-such-file", "tlsCertFile");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("tlsCertFile"));
  EXPECT_EQ(ReasonOf(ReadConfigFile("/dev/null", "--config").status()), "INVALID_CONFIG") << "not a regular file";
}

TEST(IsLoopback, KnowsLoopbackFromEveryOtherAddress) {
  for (const char *a : {"127.0.0.1:7070", "localhost:1", "[::1]:7070", "127.8.9.1:5", "::1", "localhost",
                        "unix:/home/u/.cache/tir/service/sock"}) {
    EXPECT_TRUE(IsLoopback(a)) << a;
  }
  for (const char *a : {"0.0.0.0:7070", "[::]:7070", "10.0.0.1:7070", "tir-coordinator:7070", "::", "example.com",
                        "127.evil.example:7070", "127.0.0.1.nip.io:7070", "[::1:7070", "128.0.0.1:1",
                        "unixhost:7070"}) {
    EXPECT_FALSE(IsLoopback(a)) << a;
  }
}

}  // namespace
}  // namespace tir::config
