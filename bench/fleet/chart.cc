#include "bench/fleet/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench/fleet/font.h"

namespace tir::fleet {
namespace {

constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kGrid{225, 225, 225};
constexpr int kLeft = 100, kRight = 30, kTop = 50, kBottom = 75;

// A value axis mapped onto [0, 1].
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;

  double Map(double v) const {
    if (log) {
      v = std::max(v, lo);
      return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    }
    return (v - lo) / (hi - lo);
  }
};

// Ticks at 1, 2 or 5 times a power of ten, about six of them, the range
// widened to whole steps; on a log axis one per decade.
Axis MakeAxis(double lo, double hi, bool log) {
  Axis axis;
  axis.log = log;
  if (log) {
    lo = std::max(lo, 1e-9);
    hi = std::max(hi, lo * 10);
    // A decade below the smallest value when it sits near a decade's
    // bottom, so its bar or point stays visible.
    axis.lo = std::pow(10.0, std::floor(std::log10(lo) - 0.3));
    axis.hi = std::pow(10.0, std::ceil(std::log10(hi)));
    for (double t = axis.lo; t <= axis.hi * 1.001; t *= 10) axis.ticks.push_back(t);
    return axis;
  }
  if (hi <= lo) hi = lo + 1;
  double raw = (hi - lo) / 6;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  axis.lo = std::floor(lo / step) * step;
  axis.hi = std::ceil(hi / step) * step;
  for (double t = axis.lo; t <= axis.hi + step / 2; t += step) axis.ticks.push_back(std::abs(t) < step / 1e6 ? 0 : t);
  return axis;
}

std::string FormatTick(double v) {
  char buf[32];
  double a = std::abs(v);
  if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(buf, sizeof buf, "%gK", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%g", v);
  }
  return buf;
}

void FillRect(Image &image, int x0, int y0, int x1, int y1, Rgb color) {
  for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y) {
    for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) image.Set(x, y, color);
  }
}

// Bresenham's line, `thickness` pixels square at each step.
void DrawLine(Image &image, int x0, int y0, int x1, int y1, Rgb color, int thickness = 1, bool dashed = false) {
  int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (int step = 0;; ++step) {
    if (!dashed || (step / 8) % 2 == 0) FillRect(image, x0, y0, x0 + thickness - 1, y0 + thickness - 1, color);
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

// Text read bottom to top, its baseline on the left: the y axis label.
void DrawTextUp(Image &image, int x, int y, const std::string &text, int scale, Rgb color) {
  for (char c : text) {
    for (int row = 0; row < kGlyphHeight; ++row) {
      unsigned bits = GlyphRow(c, row);
      for (int col = 0; col < kGlyphWidth; ++col) {
        if (!(bits >> (kGlyphWidth - 1 - col) & 1)) continue;
        FillRect(image, x + row * scale, y - col * scale, x + row * scale + scale - 1, y - col * scale - scale + 1, color);
      }
    }
    y -= (kGlyphWidth + 1) * scale;
  }
}

struct Frame {
  int x0, y0, x1, y1;  // plot area, y0 the top
};

using Legend = std::vector<std::pair<std::string, Rgb>>;

// The legend sits right of the plot area, which gives it the room it needs.
int LegendWidth(const Legend &legend) {
  int width = 0;
  for (const auto &e : legend) width = std::max(width, TextWidth(e.first, 2));
  return legend.empty() ? 0 : width + 50;
}

Frame DrawFrame(Image &image, const std::string &title, const std::string &x_label, const std::string &y_label,
                const Axis &y, const Legend &legend) {
  Frame f{kLeft, kTop, image.width() - kRight - LegendWidth(legend), image.height() - kBottom};
  DrawText(image, (image.width() - TextWidth(title, 2)) / 2, 15, title, 2, kBlack);
  DrawText(image, (f.x0 + f.x1 - TextWidth(x_label, 2)) / 2, image.height() - 25, x_label, 2, kBlack);
  DrawTextUp(image, 12, (f.y0 + f.y1 + TextWidth(y_label, 2)) / 2, y_label, 2, kBlack);
  for (double t : y.ticks) {
    int py = f.y1 - static_cast<int>(std::lround(y.Map(t) * (f.y1 - f.y0)));
    DrawLine(image, f.x0, py, f.x1, py, kGrid);
    std::string label = FormatTick(t);
    DrawText(image, f.x0 - 8 - TextWidth(label, 2), py - kGlyphHeight, label, 2, kBlack);
  }
  DrawLine(image, f.x0, f.y0, f.x0, f.y1, kBlack, 2);
  DrawLine(image, f.x0, f.y1, f.x1, f.y1, kBlack, 2);
  return f;
}

void DrawReferences(Image &image, const Frame &f, const Axis &y, const std::vector<ReferenceLine> &references) {
  for (const ReferenceLine &r : references) {
    if (r.y < y.lo || r.y > y.hi) continue;
    int py = f.y1 - static_cast<int>(std::lround(y.Map(r.y) * (f.y1 - f.y0)));
    DrawLine(image, f.x0, py, f.x1, py, r.color, 2, true);
    DrawText(image, f.x1 - TextWidth(r.label, 2) - 4, py - 2 * kGlyphHeight - 4, r.label, 2, r.color);
  }
}

void DrawLegend(Image &image, const Frame &f, const Legend &entries) {
  int x = f.x1 + 24, y = f.y0 + 10;
  for (const auto &e : entries) {
    FillRect(image, x, y + 2, x + 20, y + 12, e.second);
    DrawText(image, x + 28, y, e.first, 2, kBlack);
    y += 22;
  }
}

void Extend(double &lo, double &hi, double v, bool log) {
  if (!std::isfinite(v) || (log && v <= 0)) return;
  lo = std::min(lo, v);
  hi = std::max(hi, v);
}

}  // namespace

Rgb SeriesColor(int index) {
  static const Rgb kColors[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44}, {148, 103, 189},
                                {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {23, 190, 207}};
  return kColors[index % 8];
}

int TextWidth(const std::string &text, int scale) {
  return text.empty() ? 0 : static_cast<int>(text.size()) * (kGlyphWidth + 1) * scale - scale;
}

int DrawText(Image &image, int x, int y, const std::string &text, int scale, Rgb color) {
  int start = x;
  for (char c : text) {
    for (int row = 0; row < kGlyphHeight; ++row) {
      unsigned bits = GlyphRow(c, row);
      for (int col = 0; col < kGlyphWidth; ++col) {
        if (!(bits >> (kGlyphWidth - 1 - col) & 1)) continue;
        FillRect(image, x + col * scale, y + row * scale, x + col * scale + scale - 1, y + row * scale + scale - 1,
                 color);
      }
    }
    x += (kGlyphWidth + 1) * scale;
  }
  return x - start;
}

Image RenderLineChart(const LineChart &chart, int width, int height) {
  Image image(width, height);
  double xlo = 1e300, xhi = -1e300, ylo = chart.log_y ? 1e300 : 0, yhi = -1e300;
  for (const Series &s : chart.series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      Extend(xlo, xhi, s.x[i], false);
      Extend(ylo, yhi, s.y[i], chart.log_y);
    }
  }
  for (const ReferenceLine &r : chart.references) Extend(ylo, yhi, r.y * 1.05, chart.log_y);
  if (xlo > xhi) xlo = 0, xhi = 1;
  if (ylo > yhi) ylo = chart.log_y ? 1 : 0, yhi = ylo * 10 + 1;
  Axis x = MakeAxis(xlo, xhi, false);
  Axis y = MakeAxis(ylo, yhi, chart.log_y);
  Legend legend;
  for (const Series &s : chart.series) legend.emplace_back(s.label, s.color);
  Frame f = DrawFrame(image, chart.title, chart.x_label, chart.y_label, y, legend);
  for (double t : x.ticks) {
    int px = f.x0 + static_cast<int>(std::lround(x.Map(t) * (f.x1 - f.x0)));
    DrawLine(image, px, f.y1, px, f.y1 + 6, kBlack, 2);
    std::string label = FormatTick(t);
    DrawText(image, px - TextWidth(label, 2) / 2, f.y1 + 12, label, 2, kBlack);
  }
  DrawReferences(image, f, y, chart.references);
  for (const Series &s : chart.series) {
    int px_prev = 0, py_prev = 0;
    bool have_prev = false;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (chart.log_y && s.y[i] <= 0) {
        have_prev = false;
        continue;
      }
      int px = f.x0 + static_cast<int>(std::lround(x.Map(s.x[i]) * (f.x1 - f.x0)));
      int py = f.y1 - static_cast<int>(std::lround(y.Map(s.y[i]) * (f.y1 - f.y0)));
      if (have_prev) DrawLine(image, px_prev, py_prev, px, py, s.color, 2);
      if (s.x.size() <= 20) FillRect(image, px - 3, py - 3, px + 3, py + 3, s.color);
      px_prev = px, py_prev = py, have_prev = true;
    }
  }
  DrawLegend(image, f, legend);
  return image;
}

