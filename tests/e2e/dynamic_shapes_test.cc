// Dynamic shapes through the service: the embedded coordinator and a host
// worker (real gRPC, real RocksDB, real compiles and runs) compile graphs
// with `?` dims at several shapes. One tuning per shape bucket, a check on
// the worker for every new shape, and every bundle served is run here at its
// shape and compared with the reference interpreter.

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/bundle_runner.h"
#include "client/client.h"
#include "client/embedded.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "google/protobuf/util/time_util.h"
#include "tests/testing/process.h"

namespace {

using ::testing::HasSubstr;
using google::protobuf::util::TimeUtil;

std::string ReadGraph(const std::string &name) {
  std::ifstream in(tir::testing::Runfile("tests/graphs/dynamic/" + name));
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

class DynamicShapes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tir::client::EmbeddedOptions o;
    o.cache_dir = tir::testing::TempDir() + "/dynamic_shapes";
    o.backend = "host";
    o.runner_path = tir::testing::Runfile("worker/runner/tir-worker-runner");
    auto s = tir::client::EmbeddedService::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = s->release();
    tir::ClientOptions co;
    co.address = service_->address();
    auto c = tir::Client::Connect(co);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = c->release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete service_;
  }

  static absl::StatusOr<tir::v1::Operation> CompileAt(const std::string &text, const tir::Shapes &shapes,
                                                      tir::v1::CompileMode mode = tir::v1::COMPILE_MODE_WAIT) {
    tir::v1::CompileOptions o;
    o.set_target_arch("host");
    o.set_mode(mode);
    TIR_ASSIGN_OR_RETURN(tir::v1::Operation op, client_->Compile(tir::GraphSourceFromText(text), o, shapes));
    if (!op.done()) {
      TIR_ASSIGN_OR_RETURN(op, client_->Wait(op.name(), absl::Minutes(5)));
    }
    return op;
  }

  // Runs `b` here on seeded inputs of its shape and compares every output
  // with the interpreter's; returns the worst relative L2 error over its bound.
  static double RunAgainstReference(const std::string &text, const tir::v1::KernelBundle &b) {
    auto ctx = tir::makeTirContext();
    auto loaded = tir::LoadGraphText(text, ctx.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return INFINITY;
    std::vector<tir::reference::Tensor> inputs = tir::reference::SampleInputs(loaded->graph, 1, 7);
    std::vector<std::vector<int64_t>> args;
    for (int i = 0; i < b.inputs_size(); ++i) {
      if (b.inputs(i).scalar()) {
        for (const auto &h : b.served_shape().shape()) {
          if (h.input() == static_cast<uint32_t>(i)) inputs[i] = tir::reference::Tensor::ScalarInt(inputs[i].dtype, h.shape(0));
        }
        args.push_back({inputs[i].GetI(0)});
        continue;
      }
      std::vector<int64_t> shape(b.inputs(i).shape().begin(), b.inputs(i).shape().end());
      inputs[i] = tir::reference::RandomTensor(inputs[i].dtype, shape, 100 + i);
      args.push_back(shape);
    }
    auto want = tir::reference::Evaluate(loaded->graph, inputs);
    EXPECT_TRUE(want.ok()) << want.status();
    auto got = tir::client::RunHostBundle(b, inputs, tir::testing::TempDir() + "/run");
    EXPECT_TRUE(got.ok()) << got.status();
    if (!want.ok() || !got.ok() || got->size() != want->size()) return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ((*got)[i].shape, (*want)[i].shape) << "output " << i;
      const double err = tir::reference::RelativeL2Error((*got)[i], (*want)[i]);
      const double bound = tir::reference::RelativeL2Bound((*want)[i].dtype, 256);
      worst = std::max(worst, err / bound);
    }
    return worst;
  }

