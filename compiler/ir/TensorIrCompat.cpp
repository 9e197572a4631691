#include "compiler/ir/TensorIrCompat.h"

#include <cctype>

namespace tir {
namespace {

constexpr llvm::StringLiteral kForeign = "nv_tensor_ir.";
constexpr llvm::StringLiteral kOwn = "tir.";

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// Whether the string literal starting at `quote` is a generic-form op name in
// TensorIR's namespace: "nv_tensor_ir.<ident>" followed by `(`.
bool isGenericOpName(llvm::StringRef text, size_t quote, size_t close) {
  llvm::StringRef body = text.slice(quote + 1, close);
  if (!body.startswith(kForeign) || body.size() == kForeign.size()) return false;
  if (!isIdentStart(body[kForeign.size()])) return false;
  for (char c : body.drop_front(kForeign.size())) {
    if (!isIdentChar(c)) return false;
  }
  size_t next = close + 1;
  while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
  return next < text.size() && text[next] == '(';
}

// Walks `text`, calling `onToken(pos)` at each `nv_tensor_ir.` identifier
// start, including generic-form op names ("nv_tensor_ir.add"(...)).
template <typename Fn>
void scan(llvm::StringRef text, Fn onToken) {
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
      if (i < n && text[i] == '"' && isGenericOpName(text, quote, i)) onToken(quote + 1);
      ++i;
      continue;
    }
    if (text.substr(i).startswith(kForeign) && (i == 0 || !isIdentChar(text[i - 1]))) {
      onToken(i);
      i += kForeign.size();
      continue;
    }
    ++i;
  }
}

}  // namespace

std::string aliasTensorIrNamespace(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  scan(text, [&](size_t pos) {
    out.append(text.data() + copied, pos - copied);
    // Same width as the original prefix: pad before the new spelling, except
    // where the token is glued to a sigil ('#', '!') or a quote, where padding
    // would change it; there the line just gets shorter after the token.
    const bool glued = pos > 0 && (text[pos - 1] == '#' || text[pos - 1] == '!' || text[pos - 1] == '"');
    if (!glued) out.append(kForeign.size() - kOwn.size(), ' ');
    out.append(kOwn.data(), kOwn.size());
    copied = pos + kForeign.size();
  });
  out.append(text.data() + copied, text.size() - copied);
  return out;
}

bool usesTensorIrNamespace(llvm::StringRef text) {
  bool found = false;
  scan(text, [&](size_t) { found = true; });
  return found;
}

}  // namespace tir
