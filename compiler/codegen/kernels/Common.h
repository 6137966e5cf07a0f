//===- Common.h - What the kernel files share -------------------*- C++ -*-===//
//
// Expressions several kernels use (activations, the one mask predicate) and
// the schedules of the simple kernels' shapes, for the CPU and the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_KERNELS_COMMON_H
#define TFMC_CODEGEN_KERNELS_COMMON_H

#include "compiler/codegen/kernels/Kernel.h"

namespace tfmc::codegen::kernels {

/// -inf as a float Expr: the identity of max and the masked score.
Halide::Expr negativeInfinity();

/// `value` (f32) as a kernel stores it into a buffer of `type`: itself for
/// Float(32); for BFloat(16) its upper 16 bits rounded to nearest even (a
/// NaN stays a NaN); for Float(16) IEEE half rounded to nearest even
/// (beyond 65504 it becomes an infinity). The KV cache's narrow types
/// (`tfmc --kv-cache-dtype`, docs/precision.md).
Halide::Expr storedAs(Halide::Type type, Halide::Expr value);

/// The activation epilogue of linear kernels (and the activation kernel).
Halide::Expr activation(ActivationFn fn, Halide::Expr x);

/// Soft-capping (tfm.softcap, attention's logit_softcap): cap · tanh(x /
/// cap), cap > 0.
Halide::Expr softcap(Halide::Expr x, double cap);

/// Whether query `query` may attend to key `key` of sequence `batch` under
/// `mask`, with `keys` keys. `keyMayPassEnd`: the caller's key loop runs
/// past the last key (whole key blocks), which the predicate then masks.
/// `keyPadding` is read only when mask.padding.
Halide::Expr keyAllowed(const MaskSpec &mask, Halide::Expr query,
                        Halide::Expr key, Halide::Expr keys,
                        const Halide::ImageParam &keyPadding,
                        Halide::Expr batch, bool keyMayPassEnd);

/// A linear's weight or an embedding's table as the kernel receives it:
/// values (K, N) in the spec's storage type, or for int8 and int4 rows of
/// blocks, each its f16 scale and then its values (support/WeightFormat.h):
/// int8 bytes ((2 + G)·ceil(K/G), N) as i8 (G the group), int4 bytes
/// (18·ceil(K/32), N) of Q4_0 blocks as u8.
struct WeightInput {
  explicit WeightInput(const KernelSpec &spec, const std::string &name);
  /// The kernel's arguments for it: the values.
  std::vector<Halide::ImageParam> arguments() const;
  /// Element (k, row) widened to f32; `group` is k's group (int8, int4),
  /// which a caller that walks K by groups passes so that no vector lane
  /// divides.
  Halide::Expr widened(Halide::Expr k, Halide::Expr row,
                       Halide::Expr group = Halide::Expr()) const;
  /// Element j of group g of `row`, widened: for a caller that walks K by
  /// whole groups (the blocks are whole, so j and g need no clamp).
  Halide::Expr widenedInGroup(Halide::Expr j, Halide::Expr g,
                              Halide::Expr row) const;
  /// int8: element j (0 .. G - 1) of block g of `row` as stored (i8).
  Halide::Expr int8Value(Halide::Expr j, Halide::Expr g,
                         Halide::Expr row) const;
  /// int4: element j (0 .. 31) of block g of `row` as its stored nibble
  /// w + 8 (u8, 0 .. 15): the low nibble of byte j for j < 16, the high
  /// nibble of byte j - 16 above. A vector of j is a dense load only where
  /// j % 16 and j >= 16 are constant across it (a schedule unrolls the
  /// halves).
  Halide::Expr int4Nibble(Halide::Expr j, Halide::Expr g,
                          Halide::Expr row) const;

