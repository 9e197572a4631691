//===- InputLimits.cpp - bounds on untrusted graph input ------------------===//

#include "compiler/conversion/InputLimits.h"

#include <pthread.h>

#include <cctype>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/support/status.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SubElementInterfaces.h"

namespace tir {

namespace {

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }

// `word` at `i` as a whole word (not inside a longer identifier).
bool WordAt(llvm::StringRef text, size_t i, llvm::StringRef word) {
  if (!text.substr(i).startswith(word)) return false;
  if (i > 0 && IdentChar(text[i - 1])) return false;
  const size_t end = i + word.size();
  return end >= text.size() || !IdentChar(text[end]);
}

// The first index at or after `j` that is not trivia: whitespace and `//`
// comments, which MLIR's lexer skips between any two tokens.
size_t SkipTrivia(llvm::StringRef text, size_t j) {
  while (j < text.size()) {
    const char c = text[j];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++j;
    } else if (c == '/' && j + 1 < text.size() && text[j + 1] == '/') {
      while (j < text.size() && text[j] != '\n') ++j;
    } else {
      break;
    }
  }
  return j;
}

// The '<' that follows `word` at `i` (trivia between), or npos.
size_t AngleAfter(llvm::StringRef text, size_t i, size_t wordSize) {
  const size_t j = SkipTrivia(text, i + wordSize);
  return j < text.size() && text[j] == '<' ? j : llvm::StringRef::npos;
}

// Dims of the shaped type whose '<' is at `open`: `4x?x8xf32` has 3, as
// does `4 x ? x [8] x f32` (trivia around the `x`s, scalable dims).
int64_t RankAt(llvm::StringRef text, size_t open) {
  int64_t rank = 0;
  size_t j = open + 1;
  while (true) {
    j = SkipTrivia(text, j);
    const size_t first = j;
    if (j < text.size() && text[j] == '[') {
      ++j;
      while (j < text.size() && text[j] != ']' && text[j] != '>') ++j;
      if (j < text.size() && text[j] == ']') ++j;
    } else {
      while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '?')) ++j;
    }
    if (j == first) return rank;
    j = SkipTrivia(text, j);
    if (j >= text.size() || text[j] != 'x') return rank;
    ++rank;
    ++j;
  }
}

// Whether `c` ends a run of arithmetic operators: a separator no affine
// expression holds (parentheses do not end one: `(d0+d0)+(d0+d0)+...` is one
// run for the affine parser).
bool EndsRun(char c) { return std::strchr(",;{}[]=:%#@^\"", c) != nullptr; }

}  // namespace

TextFacts ScanText(llvm::StringRef text) {
  TextFacts facts;
  int depth = 0;
  int minus = 0;  // a run of unary minus signs: the affine parser recurses once per sign
  // Operators since the last separator, wherever they are: the affine
  // parser recurses once per operator of a run, however the map is spelled
  // or introduced (an alias, trivia between `affine_map` and its '<').
  int64_t terms = 0;
  auto term = [&] { facts.affine_terms = std::max(facts.affine_terms, ++terms); };
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '-' && !(i + 1 < n && text[i + 1] == '>')) {
      facts.depth = std::max(facts.depth, depth + ++minus);
      term();
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') minus = 0;
    if (EndsRun(c)) terms = 0;
    if (c == '"') {  // a string literal, with \" escapes
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '-' && i + 1 < n && text[i + 1] == '>') {
      ++i;
      continue;
    }
    if (c == '=') {
      const bool comparison = (i + 1 < n && text[i + 1] == '=') || (i > 0 && std::strchr("=<>!", text[i - 1]));
      if (!comparison) ++facts.assignments;
      continue;
    }
    if (c == '+' || c == '*') {
      term();
    } else if ((c == 'm' && WordAt(text, i, "mod")) || (c == 'f' && WordAt(text, i, "floordiv")) ||
               (c == 'c' && WordAt(text, i, "ceildiv"))) {
      term();
      continue;
    } else if ((c == 't' && WordAt(text, i, "tensor")) || (c == 'm' && WordAt(text, i, "memref")) ||
               (c == 'v' && WordAt(text, i, "vector"))) {
      if (const size_t open = AngleAfter(text, i, 6); open != llvm::StringRef::npos) {  // all three have 6 letters
        facts.rank = std::max(facts.rank, RankAt(text, open));
      }
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      facts.depth = std::max(facts.depth, ++depth);
    } else if (c == '>' && i + 1 < n && text[i + 1] == '=') {
      ++i;  // `>=` compares (an affine set's constraint)
    } else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) {
      --depth;
    }
  }
  return facts;
}

