//===- PeakAmx.cpp - Peaks.h's tdpbssd probe -------------------------------===//
//
// Compiled with -mamx-tile -mamx-int8 (runtime/CMakeLists.txt): call it only
// where Microkernels.cpp's cpuHasAmx() holds (it asks the kernel for the
// tile data once).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/AmxTiles.h"
#include "runtime/ukernels/PeakChains.h"
#include "runtime/ukernels/Peaks.h"

#include <immintrin.h>

namespace tfmc::runtime::ukernels {

double int8PeakAmx(int64_t iterations) {
  // Palette 1; tmm0 .. tmm3 C (16 x 16 int32), tmm4 and tmm5 A (16 x 64
  // bytes), tmm6 and tmm7 B (16 rows of 64 bytes): 16 x 16 x 64 products a
  // tdpbssd, four independent accumulators.
  TileConfig config;
  for (int t = 0; t < 8; ++t)
    config.set(t, 16, 64);
  alignas(64) static const int8_t operand[16 * 64] = {};
  _tile_loadconfig(&config);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  // kChains steps of a chain each, as the vector probes: 3 tdpbssd a step.
  const int64_t steps = iterations * kChains / 4;
  const auto began = std::chrono::steady_clock::now();
  for (int64_t n = 0; n < steps; ++n) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  alignas(64) int32_t sums[16 * 16];
  _tile_stored(0, sums, 64);
  const double elapsed = secondsSince(began);
  _tile_release();
  __asm__ volatile("" : : "m"(sums));
  return double(steps) * 4 * (16 * 16 * 64 * 2) / elapsed;
}

} // namespace tfmc::runtime::ukernels
