//===- Microkernels.h - The microkernels' names and calling convention -*- C++ -*-===//
//
// A microkernel is the innermost tile of a matrix product written in C++
// with one instruction set's intrinsics (runtime/ukernels/), which a
// Halide kernel calls as an extern stage (compiler/codegen/kernels/
// LinearMicrokernel.cpp) for each parallel task of a linear layer. Codegen
// names them and the runtime defines them: this header is the contract
// between the two, as WeightFormat.h is for the weights. Plain C++, no
// dependencies.
//
// Integer products (`tfmc --activations int8`, int8 or int4 weights):
//
//   int tfmc_uk_q8_<version>_<isa>(halide_buffer_t *x_q, halide_buffer_t *x_scale,
//                              halide_buffer_t *w, int32_t depth,
//                              int32_t group, int32_t rows, int32_t int4,
//                              halide_buffer_t *out)
//
//   x_q      i8 (G, groups, M): x quantised per row and group
//            (docs/precision.md, "int8 activations"), 0 past K;
//   x_scale  f32 (groups, M): each group's d;
//   w        W's blocks (support/WeightFormat.h): int8 i8 ((2 + G) · groups,
//            N), or int4 (int4 = 1) u8 (18 · groups, N), G = 32;
//   out      f32 (n, m): a task's outputs,
//              out(n, m) = Σ_g f32(d_x(g, m) · d_w(g, n)) · Σ_{k∈g} q(k, m) · w(k, n)
//            with the inner sums exact in int32 and the outer in f32 (only
//            their order differs from the Halide form's). A W scale that is
//            an infinity or a NaN counts as an infinity of its sign, as
//            every kernel widens it (Common.cpp's scaleFunc).
//   rows     N: outputs of `out` at or past it are 0 (a task past the end).
//
// With AVX512-VNNI or AVX2, a call of 4 rows of x or more repacks the
// task's rows of W, kMicrokernelPanelOutputs at a time, and runs every row
// of x over each panel (runtime/ukernels/IntegerPanels.h, IntegerPanels256.h);
// fewer rows read W as it is.
//
// Over W in block panels (support/WeightFormat.h; the weight's "panel"):
//
//   int tfmc_uk_q8p_<version>_<isa>(...the same arguments...)
//
// with w u8 (bytes of a panel, panels): panel p holds W's rows 16p ..
// 16p + 15. `out`'s outputs start on a whole panel (a task's first is a
// multiple of 16); everything else is the contract above. `avx512`
// (vpdpbusd, or its products from vpmaddubsw without VNNI) and `avx2`
// (vpmaddubsw, runtime/ukernels/IntegerPanels256.h) have it.
//
// Over llama.cpp's K-quants (q4_k, q5_k, q6_k; support/WeightFormat.h):
//
//   int tfmc_uk_qk_<version>_<isa>(halide_buffer_t *x_q, halide_buffer_t *x_scale,
//                              halide_buffer_t *w, int32_t depth,
//                              int32_t rows, int32_t type,
//                              halide_buffer_t *out)
//
// with x quantised in groups of 32 as above (K a multiple of 256), w u8
// (B · K / 256, N) of ggml's super-blocks (type: ggml's 12 Q4_K, B = 144;
// 13 Q5_K, 176; 14 Q6_K, 210), and
//   q4_k, q5_k: out(n, m) = Σ_g d_x(g, m) · (f32(d · sc_g) · Σ_{k∈g} q(k, m) · q_w(k, n)
//                                     - f32(dmin · m_g) · Σ_{k∈g} q(k, m));
//   q6_k:       out(n, m) = Σ_g d_x(g, m) · Σ_{t = 2g, 2g+1} f32(d · sc_t) · Σ_{k∈t} q(k, m) · (q_w(k, n) - 32)
// (the inner sums exact in int32, the outer in f32 in any order; the
// values f32(d · sc) · q - f32(dmin · m) are ggml's dequantize_row_q*_K's).
// `avx2` (vpmaddubsw; runtime/ukernels/KQuantProductsAvx2.cpp) has it, and
// `avx512` runs the same code.

