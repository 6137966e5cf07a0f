//===- RowTiles.h - Rows of x in register tiles of a fixed height -*- C++ -*-===//
//
// The microkernels' row loop (FloatPanels.h, BlockPanels.h and the forms
// over it): whole tiles of TileRows rows, then one tile of the rows left,
// each tile's height a template argument so that its accumulators stay in
// registers. Plain C++; internal linkage, as the headers that use it.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_ROWTILES_H
#define TFMC_RUNTIME_UKERNELS_ROWTILES_H

#include <cstdint>
#include <type_traits>

namespace tfmc::runtime::ukernels {
namespace {

/// tile(std::integral_constant<int, left>{}, m), for a left of 1 .. R.
template <int R, class Tile>
void leftoverTile(int64_t left, int64_t m, Tile &tile) {
  if constexpr (R > 0) {
    if (left == R)
      return tile(std::integral_constant<int, R>{}, m);
    leftoverTile<R - 1>(left, m, tile);
  }
}

/// Calls tile(std::integral_constant<int, R>{}, m) for rows [0, mExtent)
/// in tiles of R = TileRows rows, then one tile of the rows left.
template <int TileRows, class Tile>
void forRowTiles(int64_t mExtent, Tile tile) {
  int64_t m = 0;
  for (; m + TileRows <= mExtent; m += TileRows)
    tile(std::integral_constant<int, TileRows>{}, m);
  leftoverTile<TileRows - 1>(mExtent - m, m, tile);
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_ROWTILES_H