  // Three shapes of one bucket tune once and are checked three times; a
  // fourth shape, in the next bucket, tunes again. Every answer runs right.
  static void OneTuningPerBucket(const std::string &file, const std::vector<tir::Shapes> &inBucket,
                                 const tir::Shapes &nextBucket) {
    const std::string text = ReadGraph(file);
    std::string key;
    int64_t created = -1;
    std::set<int64_t> checkedAt;
    for (size_t i = 0; i < inBucket.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(file, " shape ", i));
      auto op = CompileAt(text, inBucket[i]);
      ASSERT_TRUE(op.ok()) << op.status();
      ASSERT_TRUE(op->has_response()) << op->error().reason() << ": " << op->error().message();
      const tir::v1::KernelBundle &b = op->response();
      EXPECT_TRUE(b.tuning().tuned());
      EXPECT_FALSE(op->metadata().cache_hit());
      if (i == 0) {
        key = b.key();
        created = TimeUtil::TimestampToNanoseconds(b.create_time());
        EXPECT_FALSE(op->metadata().shape_checked()) << "the first shape tunes the bucket";
      } else {
        EXPECT_EQ(b.key(), key) << "one bundle for the bucket";
        EXPECT_EQ(TimeUtil::TimestampToNanoseconds(b.create_time()), created) << "tuned once";
        EXPECT_TRUE(op->metadata().shape_checked()) << "checked, not tuned";
      }
      // Verified at exactly this shape, on the worker.
      ASSERT_TRUE(b.has_served_shape());
      EXPECT_TRUE(b.served_shape().passed());
      EXPECT_THAT(b.served_shape().worker(), HasSubstr("workers/"));
      for (const auto &v : b.served_shape().kernels()) EXPECT_EQ(v.verdict(), tir::v1::VERDICT_PASSED);
      checkedAt.insert(TimeUtil::TimestampToNanoseconds(b.served_shape().verify_time()));
      for (const auto &[input, shape] : inBucket[i]) {
        EXPECT_THAT(std::vector<int64_t>(b.inputs(input).shape().begin(), b.inputs(input).shape().end()),
                    ::testing::ElementsAreArray(shape));
      }
      EXPECT_LE(RunAgainstReference(text, b), 1.0);
      // Asked again: a cache hit, sized the same.
      auto hit = CompileAt(text, inBucket[i]);
      ASSERT_TRUE(hit.ok()) << hit.status();
      EXPECT_TRUE(hit->metadata().cache_hit());
      EXPECT_EQ(hit->response().inputs(0).SerializeAsString(), b.inputs(0).SerializeAsString());
    }
    EXPECT_EQ(checkedAt.size(), inBucket.size()) << "one check per shape";
    auto next = CompileAt(text, nextBucket);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE(next->has_response()) << next->error().message();
    EXPECT_NE(next->response().key(), key) << "another bucket, another tuning";
    EXPECT_FALSE(next->metadata().shape_checked());
    EXPECT_LE(RunAgainstReference(text, next->response()), 1.0);
  }

  static tir::client::EmbeddedService *service_;
  static tir::Client *client_;
};

tir::client::EmbeddedService *DynamicShapes::service_ = nullptr;
tir::Client *DynamicShapes::client_ = nullptr;

TEST_F(DynamicShapes, SoftmaxTunesOncePerBucketAndIsVerifiedAtEachShape) {
  OneTuningPerBucket("softmax_rows.mlir", {{{0, {300, 256}}}, {{0, {400, 256}}}, {{0, {257, 256}}}}, {{0, {700, 256}}});
}

TEST_F(DynamicShapes, GemmWithItsEpilogueTunesOncePerBucketAndIsVerifiedAtEachShape) {
  OneTuningPerBucket("gemm_bias_gelu.mlir", {{{0, {70, 128}}}, {{0, {100, 128}}}, {{0, {127, 128}}}},
                     {{0, {200, 128}}});
}

TEST_F(DynamicShapes, TensorIrsAddDynamicCompilesAtItsRunLineSizes) {
  // --dynamic-dims=16,8 --dynamic-strides=8: both inputs 16x8, row stride 8.
  const std::string text = ReadGraph("add_dynamic.mlir");
  auto op = CompileAt(text, {{0, {16, 8}}, {1, {16, 8}}});
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->has_response()) << op->error().message();
  const tir::v1::KernelBundle &b = op->response();
  EXPECT_EQ(b.inputs(0).shape(0), 16);
  EXPECT_EQ(b.inputs(0).shape(1), 8);
  EXPECT_TRUE(b.served_shape().passed());
  EXPECT_LE(RunAgainstReference(text, b), 1.0);
}

