#include "server/common/shape.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "compiler/reference/DynamicShapes.h"

namespace tir::common {

Shape ParseShapeText(const std::string &text) {
  Shape shape;
  for (absl::string_view part : absl::StrSplit(text, absl::ByAnyChar(" ;"), absl::SkipEmpty())) {
    absl::StatusOr<tir::v1::ShapeHint> h = reference::ParseShapeHint(part);
    if (!h.ok()) return {};
    shape.hints.push_back(*std::move(h));
  }
  shape.text = reference::FormatShapes(shape.hints);
  return shape;
}

std::string ShapeInName(std::string text) {
  std::replace(text.begin(), text.end(), ' ', ';');
  return text;
}

}  // namespace tir::common
