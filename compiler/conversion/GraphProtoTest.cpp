#include <fstream>
#include <set>
#include <sstream>

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/OperationSupport.h"

namespace tir {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Print(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

class GraphProtoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto module = parseTirModule(ReadFile("tests/graphs/every_op.mlir"), ctx_.get());
    ASSERT_TRUE(module);
    corpus_ = std::move(module);
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  mlir::OwningOpRef<mlir::ModuleOp> corpus_;
};

TEST_F(GraphProtoTest, CorpusCoversEveryOpKind) {
  std::set<std::string> seen;
  corpus_->walk([&](mlir::Operation *op) { seen.insert(op->getName().getStringRef().str()); });
  for (mlir::RegisteredOperationName name : ctx_->getRegisteredOperations()) {
    if (name.getDialectNamespace() != "tir") continue;
    EXPECT_TRUE(seen.count(name.getStringRef().str())) << name.getStringRef().str() << " not in corpus";
  }
}

void CheckLossless(mlir::ModuleOp module, mlir::MLIRContext *ctx) {
  for (GraphOp graph : module.getOps<GraphOp>()) {
    SCOPED_TRACE(graph.getSymName().str());
    // A stitching graph refers to kernel graphs, which one wire graph cannot carry.
    if (!graph.getBodyBlock().getOps<LaunchOp>().empty()) continue;
    absl::StatusOr<tir::v1::Graph> proto = ExportGraph(graph);
    ASSERT_TRUE(proto.ok()) << proto.status();
    // Through the wire bytes, as a client would send it.
    tir::v1::Graph wire;
    ASSERT_TRUE(wire.ParseFromString(proto->SerializeAsString()));
    absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> back = ImportGraph(wire, ctx);
    ASSERT_TRUE(back.ok()) << back.status();
    GraphOp imported = *(*back)->getOps<GraphOp>().begin();
    EXPECT_EQ(Print(graph), Print(imported));
    // And proto -> MLIR -> proto is the identity.
    absl::StatusOr<tir::v1::Graph> again = ExportGraph(imported);
    ASSERT_TRUE(again.ok());
    std::string diff;
    google::protobuf::util::MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    EXPECT_TRUE(d.Compare(*proto, *again)) << diff;
  }
}

TEST_F(GraphProtoTest, MlirProtoMlirIsLosslessForEveryGraph) { CheckLossless(*corpus_, ctx_.get()); }

// TensorIR's constructs (graph tile attributes, stride hints, alignment,
// analysis attributes and layout sources, stride 0, 8-bit floats, reduce_ud
// bodies over signless integers) survive the wire both ways.
TEST_F(GraphProtoTest, TensorIrConstructsAreLossless) {
  mlir::OwningOpRef<mlir::ModuleOp> m = parseTirModule(ReadFile("tests/graphs/tensorir_constructs.mlir"), ctx_.get());
  ASSERT_TRUE(m);
  CheckLossless(*m, ctx_.get());
  GraphOp layouts;
  for (GraphOp g : m->getOps<GraphOp>()) {
    if (g.getSymName() == "layouts") layouts = g;
  }
  ASSERT_TRUE(layouts);
  absl::StatusOr<tir::v1::Graph> proto = ExportGraph(layouts);
  ASSERT_TRUE(proto.ok());
  // The divisibility hint is a field of the wire type, not a string.
  EXPECT_THAT(proto->inputs(0).type().strides(), ::testing::ElementsAre(-1, 1));
  EXPECT_THAT(proto->inputs(0).type().stride_divisors(), ::testing::ElementsAre(8, 0));
  EXPECT_THAT(proto->outputs(1).strides(), ::testing::ElementsAre(0, 1));
  // Stride hints on a static stride are refused on import.
  tir::v1::Graph bad = *proto;
  bad.mutable_inputs(1)->mutable_type()->add_stride_divisors(4);
  bad.mutable_inputs(1)->mutable_type()->add_stride_divisors(0);
  EXPECT_THAT(std::string(ImportGraph(bad, ctx_.get()).status().message()), HasSubstr("hints on static stride 0"));
}

TEST_F(GraphProtoTest, NamesSurviveProtoMlirProto) {
  tir::v1::Graph g;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    schema_version: 1 name: "named"
    inputs { id: 0 name: "x" type { dtype: DTYPE_F32 shape: [4] } }
    ops { kind: "exp" operands: [0] results { id: 1 name: "ex" type { dtype: DTYPE_F32 shape: [4] } } }
    outputs { value: 1 }
  )pb", &g));
  auto module = ImportGraph(g, ctx_.get());
  ASSERT_TRUE(module.ok()) << module.status();
  auto back = ExportGraph(*(*module)->getOps<GraphOp>().begin());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->inputs(0).name(), "x");
  EXPECT_EQ(back->ops(0).results(0).name(), "ex");
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(g, *back));
}

