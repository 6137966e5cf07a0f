//===- KvCacheKernelsTest.cpp - A bf16 or f16 KV cache in the CPU kernels -===//
//
// `tfmc --kv-cache-dtype bf16|f16` (docs/precision.md): the kernels that
// write a cache slot (linear, gated linear, rope) store their output rounded
// to nearest even (storedAs), and attention widens the keys and values it
// reads. The rounding is checked on hand-derived bit patterns; each kernel
// against its f32 reference, rounded (writers) or fed the widened values
// (attention), within the f32 kernels' tolerance.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"
#include "support/PlanFormat.h"
#include "test/unit/KernelReference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace tfmc::codegen;
using namespace tfmc::test;

namespace {

/// storedAs(type, x) of each of `inputs`, JIT-compiled: the stored bits.
std::vector<uint16_t> stored(Halide::Type type, const std::vector<float> &inputs) {
  Buffer<float> in(int(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    in(int(i)) = inputs[i];
  Halide::Func f("stored");
  Halide::Var x("x");
  f(x) = kernels::storedAs(type, in(x));
  f.vectorize(x, 8, Halide::TailStrategy::GuardWithIf);
  Buffer<> out(type, {int(inputs.size())});
  f.realize(out, kernelTestTarget());
  std::vector<uint16_t> bits(inputs.size());
  std::memcpy(bits.data(), out.data(), bits.size() * sizeof(uint16_t));
  return bits;
}

/// Each input's stored bits are the expected ones.
void expectStored(Halide::Type type,
                  const std::vector<std::pair<float, uint16_t>> &cases) {
  std::vector<float> inputs;
  for (const auto &c : cases)
    inputs.push_back(c.first);
  std::vector<uint16_t> bits = stored(type, inputs);
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(bits[i], cases[i].second) << "input " << cases[i].first;
}

// bf16 keeps f32's sign, exponent and top 7 mantissa bits: 1 is 0x3F80 and
// one ulp at 1 is 2^-7. Ties (exactly half an ulp) go to the even neighbour.
TEST(KvCacheKernels, Bf16RoundsToNearestEven) {
  const float one = 1.0f, ulp = std::ldexp(1.0f, -7);
  expectStored(Halide::BFloat(16), {
      {one, 0x3F80},
      {one + ulp / 2, 0x3F80},                // 1 + 2^-8: a tie, 0x3F80 is even
      {one + 3 * ulp / 4, 0x3F81},            // 1 + 3·2^-9: above the tie, up
      {one + ulp / 4, 0x3F80},                // 1 + 2^-9: below, down
      {one + ulp + ulp / 2, 0x3F82},          // a tie above odd 0x3F81: up
      {-(one + ulp / 2), 0xBF80},             // the sign is kept
      {0.1f, 0x3DCD},                         // 0x3DCCCCCD: 0xCCCD > half, up
      {std::numeric_limits<float>::max(), 0x7F80}, // 0x7F7FFFFF: beyond bf16's, inf
      {0.0f, 0x0000},
      {-INFINITY, 0xFF80},
  });
  // A NaN stays a NaN, also one whose low bits would carry into the sign.
  for (uint32_t nan : {0x7FC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    float input;
    std::memcpy(&input, &nan, sizeof input);
    uint16_t got = stored(Halide::BFloat(16), {input})[0];
    EXPECT_EQ(got & 0x7F80, 0x7F80) << std::hex << nan;
    EXPECT_NE(got & 0x007F, 0) << std::hex << nan;
  }
}

// f16: 10 mantissa bits, one ulp at 1 is 2^-10; largest finite 65504.
TEST(KvCacheKernels, F16RoundsToNearestEven) {
  const float one = 1.0f, ulp = std::ldexp(1.0f, -10);
  expectStored(Halide::Float(16), {
      {one, 0x3C00},
      {one + ulp / 2, 0x3C00},                // 1 + 2^-11: a tie, down to even
      {one + 3 * ulp / 4, 0x3C01},            // 1 + 3·2^-12: up
      {one + ulp + ulp / 2, 0x3C02},          // a tie above odd 0x3C01: up
      {65504.0f, 0x7BFF},                     // the largest f16
      {65520.0f, 0x7C00},                     // a tie above odd 0x7BFF: inf
      {std::ldexp(1.0f, -24), 0x0001},        // the smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},        // half of it: a tie, down to 0
      {3 * std::ldexp(1.0f, -26), 0x0001},    // above the tie: up
  });
}

/// `values` rounded as the cache stores them (Halide's own conversions,
/// which round to nearest even), widened back to f32.
Buffer<float> roundedLike(Halide::Type type, const Buffer<float> &values) {
  Buffer<float> result(values.copy());
  result.for_each_value([&](float &x) {
    x = type == Halide::BFloat(16) ? float(Halide::bfloat16_t(x))
                                   : float(Halide::float16_t(x));
  });
  return result;
}

/// A narrow buffer of `values` (already representable), as the cache holds it.
Buffer<> narrowBuffer(Halide::Type type, const Buffer<float> &values) {
  std::vector<int> extents;
  for (int d = 0; d < values.dimensions(); ++d)
    extents.push_back(values.dim(d).extent());
  Buffer<> result(type, extents);
  auto *bits = static_cast<uint16_t *>(result.data());
  size_t i = 0;
  values.for_each_value([&](const float &x) {
    bits[i++] = type == Halide::BFloat(16) ? Halide::bfloat16_t(x).to_bits()
                                           : Halide::float16_t(x).to_bits();
  });
  return result;
}

/// The stored output of a narrow-output kernel, widened to f32.
Buffer<float> widened(Halide::Type type, const Buffer<> &out) {
  std::vector<int> extents;
  for (int d = 0; d < out.dimensions(); ++d)
    extents.push_back(out.dim(d).extent());
  Buffer<float> result(extents);
  const auto *bits = static_cast<const uint16_t *>(out.data());
  size_t i = 0;
  result.for_each_value([&](float &x) {
    x = type == Halide::BFloat(16)
            ? float(Halide::bfloat16_t::make_from_bits(bits[i]))
            : float(Halide::float16_t::make_from_bits(bits[i]));
    ++i;
  });
  return result;
}

const Halide::Type kNarrow[] = {Halide::BFloat(16), Halide::Float(16)};

std::string typeName(Halide::Type type) {
  return type == Halide::BFloat(16) ? "bf16" : "f16";
}

// The key and value projections of a prefill (many rows: the packed form)
// and of a decode step (few rows: the dot form, one row its own tile) write bf16 or f16: the f32
// result rounded once. The f32 kernels' tolerance (1e-4) allows an f32 sum
// that lies next to a tie to round the other way (one ulp of the narrow
// type, 2^-8 relative for bf16), which is why each value's deviation is
// bounded by one ulp too.
TEST(KvCacheKernels, LinearWritesTheCacheRounded) {
  struct Case {
    const char *name;
    int M;
    std::map<std::string, int64_t> plan;
  };
  const int N = 29, K = 37;
  for (const Case &c : std::vector<Case>{
           {"packed", 45,
            {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 16},
             {"block_m", 6}, {"task_m", 12}, {"task_n", 32}}},
           {"one row", 1,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 8}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // A --max-batch 8 decode plan: 2-row tiles and the one-row tile
           // that one row runs (a branch of its own, storing its own way).
           {"decode plan, one row", 1,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 128},
             {"tiles_per_task", 3}, {"one_row_micro_n", 7},
             {"one_row_tiles_per_task", 2}}},
           {"decode plan, 3 rows", 3,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 128},
             {"tiles_per_task", 3}, {"one_row_micro_n", 7},
             {"one_row_tiles_per_task", 2}}}})
    for (Halide::Type type : kNarrow) {
      SCOPED_TRACE(std::string(c.name) + ", " + typeName(type));
      KernelSpec spec = cpuSpec(KernelKind::Linear, c.plan);
      spec.width = N;
      spec.inWidth = K;
      spec.hasBias = true;
      spec.outputType = type;
      Buffer<float> x = randomFloats({K, c.M}, 1, 2.0f), w = randomFloats({K, N}, 2),
                    bias = randomFloats({N}, 3);
      Buffer<> out(type, {N, c.M});
      realizeKernel(buildKernel(spec), {x, w, bias}, out);
      Buffer<float> expected = referenceLinear(x, w, bias, Buffer<float>(),
                                               ActivationFn::None);
      Buffer<float> got = widened(type, out);
      double unit = type == Halide::BFloat(16) ? std::ldexp(1.0, -8)
                                               : std::ldexp(1.0, -11);
      got.for_each_element([&](int n, int m) {
        // Rounded once: within half an ulp, u·|y|, plus f32's own 1e-4.
        double e = expected(n, m);
        EXPECT_LE(std::abs(got(n, m) - e), unit * std::abs(e) + 1e-4)
            << "at " << n << ", " << m;
      });
      expectClose(got, roundedLike(type, expected));
    }
}

