// A shape asked of a dynamic graph: the hints of every input and their
// canonical text (reference::FormatShapes, "0=8x512 1=7").

#ifndef TIR_SERVER_COMMON_SHAPE_H_
#define TIR_SERVER_COMMON_SHAPE_H_

#include <string>
#include <vector>

#include "tir/v1/compiler_service.pb.h"

namespace tir::common {

struct Shape {
  std::vector<tir::v1::ShapeHint> hints;
  std::string text;
};

// A shape from its canonical text, or its form in an operation name
// ("0=8x512;1=7"); empty on a bad one.
Shape ParseShapeText(const std::string &text);
// The text as an operation name carries it ("0=8x512 1=7" -> "0=8x512;1=7").
std::string ShapeInName(std::string text);

}  // namespace tir::common

#endif  // TIR_SERVER_COMMON_SHAPE_H_