// A valid two-op graph the malformed cases below start from.
tir::v1::Graph Valid() {
  tir::v1::Graph g;
  google::protobuf::TextFormat::ParseFromString(R"pb(
    schema_version: 1 name: "g"
    inputs { id: 0 name: "x" type { dtype: DTYPE_F32 shape: [4, 8] } }
    ops { kind: "exp" operands: [0] results { id: 1 name: "e" type { dtype: DTYPE_F32 shape: [4, 8] } } }
    ops { kind: "reduce" operands: [1]
          results { id: 2 name: "s" type { dtype: DTYPE_F32 shape: [4, 1] } }
          attributes { key: "dimensions" value { ints { values: [1] bit_width: 32 } } }
          attributes { key: "reduction_mode" value { enum_value: "add" } } }
    outputs { value: 2 }
  )pb", &g);
  return g;
}

struct Malformed {
  std::string name;
  std::function<void(tir::v1::Graph &)> mutate;
  std::string reason;
  std::string message;
};

TEST_F(GraphProtoTest, MalformedGraphsAreRejectedWithReasonNamingTheCulprit) {
  ASSERT_TRUE(ImportGraph(Valid(), ctx_.get()).ok());
  const std::vector<Malformed> cases = {
      {"dangling operand", [](auto &g) { g.mutable_ops(1)->set_operands(0, 42); }, "INVALID_GRAPH",
       "op #1 (reduce) operand #0 refers to value 42"},
      {"cycle", [](auto &g) { g.mutable_ops(0)->set_operands(0, 2); }, "INVALID_GRAPH", "cycle"},
      {"unknown op", [](auto &g) { g.mutable_ops(0)->set_kind("frobnicate"); }, "UNSUPPORTED_OP",
       "op #0 (frobnicate): unknown op kind 'frobnicate'"},
      {"structural op", [](auto &g) { g.mutable_ops(0)->set_kind("results"); }, "UNSUPPORTED_OP",
       "structural"},
      {"wrong attribute type",
       [](auto &g) { (*g.mutable_ops(1)->mutable_attributes())["dimensions"].set_float_value(1.0); },
       "INVALID_GRAPH", "dimensions"},
      {"wrong enum",
       [](auto &g) { (*g.mutable_ops(1)->mutable_attributes())["reduction_mode"].set_enum_value("sum"); },
       "INVALID_GRAPH", "unknown enumerant 'sum'"},
      {"rank over 8",
       [](auto &g) {
         g.mutable_inputs(0)->mutable_type()->clear_shape();
         for (int i = 0; i < 9; ++i) g.mutable_inputs(0)->mutable_type()->add_shape(1);
       },
       "LIMIT_EXCEEDED", "input #0 'x' has rank 9"},
      {"dimension over 2^40",
       [](auto &g) { g.mutable_inputs(0)->mutable_type()->set_shape(0, (int64_t{1} << 40) + 1); },
       "LIMIT_EXCEEDED", "input #0 'x' dimension 0"},
      {"element count overflow",
       [](auto &g) {
         auto *t = g.mutable_inputs(0)->mutable_type();
         t->set_shape(0, int64_t{1} << 40);
         t->set_shape(1, int64_t{1} << 40);
       },
       "LIMIT_EXCEEDED", "more than 2^48 elements"},
      {"empty graph", [](auto &g) { g.clear_ops(); g.clear_outputs(); }, "INVALID_GRAPH", "nothing to compute"},
      {"duplicate names", [](auto &g) { g.mutable_ops(0)->mutable_results(0)->set_name("x"); },
       "INVALID_GRAPH", "value name 'x' is used twice"},
      {"duplicate ids", [](auto &g) { g.mutable_ops(0)->mutable_results(0)->set_id(0); },
       "INVALID_GRAPH", "value id 0 is defined twice"},
      {"no dtype", [](auto &g) { g.mutable_inputs(0)->mutable_type()->set_dtype(tir::v1::DTYPE_UNSPECIFIED); },
       "INVALID_GRAPH", "input #0 'x' has no valid dtype"},
      {"negative extent", [](auto &g) { g.mutable_inputs(0)->mutable_type()->set_shape(0, -5); },
       "INVALID_GRAPH", "dimension 0 is -5"},
      {"dangling output", [](auto &g) { g.mutable_outputs(0)->set_value(9); }, "INVALID_GRAPH",
       "output #0 refers to value 9"},
      {"shape mismatch",
       [](auto &g) { g.mutable_ops(0)->mutable_results(0)->mutable_type()->set_shape(0, 5); },
       "INVALID_GRAPH", "loc(\"e\"): error: 'tir.exp' op requires the result shape"},
      {"empty attribute name",
       [](auto &g) { (*g.mutable_ops(0)->mutable_attributes())[""].set_int_value(1); }, "INVALID_GRAPH",
       "attribute name '' of op #0 (exp) is not an identifier"},
      {"newer schema", [](auto &g) { g.set_schema_version(7); }, "INVALID_GRAPH", "schema version 7"},
      {"literal size",
       [](auto &g) {
         auto *op = g.add_ops();
         op->set_kind("constant");
         auto *r = op->add_results();
         r->set_id(9);
         r->mutable_type()->set_dtype(tir::v1::DTYPE_F32);
         r->mutable_type()->add_shape(4);
         auto *lit = (*op->mutable_attributes())["value"].mutable_tensor();
         lit->mutable_type()->set_dtype(tir::v1::DTYPE_F32);
         lit->mutable_type()->add_shape(4);
         lit->set_data("abc");
       },
       "INVALID_GRAPH", "literal has 3 bytes, expected 16"},
  };
  for (const Malformed &c : cases) {
    SCOPED_TRACE(c.name);
    tir::v1::Graph g = Valid();
    c.mutate(g);
    absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> m = ImportGraph(g, ctx_.get());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ReasonOf(m.status()), c.reason);
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.message));
  }
}