// With int8 activations (tfmc --activations int8) the key and value
// projections quantise x and multiply integers; they write a narrow cache
// as the f32 forms do: the same kernel's f32 output rounded once by
// storedAs, bit for bit (the same sums, then the rounding), a row with a
// NaN in x a NaN throughout. The dot form, a microkernel over rows, and the
// microkernel's panels for many rows; int8 and int4 weights.
TEST(KvCacheKernels, IntegerLinearWritesTheCacheRounded) {
  struct Case {
    const char *name;
    int M;
    WeightType weights;
    std::string microkernel;
    std::map<std::string, int64_t> plan;
  };
  const std::map<std::string, int64_t> rows{
      {"vector", 16}, {"micro_m", 1}, {"micro_n", 4}, {"block_m", 256},
      {"tiles_per_task", 2}};
  const int N = 70, K = 192;
  for (const Case &c : std::vector<Case>{
           {"one row, int8, dot form", 1, WeightType::Int8, "", rows},
           {"3 rows, int4, microkernel", 3, WeightType::Int4, "avx512", rows},
           {"45 rows, int8, microkernel panels", 45, WeightType::Int8,
            "avx512",
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 32}, {"block_m", 6},
             {"tiles_per_task", 2}}}}) {
    KernelSpec spec = cpuSpec(KernelKind::Linear, c.plan);
    spec.integerMicrokernel = c.microkernel;
    spec.integerProducts = true;
    spec.width = N;
    spec.inWidth = K;
    spec.weightType = c.weights;
    spec.group = c.weights == WeightType::Int4 ? 32 : 64;
    spec.hasBias = true;
    Buffer<float> x = randomFloats({K, c.M}, 1, 2.0f);
    if (c.M > 2)
      x(K / 2, c.M - 1) = std::numeric_limits<float>::quiet_NaN();
    NarrowWeight w = narrow(randomFloats({K, N}, 2), c.weights, spec.group);
    std::vector<Buffer<>> inputs{x};
    for (const Buffer<> &argument : w.arguments)
      inputs.push_back(argument);
    inputs.push_back(randomFloats({N}, 3));
    Buffer<float> f32(N, c.M);
    realizeKernel(buildKernel(spec), inputs, f32);
    std::vector<float> values;
    f32.for_each_value([&](float v) { values.push_back(v); });
    for (Halide::Type type : kNarrow) {
      SCOPED_TRACE(std::string(c.name) + ", " + typeName(type));
      spec.outputType = type;
      Buffer<> out(type, {N, c.M});
      realizeKernel(buildKernel(spec), inputs, out);
      std::vector<uint16_t> expected = stored(type, values);
      const auto *bits = static_cast<const uint16_t *>(out.data());
      int nans = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(bits[i], expected[i]) << "output " << i % N << ", row " << i / N;
        nans += std::isnan(values[i]);
      }
      EXPECT_EQ(nans, c.M > 2 ? N : 0);
    }
  }
}

