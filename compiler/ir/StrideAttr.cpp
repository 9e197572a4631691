#include "compiler/ir/StrideAttr.h"

#include <cctype>

#include "mlir/IR/BuiltinTypes.h"

namespace tir {
namespace {

// One leaf: a value and its hints.
struct Leaf {
  int64_t value = 0;  // kDynamic for `?`
  int64_t div = 0;    // 0: no hint
  int width = 0;      // 0: no hint
};

// A recursive-descent parser over "(a, ?{div=8}, (c,d))" tuples.
class TupleParser {
 public:
  explicit TupleParser(llvm::StringRef text) : text_(text) {}

  // tuple := '(' ')' | '(' elem (',' elem)* ')'; elem := leaf | tuple.
  // `sig` records the nesting ('(', 'x' per leaf, ')'), `depth` the deepest.
  bool parseTuple(llvm::SmallVectorImpl<Leaf> &leaves, std::string &sig, bool allowZero, int level = 1) {
    skipSpace();
    if (!consume('(')) return fail("expected '('");
    depth_ = std::max(depth_, level);
    sig.push_back('(');
    if (consume(')')) {
      sig.push_back(')');
      return true;
    }
    do {
      skipSpace();
      if (peek() == '(') {
        if (!parseTuple(leaves, sig, allowZero, level + 1)) return false;
      } else if (!parseLeaf(leaves, allowZero)) {
        return false;
      } else {
        sig.push_back('x');
      }
      skipSpace();
      sig.push_back(',');
    } while (consume(','));
    if (!consume(')')) return fail("expected ',' or ')'");
    sig.push_back(')');
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
  int depth() const { return depth_; }
  const std::string &error() const { return error_; }

 private:
  // leaf := uint | '?' [ '{' hint (WS hint)* '}' ];
  // hint := 'div' '=' posint | 'i' (1|8|16|32|64)
  bool parseLeaf(llvm::SmallVectorImpl<Leaf> &leaves, bool allowZero) {
    Leaf leaf;
    if (consume('?')) {
      leaf.value = mlir::ShapedType::kDynamic;
      if (consume('{')) {
        bool any = false;
        for (;;) {
          skipSpace();
          if (consume('}')) break;
          if (text_.substr(pos_).startswith("div")) {
            pos_ += 3;
            if (!consume('=')) return fail("expected '=' after div");
            skipSpace();
            int64_t v = 0;
            if (!parseInt(v) || v < 1) return fail("expected a positive divisor after div=");
            if (leaf.div) return fail("div given twice");
            leaf.div = v;
          } else if (pos_ < text_.size() && text_[pos_] == 'i') {
            ++pos_;
            skipSpace();
            int64_t v = 0;
            if (!parseInt(v) || (v != 1 && v != 8 && v != 16 && v != 32 && v != 64)) {
              return fail("expected an integer width hint i1, i8, i16, i32 or i64");
            }
            if (leaf.width) return fail("integer width given twice");
            leaf.width = static_cast<int>(v);
          } else {
            return fail("expected a hint div=N or iN inside '{}'");
          }
          any = true;
          // Hints are separated by whitespace, and digits end at a space or '}'.
          if (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != '}') {
            return fail("expected whitespace or '}' after a hint");
          }
        }
        if (!any) return fail("expected at least one hint inside '{}'");
      }
      leaves.push_back(leaf);
      return true;
    }
    int64_t v = 0;
    if (!parseInt(v)) return fail("expected '?' or a non-negative integer");
    if (v == 0 && !allowZero) return fail("0 is not allowed");
    leaf.value = v;
    leaves.push_back(leaf);
    return true;
  }
  bool parseInt(int64_t &v) {
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) return false;
    if (pos_ - start > 15) return fail("integer too large");
    return !text_.substr(start, pos_ - start).getAsInteger(10, v);
  }
  char peek() {
    skipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool fail(const char *why) {
    if (error_.empty()) error_ = std::string(why) + " at offset " + std::to_string(pos_);
    return false;
  }

  llvm::StringRef text_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

llvm::SmallVector<int> zeroStrideDims(const StrideSpec &spec, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int> dims;
  for (size_t d = 0; d < spec.strides.size() && d < shape.size(); ++d) {
    if (shape[d] != 1 && spec.strides[d] == 0) dims.push_back(static_cast<int>(d));
  }
  return dims;
}

std::optional<StrideSpec> parseStrideSpec(llvm::StringRef text, std::string *why) {
  TupleParser p(text);
  llvm::SmallVector<Leaf> leaves;
  std::string sig;
  if (!p.parseTuple(leaves, sig, /*allowZero=*/true)) {
    if (why) *why = p.error();
    return std::nullopt;
  }
  if (!p.atEnd()) {
    if (why) *why = "unexpected text after ')'";
    return std::nullopt;
  }
  if (p.depth() > 1) {
    if (why) *why = "strides are one flat tuple";
    return std::nullopt;
  }
  StrideSpec spec;
  for (const Leaf &l : leaves) {
    spec.strides.push_back(l.value);
    spec.divisors.push_back(!mlir::ShapedType::isDynamic(l.value) ? l.value : (l.div ? l.div : 1));
    spec.widths.push_back(l.width);
  }
  return spec;
}

std::optional<llvm::SmallVector<int64_t>> parseStrideString(llvm::StringRef text, std::string *why) {
  std::optional<StrideSpec> spec = parseStrideSpec(text, why);
  if (!spec) return std::nullopt;
  return spec->strides;
}

std::string formatStrideSpec(const StrideSpec &spec) {
  std::string out = "(";
  for (size_t i = 0; i < spec.strides.size(); ++i) {
    if (i) out += ",";
    if (!mlir::ShapedType::isDynamic(spec.strides[i])) {
      out += std::to_string(spec.strides[i]);
      continue;
    }
    out += "?";
    const int width = i < spec.widths.size() ? spec.widths[i] : 0;
    const int64_t div = i < spec.divisors.size() ? spec.divisors[i] : 1;
    if (width || div > 1) {
      out += "{";
      if (width) out += "i" + std::to_string(width);
      if (width && div > 1) out += " ";
      if (div > 1) out += "div=" + std::to_string(div);
      out += "}";
    }
  }
  return out + ")";
}

std::string formatStrideString(llvm::ArrayRef<int64_t> strides) {
  StrideSpec spec;
  spec.strides.assign(strides.begin(), strides.end());
  return formatStrideSpec(spec);
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

bool parseLayoutString(llvm::StringRef text, llvm::SmallVectorImpl<int64_t> *flatShape, std::string *why,
                       int *dynamic) {
  TupleParser p(text);
  llvm::SmallVector<Leaf> shape, stride;
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
  if (p.depth() > 2) {
    if (why) *why = "layouts nest at most two tuples deep";
    return false;
  }
  if (flatShape) {
    flatShape->clear();
    for (const Leaf &l : shape) flatShape->push_back(l.value);
  }
  if (dynamic) {
    *dynamic = 0;
    for (const Leaf &l : shape) *dynamic += mlir::ShapedType::isDynamic(l.value);
    for (const Leaf &l : stride) *dynamic += mlir::ShapedType::isDynamic(l.value);
  }
  return true;
}

}  // namespace tir