// With f32 activations (a row per sequence: decode steps):
//
//   int tfmc_uk_qkf_<version>_<isa>(halide_buffer_t *x, halide_buffer_t *w,
//                               int32_t depth, int32_t rows, int32_t type,
//                               halide_buffer_t *out)
//
// with x f32 (K, M) and out(n, m) = Σ_k x(k, m) · W(n, k), W's values as
// above, the f32 sums in any order and grouping (per group f32(d · sc) ·
// Σ x · q - f32(dmin · m) · Σ x; runtime/ukernels/KQuantFloatAvx2.cpp).
//
// With f32 activations and many rows of x (prefill, encoders: the plans
// that widen W into panels), x packed as the f32 microkernel's below, in
// tiles of R = widenedPanelTile(isa).rows:
//
//   int tfmc_uk_qkfp_<version>_<isa>(halide_buffer_t *x, halide_buffer_t *w,
//                                int32_t depth, int32_t rows, int32_t x_rows,
//                                int32_t type, halide_buffer_t *out)
//
// with out(n, m) = Σ_k x(k, m) · W(n, k), one f32 sum in k's order by
// fused multiply-adds over W's values as ggml's dequantize_row_q*_K gives
// them (runtime/ukernels/WidenedPanels.h); rows of x at or past
// x_rows, and outputs at or past N = rows, are 0. A task's outputs start
// anywhere; its rows on a whole tile of R.
//
// Over int8 or int4 W in rows (as tfmc_uk_q8's, not in block panels),
// with f32 activations and many rows of x, likewise:
//
//   int tfmc_uk_q8fp_<version>_<isa>(halide_buffer_t *x, halide_buffer_t *w,
//                                int32_t depth, int32_t group, int32_t rows,
//                                int32_t x_rows, int32_t int4,
//                                halide_buffer_t *out)
//
// with W's values q · d (int8, `group` a multiple of 8) or (q − 8) · d
// (int4), a scale that is an infinity or a NaN an infinity of its sign
// (runtime/ukernels/WidenedPanels.h). `avx2` (6 x 2 ymm tiles,
// WidenedPanelsAvx2.cpp) and `avx512` (12 x 2 zmm, WidenedPanelsAvx512.cpp)
// have both.
//
// f32 products (f32 activations, an f32 W in panels of 16 rows,
// support/WeightFormat.h; a GEMM of many rows, Linear.cpp's packed plans):
//
//   int tfmc_uk_f32p_<version>_<isa>(halide_buffer_t *x, halide_buffer_t *w,
//                                int32_t depth, int32_t rows, int32_t x_rows,
//                                halide_buffer_t *out)
//
//   x        f32 (16, R, chunks, tiles): x packed, R the ISA's tile rows
//            (floatMicrokernelTile), x_packed(i, r, c, t) = x(16c + i, Rt + r)
//            (values past K or past M are never read), M = x_rows;
//   w        f32 (16, K, N / 16): W's panels;
//   out      f32 (n, m): a task's outputs, starting on a whole panel and
//            a whole tile of R rows,
//              out(n, m) = Σ_k x(k, m) · W(n, k), one f32 sum in k's order
//            by fused multiply-adds; outputs at or past N = rows, and rows
//            at or past x_rows, are 0.
//
// `avx2` (runtime/ukernels/FloatPanels.h, FloatProductsAvx2.cpp: 6 x 2
// ymm) and `avx512` (FloatProductsAvx512.cpp: 12 x 2 zmm), each run by its
// target's kernels (passes/target/Target.cpp).
//
// f32 products over an f32 W in rows ([N, K] row-major: a tied
// embedding that is also the output head, or a weight the panel layout
// does not take), for a decode step's rows of x (Linear.cpp's dot plans):
//
//   int tfmc_uk_f32r_<version>_<isa>(halide_buffer_t *x, halide_buffer_t *w,
//                                int32_t depth, int32_t rows,
//                                halide_buffer_t *out)
//
//   x        f32 (K, M) as it is;
//   w        f32 (K, N): W's rows;
//   out      f32 (n, m): a task's outputs (starting anywhere),
//              out(n, m) = Σ_k x(k, m) · W(n, k), f32 sums in any order;
//            outputs at or past N = rows are 0.
//
// `avx2` (FloatProductsAvx2.cpp) and `avx512` (FloatProductsAvx512.cpp),
// both runtime/ukernels/FloatRows.h.
//
// Called with x_q's host (f32: out's) null (Halide's bounds query), it
// fills in the regions of its inputs that `out`'s region needs and returns
// 0.
// A gated linear's kernel calls it once per weight, on each part of its
// output. The ISA suffix is the target registry's
// (TargetDescription::integerMicrokernels): `avx2` (vpmaddubsw), `avx512`
// (vpdpbusd where the CPU has AVX512-VNNI, else the AVX2 code). The
// version changes with the convention, so that a cached kernel object never
// calls a microkernel it was not compiled for.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_MICROKERNELS_H
#define TFMC_SUPPORT_MICROKERNELS_H

