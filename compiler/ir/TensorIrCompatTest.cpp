#include "compiler/ir/TensorIrCompat.h"

#include "gtest/gtest.h"

namespace tir {
namespace {

TEST(TensorIrCompat, RespellsNamespaceKeepingColumns) {
  const std::string in =
      "nv_tensor_ir.graph @g(%a: tensor<2xf32> {nv_tensor_ir.stride = \"(1)\"}) {\n"
      "  %r = nv_tensor_ir.add %a, %a : tensor<2xf32>\n";
  const std::string out = aliasTensorIrNamespace(in);
  EXPECT_EQ(out,
            "         tir.graph @g(%a: tensor<2xf32> {         tir.stride = \"(1)\"}) {\n"
            "  %r =          tir.add %a, %a : tensor<2xf32>\n");
  EXPECT_EQ(out.size(), in.size());
  EXPECT_EQ(out.find("@g"), in.find("@g"));
}

TEST(TensorIrCompat, LeavesStringsCommentsAndLongerNamesAlone) {
  const std::string in =
      "// expected-error {{'nv_tensor_ir.reduce' op}}\n"
      "%x = foo.nv_tensor_ir.bar {s = \"nv_tensor_ir.add\"} my_nv_tensor_ir.x\n";
  EXPECT_EQ(aliasTensorIrNamespace(in), in);
  EXPECT_FALSE(usesTensorIrNamespace(in));
}

TEST(TensorIrCompat, AttributeAliasesAfterHash) {
  EXPECT_EQ(aliasTensorIrNamespace("#nv_tensor_ir.tensor_source<0, 0, \"(4)\">"),
            "#tir.tensor_source<0, 0, \"(4)\">");
  EXPECT_TRUE(usesTensorIrNamespace("x = #nv_tensor_ir.composite_source<>"));
}

TEST(TensorIrCompat, GenericFormOpNamesAreRespelled) {
  EXPECT_EQ(aliasTensorIrNamespace("%0 = \"nv_tensor_ir.add\"(%a, %b) : (f32, f32) -> f32"),
            "%0 = \"tir.add\"(%a, %b) : (f32, f32) -> f32");
  // Not followed by '(' or not an identifier: an ordinary string.
  EXPECT_EQ(aliasTensorIrNamespace("{s = \"nv_tensor_ir.add\"}"), "{s = \"nv_tensor_ir.add\"}");
  EXPECT_EQ(aliasTensorIrNamespace("\"nv_tensor_ir.a b\"(x)"), "\"nv_tensor_ir.a b\"(x)");
}

TEST(TensorIrCompat, EscapedQuotesDoNotEndStrings) {
  const std::string in = "\"a\\\"nv_tensor_ir.x\" nv_tensor_ir.y";
  EXPECT_EQ(aliasTensorIrNamespace(in), "\"a\\\"nv_tensor_ir.x\"          tir.y");
}

TEST(TensorIrCompat, DialectAttributeOpenerIsRespelled) {
  EXPECT_EQ(aliasTensorIrNamespace("{a = #nv_tensor_ir<iter_space_dim_domains[def, undef]>}"),
            "{a = #tir<iter_space_dim_domains[def, undef]>}");
  // Without '#' it is an ordinary identifier.
  EXPECT_EQ(aliasTensorIrNamespace("x nv_tensor_ir<y"), "x nv_tensor_ir<y");
}

TEST(TensorIrCompat, UpstreamArithSpellingsBecomeMlir16s) {
  const std::string in = "  %0 = arith.maximumf %a, %b : f32\n  %1 = arith.minimumf %a, %b : f32\n";
  const std::string out = aliasTensorIrNamespace(in);
  EXPECT_EQ(out, "  %0 =     arith.maxf %a, %b : f32\n  %1 =     arith.minf %a, %b : f32\n");
  EXPECT_EQ(out.size(), in.size());
  EXPECT_EQ(aliasTensorIrNamespace("%0 = \"arith.maximumf\"(%a, %b) : (f32, f32) -> f32"),
            "%0 = \"arith.maxf\"(%a, %b) : (f32, f32) -> f32");
  // Longer names and other spellings are left alone.
  EXPECT_EQ(aliasTensorIrNamespace("arith.maximumfx arith.maxf"), "arith.maximumfx arith.maxf");
}

}  // namespace
}  // namespace tir
