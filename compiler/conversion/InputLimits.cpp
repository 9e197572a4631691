//===- InputLimits.cpp - bounds on untrusted graph input ------------------===//

#include "compiler/conversion/InputLimits.h"

#include <pthread.h>

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SubElementInterfaces.h"

namespace tir {

int TextNesting(llvm::StringRef text) {
  int depth = 0, deepest = 0;
  int minus = 0;  // a run of unary minus signs: the affine parser recurses once per sign
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '-' && !(i + 1 < n && text[i + 1] == '>')) {
      deepest = std::max(deepest, depth + ++minus);
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') minus = 0;
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
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

absl::Status CheckTextNesting(llvm::StringRef text, llvm::StringRef what, int max_depth) {
  const int depth = TextNesting(text);
  if (depth <= max_depth) return absl::OkStatus();
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                   absl::StrCat(what.str(), " nests ", depth, " brackets deep; graphs may nest at most ", max_depth));
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
