#include "bench/fleet/png_writer.h"

#include <zlib.h>

#include <fstream>

#include "absl/strings/str_cat.h"

namespace tir::fleet {
namespace {

void PutU32(std::string &out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

// length, type, data, CRC-32 over type and data (PNG spec, section 5.3).
void PutChunk(std::string &out, const char type[4], const std::string &data) {
  PutU32(out, static_cast<uint32_t>(data.size()));
  std::string typed(type, 4);
  typed += data;
  out += typed;
  PutU32(out, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef *>(typed.data()), typed.size())));
}

}  // namespace

Image::Image(int width, int height, Rgb fill) : width_(width), height_(height), rgb_(3 * width * height) {
  for (size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = fill.r;
    rgb_[i + 1] = fill.g;
    rgb_[i + 2] = fill.b;
  }
}

void Image::Set(int x, int y, Rgb color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  size_t i = 3 * (static_cast<size_t>(y) * width_ + x);
  rgb_[i] = color.r;
  rgb_[i + 1] = color.g;
  rgb_[i + 2] = color.b;
}

Rgb Image::Get(int x, int y) const {
  size_t i = 3 * (static_cast<size_t>(y) * width_ + x);
  return Rgb{rgb_[i], rgb_[i + 1], rgb_[i + 2]};
}

std::string EncodePng(const Image &image) {
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  PutU32(ihdr, image.width());
  PutU32(ihdr, image.height());
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // depth 8, truecolor, deflate, filter 0, no interlace
  PutChunk(out, "IHDR", ihdr);

  // Each row: filter type 0, then its pixels.
  const size_t row = 3 * static_cast<size_t>(image.width());
  std::string raw;
  raw.reserve((row + 1) * image.height());
  for (int y = 0; y < image.height(); ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char *>(image.rgb().data()) + y * row, row);
  }
  uLongf size = compressBound(raw.size());
  std::string idat(size, '\0');
  compress2(reinterpret_cast<Bytef *>(idat.data()), &size, reinterpret_cast<const Bytef *>(raw.data()), raw.size(), 9);
  idat.resize(size);
  PutChunk(out, "IDAT", idat);
  PutChunk(out, "IEND", "");
  return out;
}

absl::Status WritePng(const Image &image, const std::string &path) {
  std::ofstream file(path, std::ios::binary);
  if (!file) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  std::string bytes = EncodePng(image);
  file.write(bytes.data(), bytes.size());
  if (!file) return absl::UnavailableError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

}  // namespace tir::fleet