int TextNesting(llvm::StringRef text) { return ScanText(text).depth; }

absl::Status CheckTextNesting(llvm::StringRef text, llvm::StringRef what, int max_depth) {
  const TextFacts facts = ScanText(text);
  if (facts.depth > max_depth) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     absl::StrCat(what.str(), " nests ", facts.depth, " brackets deep; graphs may nest at most ",
                                  max_depth));
  }
  if (facts.affine_terms > kMaxAffineTerms) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     absl::StrCat(what.str(), " has an affine map of ", facts.affine_terms,
                                  " operators in a row; graphs' affine maps may have at most ", kMaxAffineTerms));
  }
  if (facts.rank > kMaxRank) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     absl::StrCat(what.str(), " has a type of rank ", facts.rank, ", above the limit of ", kMaxRank));
  }
  return absl::OkStatus();
}

namespace {

// An attribute or a type, by its opaque pointer.
struct Node {
  const void *opaque;
  bool is_type;
};

template <typename Fn>
void ForEachChild(Node n, Fn fn) {
  auto onAttr = [&](mlir::Attribute a) { fn(Node{a.getAsOpaquePointer(), false}); };
  auto onType = [&](mlir::Type t) { fn(Node{t.getAsOpaquePointer(), true}); };
  if (n.is_type) {
    if (auto sub = mlir::Type::getFromOpaquePointer(n.opaque).dyn_cast<mlir::SubElementTypeInterface>()) {
      sub.walkImmediateSubElements(onAttr, onType);
    }
  } else if (auto sub = mlir::Attribute::getFromOpaquePointer(n.opaque).dyn_cast<mlir::SubElementAttrInterface>()) {
    sub.walkImmediateSubElements(onAttr, onType);
  }
}

}  // namespace

absl::Status CheckAttributeDepth(mlir::Operation *root, int max_depth) {
  // Heights (1 for a leaf) of every attribute and type reached, each computed
  // once (uniqued ones are shared, so a walk that did not remember them could
  // take exponential time), by an explicit post-order stack.
  llvm::DenseMap<const void *, int> height;
  std::vector<std::pair<Node, bool>> stack;  // (node, children pushed)
  int deepest = 0;
  auto visit = [&](Node start) {
    if (start.opaque == nullptr || height.count(start.opaque)) return;
    stack.push_back({start, false});
    while (!stack.empty()) {
      auto [n, expanded] = stack.back();
      if (height.count(n.opaque)) {
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        ForEachChild(n, [&](Node c) {
          if (c.opaque != nullptr && !height.count(c.opaque)) stack.push_back({c, false});
        });
        continue;
      }
      stack.pop_back();
      int h = 1;
      ForEachChild(n, [&](Node c) {
        auto it = height.find(c.opaque);
        if (it != height.end()) h = std::max(h, it->second + 1);
      });
      height[n.opaque] = h;
      deepest = std::max(deepest, h);
    }
  };
  root->walk([&](mlir::Operation *op) {
    visit({mlir::Attribute(op->getLoc()).getAsOpaquePointer(), false});  // fused and call-site locations nest too
    for (mlir::NamedAttribute a : op->getAttrs()) visit({a.getValue().getAsOpaquePointer(), false});
    for (mlir::Type t : op->getResultTypes()) visit({t.getAsOpaquePointer(), true});
    for (mlir::Region &r : op->getRegions()) {
      for (mlir::Block &b : r) {
        for (mlir::BlockArgument arg : b.getArguments()) visit({arg.getType().getAsOpaquePointer(), true});
      }
    }
  });
  if (deepest <= max_depth) return absl::OkStatus();
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                   absl::StrCat("an attribute or type of the graph nests ", deepest,
                                " levels deep; graphs may nest at most ", max_depth));
}

namespace {

void *RunFunction(void *arg) {
  (*static_cast<const std::function<void()> *>(arg))();
  return nullptr;
}

}  // namespace

absl::Status RunOnLargeStack(const std::function<void()> &fn, size_t stack_bytes) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "pthread_attr_init failed");
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  if (rc == 0) rc = pthread_create(&thread, &attr, RunFunction, const_cast<std::function<void()> *>(&fn));
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                     absl::StrCat("cannot start a parsing thread with a ", stack_bytes >> 20, " MiB stack: ", std::strerror(rc)));
  }
  pthread_join(thread, nullptr);
  return absl::OkStatus();
}

}  // namespace tir
