//===- Target.h - The registry of tfmc's targets ----------------*- C++ -*-===//
//
// Everything tfmc knows about a target lives in its registry entry: the name
// users give to --target, what it is for --help, the host CPU features it
// needs, the figures the tile plans are derived from (vector width,
// registers, caches, cores; a GPU's block limits) and the Halide target
// string its kernels and runtime are compiled for. Adding a target is adding
// one entry to the table in Target.cpp (docs/ARCHITECTURE.md).
//
// This is the lowest layer of the compiler: the tiling pass and codegen both
// read it, and it reads nothing of theirs.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TARGET_TARGET_H
#define TFMC_TARGET_TARGET_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::target {

enum class TargetKind { Cpu, Gpu };

struct TargetDescription {
  std::string name;    // As given to --target, e.g. "x86-64-avx2".
  std::string summary; // One line for --help.
  /// Another entry's name this one stands for (`cuda` is `cuda-sm80`).
  std::string aliasOf;
  /// `host` only: the CPU entry it resolved to (its instruction set), the
  /// name a program's CPU check and `info` give its kernels.
  std::string hostOf;
  TargetKind kind = TargetKind::Cpu;
  /// CPU targets: the host features (LLVM's names) a CPU needs to run this
  /// target's code; `host` picks the first entry the CPU has all of.
  std::vector<std::string> hostFeatures;
  /// Halide's target string for the kernels and for Halide's runtime (the
  /// kernels add `no_runtime`: one runtime per binary).
  std::string halideTarget;

  // CPU: SIMD and caches.
  int64_t vectorLanes = 0;     // f32 lanes per vector register
  int64_t vectorRegisters = 0; // architectural vector registers
  int64_t l1Bytes = 0;         // L1 data cache per core
  int64_t l2Bytes = 0;         // L2 per core
  int64_t l3Bytes = 0;         // last-level cache (Adams2019's machine model)
  int64_t cores = 0;           // cores the plan makes enough tasks for
  /// Rows of W per panel of an f32 linear weight stored in panels
  /// (tfm-weight-layout; 0: row-major). Every x86 entry has 16 (64 bytes, a
  /// cache line, a whole number of vectors for AVX2 and AVX-512 alike), so
  /// that the variants of one program share one weight layout.
  int64_t weightPanel = 0;
  /// CPU: the figures of Tile.cpp's cost model that were measured rather
  /// than derived (each field says what it sets; Tile.cpp, why). They are
  /// the target's, not Tile.cpp's: a target entry states them and the
  /// machine they were measured on (Target.cpp), so that a CPU kind whose
  /// caches or cores favour others gets its own without touching the pass.
  struct CpuTuning {
    /// Rows of a decode step's GEMM micro tile at most (the row-per-sequence
    /// dot form with max-batch > 1; a call of fewer rows than the tile runs
    /// the plan's one-row tile).
    int64_t decodeTileRows = 0;
    /// The packed GEMM: column vectors of a micro tile, rows of a micro tile
    /// at most, rows per block (accumulators in L1), rows per task (one
    /// packed panel per task), depth per K block.
    int64_t packedColumnVectors = 0, packedMaxRows = 0, packedBlockRows = 0,
            packedTaskRows = 0, packedDepthBlock = 0;
    /// Rows below which a packed plan's kernel runs its dot form; columns
    /// above which a GEMM keeps the dot form (a vocabulary head).
    int64_t packedSmallRows = 0, packedMaxColumns = 0;
    /// Where the figures were measured (one line, for the reader).
    std::string measuredOn;
  } tuning;
  /// Dot-product instructions on narrow operands that `host` found (LLVM's
  /// names: avx512bf16 for vdpbf16ps, avx512vnni for vpdpbusd, amx-bf16,
  /// amx-int8); none for the named targets. Recorded for `--stats`: only
  /// a target with bf16DotFeatures compiles for one of them.
  std::vector<std::string> narrowDotFeatures;
  /// Halide features added to halideTarget for the kernels whose linear
  /// layers multiply bf16 pairs (`tfmc --activations bf16`): Halide 14's
  /// avx512_sapphirerapids, which emits vdpbf16ps for their dot products.
  /// Empty: the target has no bf16 dot product, and --activations bf16
  /// refuses it.
  std::string bf16DotFeatures;
  bool hasBf16Dot() const { return !bf16DotFeatures.empty(); }
  /// The instruction set of the microkernels (support/Microkernels.h) that
  /// this target's kernels call for integer products (`--activations
  /// int8` on int8 or int4 weights, a row per sequence): "avx2" or "avx512".
  /// Empty: those kernels keep their Halide form (CUDA).
  std::string integerMicrokernels;
  /// Whether that microkernel has the panel forms
  /// (runtime/ukernels/BlockPanels.h): GEMMs of many rows (prefill,
  /// encoders) then run it, where they measured faster than multiplying
  /// dequantised f32 panels, and the weights that only such products read
  /// are stored in block panels (support/WeightFormat.h, tfm-weight-layout).
  /// Otherwise many rows keep the f32 panels and weights their rows.
  bool integerPanels = false;
  /// The instruction set of the f32 microkernel (support/Microkernels.h's
  /// tfmc_uk_f32p_*) that this target's packed GEMMs over an f32 W in
  /// panels call for their innermost tile: "avx2" or "avx512". Empty: the
  /// Halide packed form (CUDA, or where it measured no slower).
  std::string floatMicrokernels;
  /// Named only explicitly: `host` and x86-64-all never choose it (an
  /// opt-in instruction set, which only --activations bf16 needs).
  bool explicitOnly = false;

