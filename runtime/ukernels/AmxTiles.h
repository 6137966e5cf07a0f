//===- AmxTiles.h - AMX's tile configuration -------------------*- C++ -*-===//
//
// ldtilecfg's 64-byte operand (palette 1: the tile registers' rows and
// bytes a row), for IntegerPanelsAmx.cpp's microkernel and PeakAmx.cpp's
// probe. Plain data; internal linkage, as the other headers.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_AMXTILES_H
#define TFMC_RUNTIME_UKERNELS_AMXTILES_H

#include <cstdint>

namespace tfmc::runtime::ukernels {
namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t columnBytes[16] = {};
  uint8_t rows[16] = {};
  /// Tile register t as `rows` rows of `bytes` bytes.
  void set(int t, int tileRows, int bytes) {
    rows[t] = uint8_t(tileRows);
    columnBytes[t] = uint16_t(bytes);
  }
};

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_AMXTILES_H
