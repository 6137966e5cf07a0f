//===- TinyModel.cpp - A hand-written plan and kernels for the runtime ----===//
//
// A tiny hand-written plan runs hand-written kernels with Halide's argv ABI
// (an embedding lookup over an i64 ids buffer, a masked scale, a "linear"
// over a 2-D view of a 3-D tensor with a weight offset view), so the
// executor is tested without Halide's compiler or runtime: a test double of
// HalideHooks.h (FakeHalide.cpp) stands in for the Halide runtime object.
//
// Linked twice: into the gtest binary (RuntimeTest.cpp, RuntimeCommandTest.cpp)
// and, with the runtime's main(), as `tfmc-runtime-fake-model`, whose command
// line RuntimeCommandTest.cpp runs.
//
//===----------------------------------------------------------------------===//

#include "test/unit/TinyModel.h"

#include "FakeHalide.h"
#include "runtime/core/HalideHooks.h"
#include "runtime/core/Model.h"
#include "runtime/core/Plan.h"
#include "runtime/core/Safetensors.h"
#include "runtime/core/tfmc.h"

#include <HalideRuntime.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <map>
#include <string>
#include <utility>
#include <mutex>
#include <vector>

using namespace tfmc::runtime;

namespace tfmc::test {
std::vector<int32_t> embedIdsExtents;
unsigned embedFloatControl = 0;
} // namespace tfmc::test

using tfmc::test::embedFloatControl;
using tfmc::test::embedIdsExtents;

extern "C" {

/// out[b, s, :] = table[ids[b, s], :]
int tfmc_test_embed(void **args) {
  halide_buffer_t *ids = arg(args, 0), *table = arg(args, 1),
                  *out = arg(args, 2);
  if (!checkBuffer(ids, "ids", 2, halide_type_int, 64) ||
      !checkBuffer(table, "table", 2, halide_type_float, 32) ||
      !checkBuffer(out, "out", 3, halide_type_float, 32))
    return -1;
  {
    // Models made by share() run this kernel on several threads at once.
    static std::mutex lock;
    std::lock_guard<std::mutex> guard(lock);
    embedIdsExtents = {ids->dim[0].extent, ids->dim[1].extent};
#if defined(__x86_64__)
    embedFloatControl = _mm_getcsr();
#endif
  }
  const int32_t width = table->dim[0].extent, rows = table->dim[1].extent;
  const int32_t length = ids->dim[0].extent, batch = ids->dim[1].extent;
  if (out->dim[0].extent != width || out->dim[1].extent != length ||
      out->dim[2].extent != batch) {
    fakeHalideError = "out has the wrong extents";
    return -1;
  }
  const auto *idData = reinterpret_cast<const int64_t *>(dataOf(ids));
  const auto *tableData = reinterpret_cast<const float *>(dataOf(table));
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  for (int32_t t = 0; t < batch * length; ++t) {
    int64_t id = idData[t];
    if (id < 0 || id >= rows) {
      fakeHalideError = "id out of range";
      return -1;
    }
    for (int32_t d = 0; d < width; ++d)
      outData[t * width + d] = tableData[id * width + d];
  }
  return 0;
}

/// out[b, s, :] = 2 * in[b, s, :] * mask[b, s]
int tfmc_test_scale_mask(void **args) {
  halide_buffer_t *in = arg(args, 0), *mask = arg(args, 1), *out = arg(args, 2);
  if (!checkBuffer(in, "in", 3, halide_type_float, 32) ||
      !checkBuffer(mask, "mask", 2, halide_type_int, 64) ||
      !checkBuffer(out, "out", 3, halide_type_float, 32))
    return -1;
  const int32_t width = in->dim[0].extent;
  const int32_t positions = in->dim[1].extent * in->dim[2].extent;
  if (mask->dim[0].extent * mask->dim[1].extent != positions) {
    fakeHalideError = "mask has the wrong extents";
    return -1;
  }
  const auto *inData = reinterpret_cast<const float *>(dataOf(in));
  const auto *maskData = reinterpret_cast<const int64_t *>(dataOf(mask));
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  for (int32_t p = 0; p < positions; ++p)
    for (int32_t d = 0; d < width; ++d)
      outData[p * width + d] =
          2.0f * inData[p * width + d] * static_cast<float>(maskData[p]);
  return 0;
}

/// out[r, n] = sum_d in[r, d] * weight[n, d]  (in viewed as 2-D: [B*S, D])
int tfmc_test_linear(void **args) {
  halide_buffer_t *in = arg(args, 0), *weight = arg(args, 1),
                  *out = arg(args, 2);
  if (!checkBuffer(in, "in", 2, halide_type_float, 32) ||
      !checkBuffer(weight, "weight", 2, halide_type_float, 32) ||
      !checkBuffer(out, "out", 2, halide_type_float, 32))
    return -1;
  const int32_t inner = in->dim[0].extent, rows = in->dim[1].extent;
  const int32_t outer = weight->dim[1].extent;
  if (weight->dim[0].extent != inner || out->dim[0].extent != outer ||
      out->dim[1].extent != rows) {
    fakeHalideError = "linear extents disagree";
    return -1;
  }
  const auto *inData = reinterpret_cast<const float *>(dataOf(in));
  const auto *weightData = reinterpret_cast<const float *>(dataOf(weight));
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t n = 0; n < outer; ++n) {
      float sum = 0;
      for (int32_t d = 0; d < inner; ++d)
        sum += inData[r * inner + d] * weightData[n * inner + d];
      outData[r * outer + n] = sum;
    }
  return 0;
}

