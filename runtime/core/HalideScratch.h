//===- HalideScratch.h - Reused scratch memory for Halide kernels -*- C++ -*-===//
//
// Kernels allocate per-task scratch (attention's scores and probabilities,
// a block of keys) with halide_malloc on every call. With glibc's malloc,
// blocks near its mmap/trim thresholds (~128 KiB) went back to the kernel
// and were faulted in again on every task: causal attention at S = 512 ran
// 3x slower than at S = 640. This allocator keeps a few freed blocks per
// thread and hands them out again.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_HALIDESCRATCH_H
#define TFMC_RUNTIME_HALIDESCRATCH_H

#include <cstddef>

namespace tfmc::runtime {

/// A block of at least `bytes`, 64-byte aligned (Halide needs 32; AVX-512
/// loads like 64), readable 8 bytes past both ends. nullptr when out of memory.
void *scratchAllocate(std::size_t bytes);

/// Returns a block from scratchAllocate (any thread may free it).
void scratchFree(void *block);

/// Routes Halide's halide_malloc/halide_free through the two functions
/// above. Idempotent.
void installHalideScratchAllocator();

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_HALIDESCRATCH_H