TEST_F(DynamicShapes, ATensorIrSoftmaxWithBothDimsDynamicIsRightAt16x1000) {
  // `?x1` broadcast to `?x?` without dynamic_dims: the columns' extent is
  // what the graph's shape inference ties to %x's; its kernels carry it.
  const std::string text = ReadGraph("softmax_dynamic.mlir");
  auto op = CompileAt(text, {{0, {16, 1000}}});
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->has_response()) << op->error().reason() << ": " << op->error().message();
  const tir::v1::KernelBundle &b = op->response();
  EXPECT_TRUE(b.tuning().tuned());
  EXPECT_GE(b.kernels_size(), 2) << "a row of run-time extent streams: statistics, then normalize";
  ASSERT_TRUE(b.has_served_shape());
  EXPECT_TRUE(b.served_shape().passed());
  for (const auto &v : b.served_shape().kernels()) EXPECT_EQ(v.verdict(), tir::v1::VERDICT_PASSED);
  EXPECT_EQ(b.inputs(0).shape(0), 16);
  EXPECT_EQ(b.inputs(0).shape(1), 1000);
  EXPECT_LE(RunAgainstReference(text, b), 1.0);
}

TEST_F(DynamicShapes, ADynamicIntermediateIsPlannedAtItsInferredShape) {
  const std::string text = ReadGraph("regroup_inferred.mlir");
  auto op = CompileAt(text, {});
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->has_response()) << op->error().reason() << ": " << op->error().message();
  const tir::v1::KernelBundle &b = op->response();
  EXPECT_TRUE(b.tuning().tuned());
  EXPECT_EQ(b.outputs(0).shape(0), 32);
  EXPECT_EQ(op->metadata().shape(), "0=8x16 1=32");
  EXPECT_TRUE(b.served_shape().passed());
  EXPECT_LE(RunAgainstReference(text, b), 1.0);
}

TEST_F(DynamicShapes, ABoundedDimIsRefusedPastItsBound) {
  const std::string text = ReadGraph("nonzero_bounded.mlir");
  auto over = CompileAt(text, {{0, {7, 2}}, {1, {1, 2}}});
  EXPECT_EQ(tir::ReasonOf(over.status()), "SHAPE_OVER_BOUND") << over.status();
  auto op = CompileAt(text, {{0, {5, 2}}});
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->has_response()) << op->error().message();
  EXPECT_EQ(op->metadata().shape_bucket(), "0:0=5..6");
  EXPECT_LE(RunAgainstReference(text, op->response()), 1.0);
}

TEST_F(DynamicShapes, LookupWithAShapeFindsItsBucketsBundle) {
  const std::string text = ReadGraph("softmax_rows.mlir");
  auto op = CompileAt(text, {{0, {1500, 256}}});
  ASSERT_TRUE(op.ok() && op->has_response()) << op.status();
  tir::v1::CompileOptions o;
  o.set_target_arch("host");
  auto seen = client_->Lookup(tir::GraphSourceFromText(text), o, {{0, {1500, 256}}});
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_TRUE(seen->found());
  EXPECT_TRUE(seen->shape_verified());
  EXPECT_EQ(seen->bundle().inputs(0).shape(0), 1500);
  // Another shape of the bucket: the bundle is found, not yet served there.
  auto unseen = client_->Lookup(tir::GraphSourceFromText(text), o, {{0, {1300, 256}}});
  ASSERT_TRUE(unseen.ok()) << unseen.status();
  EXPECT_TRUE(unseen->found());
  EXPECT_FALSE(unseen->shape_verified());
  EXPECT_EQ(unseen->bundle().inputs(0).shape(0), -1) << "the bucket's bundle as stored";
  EXPECT_EQ(unseen->key(), seen->key());
  // Without the shape: the dims are named.
  auto none = client_->Lookup(tir::GraphSourceFromText(text), o);
  EXPECT_EQ(tir::ReasonOf(none.status()), "SHAPE_HINT_MISSING");
}

TEST_F(DynamicShapes, HeuristicNowAnswersADynamicGraphAtOnce) {
  const std::string text = ReadGraph("gemm_bias_gelu.mlir");
  auto op = CompileAt(text, {{0, {3000, 128}}}, tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->done());
  ASSERT_TRUE(op->has_response()) << op->error().message();
  EXPECT_FALSE(op->response().tuning().tuned());
  EXPECT_EQ(op->response().inputs(0).shape(0), 3000);
  EXPECT_LE(RunAgainstReference(text, op->response()), 1.0);
}

}  // namespace
