// The parameter struct the worker and the emulator pack (ParamPacking.h)
// against the kernel's own tir_args: the offsetof and sizeof of every field
// as the host compiler lays out the generated source (a probe it compiles
// and runs), for the
// Hopper GEMM's 448-byte __grid_constant__ struct with two tensor maps and
// a kernel with scalar fields of several sizes; a planted wrong offset
// fails it. (HopperMatmulTest runs the emulated GEMM on bytes packed at
// a wrong offset.)

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/ParamPacking.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "llvm/Support/Program.h"

namespace tir::codegen {
namespace {

using ::testing::HasSubstr;

constexpr const char *kBiasGelu = R"G(
tir.graph @mm(%x: tensor<200x136xbf16>, %w: tensor<136x192xbf16>, %bias: tensor<1x192xf32>) -> tensor<200x192xf32> {
  %m = matmul(%x, %w) : (tensor<200x136xbf16>, tensor<136x192xbf16>) -> tensor<200x192xf32>
  %y = add %m, %bias : (tensor<200x192xf32>, tensor<1x192xf32>) -> tensor<200x192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<200x192xf32>
  results %g : tensor<200x192xf32>
}
)G";

// Scalars of 2, 8 and 4 bytes between the pointers.
constexpr const char *kScalars = R"G(
tir.graph @sc(%x: tensor<4x8xf32>, %h: bf16, %d: f64, %v: f32) -> tensor<4x8xf32> {
  %hs = splat %h : tensor<4x8xbf16>
  %hc = convert %hs : tensor<4x8xbf16> -> tensor<4x8xf32>
  %ds = splat %d : tensor<4x8xf64>
  %dc = convert %ds : tensor<4x8xf64> -> tensor<4x8xf32>
  %vs = splat %v : tensor<4x8xf32>
  %a = add %x, %hc : tensor<4x8xf32>
  %b = add %a, %dc : tensor<4x8xf32>
  %y = mul %b, %vs : tensor<4x8xf32>
  results %y : tensor<4x8xf32>
}
)G";

const std::map<std::string, int64_t> kGemmParams = {{"block_m", 128}, {"block_n", 128}, {"block_k", 64},
                                                     {"stages", 4},     {"consumers", 2},  {"persistent", 1},
                                                     {"group_m", 8},    {"wgmma", 1}};

std::string WorkDir() {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/param_packing";
}

// One kernel of a graph planned for sm_90a, emitted with `params` (or its
// default candidate), and its fields from a launch on sample inputs.
struct Kernel {
  std::unique_ptr<mlir::MLIRContext> ctx = makeTirContext();
  std::optional<LoadedGraph> loaded;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GraphOp graph;
  EmittedKernel emitted;
  std::unique_ptr<HostLaunch> launch;
  std::vector<HostLaunch::FieldView> fields;
};

std::unique_ptr<Kernel> Emit(const char *text, const std::map<std::string, int64_t> *params) {
  auto k = std::make_unique<Kernel>();
  auto loaded = LoadGraphText(text, k->ctx.get());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return nullptr;
  k->loaded.emplace(std::move(*loaded));
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(k->loaded->graph, *target::LookupArch("sm_90a"), model, 1);
  EXPECT_TRUE(planned.ok()) << planned.status();
  if (!planned.ok() || planned->partition.kernels.size() != 1) return nullptr;
  k->module = planning::BuildPartitionedModule(k->loaded->graph, planned->partition);
  for (GraphOp g : k->module->getOps<GraphOp>()) {
    if (g.getSymName() == k->loaded->graph.getSymName().str() + "_k0") k->graph = g;
  }
  std::map<std::string, int64_t> use;
  for (const auto &c : planned->spaces[0].kept) {
    if (c.is_default) use = c.params;
  }
  if (params) use = *params;
  auto emitted = EmitKernel(k->graph, use);
  EXPECT_TRUE(emitted.ok()) << emitted.status();
  if (!emitted.ok()) return nullptr;
  k->emitted = *emitted;
  auto launch = HostLaunch::Prepare(k->graph, k->emitted.field_names, k->emitted.launch,
                                    reference::SampleInputs(k->graph, 1, 7));
  EXPECT_TRUE(launch.ok()) << launch.status();
  if (!launch.ok()) return nullptr;
  k->launch = std::move(*launch);
  k->fields = k->launch->Fields(0);
  return k;
}

// The generated source up to the kernel: the constants and tir_args.
std::string StructOf(const EmittedKernel &e) {
  const size_t end = e.source.find("TIR_KERNEL void");
  EXPECT_NE(end, std::string::npos);
  return e.source.substr(0, end);
}