/// out = in, over (W, R) views (writes new rows into a KV cache slot).
int tfmc_test_copy(void **args) {
  halide_buffer_t *in = arg(args, 0), *out = arg(args, 1);
  if (!checkBuffer(in, "in", 3, halide_type_float, 32) ||
      !checkBuffer(out, "out", 3, halide_type_float, 32))
    return -1;
  int64_t count = int64_t(in->dim[0].extent) * in->dim[1].extent *
                  in->dim[2].extent;
  std::memcpy(dataOf(out), dataOf(in), count * sizeof(float));
  return 0;
}

/// out[b, 0, :] = sum over rows r of in[b, r, :] (reads a KV cache slot).
int tfmc_test_sum_rows(void **args) {
  halide_buffer_t *in = arg(args, 0), *out = arg(args, 1);
  if (!checkBuffer(in, "in", 3, halide_type_float, 32) ||
      !checkBuffer(out, "out", 3, halide_type_float, 32))
    return -1;
  const int32_t width = in->dim[0].extent, rows = in->dim[1].extent,
                batch = in->dim[2].extent;
  const auto *inData = reinterpret_cast<const float *>(dataOf(in));
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  for (int32_t b = 0; b < batch; ++b)
    for (int32_t d = 0; d < width; ++d) {
      float sum = 0;
      for (int32_t r = 0; r < rows; ++r)
        sum += inData[(b * rows + r) * width + d];
      outData[b * width + d] = sum;
    }
  return 0;
}

int tfmc_test_sum_paged(void **args) {
  halide_buffer_t *pool = arg(args, 0), *rows = arg(args, 1),
                  *out = arg(args, 2);
  // The pool as attention reads it: (head width, block position, head,
  // block), head-major blocks.
  if (!checkBuffer(pool, "pool", 4, halide_type_float, 32) ||
      !checkBuffer(rows, "key_rows", 2, halide_type_int, 32) ||
      !checkBuffer(out, "out", 3, halide_type_float, 32))
    return -1;
  const int32_t headWidth = pool->dim[0].extent,
                blockTokens = pool->dim[1].extent, heads = pool->dim[2].extent,
                width = headWidth * heads,
                poolRows = pool->dim[3].extent * blockTokens,
                keys = rows->dim[0].extent, batch = rows->dim[1].extent;
  const auto *poolData = reinterpret_cast<const float *>(dataOf(pool));
  const auto *rowData = reinterpret_cast<const int32_t *>(dataOf(rows));
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  for (int32_t b = 0; b < batch; ++b)
    for (int32_t d = 0; d < width; ++d) {
      float sum = 0;
      for (int32_t j = 0; j < keys; ++j) {
        const int32_t row = rowData[b * keys + j];
        if (row >= poolRows) {
          fakeHalideError = "key_rows names a row past the pool";
          return -1;
        }
        if (row >= 0)
          sum += poolData[(((row / blockTokens) * heads + d / headWidth) *
                               blockTokens +
                           row % blockTokens) *
                              headWidth +
                          d % headWidth];
      }
      outData[b * width + d] = sum;
    }
  return 0;
}

