//===- TinyModel.h - The runtime tests' hand-written model ------*- C++ -*-===//
//
// TinyModel.cpp defines the glue symbols codegen writes for a model (the
// kernel table and the plan) for a tiny model over hand-written kernels:
// vocab 10, d 4, 3 outputs, B <= 2, S <= 6 (max_len 8).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_UNIT_TINYMODEL_H
#define TFMC_TEST_UNIT_TINYMODEL_H

#include "runtime/core/Model.h"

#include <cstdint>
#include <vector>

extern "C" {
extern const struct tfmc_kernel_entry tfmc_kernels[];
extern const int tfmc_num_kernels;
extern const char tfmc_plan_json[];

/// Kernels beyond the plan's, for plans the tests write: out = in over
/// (W, R) views (a KV cache write), and out[b, 0, :] = the sum of in's rows
/// (a KV cache read), or of a paged cache's rows; an embedding lookup is
/// the plan's tfmc_test_embed.
int tfmc_test_embed(void **args);
int tfmc_test_copy(void **args);
int tfmc_test_sum_rows(void **args);
/// out[b, 0, :] = the sum of a paged cache's pool rows that key_rows names
/// for sequence b (-1: none): args pool (head width, block position, head,
/// block) f32 (head-major blocks, KvBlocks.h), key_rows (L, B) i32.
int tfmc_test_sum_paged(void **args);
}

namespace tfmc::test {
/// The extents of the ids buffer the embedding kernel last saw, for the
/// tests of symbol binding (written under a lock: the threaded tests run
/// the kernel on several threads at once).
extern std::vector<int32_t> embedIdsExtents;
/// The SSE control and status register (MXCSR) the embedding kernel last
/// ran under (x86-64; 0 elsewhere).
extern unsigned embedFloatControl;
} // namespace tfmc::test

#endif // TFMC_TEST_UNIT_TINYMODEL_H