// Rope writes a Llama model's keys into the cache.
TEST(KvCacheKernels, RopeWritesTheCacheRounded) {
  const RopeCase &c = ropeCases.front();
  for (Halide::Type type : kNarrow) {
    SCOPED_TRACE(describe(c) + ", " + typeName(type));
    KernelSpec spec = ropeSpec(
        cpuSpec(KernelKind::Rope, {{"vector", c.lanes}, {"rows_per_task", 2}}),
        c);
    spec.outputType = type;
    KernelCase in = ropeInputs(c, 2);
    Buffer<> out(type, {int(spec.width), c.length, 2});
    out.raw_buffer()->dim[1].min = c.first;
    realizeKernel(buildKernel(spec), in.inputs, out);
    Buffer<float> got = widened(type, out);
    got.set_min(0, c.first, 0);
    expectClose(got, roundedLike(type, in.expected));
  }
}

// Attention over bf16 or f16 keys and values: the f32 answer over the values
// they hold (the cache's), causal from the end as in a decode step.
TEST(KvCacheKernels, AttentionReadsTheCacheWidened) {
  const int heads = 3, batch = 2, dim = 16;
  for (int queries : {1, 37})
    for (Halide::Type type : kNarrow) {
      SCOPED_TRACE(std::to_string(queries) + " queries, " + typeName(type));
      const int keys = 37;
      KernelSpec spec = cpuAttentionSpec(
          {{"vector", 8}, {"query_block", 16}, {"micro_k", 6},
           {"pv_queries", 2}, {"pv_width", 32}},
          heads, 0, dim);
      spec.mask.causal = true;
      spec.mask.queriesAtEnd = true;
      spec.keyType = spec.valueType = type;
      Buffer<float> q = randomFloats({dim, heads, queries, batch}, 7, 2.0f);
      Buffer<float> k =
          roundedLike(type, randomFloats({dim, heads, keys, batch}, 8, 2.0f));
      Buffer<float> v =
          roundedLike(type, randomFloats({dim, heads, keys, batch}, 9));
      Buffer<float> out(dim, heads, queries, batch);
      realizeKernel(buildKernel(spec),
                    {q, narrowBuffer(type, k), narrowBuffer(type, v)}, out);
      Buffer<int64_t> keep(keys, batch);
      keep.fill(1);
      AttentionMask mask;
      mask.causal = mask.queriesAtEnd = true;
      expectClose(out, referenceAttention(q, k, v, keep, mask,
                                          spec.attentionScale));
    }
}

