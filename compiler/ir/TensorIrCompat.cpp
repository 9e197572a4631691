#include "compiler/ir/TensorIrCompat.h"

#include <cctype>

namespace tir {
namespace {

// A respelling: text that TensorIR writes and what tir reads it as.
struct Alias {
  llvm::StringLiteral from, to;
};

// The namespace, as an identifier prefix ("nv_tensor_ir.add") or a dialect
// attribute opener ("#nv_tensor_ir<iter_space_dim_domains[...]>").
constexpr llvm::StringLiteral kForeign = "nv_tensor_ir";
constexpr llvm::StringLiteral kOwn = "tir";

// Upstream MLIR spellings of arith ops that MLIR 16 names otherwise: the
// NaN-propagating maximum and minimum are arith.maxf / arith.minf there.
constexpr Alias kArith[] = {
    {"arith.maximumf", "arith.maxf"},
    {"arith.minimumf", "arith.minf"},
};

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `text` at `pos` starts `name` as a whole identifier (not part of a
// longer one on either side).
bool wordAt(llvm::StringRef text, size_t pos, llvm::StringRef name) {
  if (!text.substr(pos).startswith(name)) return false;
  if (pos > 0 && isIdentChar(text[pos - 1])) return false;
  const size_t end = pos + name.size();
  return end >= text.size() || !isIdentChar(text[end]) || text[end] == '.';
}

// Whether `text` at `pos` is the namespace: `nv_tensor_ir.` followed by an
// identifier, or `#nv_tensor_ir<`.
bool namespaceAt(llvm::StringRef text, size_t pos) {
  if (!text.substr(pos).startswith(kForeign)) return false;
  if (pos > 0 && isIdentChar(text[pos - 1])) return false;
  const size_t end = pos + kForeign.size();
  if (end >= text.size()) return false;
  if (text[end] == '.') return end + 1 < text.size() && isIdentStart(text[end + 1]);
  return text[end] == '<' && pos > 0 && text[pos - 1] == '#';
}

// Whether the string literal body `body` followed by `(` is a generic-form
// op name: "nv_tensor_ir.<ident>" or one of the arith aliases.
bool isGenericOpName(llvm::StringRef text, size_t quote, size_t close, const Alias **arith) {
  llvm::StringRef body = text.slice(quote + 1, close);
  size_t next = close + 1;
  while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
  if (next >= text.size() || text[next] != '(') return false;
  for (const Alias &a : kArith) {
    if (body == a.from) {
      *arith = &a;
      return true;
    }
  }
  *arith = nullptr;
  if (!body.startswith(kForeign) || body.size() <= kForeign.size() + 1 || body[kForeign.size()] != '.') {
    return false;
  }
  if (!isIdentStart(body[kForeign.size() + 1])) return false;
  for (char c : body.drop_front(kForeign.size() + 1)) {
    if (!isIdentChar(c)) return false;
  }
  return true;
}

// Walks `text` outside comments and ordinary strings, calling
// `onToken(pos, alias)` at each respelling.
template <typename Fn>
void scan(llvm::StringRef text, Fn onToken) {
  static constexpr Alias kNamespace = {kForeign, kOwn};
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {  // comment to end of line
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"') {  // string literal with escapes
      const size_t quote = i;
      ++i;
      while (i < n && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < n) ++i;
        if (text[i] == '\n') break;  // unterminated: let the parser complain
        ++i;
      }
      const Alias *arith = nullptr;
      if (i < n && text[i] == '"' && isGenericOpName(text, quote, i, &arith)) {
        onToken(quote + 1, arith ? *arith : kNamespace);
      }
      ++i;
      continue;
    }
    if (namespaceAt(text, i)) {
      onToken(i, kNamespace);
      i += kForeign.size();
      continue;
    }
    bool matched = false;
    for (const Alias &a : kArith) {
      if (wordAt(text, i, a.from)) {
        onToken(i, a);
        i += a.from.size();
        matched = true;
        break;
      }
    }
    if (!matched) ++i;
  }
}

}  // namespace

std::string aliasTensorIrNamespace(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  scan(text, [&](size_t pos, const Alias &alias) {
    out.append(text.data() + copied, pos - copied);
    // Same width as the original: pad before the new spelling, except where
    // the token is glued to a sigil ('#', '!') or a quote, where padding
    // would change it; there the line just gets shorter after the token.
    const bool glued = pos > 0 && (text[pos - 1] == '#' || text[pos - 1] == '!' || text[pos - 1] == '"');
    if (!glued) out.append(alias.from.size() - alias.to.size(), ' ');
    out.append(alias.to.data(), alias.to.size());
    copied = pos + alias.from.size();
  });
  out.append(text.data() + copied, text.size() - copied);
  return out;
}

bool usesTensorIrNamespace(llvm::StringRef text) {
  bool found = false;
  scan(text, [&](size_t, const Alias &) { found = true; });
  return found;
}

}  // namespace tir