Image RenderBarChart(const BarChart &chart, int width, int height) {
  Image image(width, height);
  double ylo = chart.log_y ? 1e300 : 0, yhi = -1e300;
  for (const BarGroup &g : chart.groups) {
    for (double v : g.values) Extend(ylo, yhi, v, chart.log_y);
  }
  for (const ReferenceLine &r : chart.references) Extend(ylo, yhi, r.y * 1.05, chart.log_y);
  if (ylo > yhi) ylo = chart.log_y ? 1 : 0, yhi = ylo * 10 + 1;
  Axis y = MakeAxis(ylo, yhi, chart.log_y);
  Legend legend;
  for (const BarGroup &g : chart.groups) legend.emplace_back(g.label, g.color);
  Frame f = DrawFrame(image, chart.title, "", chart.y_label, y, legend);
  int categories = std::max<int>(1, static_cast<int>(chart.categories.size()));
  int groups = std::max<int>(1, static_cast<int>(chart.groups.size()));
  double slot = static_cast<double>(f.x1 - f.x0) / categories;
  double bar = slot * 0.8 / groups;
  for (int c = 0; c < categories; ++c) {
    int cx = f.x0 + static_cast<int>(slot * (c + 0.5));
    if (c < static_cast<int>(chart.categories.size())) {
      const std::string &label = chart.categories[c];
      DrawText(image, cx - TextWidth(label, 2) / 2, f.y1 + 12, label, 2, kBlack);
    }
    for (int g = 0; g < groups && g < static_cast<int>(chart.groups.size()); ++g) {
      if (c >= static_cast<int>(chart.groups[g].values.size())) continue;
      double v = chart.groups[g].values[c];
      if (chart.log_y && v <= 0) continue;
      int x0 = f.x0 + static_cast<int>(slot * c + slot * 0.1 + bar * g);
      int top = f.y1 - static_cast<int>(std::lround(std::min(1.0, y.Map(v)) * (f.y1 - f.y0)));
      FillRect(image, x0, top, x0 + static_cast<int>(bar) - 2, f.y1 - 1, chart.groups[g].color);
    }
  }
  DrawReferences(image, f, y, chart.references);
  DrawLegend(image, f, legend);
  return image;
}

}  // namespace tir::fleet
