#include "compiler/fingerprint/Fingerprint.h"

#include <algorithm>
#include <array>

#include "compiler/ir/StrideAttr.h"
#include "compiler/ir/TileHints.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

namespace tir {
namespace {

using Digest = std::array<uint8_t, 32>;

class Hasher {
 public:
  std::string Run(GraphOp graph) {
    llvm::SHA256 top;
    Str(top, "tir-fingerprint-v1");
    mlir::Block &block = graph.getBodyBlock();
    for (mlir::BlockArgument arg : block.getArguments()) {
      llvm::SHA256 h;
      Str(h, "input");
      Int(h, arg.getArgNumber());
      Type(h, arg.getType());
      SignatureAttrs(h, graph.getArgAttrDict(arg.getArgNumber()), arg.getType());
      values_[arg] = h.final();
      Bytes(top, values_[arg]);
    }
    std::vector<Digest> ops;
    HashBlockOps(block, ops);
    auto results = llvm::cast<ResultsOp>(block.getTerminator());
    Int(top, results.getValues().size());
    for (auto [i, v] : llvm::enumerate(results.getValues())) {
      Bytes(top, values_.lookup(v));
      SignatureAttrs(top, graph.getResultAttrDict(i), v.getType());
    }
    std::sort(ops.begin(), ops.end());
    Int(top, ops.size());
    for (const Digest &d : ops) Bytes(top, d);
    // The user's tile chooses the default candidate (not what is computed,
    // but what a heuristic answer returns), so it is part of the identity.
    std::string why;
    mlir::FailureOr<TileHints> hints = parseTileHints(graph, &why);
    if (succeeded(hints) && !hints->empty()) {
      Str(top, "tile-hints");
      Str(top, hints->ToString());
    }
    Digest d = top.final();
    return llvm::toHex(llvm::ArrayRef<uint8_t>(d.data(), d.size()), /*LowerCase=*/true);
  }

 private:
  void HashBlockOps(mlir::Block &block, std::vector<Digest> &out) {
    for (mlir::Operation &op : block) {
      llvm::SHA256 h;
      Str(h, op.getName().getStringRef());
      // TensorIR's analysis annotations change nothing that is computed.
      llvm::SmallVector<mlir::NamedAttribute> attrs;
      for (const mlir::NamedAttribute &a : op.getAttrs()) {
        if (!isAnalysisAttribute(a.getName().strref())) attrs.push_back(a);
      }
      llvm::sort(attrs, [](const mlir::NamedAttribute &a, const mlir::NamedAttribute &b) {
        return a.getName().strref() < b.getName().strref();
      });
      Int(h, attrs.size());
      for (const mlir::NamedAttribute &a : attrs) {
        Str(h, a.getName().strref());
        Attr(h, a.getValue());
      }
      Int(h, op.getNumOperands());
      for (mlir::Value v : op.getOperands()) Bytes(h, values_.lookup(v));
      Int(h, op.getNumResults());
      for (mlir::Type t : op.getResultTypes()) Type(h, t);
      for (mlir::Region &r : op.getRegions()) {
        mlir::Block &inner = r.front();
        Int(h, inner.getNumArguments());
        for (mlir::BlockArgument arg : inner.getArguments()) {
          llvm::SHA256 ah;
          Str(ah, "region-arg");
          Int(ah, arg.getArgNumber());
          Type(ah, arg.getType());
          values_[arg] = ah.final();
        }
        // Region ops are ordered by dominance; their hashes enter in order.
        std::vector<Digest> innerOps;
        HashBlockOps(inner, innerOps);
        for (const Digest &d : innerOps) Bytes(h, d);
      }
      Digest node = h.final();
      out.push_back(node);
      for (mlir::OpResult r : op.getResults()) {
        llvm::SHA256 rh;
        Bytes(rh, node);
        Int(rh, r.getResultNumber());
        values_[r] = rh.final();
      }
    }
  }

  void SignatureAttrs(llvm::SHA256 &h, mlir::DictionaryAttr attrs, mlir::Type type) {
    // Strides: explicit (in canonical spelling, divisibility hints included:
    // kernels rely on them) or the row-major default they stand for.
    if (auto tensor = type.dyn_cast<mlir::RankedTensorType>()) {
      StrideSpec spec;
      spec.strides = rowMajorStrides(tensor.getShape());
      if (attrs) {
        if (auto s = attrs.getAs<mlir::StringAttr>(TirDialect::kStrideAttr)) {
          if (auto parsed = parseStrideSpec(s.getValue(), nullptr)) spec = *parsed;
        }
      }
      Str(h, formatStrideSpec(spec));
    }
    llvm::SmallVector<mlir::NamedAttribute> rest;
    if (attrs) {
      for (mlir::NamedAttribute a : attrs) {  // DictionaryAttr is sorted by name
        if (a.getName() != TirDialect::kStrideAttr && !isAnalysisAttribute(a.getName().strref())) rest.push_back(a);
      }
    }
    Int(h, rest.size());
    for (const mlir::NamedAttribute &a : rest) {
      Str(h, a.getName().strref());
      Attr(h, a.getValue());
    }
  }

  void Attr(llvm::SHA256 &h, mlir::Attribute a) {
    if (auto dense = a.dyn_cast<mlir::DenseIntOrFPElementsAttr>()) {
      Str(h, "dense");
      Type(h, dense.getType());
      Int(h, dense.isSplat());
      llvm::ArrayRef<char> raw = dense.getRawData();
      Int(h, raw.size());
      h.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(raw.data()), raw.size()));
      return;
    }
    std::string s;
    llvm::raw_string_ostream os(s);
    a.print(os);
    Str(h, os.str());
  }

  void Type(llvm::SHA256 &h, mlir::Type t) {
    auto it = types_.find(t);
    if (it == types_.end()) {
      std::string s;
      llvm::raw_string_ostream os(s);
      t.print(os);
      it = types_.try_emplace(t, os.str()).first;
    }
    Str(h, it->second);
  }

  static void Str(llvm::SHA256 &h, llvm::StringRef s) {
    Int(h, s.size());
    h.update(s);
  }
  static void Int(llvm::SHA256 &h, uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    h.update(llvm::ArrayRef<uint8_t>(b, 8));
  }
  static void Bytes(llvm::SHA256 &h, const Digest &d) { h.update(llvm::ArrayRef<uint8_t>(d.data(), d.size())); }

  llvm::DenseMap<mlir::Value, Digest> values_;
  llvm::DenseMap<mlir::Type, std::string> types_;
};

}  // namespace

std::string FingerprintGraph(GraphOp graph) { return Hasher().Run(graph); }

}  // namespace tir
