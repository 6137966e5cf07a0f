//===- BlockPanels.h - The microkernels over W in block panels -*- C++ -*-===//
//
// support/Microkernels.h's tfmc_uk_q8p_* contract, written once over a
// `Form` per instruction set that multiplies the rows of x by the task's
// panels:
//
//   Form::rows(a, panels, offsets, mExtent, live)
//     every row [0, mExtent) of x against outputs [0, live) of the task,
//     whose first is on a whole panel; offsets (groupOffsets) hold c·Σq of
//     each row and group where Form::offsets(int4) (a form that
//     multiplies the stored nibbles or w + 128 as unsigned bytes), else
//     null.
//
// The panels (support/WeightFormat.h): panel p holds W's rows 16p ..
// 16p + 15, per group [4-byte step][16 rows][4 bytes] of values (int8:
// w + 128; int4: the stored nibble bytes, byte j holding values j and
// j + 16), then every group's 16 f16 scales. The forms: IntegerPanels.h
// (512-bit), IntegerPanels256.h (256-bit). Everything here is AVX2 and
// has internal linkage, as IntegerProducts.h.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_BLOCKPANELS_H
#define TFMC_RUNTIME_UKERNELS_BLOCKPANELS_H

#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/RowTiles.h"

#include <vector>

namespace tfmc::runtime::ukernels {
namespace {

/// Block panels of the task: `panels` at w, `panelBytes` apart.
struct PanelArgs {
  const uint8_t *w;
  int64_t panelBytes;
  /// Bytes of a group's values in a panel; where the scales start.
  int64_t groupBytes, scalesAt;
};

/// c·Σq of each row m's group g at offsets[m · groups + g], c the
/// unsigned operand's offset (int4 8, int8 128): once per call.
inline const int32_t *groupOffsets(const IntegerArgs &a, int64_t mExtent) {
  thread_local std::vector<int32_t> offsets;
  offsets.resize(size_t(mExtent * a.groups));
  const int32_t c = a.int4 ? 8 : 128;
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t g = 0; g < a.groups; ++g) {
      const int8_t *x = a.xq + g * a.xGroupStride + m * a.xRowStride;
      // Σ (q + 128) by vpsadbw, less 128 per value.
      __m256i sums = _mm256_setzero_si256();
      for (int64_t j = 0; j < a.group; j += 32)
        sums = _mm256_add_epi64(
            sums, _mm256_sad_epu8(
                      _mm256_xor_si256(_mm256_loadu_si256(
                                           reinterpret_cast<const __m256i *>(x + j)),
                                       _mm256_set1_epi8(char(0x80))),
                      _mm256_setzero_si256()));
      const __m128i pairs = _mm_add_epi64(_mm256_castsi256_si128(sums),
                                          _mm256_extracti128_si256(sums, 1));
      const int64_t biased =
          _mm_cvtsi128_si64(_mm_add_epi64(pairs, _mm_unpackhi_epi64(pairs, pairs)));
      offsets[size_t(m * a.groups + g)] = c * int32_t(biased - 128 * a.group);
    }
  return offsets.data();
}

/// The microkernel over block panels (support/Microkernels.h's
/// tfmc_uk_q8p_*): the contract of integerProducts, with w's dimensions
/// (bytes of a panel, panels) and a task that starts on a whole panel.
template <class Form>
int blockPanelProducts(halide_buffer_t *xq, halide_buffer_t *xScale,
                       halide_buffer_t *w, int32_t depth, int32_t group,
                       int32_t rows, int32_t int4, halide_buffer_t *out) {
  const int64_t groups = (int64_t(depth) + group - 1) / group;
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const int64_t blockBytes = int4 ? 18 : 2 + group;
  const int64_t panelBytes = 16 * groups * blockBytes;
  const int64_t panels = (int64_t(rows) + 15) / 16;
  // The panels that the outputs need (none past N).
  const int64_t pFirst = std::min<int64_t>(nMin / 16, panels - 1);
  const int64_t pEnd = std::max<int64_t>(
      std::min<int64_t>((nMin + nExtent + 15) / 16, panels), pFirst + 1);
  // Halide's bounds query: out's and x's scales' hosts are null (x's
  // levels, were they a pipeline input, would have one even then).
  if (out->host == nullptr || xScale->host == nullptr) {
    askForX(xq, xScale, group, groups, mMin, mExtent);
    askForW(w, panelBytes, pFirst, pEnd);
    return 0;
  }
  if (nMin % 16 != 0)
    return -1; // Halide's tasks are whole panels (LinearMicrokernel.cpp)
  IntegerArgs a = argumentsOf(xq, xScale, out, group, groups, blockBytes, int4);
  PanelArgs panel;
  panel.panelBytes = w->dim[1].stride;
  panel.w = w->host - w->dim[0].min + (0 - w->dim[1].min) * panel.panelBytes;
  // Panel n0 / 16 of the task is panel nMin / 16 + n0 / 16 of W.
  panel.w += (nMin / 16) * panel.panelBytes;
  panel.groupBytes = 16 * (blockBytes - 2);
  panel.scalesAt = groups * panel.groupBytes;

  const int32_t *offsets = Form::offsets(a.int4) ? groupOffsets(a, mExtent) : nullptr;
  const int64_t live = taskRows(out, rows).live;
  Form::rows(a, panel, offsets, mExtent, live);
  zeroPastN(a, live, nExtent, mExtent);
  return 0;
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_BLOCKPANELS_H