// A paged cache (KernelSpec::pagedCache): K and V are a pool of head-major
// blocks (head dim, block position, head, block; KvBlocks.h), and key_rows
// gives each sequence's key's pool row (-1: none). The pool holds the keys
// and values of a dense cache in blocks of kBlockTokens positions, the
// blocks shuffled and interleaved between the sequences;
// sequence 1 has its first 6 keys absent (a newcomer shorter than the
// batch, left of its tokens), which the kernel must mask as the reference
// masks padding. Decode (one query, in place), the grouped-query head
// block, several queries (an extend step: rows staged), with padding and
// a window, f32 and bf16 pools, against the dense reference.
TEST(KvCacheKernels, AttentionReadsThePagedCache) {
  const int batch = 2, keys = 37, blockTokens = tfmc::plan::kBlockTokens,
            absent = 6;
  struct Case {
    const char *name;
    int heads, kvHeads, dim, queries;
    bool padding;
    int window;
    std::map<std::string, int64_t> plan;
  };
  const std::vector<Case> cases{
      {"decode", 3, 3, 16, 1, false, 0,
       {{"vector", 8}, {"query_block", 1}, {"micro_k", 6}, {"pv_queries", 1},
        {"pv_width", 32}, {"stage_kv", 0}}},
      {"decode, padding, window", 3, 3, 16, 1, true, 9,
       {{"vector", 16}, {"query_block", 1}, {"micro_k", 16},
        {"pv_queries", 1}, {"pv_width", 64}, {"stage_kv", 0}}},
      {"grouped heads", 8, 2, 16, 1, false, 0,
       {{"vector", 8}, {"query_block", 4}, {"head_block", 1},
        {"micro_k", 6}, {"pv_queries", 2}, {"pv_width", 32},
        {"stage_kv", 0}}},
      {"extend, staged", 2, 2, 8, 5, true, 0,
       {{"vector", 8}, {"query_block", 16}, {"micro_k", 6},
        {"pv_queries", 2}, {"pv_width", 32}}},
  };
  const Halide::Type types[] = {Halide::Float(32), Halide::BFloat(16)};
  for (const Case &c : cases)
    for (Halide::Type type : types) {
      SCOPED_TRACE(std::string(c.name) + ", " +
                   (type == Halide::Float(32) ? "f32" : typeName(type)));
      KernelSpec spec = cpuAttentionSpec(c.plan, c.heads, c.kvHeads, c.dim);
      spec.mask.causal = spec.mask.queriesAtEnd = true;
      spec.mask.padding = c.padding;
      spec.mask.window = c.window;
      spec.keyType = spec.valueType = type;
      spec.pagedCache = true;
      Buffer<float> q =
          randomFloats({c.dim, c.heads, c.queries, batch}, 41, 2.0f);
      Buffer<float> k =
          randomFloats({c.dim, c.kvHeads, keys, batch}, 42, 2.0f);
      Buffer<float> v = randomFloats({c.dim, c.kvHeads, keys, batch}, 43);
      if (type != Halide::Float(32)) {
        k = roundedLike(type, k);
        v = roundedLike(type, v);
      }
      // Sequence b's tokens: keys [first_b, keys); token t of it is in its
      // block t / 16, position t % 16. Blocks are numbered so that the two
      // sequences' blocks interleave in reverse order, and the pool has
      // spare blocks (rows no key names hold garbage).
      const int first[] = {0, absent};
      const int blocksPerSequence = (keys + blockTokens - 1) / blockTokens;
      const int poolBlocks = 2 * blocksPerSequence + 3;
      Buffer<float> kPool = randomFloats(
          {c.dim, blockTokens, c.kvHeads, poolBlocks}, 44, 50.f);
      Buffer<float> vPool = randomFloats(
          {c.dim, blockTokens, c.kvHeads, poolBlocks}, 45, 50.f);
      Buffer<int32_t> keyRows(keys, batch);
      Buffer<int64_t> keep(keys, batch);
      for (int b = 0; b < batch; ++b)
        for (int j = 0; j < keys; ++j) {
          const int t = j - first[b];
          keep(j, b) = t >= 0 && !(c.padding && b == 0 && j % 5 == 2);
          if (t < 0) {
            keyRows(j, b) = -1;
            continue;
          }
          const int block = poolBlocks - 1 - (2 * (t / blockTokens) + b);
          const int row = block * blockTokens + t % blockTokens;
          keyRows(j, b) = row;
          for (int h = 0; h < c.kvHeads; ++h)
            for (int d = 0; d < c.dim; ++d) {
              kPool(d, t % blockTokens, h, block) = k(d, h, j, b);
              vPool(d, t % blockTokens, h, block) = v(d, h, j, b);
            }
        }
      std::vector<Buffer<>> inputs;
      inputs.push_back(q);
      if (type == Halide::Float(32)) {
        inputs.push_back(kPool);
        inputs.push_back(vPool);
      } else {
        inputs.push_back(narrowBuffer(type, roundedLike(type, kPool)));
        inputs.push_back(narrowBuffer(type, roundedLike(type, vPool)));
      }
      inputs.push_back(keyRows);
      // The caller's padding mask says nothing of the absent keys: the
      // kernel masks them from key_rows alone.
      Buffer<int64_t> callerMask(keys, batch);
      callerMask.for_each_element(
          [&](int j, int b) { callerMask(j, b) = !(c.padding && b == 0 && j % 5 == 2); });
      if (c.padding)
        inputs.push_back(callerMask);
      Buffer<float> out(c.dim, c.heads, c.queries, batch);
      realizeKernel(buildKernel(spec), inputs, out);
      AttentionMask mask;
      mask.causal = mask.queriesAtEnd = mask.padding = true;
      mask.window = c.window;
      expectClose(out, referenceAttention(q, k, v, keep, mask,
                                          spec.attentionScale));
    }
}

} // namespace
