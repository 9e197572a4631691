// Line and grouped-bar charts rasterized into an Image: axes with "nice"
// ticks (1, 2, 5 times a power of ten; decades on a log axis), a title, axis
// labels, a legend and optional horizontal reference lines (a capacity).

#ifndef TIR_BENCH_FLEET_CHART_H_
#define TIR_BENCH_FLEET_CHART_H_

#include <string>
#include <vector>

#include "bench/fleet/png_writer.h"

namespace tir::fleet {

// Distinct colors for series, in order.
Rgb SeriesColor(int index);

struct Series {
  std::string label;
  std::vector<double> x, y;
  Rgb color;
};

struct ReferenceLine {
  std::string label;
  double y = 0;
  Rgb color{200, 0, 0};
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<ReferenceLine> references;
  bool log_y = false;
};

struct BarGroup {
  std::string label;  // legend
  std::vector<double> values;  // one per category
  Rgb color;
};

struct BarChart {
  std::string title, y_label;
  std::vector<std::string> categories;
  std::vector<BarGroup> groups;
  std::vector<ReferenceLine> references;
  bool log_y = false;
};

Image RenderLineChart(const LineChart &chart, int width = 1200, int height = 600);
Image RenderBarChart(const BarChart &chart, int width = 1200, int height = 600);

// Text drawn with the 5x7 font at `scale` pixels a dot; returns its width.
int DrawText(Image &image, int x, int y, const std::string &text, int scale, Rgb color);
int TextWidth(const std::string &text, int scale);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_CHART_H_
