//===- EmbeddedWeights.h - A program that carries its weights ---*- C++ -*-===//
//
// `tfmc ... --embed-weights FILE -o NAME` writes one executable that holds
// its weights, so that a deployment is one file. The layout, which the
// compiler writes (compiler/codegen/Link.cpp) and the runtime reads
// (runtime/core/WeightFiles.cpp):
//   the linked program as the linker wrote it;
//   zero bytes up to a multiple of kEmbeddedAlignment;
//   FILE's bytes as they are (a safetensors or GGUF file);
//   a trailer of kEmbeddedTrailerBytes: kEmbeddedMagic, FILE's offset and
//   size (u64, little-endian), kEmbeddedMagic again.
// The system's loader maps only the segments the ELF program headers name,
// so the bytes after them change nothing in how the program runs; its
// runtime maps [offset, offset + size) of its own file (/proc/self/exe)
// read-only, in place, as it maps a --weights file (an offset that is a
// multiple of the page size keeps every tensor's alignment).
// Plain C++, no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_EMBEDDEDWEIGHTS_H
#define TFMC_SUPPORT_EMBEDDEDWEIGHTS_H

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

namespace tfmc::format {

constexpr char kEmbeddedMagic[8] = {'T', 'F', 'M', 'C', 'W', 'T', 'S', '1'};
constexpr uint64_t kEmbeddedAlignment = 4096;
constexpr uint64_t kEmbeddedTrailerBytes = 32;

/// Where the embedded file lies in the program's file.
struct EmbeddedRegion {
  uint64_t offset = 0;
  uint64_t size = 0;
};

inline std::array<unsigned char, kEmbeddedTrailerBytes>
embeddedTrailer(const EmbeddedRegion &region) {
  std::array<unsigned char, kEmbeddedTrailerBytes> bytes{};
  std::memcpy(bytes.data(), kEmbeddedMagic, 8);
  for (int i = 0; i < 8; ++i) {
    bytes[8 + i] = static_cast<unsigned char>(region.offset >> (8 * i));
    bytes[16 + i] = static_cast<unsigned char>(region.size >> (8 * i));
  }
  std::memcpy(bytes.data() + 24, kEmbeddedMagic, 8);
  return bytes;
}

/// The region a trailer names, when `trailer` (the last kEmbeddedTrailerBytes
/// of a file of `fileBytes`) is one and the region lies before it, aligned.
inline std::optional<EmbeddedRegion>
readEmbeddedTrailer(const unsigned char *trailer, uint64_t fileBytes) {
  if (fileBytes < kEmbeddedTrailerBytes ||
      std::memcmp(trailer, kEmbeddedMagic, 8) != 0 ||
      std::memcmp(trailer + 24, kEmbeddedMagic, 8) != 0)
    return std::nullopt;
  EmbeddedRegion region;
  for (int i = 0; i < 8; ++i) {
    region.offset |= uint64_t(trailer[8 + i]) << (8 * i);
    region.size |= uint64_t(trailer[16 + i]) << (8 * i);
  }
  const uint64_t end = fileBytes - kEmbeddedTrailerBytes;
  if (region.offset % kEmbeddedAlignment != 0 || region.offset > end ||
      region.size > end - region.offset || region.size == 0)
    return std::nullopt;
  return region;
}

} // namespace tfmc::format

#endif // TFMC_SUPPORT_EMBEDDEDWEIGHTS_H
