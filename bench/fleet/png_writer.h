// An RGB image and its PNG encoding (8-bit truecolor, no interlace): the
// signature, IHDR, one IDAT holding the zlib stream of the filtered rows
// (filter 0 on every row), IEND; each chunk with its CRC-32.

#ifndef TIR_BENCH_FLEET_PNG_WRITER_H_
#define TIR_BENCH_FLEET_PNG_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tir::fleet {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

class Image {
 public:
  Image(int width, int height, Rgb fill = {255, 255, 255});
  int width() const { return width_; }
  int height() const { return height_; }
  // Pixels outside the image are ignored (charts clip by drawing past it).
  void Set(int x, int y, Rgb color);
  Rgb Get(int x, int y) const;
  const std::vector<uint8_t> &rgb() const { return rgb_; }

 private:
  int width_, height_;
  std::vector<uint8_t> rgb_;
};

// The PNG file's bytes.
std::string EncodePng(const Image &image);

// Writes EncodePng(image) to `path`.
absl::Status WritePng(const Image &image, const std::string &path);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_PNG_WRITER_H_
