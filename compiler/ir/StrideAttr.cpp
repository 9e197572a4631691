#include "compiler/ir/StrideAttr.h"

#include "mlir/IR/BuiltinTypes.h"

namespace tir {
namespace {

// A tiny recursive-descent parser over "(a,b,(c,d))" tuples.
class TupleParser {
 public:
  explicit TupleParser(llvm::StringRef text) : text_(text) {}

  // tuple := '(' elem (',' elem)* ')'; elem := int | '?' | tuple
  bool parseTuple(llvm::SmallVectorImpl<int64_t> &flat, std::string &shapeSig,
                  bool allowZero) {
    skipSpace();
    if (!consume('(')) return fail("expected '('");
    shapeSig.push_back('(');
    do {
      skipSpace();
      if (peek() == '(') {
        if (!parseTuple(flat, shapeSig, allowZero)) return false;
      } else if (!parseLeaf(flat, allowZero)) {
        return false;
      } else {
        shapeSig.push_back('x');
      }
      skipSpace();
      shapeSig.push_back(',');
    } while (consume(','));
    if (!consume(')')) return fail("expected ',' or ')'");
    shapeSig.push_back(')');
    return true;
  }

  bool atEnd() {
    skipSpace();
    return pos_ == text_.size();
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  const std::string &error() const { return error_; }

 private:
  bool parseLeaf(llvm::SmallVectorImpl<int64_t> &flat, bool allowZero) {
    if (consume('?')) {
      flat.push_back(mlir::ShapedType::kDynamic);
      return true;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) return fail("expected '?' or a non-negative integer");
    if (pos_ - start > 15) return fail("integer too large");
    int64_t v = 0;
    text_.substr(start, pos_ - start).getAsInteger(10, v);
    if (v == 0 && !allowZero) return fail("0 is not allowed");
    flat.push_back(v);
    return true;
  }
  char peek() {
    skipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void skipSpace() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool fail(const char *why) {
    if (error_.empty()) error_ = std::string(why) + " at offset " + std::to_string(pos_);
    return false;
  }

  llvm::StringRef text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::optional<llvm::SmallVector<int64_t>> parseStrideString(llvm::StringRef text,
                                                            std::string *why) {
  TupleParser p(text);
  llvm::SmallVector<int64_t> flat;
  std::string sig;
  if (!p.parseTuple(flat, sig, /*allowZero=*/true)) {
    if (why) *why = p.error();
    return std::nullopt;
  }
  if (!p.atEnd()) {
    if (why) *why = "unexpected text after ')'";
    return std::nullopt;
  }
  if (sig.find("((") != std::string::npos || sig.find(",(") != std::string::npos) {
    if (why) *why = "strides are one flat tuple";
    return std::nullopt;
  }
  return flat;
}

std::string formatStrideString(llvm::ArrayRef<int64_t> strides) {
  std::string out = "(";
  for (size_t i = 0; i < strides.size(); ++i) {
    if (i) out += ",";
    out += mlir::ShapedType::isDynamic(strides[i]) ? "?" : std::to_string(strides[i]);
  }
  return out + ")";
}

llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  int64_t running = 1;
  bool dynamic = false;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = dynamic ? mlir::ShapedType::kDynamic : running;
    if (mlir::ShapedType::isDynamic(shape[i])) {
      dynamic = true;
    } else if (!dynamic) {
      running *= shape[i];
    }
  }
  return strides;
}

bool parseLayoutString(llvm::StringRef text, llvm::SmallVectorImpl<int64_t> *flatShape,
                       std::string *why) {
  TupleParser p(text);
  llvm::SmallVector<int64_t> shape, stride;
  std::string shapeSig, strideSig;
  if (!p.parseTuple(shape, shapeSig, /*allowZero=*/false)) {
    if (why) *why = p.error();
    return false;
  }
  if (p.consume(':')) {
    if (!p.parseTuple(stride, strideSig, /*allowZero=*/true)) {
      if (why) *why = p.error();
      return false;
    }
    if (shapeSig != strideSig) {
      if (why) *why = "shape and stride tuples differ in structure";
      return false;
    }
  }
  if (!p.atEnd()) {
    if (why) *why = "unexpected text after the layout";
    return false;
  }
  if (flatShape) flatShape->assign(shape.begin(), shape.end());
  return true;
}

}  // namespace tir
