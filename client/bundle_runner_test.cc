// A bundle returned by the service computes its graph when launched from the
// bundle's own records (types, argument records, domains, launch rules):
// tuned through the embedded coordinator and worker, run on the host, and
// compared with the reference interpreter over the whole graph.

#include "client/bundle_runner.h"

#include "client/bundle_signature.h"

#include "absl/strings/str_cat.h"
#include "client/bundle_signature.h"
#include "client/client.h"
#include "client/embedded.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"
#include "gtest/gtest.h"

namespace tir::client {
namespace {

// Two kernels: the matmul with its bias, then a row reduction reading the
// matmul's output through an intermediate.
constexpr char kGraph[] = R"mlir(
tir.graph @mlp(%x: tensor<32x48xbf16>, %w: tensor<48x64xbf16>, %b: tensor<1x64xf32>) -> (tensor<32x64xf32>, tensor<32x1xf32>) {
  %m = matmul(%x, %w) : (tensor<32x48xbf16>, tensor<48x64xbf16>) -> tensor<32x64xf32>
  %y = add %m, %b : (tensor<32x64xf32>, tensor<1x64xf32>) -> tensor<32x64xf32>
  %s = reduce(%y)<dimensions = [1], reduction_mode = <max>> : tensor<32x64xf32> -> tensor<32x1xf32>
  %z = sub %y, %s : (tensor<32x64xf32>, tensor<32x1xf32>) -> tensor<32x64xf32>
  %e = exp %z : tensor<32x64xf32>
  results %e, %s : tensor<32x64xf32>, tensor<32x1xf32>
})mlir";

TEST(BundleRunner, ATunedBundleComputesItsGraphFromItsOwnRecords) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  EmbeddedOptions o;
  o.cache_dir = tmp + "/cache";
  o.backend = "host";
  auto service = EmbeddedService::Start(o);
  ASSERT_TRUE(service.ok()) << service.status();
  ClientOptions co;
  co.address = (*service)->address();
  auto client = Client::Connect(co);
  ASSERT_TRUE(client.ok());
  tir::v1::CompileOptions options;
  options.set_target_arch("host");
  auto op = (*client)->Compile(GraphSourceFromText(kGraph), options);
  ASSERT_TRUE(op.ok()) << op.status();
  auto done = (*client)->Wait(op->name(), absl::Minutes(3));
  ASSERT_TRUE(done.ok() && done->has_response()) << done.status() << done->error().message();
  const tir::v1::KernelBundle &bundle = done->response();
  ASSERT_GE(bundle.kernels_size(), 2);
  EXPECT_EQ(bundle.inputs_size(), 3);
  EXPECT_EQ(bundle.outputs_size(), 2);
  EXPECT_GE(bundle.intermediates_size(), 1);
  for (const auto &k : bundle.kernels()) {
    EXPECT_GT(k.arguments_size(), 0);
    EXPECT_FALSE(k.iteration_domain().empty());
  }

  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(kGraph, ctx.get());
  ASSERT_TRUE(loaded.ok());
  const std::vector<reference::Tensor> inputs = reference::SampleInputs(loaded->graph, 1, 11);
  auto want = reference::Evaluate(loaded->graph, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = RunHostBundle(bundle, inputs, tmp + "/run");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const double err = reference::RelativeL2Error((*got)[i], (*want)[i]);
    EXPECT_LE(err, reference::RelativeL2Bound((*want)[i].dtype)) << "output " << i;
  }
  // The untuned default bundle (heuristic-now on another shape) runs as well.
  options.set_mode(tir::v1::COMPILE_MODE_HEURISTIC_NOW);
  std::string other = kGraph;
  for (auto [from, to] : {std::pair<std::string, std::string>{"32x", "16x"}}) {
    for (size_t p = other.find(from); p != std::string::npos; p = other.find(from, p + to.size())) other.replace(p, from.size(), to);
  }
  auto now = (*client)->Compile(GraphSourceFromText(other), options);
  ASSERT_TRUE(now.ok() && now->done()) << now.status();
  auto loadedOther = LoadGraphText(other, ctx.get());
  ASSERT_TRUE(loadedOther.ok());
  const auto otherInputs = reference::SampleInputs(loadedOther->graph, 1, 12);
  auto wantOther = reference::Evaluate(loadedOther->graph, otherInputs);
  auto gotOther = RunHostBundle(now->response(), otherInputs, tmp + "/run2");
  ASSERT_TRUE(wantOther.ok() && gotOther.ok()) << gotOther.status();
  for (size_t i = 0; i < wantOther->size(); ++i) {
    EXPECT_LE(reference::RelativeL2Error((*gotOther)[i], (*wantOther)[i]),
              reference::RelativeL2Bound((*wantOther)[i].dtype));
  }
  // Wrong inputs are refused, not run.
  EXPECT_EQ(ReasonOf(RunHostBundle(bundle, {}, tmp + "/run3").status()), "INVALID_ARGUMENT");
  // Given a key, a bundle is loaded only when its signature checks.
  tir::v1::KernelBundle signed_ = bundle;
  SignBundle(signed_, "key");
  EXPECT_TRUE(RunHostBundle(signed_, inputs, tmp + "/run4", "key").ok());
  EXPECT_EQ(ReasonOf(RunHostBundle(bundle, inputs, tmp + "/run5", "key").status()), "BUNDLE_UNSIGNED");
  tir::v1::KernelBundle altered = signed_;
  altered.mutable_kernels(0)->mutable_binary()->append("x");
  EXPECT_EQ(ReasonOf(RunHostBundle(altered, inputs, tmp + "/run6", "key").status()), "BUNDLE_SIGNATURE_INVALID");
}

}  // namespace
}  // namespace tir::client
