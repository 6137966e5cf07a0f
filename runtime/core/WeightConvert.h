//===- WeightConvert.h - f32 weights to bf16, int8 or int4 ------*- C++ -*-===//
//
// A program compiled with `tfmc --weight-dtype bf16|int8|int4` stores its linear
// weights and embedding tables in fewer bytes (Plan.h); an f32 program for
// a CPU stores its linear weights in panels (layOutPanels). These functions are
// the conversion the plan's format defines, used at load (an f32, bf16 or f16
// checkpoint: a narrow one is first widened to f32, exactly) and by
// `NAME convert-weights`; they must give bit-identical results wherever
// they run, so every rounding is spelled out:
//  - bf16: round to nearest, ties to even, from the f32 bits; NaN stays a
//    (quiet) NaN and infinities stay infinite, as for an f32 program;
//  - int8: blocks of a scale and its values (support/WeightFormat.h; with a
//    group of 32, GGUF's Q8_0); per row r and group g of `group`
//    consecutive columns, s = f16(max|w| / 127) (the division in f32, then f16 round to nearest
//    even), q = clamp(rne(w / float(s)), -127, 127), and q = 0 where s = 0.
//    A NaN or infinite weight, or a scale beyond f16's range, is refused.
//  - int4: GGUF's Q4_0 blocks (support/WeightFormat.h), rounded as ggml's
//    reference quantiser (quantize_row_q4_0_reference) rounds, so that
//    tfmc and llama.cpp files of the same weights hold the same bytes: per
//    row and block of 32 columns (the last one padded with zeros), max is
//    the first value of largest |w|, d = max / -8 and id = 1 / d (0 when
//    d is 0) in f32, the stored scale f16(d), and q = min(15,
//    trunc(w · id + 8.5)) in f32: the block's extreme value gets q = 0
//    (-8 · d = max), and the others round half up. Where 1 / d overflows
//    (|max| < ~2^-125, f16(d) = 0: every value is 0) the levels are 8, as
//    for a block of zeros. The same refusals.
//  - q4_k, q5_k, q6_k: llama.cpp's K-quant super-blocks of 256 values
//    (support/WeightFormat.h), made by ggml's reference quantisers
//    (quantize_row_q4_K_ref, quantize_row_q5_K_ref, quantize_row_q6_K_ref:
//    a search over candidate scales, and minimums for q4_k and q5_k, per
//    sub-block), byte for byte: the same f32 operations in the same order,
//    no fused multiply-adds. Rows are whole super-blocks. The same
//    refusals, and a super-block whose scale overflows f16.
//
// Plain C++17, no allocation: callers own every buffer.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_WEIGHTCONVERT_H
#define TFMC_RUNTIME_WEIGHTCONVERT_H

#include <cstdint>
#include <string>

namespace tfmc::runtime {

/// f32 to bfloat16 bits, round to nearest even.
uint16_t floatToBf16(float value);
/// bfloat16 bits to f32 (exact).
float bf16ToFloat(uint16_t bits);
/// f32 to IEEE half bits, round to nearest even (overflow gives infinity,
/// tiny values subnormals or zero).
uint16_t floatToF16(float value);
/// IEEE half bits to f32 (exact).
float f16ToFloat(uint16_t bits);

/// `count` bfloat16 values to f32, exactly (every bf16 value, NaN payloads
/// included, is an f32 value). `source` may have any alignment (a tensor of
/// a mapped file). Runs on up to `threads` threads when the tensor is large.
void widenBf16(const void *source, int64_t count, float *target,
               int threads = 1);
/// `count` IEEE half values to f32, exactly (subnormals become normal f32
/// values; infinities and NaN payloads are kept). Any alignment.
void widenF16(const void *source, int64_t count, float *target,
              int threads = 1);

/// `count` f32 values to bf16 bits. `source` must be 4-byte aligned.
/// Runs on up to `threads` threads when the tensor is large.
void convertToBf16(const float *source, int64_t count, uint16_t *target,
                   int threads = 1);

/// `rows` x `cols` f32 values into panels of `panel` rows (`panel` divides
/// `rows`; support/WeightFormat.h): target[(p·cols + k)·panel + j] is row
/// p·panel + j, column k. `source` is row-major [rows, cols], or with
/// `transposed` its transpose [cols, rows] (a Conv1D weight as its file
/// holds it); any alignment. Runs on up to `threads` threads when large.
void layOutPanels(const void *source, int64_t rows, int64_t cols,
                  int64_t panel, bool transposed, float *target,
                  int threads = 1);

/// `rows` rows of int8 blocks of `group` values (int4: Q4_0 blocks, `int4`),
/// `rowBytes` bytes each, into block panels of kBlockPanelRows rows
/// (support/WeightFormat.h; `rows` a multiple of them, `group` of 4), and
/// back. The same bytes either way; runs on up to `threads` threads.
void layOutBlockPanels(const uint8_t *rowsOfBlocks, int64_t rows,
                       int64_t rowBytes, int64_t group, bool int4,
                       uint8_t *panels, int threads = 1);
void blockPanelsToRows(const uint8_t *panels, int64_t rows, int64_t rowBytes,
                       int64_t group, bool int4, uint8_t *rowsOfBlocks,
                       int threads = 1);

/// Why quantizeInt8 or quantizeInt4 refused a tensor, in words for a one-line message
/// ("a NaN at [3, 17]", "row 2 group 0: max |w| 1e+07 / 127 overflows
/// f16").
struct QuantizeProblem {
  std::string what;
};

/// `rows` x `cols` f32 values (row-major, 4-byte aligned) to rows *
/// format::int8RowBytes(cols, group) bytes of int8 blocks
/// (support/WeightFormat.h), as the file comment says. False with `problem`
/// set for a NaN or infinite weight or a scale that overflows f16 (the
/// first in row order); the output is then partly written.
bool quantizeInt8(const float *source, int64_t rows, int64_t cols,
                  int64_t group, uint8_t *blocks, QuantizeProblem &problem,
                  int threads = 1);

/// `rows` x `cols` f32 values (row-major, 4-byte aligned) to rows *
/// format::int4RowBytes(cols) bytes of Q4_0 blocks, as the file comment
/// says. Refuses as quantizeInt8 does.
bool quantizeInt4(const float *source, int64_t rows, int64_t cols,
                  uint8_t *blocks, QuantizeProblem &problem, int threads = 1);

/// `rows` x `cols` f32 values (row-major, 4-byte aligned; `cols` a multiple
/// of 256) to rows of cols / 256 K-quant super-blocks of ggml type
/// `ggmlType` (format::kGgmlQ4K, kGgmlQ5K or kGgmlQ6K), as the file
/// comment says. Refuses as quantizeInt8 does. About 0.1 µs a value on one
/// thread here (the reference's scale search), so a program converts such a
/// checkpoint once with `NAME convert-weights`.
bool quantizeKQuant(const float *source, int64_t rows, int64_t cols,
                    int ggmlType, uint8_t *blocks, QuantizeProblem &problem,
                    int threads = 1);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_WEIGHTCONVERT_H
