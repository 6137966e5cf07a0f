//===- Target.h - What tfmc knows about each target -------------*- C++ -*-===//
//
// A target description is the input of the tiling cost model (passes/Tile)
// and, later, of codegen's Halide target string. Named targets are fixed
// descriptions so that plans are reproducible; `host` is read off the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_TARGET_H
#define TFMC_CODEGEN_TARGET_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::codegen {

enum class TargetKind { Cpu, Gpu };

struct TargetDescription {
  std::string name; // As given to --target, e.g. "x86-64-avx2".
  TargetKind kind = TargetKind::Cpu;

  // CPU: SIMD and caches.
  int64_t vectorLanes = 0;     // f32 lanes per vector register
  int64_t vectorRegisters = 0; // architectural vector registers
  int64_t l1Bytes = 0;         // L1 data cache per core
  int64_t l2Bytes = 0;         // L2 per core
  int64_t cores = 0;           // cores the plan makes enough tasks for

  // GPU (CUDA): per-block and per-SM limits.
  int64_t computeCapability = 0; // 80 for sm_80, 90 for sm_90
  int64_t warpSize = 0;
  int64_t maxThreadsPerBlock = 0;
  int64_t sharedBytesPerBlock = 0; // without the dynamic opt-in
  int64_t registersPerThread = 0;  // the budget plans stay under
  int64_t multiprocessors = 0;

  bool isGpu() const { return kind == TargetKind::Gpu; }
};

/// Names accepted by lookupTarget, in the order --help lists them.
std::vector<std::string> knownTargetNames();

/// The description of `name` (`host` is detected). On an unknown name, or a
/// host tfmc cannot compile for, returns nullopt and sets `error` to a
/// one-line message (listing the known targets).
std::optional<TargetDescription> lookupTarget(const std::string &name,
                                              std::string &error);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_TARGET_H