// sizeof, alignof and each field's offsetof of the kernel's tir_args as the
// host compiler lays it out (with TIR_EMULATE, as the emulator builds it),
// from a probe it compiles and runs.
std::vector<size_t> HostProbe(const EmittedKernel &e, const std::string &name) {
  const std::filesystem::path dir = std::filesystem::path(WorkDir()) / name;
  std::filesystem::create_directories(dir);
  for (const auto &[header, text] : RuntimeHeaders()) std::ofstream(dir / header) << text;
  std::string probe = absl::StrCat(StructOf(e), "\n#include <cstdio>\nint main() {\n",
                                   "  std::printf(\"%zu %zu\\n\", sizeof(tir_args), alignof(tir_args));\n");
  for (const std::string &f : e.field_names) {
    absl::StrAppend(&probe, "  std::printf(\"%zu\\n\", (size_t)__builtin_offsetof(tir_args, ", f, "));\n");
  }
  absl::StrAppend(&probe, "}\n");
  const std::string src = (dir / "probe.cc").string(), include = dir.string(), exe = (dir / "probe").string(),
                    out = (dir / "probe.out").string();
  std::ofstream(src) << probe;
  auto cxx = llvm::sys::findProgramByName("c++");
  EXPECT_TRUE(bool(cxx)) << "no c++ on PATH";
  if (!cxx) return {};
  const std::vector<llvm::StringRef> args = {*cxx, "-std=c++17", "-DTIR_EMULATE=1", "-w", "-I", include, "-o", exe, src};
  std::string error;
  const int rc = llvm::sys::ExecuteAndWait(*cxx, args, std::nullopt, {}, 0, 0, &error);
  EXPECT_EQ(rc, 0) << "the probe does not compile: " << error;
  if (rc != 0) return {};
  const std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out), std::nullopt};
  EXPECT_EQ(llvm::sys::ExecuteAndWait(exe, {exe}, std::nullopt, redirects), 0);
  std::ifstream in(out);
  std::vector<size_t> got;
  for (size_t v; in >> v;) got.push_back(v);
  return got;
}

// What the packer says, in the probe's order.
std::vector<size_t> Packed(const ParamLayout &layout) {
  std::vector<size_t> v = {layout.bytes, layout.align};
  v.insert(v.end(), layout.offsets.begin(), layout.offsets.end());
  return v;
}

TEST(ParamPacking, TheHopperGemmStructMatchesTheKernelsOwnOffsets) {
  auto k = Emit(kBiasGelu, &kGemmParams);
  ASSERT_TRUE(k);
  const ParamLayout layout = LayOutParams(k->fields);
  // What the issue measured on the worker: 448 bytes, maps at 192 and 320.
  EXPECT_EQ(layout.bytes, 448u);
  EXPECT_EQ(layout.align, 64u);
  std::vector<size_t> maps;
  for (size_t i = 0; i < k->fields.size(); ++i) {
    if (k->fields[i].map) maps.push_back(layout.offsets[i]);
  }
  EXPECT_EQ(maps, (std::vector<size_t>{192, 320}));
  const std::vector<size_t> probe = HostProbe(k->emitted, "gemm");
  EXPECT_EQ(probe, Packed(layout));

  // A planted wrong offset (the first tensor map at 256) fails it.
  ParamLayout wrong = layout;
  size_t map = 0;
  while (map < k->fields.size() && !k->fields[map].map) ++map;
  ASSERT_LT(map, k->fields.size());
  wrong.offsets[map] += 64;
  EXPECT_NE(probe, Packed(wrong));
}

TEST(ParamPacking, ScalarFieldsTakeTheirOwnAlignment) {
  auto k = Emit(kScalars, nullptr);
  ASSERT_TRUE(k);
  const ParamLayout layout = LayOutParams(k->fields);
  // The bf16, f64 and f32 scalars are fields of 2, 8 and 4 bytes.
  std::multiset<size_t> scalars;
  for (const HostLaunch::FieldView &f : k->fields) {
    if (f.buffer < 0 && !f.map && f.bytes < 8) scalars.insert(f.align);
  }
  EXPECT_EQ(scalars, (std::multiset<size_t>{2, 4}));
  EXPECT_EQ(HostProbe(k->emitted, "scalars"), Packed(layout));
  // The packed bytes hold each field at its offset.
  auto bytes = PackParams(k->fields, layout, [](int b) { return uint64_t(0x1000 + b); });
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->size(), layout.bytes);
  for (size_t i = 0; i < k->fields.size(); ++i) {
    SCOPED_TRACE(k->emitted.field_names[i]);
    const HostLaunch::FieldView &f = k->fields[i];
    if (f.buffer >= 0) {
      uint64_t p = 0;
      std::memcpy(&p, bytes->data() + layout.offsets[i], 8);
      EXPECT_EQ(p, uint64_t(0x1000 + f.buffer));
    } else {
      EXPECT_EQ(std::memcmp(bytes->data() + layout.offsets[i], f.value, f.bytes), 0);
    }
  }
}

}  // namespace
}  // namespace tir::codegen
