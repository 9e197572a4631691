#include "compiler/conversion/InputLimits.h"

#include <string>

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tir {
namespace {

using ::testing::HasSubstr;

// A graph in a module that carries `attr` (MLIR attribute text; a module
// takes any attribute).
std::string GraphWith(const std::string &attr) {
  return "module attributes {test.note = " + attr +
         "} {\n"
         "tir.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %y = exp %x : tensor<4xf32>\n"
         "  results %y : tensor<4xf32>\n"
         "}\n}\n";
}

std::string Nested(int depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

TEST(TextNesting, CountsBracketsOutsideStringsCommentsAndArrows) {
  EXPECT_EQ(TextNesting("tensor<4x4xf32>"), 1);
  EXPECT_EQ(TextNesting("{[(<>)]}"), 4);
  EXPECT_EQ(TextNesting("\"[[[[\\\"[[\" // [[[[[\n[1]"), 1);
  EXPECT_EQ(TextNesting("(d0) -> (d0)"), 1);
  EXPECT_EQ(TextNesting(Nested(10000)), 10000);
  EXPECT_EQ(TextNesting("]]]]]][[1]]"), 2);  // stray closers cannot hide depth
}

TEST(ScanText, CountsAffineOperatorsAndRanks) {
  // Runs of operators end at separators (a comma, a colon), not at
  // parentheses.
  const TextFacts map = ScanText("#m = affine_map<(d0, d1) -> (d0 * 2 + d1 mod 3, d1 floordiv 4 - 1)>");
  EXPECT_EQ(map.affine_terms, 3);
  EXPECT_EQ(ScanText("affine_set<(d0) : (d0 - 1 >= 0, d0 == 0)>").affine_terms, 1);
  EXPECT_EQ(ScanText("(d0 + d0) + (d0 + d0) + (d0 * 2)").affine_terms, 5);
  EXPECT_EQ(ScanText("dense<[-1.0, -2.0e-05, 3.0]> : tensor<3xf32>").affine_terms, 2);
  EXPECT_EQ(ScanText("tensor<4x?x8xf32>").rank, 3);
  // What MLIR's lexer skips between tokens hides nothing.
  EXPECT_EQ(ScanText("tensor // a comment\n <4 x ? x 8x f32>").rank, 3);
  EXPECT_EQ(ScanText("tensor<1 x 1 //\n x [4] x 2xf32>").rank, 4);
  EXPECT_EQ(ScanText("vector<[4]x[4]xf32>").rank, 2);
  EXPECT_EQ(ScanText("memref<2x2xbf16, affine_map<(d0, d1) -> (d1, d0)>>").rank, 2);
  EXPECT_EQ(ScanText("tensor<f32> vector<4xf32> tensor<*xf32>").rank, 1);
  EXPECT_EQ(ScanText("%a = exp %b {x = 1} %c == %d >= 0").assignments, 2);
}

// A graph whose module carries an affine map of `terms` operators and no
// brackets to count (a read-only client's LookupKernel crashed a
// coordinator's parser with 3-4 million).
std::string AffineBomb(int terms, const std::string &op) {
  std::string expr = "d0";
  for (int i = 0; i < terms; ++i) expr += op;
  return GraphWith("affine_map<(d0) -> (" + expr + ")>");
}

TEST(InputLimits, AffineMapsOfMillionsOfTermsAreRefusedBeforeParsing) {
  auto ctx = makeTirContext();
  tir::v1::GraphSource src;
  src.set_mlir_text(AffineBomb(3000000, "+d0"));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(ReasonOf(g.status()), "INVALID_GRAPH");
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("affine map of 3000000 operators"));
  src.set_mlir_text(AffineBomb(60000, " mod 3 + d0"));
  g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("affine map of 120000 operators"));
  // A map within the bound parses.
  src.set_mlir_text(AffineBomb(kMaxAffineTerms / 2, " mod 3 + d0"));
  EXPECT_TRUE(LoadGraphSource(src, ctx.get()).ok());
}

// The same bombs spelled so that a scan looking for `affine_map<` or
// `tensor<` would miss them: a comment between the keyword and its '<',
// parenthesized groups, spaces around the dims' `x`.
TEST(InputLimits, BombsBehindTriviaAreRefusedBeforeParsing) {
  auto ctx = makeTirContext();
  std::string expr = "d0";
  for (int i = 0; i < 200000; ++i) expr += "+d0";
  tir::v1::GraphSource src;
  src.set_mlir_text(GraphWith("affine_map// hidden\n<(d0) -> (" + expr + ")>"));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("affine map of 200000 operators in a row"));
  std::string groups = "(d0+d0)";
  for (int i = 0; i < 100000; ++i) groups += "+(d0+d0)";
  src.set_mlir_text(GraphWith("affine_map<(d0) -> (" + groups + ")>"));
  EXPECT_EQ(ReasonOf(LoadGraphSource(src, ctx.get()).status()), "INVALID_GRAPH");
  std::string dims;
  for (int i = 0; i < 100000; ++i) dims += "1 x ";
  src.set_mlir_text(GraphWith("tensor// hidden\n<" + dims + "f32>"));
  g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("a type of rank 100000"));
}