#include <string>

namespace tfmc::format {

/// The convention's version, part of every microkernel's name.
constexpr const char *kMicrokernelVersion = "v1";

/// The integer-product microkernel for one instruction set ("avx2",
/// "avx512").
inline std::string integerMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_q8_") + kMicrokernelVersion + "_" + isa;
}

/// The integer-product microkernel over W in block panels, for one
/// instruction set ("avx2", "avx512").
inline std::string integerPanelMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_q8p_") + kMicrokernelVersion + "_" + isa;
}

/// The integer-product microkernel over llama.cpp's K-quant super-blocks,
/// for one instruction set ("avx2", "avx512").
inline std::string kQuantMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_qk_") + kMicrokernelVersion + "_" + isa;
}

/// The f32-activation microkernel over llama.cpp's K-quant super-blocks,
/// for one instruction set ("avx2", "avx512").
inline std::string kQuantFloatMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_qkf_") + kMicrokernelVersion + "_" + isa;
}

/// The f32-activation microkernel over K-quant super-blocks for many rows
/// of packed x, for an instruction set that has floatMicrokernelTile
/// ("avx2").
inline std::string kQuantFloatPanelMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_qkfp_") + kMicrokernelVersion + "_" + isa;
}
/// The f32-activation microkernel over int8 or int4 W in rows for many rows
/// of packed x, likewise ("avx2").
inline std::string blockFloatPanelMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_q8fp_") + kMicrokernelVersion + "_" + isa;
}
/// Whether the runtime defines integerPanelMicrokernelName(isa).
inline bool hasIntegerPanelMicrokernel(const std::string &isa) {
  return isa == "avx2" || isa == "avx512";
}

/// The f32 microkernel over W in panels, for one instruction set ("avx2",
/// "avx512").
inline std::string floatPanelMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_f32p_") + kMicrokernelVersion + "_" + isa;
}

/// The f32 microkernel over W in rows, for one instruction set ("avx2",
/// "avx512").
inline std::string floatRowMicrokernelName(const std::string &isa) {
  return std::string("tfmc_uk_f32r_") + kMicrokernelVersion + "_" + isa;
}

/// The group sizes of int8 weights the microkernel takes: whole 32-byte
/// vectors (int4's blocks are 32 values).
constexpr int kMicrokernelGroupMultiple = 32;

/// Outputs of one panel of the microkernel's form for many rows of x
/// (runtime/ukernels/IntegerPanels.h): a task of outputs is best a whole
/// number of them.
constexpr int kMicrokernelPanelOutputs = 32;
/// Rows of x from which a call runs that form (where the ISA has it).
constexpr int kMicrokernelPanelRows = 4;

/// The f32 microkernel's register tile (rows of x by vectors of outputs)
/// and depth block: what runtime/ukernels/FloatProductsAvx2.cpp compiles
/// and the tile pass writes into the plan (one entry per instruction set;
/// all 0 for a set that has none).
struct FloatMicrokernelTile {
  int rows, vectors, depthBlock;
};
constexpr FloatMicrokernelTile kFloatTileAvx2{6, 2, 256};
constexpr FloatMicrokernelTile kFloatTileAvx512{12, 2, 128};
inline FloatMicrokernelTile floatMicrokernelTile(const std::string &isa) {
  return isa == "avx2"     ? kFloatTileAvx2
         : isa == "avx512" ? kFloatTileAvx512
                           : FloatMicrokernelTile{0, 0, 0};
}

/// The tile of the microkernels that widen narrow weights into f32 panels
/// (tfmc_uk_qkfp, tfmc_uk_q8fp; x is packed for it), for an instruction set
/// that has them ("avx2": the f32 microkernel's; "avx512": 12 x 2 zmm with
/// depth blocks of 256, a K-quant's super-block column); all 0 for one that
/// has none.
constexpr FloatMicrokernelTile kWidenedTileAvx512{12, 2, 256};
inline FloatMicrokernelTile widenedPanelTile(const std::string &isa) {
  return isa == "avx2"     ? kFloatTileAvx2
         : isa == "avx512" ? kWidenedTileAvx512
                           : FloatMicrokernelTile{0, 0, 0};
}

} // namespace tfmc::format

#endif // TFMC_SUPPORT_MICROKERNELS_H