  WeightType type;
  int64_t groupSize; // int8, int4: values per scale; otherwise 0
  /// int8, int4: bytes of a block (its scale and its values); a K-quant's
  /// super-block; otherwise 0.
  int64_t blockBytes;
  /// An f32 W in panels of `panel` rows (KernelSpec::weightPanel): `values`
  /// is (row % panel, k, row / panel). 0: (k, row).
  int64_t panel;
  /// A CUDA kernel: Halide 14's PTX flushes f32 subnormals to zero.
  bool flushesSubnormals;
  Halide::ImageParam values;
  /// int8, int4: the scale of group g of `row` as f32, widened from its
  /// block's first two bytes with a few integer operations (undefined for
  /// f32 and bf16). Inlined unless a schedule computes it for a tile.
  Halide::Func scale;
  /// Another Func named `name` with `scale`'s definition, for a second
  /// form in one pipeline that schedules its own.
  Halide::Func scaleFunc(const std::string &name) const;
  /// q4_k, q5_k: f32(dmin · m) of 32-value sub-block g of `row` (undefined
  /// otherwise); `scale` is then f32(d · sc) of sub-block g, and a q6_k's
  /// of its 16-value sub-block g. K-quants are walked in groups of
  /// kKQuantGroup; each value is ggml's dequantize_row_q*_K's
  /// (support/WeightFormat.h).
  Halide::Func minimum;
  Halide::Func minimumFunc(const std::string &name) const;
  static constexpr int64_t kKQuantGroup = 32;

private:
  /// The little-endian IEEE half at byte `at` of `row`, widened exactly
  /// (scaleFunc says how).
  Halide::Expr widenedHalf(Halide::Expr at, Halide::Expr row) const;
  Halide::Expr kQuantScale(Halide::Expr g, Halide::Expr row, bool minimum) const;
  Halide::Expr kQuantInGroup(Halide::Expr j, Halide::Expr g,
                             Halide::Expr row) const;
};

// --- CPU schedules of the simple shapes ----------------------------------------

/// Elementwise and row kernels over (W, R): vectorise W, rows in parallel
/// tasks of the plan's rows_per_task. Returns the loop over one row.
Halide::Var scheduleRows(Halide::Func out, Halide::Var w, Halide::Var r,
                         const target::CpuRowsPlan &plan);

/// Kernels over (D, S, B): every token (s, b) is a row.
void scheduleTokenRows(Halide::Func out, const target::CpuRowsPlan &plan);

/// Kernels whose output is (w, r): scheduleRows with the spec's plan (a
/// KernelDefinition's cpuSchedule).
void scheduleOutputRows(BuiltKernel &kernel, const KernelSpec &spec);

// --- GPU scheduling -------------------------------------------------------------

/// Set while a GPU kernel is built for host emulation (buildGpuOnHost): the
/// GPU directives below then leave their loops serial and their allocations
/// ordinary.
bool emulatingGpu();

/// RAII: builds GPU kernels for host emulation while alive.
class GpuEmulation {
public:
  explicit GpuEmulation(bool on);
  ~GpuEmulation();

private:
  bool saved;
};

template <typename... Vars> void gpuBlocks(Halide::Stage stage, Vars... vars) {
  if (!emulatingGpu())
    stage.gpu_blocks(vars...);
}
template <typename... Vars> void gpuThreads(Halide::Stage stage, Vars... vars) {
  if (!emulatingGpu())
    stage.gpu_threads(vars...);
}
template <typename... Vars> void gpuLanes(Halide::Stage stage, Vars... vars) {
  if (!emulatingGpu())
    stage.gpu_lanes(vars...);
}

/// Registers for a Func computed at the block level: whole in every thread
/// (local memory when indexed by the thread), striped across the lanes of
/// a warp when its innermost storage dimension is the lane.
void inRegisters(Halide::Func f);

/// Adds the lowering pass that puts barriers into one-warp GPU kernels
/// between lanes' shared-memory writes and reads (LaneBarriers.cpp).
void addLaneBarrierPass(Halide::Pipeline &pipeline);

/// (w, r) outputs on a grid of tx x ty thread blocks, tx along the
/// contiguous w so that each warp's loads and stores are coalesced.
void scheduleGrid(Halide::Func out, Halide::Var w, Halide::Var r,
                  int64_t width, int threads);

/// Kernels over (D, S, B): a grid over D and the tokens (s, b).
void gridOverTokens(BuiltKernel &kernel, const KernelSpec &spec);

/// Kernels whose output is (w, r): a grid over w and r.
void gridOverRows(BuiltKernel &kernel, const KernelSpec &spec);

} // namespace tfmc::codegen::kernels

#endif // TFMC_CODEGEN_KERNELS_COMMON_H