TEST(InputLimits, TypesOfHugeRankAreRefusedBeforeParsing) {
  auto ctx = makeTirContext();
  std::string dims;
  for (int i = 0; i < 100000; ++i) dims += "1x";
  tir::v1::GraphSource src;
  src.set_mlir_text("tir.graph @g(%x: tensor<" + dims + "f32>) -> tensor<4xf32> {\n  %y = exp %x : tensor<" + dims +
                    "f32>\n  results %y : tensor<4xf32>\n}\n");
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(ReasonOf(g.status()), "INVALID_GRAPH");
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("a type of rank 100000, above the limit of 8"));
  // As a module attribute too.
  src.set_mlir_text(GraphWith("tensor<" + dims + "f32>"));
  EXPECT_EQ(ReasonOf(LoadGraphSource(src, ctx.get()).status()), "INVALID_GRAPH");
}

TEST(InputLimits, TextNestedTenThousandDeepIsRefusedNotACrash) {
  auto ctx = makeTirContext();
  tir::v1::GraphSource src;
  src.set_mlir_text(GraphWith(Nested(10000)));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(ReasonOf(g.status()), "INVALID_GRAPH");
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("brackets deep; graphs may nest at most 256"));
}

TEST(InputLimits, OrdinaryNestingStillParses) {
  auto ctx = makeTirContext();
  tir::v1::GraphSource src;
  src.set_mlir_text(GraphWith(Nested(40)));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_TRUE(g.ok()) << g.status();
  src.set_mlir_text(GraphWith(Nested(kMaxGraphNesting + 1)));
  EXPECT_EQ(ReasonOf(LoadGraphSource(src, ctx.get()).status()), "INVALID_GRAPH");
}

TEST(InputLimits, LongGraphNamesAreRefusedInEveryForm) {
  auto ctx = makeTirContext();
  const std::string name(kMaxGraphNameBytes + 1, 'g');
  const std::string text = "tir.graph @" + name +
                           "(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = exp %x : tensor<4xf32>\n  results %y : "
                           "tensor<4xf32>\n}\n";
  tir::v1::GraphSource src;
  src.set_mlir_text(text);
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(ReasonOf(g.status()), "LIMIT_EXCEEDED");
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("name has 1025 bytes; at most 1024"));
  // The proto form too.
  absl::StatusOr<LoadedGraph> parsed = LoadGraphText(text, ctx.get());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<tir::v1::Graph> proto = ExportGraph(parsed->graph);
  ASSERT_TRUE(proto.ok()) << proto.status();
  tir::v1::GraphSource fromProto;
  *fromProto.mutable_graph() = *proto;
  EXPECT_EQ(ReasonOf(LoadGraphSource(fromProto, ctx.get()).status()), "LIMIT_EXCEEDED");
  // A name at the limit is taken.
  proto->set_name(std::string(kMaxGraphNameBytes, 'g'));
  *fromProto.mutable_graph() = *proto;
  EXPECT_TRUE(LoadGraphSource(fromProto, ctx.get()).ok());
}