  // GPU (CUDA): per-block and per-SM limits.
  int64_t computeCapability = 0; // 80 for sm_80, 90 for sm_90
  int64_t warpSize = 0;
  int64_t maxThreadsPerBlock = 0;
  int64_t sharedBytesPerBlock = 0; // without the dynamic opt-in
  int64_t registersPerThread = 0;  // the budget plans stay under
  int64_t multiprocessors = 0;

  bool isGpu() const { return kind == TargetKind::Gpu; }
  /// hostFeatures, space-separated (what a program's CPU check reads).
  std::string featureList() const;
  /// Halide's target string for one kernel (without Halide's runtime);
  /// with bf16 products, plus bf16DotFeatures.
  std::string halideKernelTarget(bool bf16Products = false) const {
    return halideTarget + (bf16Products ? bf16DotFeatures : std::string()) +
           "-no_runtime";
  }
};

/// The named targets, in the order --help lists them (`host` first: it is
/// resolved to one of the CPU entries by lookupTarget).
const std::vector<TargetDescription> &registeredTargets();

/// The CPU targets (no alias, no placeholder, none explicitOnly), widest
/// first: what `host` chooses from, and what `x86-64-all` stands for.
std::vector<const TargetDescription *> cpuTargets();

/// "host, x86-64-avx2, ...": the names lookupTarget accepts.
std::string targetNameList(const char *separator = ", ");

/// One line per target, "  NAME  summary", for --help texts.
std::string targetHelp();

/// Whether the CPU tfmc runs on has every one of `target`'s host features
/// (what `host` asks of each CPU target).
bool hostHasFeatures(const TargetDescription &target);

/// The description of `name`. `host` is the first registered CPU target whose
/// features the host CPU has, with the host's cache sizes and core count (its
/// Halide target stays that entry's). On an unknown name, or a host tfmc
/// cannot compile for, returns nullopt and sets `error` to a one-line
/// message (listing the known targets).
std::optional<TargetDescription> lookupTarget(const std::string &name,
                                              std::string &error);

/// The targets of a --target value: one name, or a comma-separated list of
/// CPU targets where `x86-64-all` stands for every one (a program for a
/// fleet; `host` and CUDA targets cannot be in a list). Duplicates are
/// dropped; the result is sorted widest first, the order in which a
/// program tries them at load.
std::optional<std::vector<TargetDescription>>
lookupTargets(const std::string &list, std::string &error);

} // namespace tfmc::target

#endif // TFMC_TARGET_TARGET_H