/// Fails like a Halide pipeline whose bounds check trips.
int tfmc_test_fail(void **) {
  fakeHalideError = "Input buffer b0 is accessed at 10, which is beyond the "
                    "max (9) in dimension 0";
  return -3;
}

/// Fails without a message.
int tfmc_test_fail_silently(void **) { return -7; }

} // extern "C"

//===----------------------------------------------------------------------===//
// The tiny model: vocab 10, d 4, 3 outputs, B <= 2, S <= 6 (max_len 8)
//===----------------------------------------------------------------------===//

// The glue symbols codegen writes for a model; the C API and main() use them.
extern "C" {
extern const struct tfmc_kernel_entry tfmc_kernels[];
extern const int tfmc_num_kernels;
extern const char tfmc_plan_json[];

const struct tfmc_kernel_entry tfmc_kernels[] = {
    {"tfmc_test_embed", tfmc_test_embed},
    {"tfmc_test_scale_mask", tfmc_test_scale_mask},
    {"tfmc_test_linear", tfmc_test_linear},
    {"tfmc_test_fail", tfmc_test_fail},
    {"tfmc_test_fail_silently", tfmc_test_fail_silently},
};
const int tfmc_num_kernels = 5;

const char tfmc_plan_json[] = R"json({
  "format": 1,
  "model": "tiny",
  "entry": "forward",
  "target": "host",
  "vocab": 10, "max_len": 8,
  "max_batch": 2, "max_seq": 6,
  "arena_bytes": 528,
  "symbols": ["B", "S"],
  "inputs": [
    {"name": "input_ids", "kind": "ids", "dims": ["B", "S"]},
    {"name": "attention_mask", "kind": "mask", "dims": ["B", "S"], "optional": true}
  ],
  "weights": [
    {"name": "embed.weight", "shape": [10, 4]},
    {"name": "proj.weight", "shape": [2, 3, 4]},
    {"name": "final.norm.weight", "shape": [4], "init": "ones"},
    {"name": "final.norm.bias", "shape": [4], "init": "zeros"}
  ],
  "values": [
    {"kind": "input", "index": 0},
    {"kind": "input", "index": 1},
    {"kind": "weight", "index": 0},
    {"kind": "weight", "index": 1, "offset": 12},
    {"kind": "arena", "offset": 0},
    {"kind": "arena", "offset": 192},
    {"kind": "arena", "offset": 384}
  ],
  "output": {"name": "logits", "value": 6, "dims": ["B", "S", 3]},
  "steps": [
    {"kernel": "tfmc_test_embed", "args": [
      {"value": 0, "type": "i64", "dims": [["S"], ["B"]]},
      {"value": 2, "type": "f32", "dims": [[4], [10]]},
      {"value": 4, "type": "f32", "dims": [[4], ["S"], ["B"]]}]},
    {"kernel": "tfmc_test_scale_mask", "args": [
      {"value": 4, "type": "f32", "dims": [[4], ["S"], ["B"]]},
      {"value": 1, "type": "i64", "dims": [["S"], ["B"]]},
      {"value": 5, "type": "f32", "dims": [[4], ["S"], ["B"]]}]},
    {"kernel": "tfmc_test_linear", "args": [
      {"value": 5, "type": "f32", "dims": [[4], ["B", "S"]]},
      {"value": 3, "type": "f32", "dims": [[4], [3]]},
      {"value": 6, "type": "f32", "dims": [[3], ["B", "S"]]}]}
  ]
})json";

// One variant that every CPU runs (the fake kernels are plain C++).
extern const struct tfmc_variant tfmc_variants[];
extern const int tfmc_num_variants;
extern const struct tfmc_cpu_target tfmc_cpu_targets[];
extern const int tfmc_num_cpu_targets;
const struct tfmc_variant tfmc_variants[] = {
    {"host", "", tfmc_kernels, 5, tfmc_plan_json}};
const int tfmc_num_variants = 1;
const struct tfmc_cpu_target tfmc_cpu_targets[] = {{"x86-64-avx2", "avx2 fma"}};
const int tfmc_num_cpu_targets = 1;
} // extern "C"