TEST(InputLimits, AttributeTextInTheProtoFormIsBounded) {
  auto ctx = makeTirContext();
  tir::v1::GraphSource text;
  text.set_mlir_text(GraphWith("1"));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(text, ctx.get());
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<tir::v1::Graph> proto = ExportGraph(g->graph);
  ASSERT_TRUE(proto.ok()) << proto.status();
  // Plant a deep attribute text where the proto form takes MLIR text.
  tir::v1::Attribute a;
  a.set_mlir(Nested(10000));
  (*proto->mutable_attributes())["note"] = a;
  tir::v1::GraphSource src;
  *src.mutable_graph() = *proto;
  absl::StatusOr<LoadedGraph> deep = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(deep.ok());
  EXPECT_THAT(std::string(deep.status().message()), HasSubstr("brackets deep"));
}

// Bytecode cannot be scanned as text: it is parsed on the large stack and
// its attributes' depth checked after.
TEST(InputLimits, BytecodeNestedDeepIsRefusedNotACrash) {
  auto ctx = makeTirContext();
  tir::v1::GraphSource text;
  text.set_mlir_text(GraphWith("1"));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(text, ctx.get());
  ASSERT_TRUE(g.ok()) << g.status();
  mlir::Builder b(ctx.get());
  mlir::Attribute a = b.getI64IntegerAttr(1);
  for (int i = 0; i < 10000; ++i) a = b.getArrayAttr({a});
  g->module->getOperation()->setAttr("test.note", a);
  std::string bytes;
  ASSERT_TRUE(RunOnLargeStack([&] {
                llvm::raw_string_ostream os(bytes);
                mlir::writeBytecodeToFile(g->module->getOperation(), os);
              }).ok());
  ASSERT_FALSE(bytes.empty());
  auto fresh = makeTirContext();
  tir::v1::GraphSource src;
  src.set_mlir_bytecode(bytes);
  absl::StatusOr<LoadedGraph> deep = LoadGraphSource(src, fresh.get());
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(ReasonOf(deep.status()), "INVALID_GRAPH");
  EXPECT_THAT(std::string(deep.status().message()), HasSubstr("nests 10001 levels deep"));
}

// Uniqued attributes are shared: a depth-60 chain where each level holds the
// one below twice has 2^60 paths and must still be checked at once.
TEST(InputLimits, SharedAttributesAreWalkedOnce) {
  auto ctx = makeTirContext();
  tir::v1::GraphSource text;
  text.set_mlir_text(GraphWith("1"));
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(text, ctx.get());
  ASSERT_TRUE(g.ok()) << g.status();
  mlir::Builder b(ctx.get());
  mlir::Attribute a = b.getI64IntegerAttr(1);
  for (int i = 0; i < 60; ++i) a = b.getArrayAttr({a, a});
  g->module->getOperation()->setAttr("test.note", a);
  EXPECT_TRUE(CheckAttributeDepth(g->module->getOperation()).ok());
  EXPECT_EQ(ReasonOf(CheckAttributeDepth(g->module->getOperation(), 30)), "INVALID_GRAPH");
}

}  // namespace
}  // namespace tir

namespace tir {
namespace {

// MLIR's affine parser recurses once per unary minus: a run of them is
// nesting too, and bytecode past its cap is refused before it is read.
TEST(InputLimits, UnaryMinusRunsAndLargeBytecodeAreBounded) {
  EXPECT_EQ(TextNesting("affine_map<(d0) -> (---d0)>"), 5);
  EXPECT_EQ(TextNesting("a - b - c"), 1) << "binary minus signs are not a run";
  auto ctx = makeTirContext();
  tir::v1::GraphSource src;
  src.set_mlir_text("module attributes {test.m = affine_map<(d0) -> (" + std::string(100000, '-') + "d0)>} {}\n");
  absl::StatusOr<LoadedGraph> g = LoadGraphSource(src, ctx.get());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(ReasonOf(g.status()), "INVALID_GRAPH");
  std::string bytecode = "ML\xefR";
  bytecode.resize(kMaxGraphBytecodeBytes + 1, '\0');
  src.set_mlir_bytecode(bytecode);
  EXPECT_EQ(ReasonOf(LoadGraphSource(src, ctx.get()).status()), "LIMIT_EXCEEDED");
}

}  // namespace
}  // namespace tir