TEST_F(GraphProtoTest, GraphSourceAcceptsEveryEncoding) {
  const std::string text =
      "nv_tensor_ir.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %y = exp %x : tensor<4xf32>\n  results %y : tensor<4xf32>\n}\n";
  tir::v1::GraphSource src;
  src.set_mlir_text(text);
  auto loaded = LoadGraphSource(src, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->graph.getSymName(), "g");

  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  mlir::writeBytecodeToFile(loaded->module->getOperation(), os);
  os.flush();
  tir::v1::GraphSource bc;
  bc.set_mlir_bytecode(bytecode);
  auto fromBytecode = LoadGraphSource(bc, ctx_.get());
  ASSERT_TRUE(fromBytecode.ok()) << fromBytecode.status();
  EXPECT_EQ(Print(loaded->graph), Print(fromBytecode->graph));

  tir::v1::GraphSource proto;
  *proto.mutable_graph() = *ExportGraph(loaded->graph);
  auto fromProto = LoadGraphSource(proto, ctx_.get());
  ASSERT_TRUE(fromProto.ok()) << fromProto.status();

  tir::v1::GraphSource noOutputs;
  noOutputs.set_mlir_text("nv_tensor_ir.graph @g() {\n  results\n}\n");
  EXPECT_TRUE(LoadGraphText(noOutputs.mlir_text(), ctx_.get()).ok()) << "valid TensorIR text";
  EXPECT_THAT(std::string(LoadGraphSource(noOutputs, ctx_.get()).status().message()),
              HasSubstr("nothing to compute"));

  auto empty = LoadGraphSource(tir::v1::GraphSource(), ctx_.get());
  EXPECT_EQ(ReasonOf(empty.status()), "INVALID_GRAPH");
}

TEST_F(GraphProtoTest, TextErrorsCarryLocationAndReason) {
  auto bad = LoadGraphText("tir.graph @g(%x: tensor<4xf32>) -> tensor<5xf32> {\n"
                           "  %y = reshape %x : tensor<4xf32> -> tensor<5xf32>\n"
                           "  results %y : tensor<5xf32>\n}\n",
                           ctx_.get());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ReasonOf(bad.status()), "INVALID_GRAPH");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("graph.mlir\":2:8"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("same number of elements"));
  auto two = LoadGraphText("tir.graph @a() { results }\ntir.graph @b() { results }\n", ctx_.get());
  EXPECT_THAT(std::string(two.status().message()), HasSubstr("exactly one tir.graph, found 2"));
  auto junk = LoadGraphText("this is not mlir", ctx_.get());
  EXPECT_EQ(ReasonOf(junk.status()), "INVALID_GRAPH");
}

}  // namespace
}  // namespace tir

namespace tir {
namespace {

TEST_F(GraphProtoTest, AnyUint32IsAValidValueId) {
  tir::v1::Graph g = Valid();
  // 0xffffffff and 0xfffffffe are reserved keys in LLVM's DenseMap.
  g.mutable_inputs(0)->set_id(0xffffffffu);
  g.mutable_ops(0)->set_operands(0, 0xffffffffu);
  g.mutable_ops(0)->mutable_results(0)->set_id(0xfffffffeu);
  g.mutable_ops(1)->set_operands(0, 0xfffffffeu);
  auto m = ImportGraph(g, ctx_.get());
  ASSERT_TRUE(m.ok()) << m.status();
}

}  // namespace
}  // namespace tir
