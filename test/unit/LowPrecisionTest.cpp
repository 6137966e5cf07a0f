//===- LowPrecisionTest.cpp - bf16 and int8 weights in the runtime --------===//
//
// A tiny hand-written plan in the format `tfmc --weight-dtype` writes
// (Plan.h): an int8 embedding table in blocks of an f16 scale and 4 values
// over 6 columns (a 2-column tail block), a bf16 linear weight the file holds
// transposed (Hugging Face Conv1D), and an f32 bias. Fake kernels read them
// as the real ones do (q * scale; bf16 widened), so the tests check what
// the runtime hands the kernels: the converted values, the layout after the
// transpose, the blocks at a view's offset, and the halide types.
//
// The weights are chosen so that conversion is exact except where the test
// says otherwise: every int8 group holds +-127 times a power of two (scale
// that power, q the integers), the linear weight is in quarters (exact in
// bf16) but for one value, whose bf16 rounding is worked out by hand.
//
// Built twice: as the gtest binary, and with TFMC_RUNTIME_TEST_FAKE_MODEL as
// `tfmc-runtime-fake-lowprec`, the same plan with the runtime's main(), whose
// command line the tests run.
//
//===----------------------------------------------------------------------===//

#include "FakeHalide.h"
#include "runtime/core/Model.h"
#include "runtime/core/Plan.h"
#include "runtime/core/Safetensors.h"
#include "runtime/core/tfmc.h"

#include <cstring>
#include <string>
#include <vector>

using namespace tfmc::runtime;

namespace {

constexpr int kGroup = 4, kBlockBytes = 2 + kGroup;

float halfToFloat(uint16_t half) {
  // Only normal halves and zero occur here (scales 0.5, 1, 2).
  if ((half & 0x7fff) == 0)
    return 0.0f;
  uint32_t bits = (uint32_t(half & 0x8000) << 16) |
                  ((((half >> 10) & 0x1f) + 112u) << 23) |
                  (uint32_t(half & 0x3ff) << 13);
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

float bf16Value(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

} // namespace

extern "C" {

/// out[b, s, d] = q · scale of value d % 4 of block d / 4 of row ids[b, s]:
/// each block its f16 scale (little-endian), then 4 values.
int tfmc_q_embed(void **args) {
  halide_buffer_t *ids = arg(args, 0), *table = arg(args, 1),
                  *out = arg(args, 2);
  if (!checkBuffer(ids, "ids", 2, halide_type_int, 64) ||
      !checkBuffer(table, "table", 2, halide_type_int, 8) ||
      !checkBuffer(out, "out", 3, halide_type_float, 32))
    return -1;
  const int32_t rowBytes = table->dim[0].extent, rows = table->dim[1].extent;
  const int32_t width = out->dim[0].extent;
  if (rowBytes != (width + kGroup - 1) / kGroup * kBlockBytes) {
    fakeHalideError = "the table's rows have the wrong extent";
    return -1;
  }
  const auto *idData = reinterpret_cast<const int64_t *>(dataOf(ids));
  const auto *bytes = dataOf(table);
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  const int32_t tokens = ids->dim[0].extent * ids->dim[1].extent;
  for (int32_t t = 0; t < tokens; ++t) {
    int64_t id = idData[t];
    if (id < 0 || id >= rows) {
      fakeHalideError = "id out of range";
      return -1;
    }
    for (int32_t d = 0; d < width; ++d) {
      const uint8_t *block = bytes + id * rowBytes + d / kGroup * kBlockBytes;
      outData[t * width + d] =
          float(int8_t(block[2 + d % kGroup])) *
          halfToFloat(uint16_t(block[0] | (block[1] << 8)));
    }
  }
  return 0;
}

/// out[r, n] = bias[n] + sum_d x[r, d] * w[n, d], w bf16
int tfmc_bf16_linear(void **args) {
  halide_buffer_t *x = arg(args, 0), *w = arg(args, 1), *bias = arg(args, 2),
                  *out = arg(args, 3);
  if (!checkBuffer(x, "x", 2, halide_type_float, 32) ||
      !checkBuffer(w, "w", 2, halide_type_bfloat, 16) ||
      !checkBuffer(bias, "bias", 1, halide_type_float, 32) ||
      !checkBuffer(out, "out", 2, halide_type_float, 32))
    return -1;
  const int32_t inner = x->dim[0].extent, rows = x->dim[1].extent;
  const int32_t outer = w->dim[1].extent;
  const auto *xData = reinterpret_cast<const float *>(dataOf(x));
  const auto *wData = reinterpret_cast<const uint16_t *>(dataOf(w));
  const auto *bData = reinterpret_cast<const float *>(dataOf(bias));
  auto *outData = reinterpret_cast<float *>(dataOf(out));
  for (int32_t r = 0; r < rows; ++r)
    for (int32_t n = 0; n < outer; ++n) {
      float sum = bData[n];
      for (int32_t d = 0; d < inner; ++d)
        sum += xData[r * inner + d] * bf16Value(wData[n * inner + d]);
      outData[r * outer + n] = sum;
    }
  return 0;
}

extern const struct tfmc_kernel_entry tfmc_kernels[];
extern const int tfmc_num_kernels;
extern const char tfmc_plan_json[];

const struct tfmc_kernel_entry tfmc_kernels[] = {
    {"tfmc_q_embed", tfmc_q_embed},
    {"tfmc_bf16_linear", tfmc_bf16_linear},
};
const int tfmc_num_kernels = 2;

const char tfmc_plan_json[] = R"json({
  "format": 1,
  "model": "tinyq",
  "entry": "forward",
  "target": "host",
  "vocab": 10, "max_len": 8,
  "max_batch": 2, "max_seq": 6,
  "arena_bytes": 432,
  "symbols": ["B", "S"],
  "inputs": [{"name": "input_ids", "kind": "ids", "dims": ["B", "S"]}],
  "weights": [
    {"name": "embed.weight", "shape": [10, 6], "dtype": "int8", "group": 4},
    {"name": "proj.weight", "shape": [3, 6], "dtype": "bf16",
     "transposed": true},
    {"name": "proj.bias", "shape": [3], "init": "zeros"}
  ],
  "values": [
    {"kind": "input", "index": 0},
    {"kind": "weight", "index": 0},
    {"kind": "weight", "index": 1},
    {"kind": "weight", "index": 2},
    {"kind": "arena", "offset": 0},
    {"kind": "arena", "offset": 288}
  ],
  "output": {"name": "logits", "value": 5, "dims": ["B", "S", 3]},
  "steps": [
    {"kernel": "tfmc_q_embed", "args": [
      {"value": 0, "type": "i64", "dims": [["S"], ["B"]]},
      {"value": 1, "type": "i8", "dims": [[12], [10]]},
      {"value": 4, "type": "f32", "dims": [[6], ["S"], ["B"]]}]},
    {"kernel": "tfmc_bf16_linear", "args": [
      {"value": 4, "type": "f32", "dims": [[6], ["B", "S"]]},
      {"value": 2, "type": "bf16", "dims": [[6], [3]]},
      {"value": 3, "type": "f32", "dims": [[3]]},
      {"value": 5, "type": "f32", "dims": [[3], ["B", "S"]]}]}
  ]
})json";

// One variant that every CPU runs (the fake kernels are plain C++).
extern const struct tfmc_variant tfmc_variants[];
extern const int tfmc_num_variants;
extern const struct tfmc_cpu_target tfmc_cpu_targets[];
extern const int tfmc_num_cpu_targets;
const struct tfmc_variant tfmc_variants[] = {
    {"host", "", tfmc_kernels, 2, tfmc_plan_json}};
const int tfmc_num_variants = 1;
const struct tfmc_cpu_target tfmc_cpu_targets[] = {{"x86-64-avx2", "avx2 fma"}};
const int tfmc_num_cpu_targets = 1;
} // extern "C"

#ifndef TFMC_RUNTIME_TEST_FAKE_MODEL

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using Json = nlohmann::json;

constexpr int64_t kVocab = 10, kWidth = 6, kOutputs = 3;

/// Row v: integers within +-127 with a +-127 in each group, times
/// 2^(v % 3 - 1): the scales are 0.5, 1 or 2, q the integers.
float rowScale(int64_t v) { return std::ldexp(1.0f, int(v % 3) - 1); }
std::vector<float> embedIntegers(int64_t v) {
  float sign = v % 2 ? 1.0f : -1.0f;
  return {float(127 - v), float(v), float(-v), 127 * sign, float(2 * v),
          -127.0f};
}
std::vector<float> embedValues() {
  std::vector<float> values;
  for (int64_t v = 0; v < kVocab; ++v)
    for (float integer : embedIntegers(v))
      values.push_back(integer * rowScale(v));
  return values;
}

/// The linear weight in the plan's [3, 6] layout: quarters, exact in bf16,
/// but for [1][2] = 1 + 2^-8 + 2^-9: 0.75 of bf16's step 2^-7 above 1,
/// which rounds to 1 + 2^-7.
float projValue(int64_t n, int64_t d) {
  return n == 1 && d == 2 ? 1.0f + 0x1p-8f + 0x1p-9f
                          : float(n * kWidth + d) * 0.25f - 2.0f;
}
float projAsBf16(int64_t n, int64_t d) {
  return n == 1 && d == 2 ? 1.0f + 0x1p-7f : projValue(n, d);
}
/// As the file holds it: [6, 3] (Conv1D).
std::vector<float> projFileValues() {
  std::vector<float> values;
  for (int64_t d = 0; d < kWidth; ++d)
    for (int64_t n = 0; n < kOutputs; ++n)
      values.push_back(projValue(n, d));
  return values;
}
const std::vector<float> kBias = {0.5f, -1.0f, 2.0f};

/// The logits, from the values as the fake kernels would see them after an
/// exact conversion.
std::vector<float> referenceLogits(const std::vector<int64_t> &ids) {
  std::vector<float> logits;
  for (int64_t id : ids) {
    std::vector<float> hidden = embedIntegers(id);
    for (float &value : hidden)
      value *= rowScale(id);
    for (int64_t n = 0; n < kOutputs; ++n) {
      float sum = kBias[n];
      for (int64_t d = 0; d < kWidth; ++d)
        sum += hidden[d] * projAsBf16(n, d);
      logits.push_back(sum);
    }
  }
  return logits;
}

TensorView view(const std::string &name, DType dtype,
                std::vector<int64_t> shape, const void *data,
                std::size_t bytes) {
  TensorView tensor;
  tensor.name = name;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  tensor.data = data;
  tensor.bytes = bytes;
  return tensor;
}

class LowPrecisionTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfmc-lowprec-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    fakeHalideError.clear();
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  /// The f32 weights, with `replace` in place of tensors of the same name.
  std::string writeF32(const std::string &name,
                       std::vector<TensorView> replace = {},
                       const std::map<std::string, std::string> &metadata = {}) {
    static const std::vector<float> embed = embedValues(),
                                    proj = projFileValues();
    std::vector<TensorView> tensors = {
        view("embed.weight", DType::F32, {kVocab, kWidth}, embed.data(),
             embed.size() * 4),
        view("proj.weight", DType::F32, {kWidth, kOutputs}, proj.data(),
             proj.size() * 4),
        view("proj.bias", DType::F32, {kOutputs}, kBias.data(), 12)};
    return write(name, tensors, replace, metadata);
  }

  std::string write(const std::string &name, std::vector<TensorView> tensors,
                    const std::vector<TensorView> &replace,
                    const std::map<std::string, std::string> &metadata = {}) {
    for (const TensorView &other : replace) {
      bool replaced = false;
      for (TensorView &tensor : tensors)
        if (tensor.name == other.name) {
          tensor = other;
          replaced = true;
        }
      if (!replaced)
        tensors.push_back(other);
    }
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                 [](const TensorView &t) {
                                   return t.data == nullptr;
                                 }),
                  tensors.end());
    std::string path = pathOf(name), error;
    EXPECT_TRUE(writeSafetensors(path, tensors, error, metadata)) << error;
    return path;
  }

  static Plan plan() {
    std::string error;
    std::optional<Plan> parsed = parsePlan(tfmc_plan_json, error);
    EXPECT_TRUE(parsed) << error;
    return parsed ? *parsed : Plan();
  }

  std::unique_ptr<Model> load(const std::string &weights, std::string &error,
                              const Plan &use = plan()) {
    return Model::create(use, tfmc_kernels, tfmc_num_kernels, weights,
                         error);
  }

  std::vector<float> run(Model &model, std::vector<int64_t> ids,
                         int64_t batch) {
    std::string error;
    InputView input{"input_ids", {batch, int64_t(ids.size()) / batch},
                    ids.data()};
    std::optional<OutputView> out = model.forward({input}, error);
    EXPECT_TRUE(out) << error;
    if (!out)
      return {};
    return std::vector<float>(out->data, out->data + out->numElements());
  }

  /// The error of loading the f32 weights with `replace`d tensors.
  std::string
  loadError(std::vector<TensorView> replace,
            const std::map<std::string, std::string> &metadata = {}) {
    std::string path =
                    writeF32("bad.safetensors", std::move(replace), metadata),
                error;
    EXPECT_EQ(load(path, error), nullptr);
    EXPECT_EQ(error.find('\n'), std::string::npos);
    return error.substr(path.size() + 2); // past "PATH: "
  }

  std::string dir;
};

TEST_F(LowPrecisionTest, AnF32FileIsConvertedAtLoad) {
  std::string error;
  std::unique_ptr<Model> model = load(writeF32("w.safetensors"), error);
  ASSERT_TRUE(model) << error;
  const std::vector<int64_t> ids = {1, 2, 3, 9, 0, 5};
  EXPECT_EQ(run(*model, ids, 2), referenceLogits(ids));
  const LoadStats &stats = model->loadStats();
  EXPECT_EQ(stats.convertedTensors, 2);
  // int8 10 rows x 2 blocks x 6 bytes + bf16 18 x 2 + f32 3 x 4.
  EXPECT_EQ(stats.weightBytes, 120 + 36 + 12);
  EXPECT_EQ(storedWeightBytes(model->plan()), 168);
  EXPECT_GE(stats.loadSeconds, stats.convertSeconds);
}

TEST_F(LowPrecisionTest, AConvertedFileLoadsInPlaceAndRunsTheSame) {
  std::string error;
  std::unique_ptr<Model> model = load(writeF32("w.safetensors"), error);
  ASSERT_TRUE(model) << error;
  std::optional<std::vector<TensorView>> stored = model->storedWeights(error);
  ASSERT_TRUE(stored) << error;
  std::vector<std::string> layout;
  for (const TensorView &tensor : *stored)
    layout.push_back(tensor.name + " " + dtypeName(tensor.dtype) + " " +
                     formatShape(tensor.shape));
  EXPECT_EQ(layout, (std::vector<std::string>{
                        "embed.weight I8 [10, 2, 6]",
                        "proj.weight BF16 [3, 6]", "proj.bias F32 [3]"}));
  // Hand-derived: row 0's blocks have the scale 0.5 (0x3800, little-endian
  // 00 38), its q the integers (127, 0, 0, -127 | 0, -127) and the tail
  // block's padding 0; row 1's scale is 1 (0x3c00), row 2's 2 (0x4000).
  const auto *bytes = static_cast<const uint8_t *>((*stored)[0].data);
  EXPECT_EQ(std::vector<int>(bytes, bytes + 12),
            (std::vector<int>{0x00, 0x38, 127, 0, 0, 0x81, //
                              0x00, 0x38, 0, 0x81, 0, 0}));
  EXPECT_EQ(std::vector<int>(bytes + 12, bytes + 14),
            (std::vector<int>{0x00, 0x3c}));
  EXPECT_EQ(std::vector<int>(bytes + 24, bytes + 26),
            (std::vector<int>{0x00, 0x40}));
  // proj [1][2] rounded to bf16: 1 + 2^-7 = 0x3f81.
  EXPECT_EQ(static_cast<const uint16_t *>((*stored)[1].data)[1 * 6 + 2],
            0x3f81);

  // The metadata marks the narrow tensors as in the program's layout (the
  // Conv1D proj.weight is [3, 6] here, not the checkpoint's [6, 3]).
  std::string converted = pathOf("w2.safetensors");
  ASSERT_TRUE(writeSafetensors(converted, *stored, error,
                               {{"tfmc.weight_dtype", "int8"}}))
      << error;
  std::unique_ptr<Model> again = load(converted, error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->loadStats().convertedTensors, 0);
  EXPECT_EQ(again->copiedWeightBytes(), 0u); // mapped, aligned by the writer
  EXPECT_EQ(again->warning(), "");
  const std::vector<int64_t> ids = {4, 8, 7, 6, 1, 0};
  EXPECT_EQ(run(*again, ids, 1), run(*model, ids, 1));
  EXPECT_EQ(run(*again, ids, 1), referenceLogits(ids));
}

/// `value`'s bfloat16 bits when it is exact in bf16 (its low 16 bits zero),
/// and its half bits when it is a normal half or zero: the test's values
/// are, so no rounding is involved in writing the narrow checkpoints.
uint16_t exactBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  EXPECT_EQ(bits & 0xffffu, 0u) << value << " is not exact in bf16";
  return static_cast<uint16_t>(bits >> 16);
}
uint16_t exactHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) == 0)
    return static_cast<uint16_t>(sign);
  const int exponent = int((bits >> 23) & 0xff) - 127;
  EXPECT_TRUE(exponent >= -14 && exponent <= 15 && (bits & 0x1fffu) == 0)
      << value << " is not a normal half";
  return static_cast<uint16_t>(sign | uint32_t(exponent + 15) << 10 |
                               ((bits >> 13) & 0x3ffu));
}

TEST_F(LowPrecisionTest, ABf16OrF16CheckpointIsItsValues) {
  // A checkpoint as Hugging Face stores one: every tensor narrow, proj in
  // the Conv1D [6, 3] layout. BF16 holds proj [1][2] already rounded
  // (1 + 2^-7); F16 holds 1 + 2^-8 + 2^-9 exactly, which the program then
  // rounds to bf16 as for an f32 file. Either way the program sees what
  // an f32 file of the same values gives it: referenceLogits, exactly.
  for (DType dtype : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(dtype));
    auto narrow = [&](const std::vector<float> &values) {
      std::vector<uint16_t> bits;
      for (float value : values)
        bits.push_back(dtype == DType::BF16 ? exactBf16(value)
                                            : exactHalf(value));
      return bits;
    };
    std::vector<float> proj = projFileValues();
    if (dtype == DType::BF16)
      proj[2 * kOutputs + 1] = projAsBf16(1, 2);
    const std::vector<uint16_t> embed = narrow(embedValues()),
                                projBits = narrow(proj), bias = narrow(kBias);
    // A file of its own per dtype: this process has read the other one,
    // and an output may not replace a file its process read (FileIO).
    std::string path = write(
        std::string("narrow-") + dtypeName(dtype) + ".safetensors",
        {view("embed.weight", dtype, {kVocab, kWidth}, embed.data(), 120),
         view("proj.weight", dtype, {kWidth, kOutputs}, projBits.data(), 36),
         view("proj.bias", dtype, {kOutputs}, bias.data(), 6)},
        {});
    std::string error;
    std::unique_ptr<Model> model = load(path, error);
    ASSERT_TRUE(model) << error;
    const std::vector<int64_t> ids = {1, 2, 3, 9, 0, 5};
    EXPECT_EQ(run(*model, ids, 2), referenceLogits(ids));
    // Widened and quantised, widened, transposed and rounded, widened.
    EXPECT_EQ(model->loadStats().convertedTensors, 3);
    // The bias becomes f32: convert-weights writes it so.
    std::optional<std::vector<TensorView>> stored =
        model->storedWeights(error);
    ASSERT_TRUE(stored) << error;
    ASSERT_EQ(stored->size(), 3u);
    EXPECT_EQ((*stored)[2].dtype, DType::F32);
    const auto *storedBias = static_cast<const float *>((*stored)[2].data);
    EXPECT_EQ(std::vector<float>(storedBias, storedBias + 3), kBias);
    EXPECT_EQ(static_cast<const uint16_t *>((*stored)[1].data)[1 * 6 + 2],
              0x3f81);
  }
}

TEST_F(LowPrecisionTest, ABf16WeightInTheProgramsLayoutIsUsedInPlace) {
  // proj not transposed: the checkpoint's BF16 [3, 6] is what the kernel
  // reads, mapped, with no copy; only the f32 bias (widened) is copied.
  Json json = Json::parse(tfmc_plan_json);
  json["weights"][1].erase("transposed");
  std::string error;
  std::optional<Plan> plan = parsePlan(json.dump(), error);
  ASSERT_TRUE(plan) << error;
  std::vector<uint16_t> projBits;
  for (int64_t n = 0; n < kOutputs; ++n)
    for (int64_t d = 0; d < kWidth; ++d)
      projBits.push_back(exactBf16(projAsBf16(n, d)));
  std::vector<uint16_t> bias;
  for (float value : kBias)
    bias.push_back(exactBf16(value));
  std::string path = writeF32(
      "w.safetensors",
      {view("proj.weight", DType::BF16, {kOutputs, kWidth}, projBits.data(),
            36),
       view("proj.bias", DType::BF16, {kOutputs}, bias.data(), 6)});
  std::unique_ptr<Model> model = load(path, error, *plan);
  ASSERT_TRUE(model) << error;
  const std::vector<int64_t> ids = {4, 8, 7, 6, 1, 0};
  EXPECT_EQ(run(*model, ids, 1), referenceLogits(ids));
  EXPECT_EQ(model->copiedWeightBytes(), 3u * 4u);
  EXPECT_EQ(model->loadStats().convertedTensors, 2); // embed and bias
}

TEST_F(LowPrecisionTest, ViewsOfAnInt8WeightStartAtTheirRowsBlocks) {
  // The table's rows 2..9 (a tfm.split view): byte offset 2 rows of 2
  // blocks of 6 bytes.
  Json json = Json::parse(tfmc_plan_json);
  json["values"][1]["offset"] = 24;
  json["steps"][0]["args"][1]["dims"] = {{12}, {8}};
  std::string error;
  std::optional<Plan> view = parsePlan(json.dump(), error);
  ASSERT_TRUE(view) << error;
  std::unique_ptr<Model> model =
      load(writeF32("w.safetensors"), error, *view);
  ASSERT_TRUE(model) << error;
  std::vector<float> logits = run(*model, {0, 7}, 1);
  EXPECT_EQ(logits, referenceLogits({2, 9}));
  // One row too many is a plan error before any kernel runs.
  json["steps"][0]["args"][1]["dims"] = {{12}, {9}};
  view = parsePlan(json.dump(), error);
  ASSERT_TRUE(view) << error;
  model = load(writeF32("w.safetensors"), error, *view);
  ASSERT_TRUE(model) << error;
  std::vector<int64_t> ids = {0};
  InputView input{"input_ids", {1, 1}, ids.data()};
  EXPECT_FALSE(model->forward({input}, error));
  EXPECT_EQ(error, "plan: step 0 arg 1: dims [12, 9] view 108 elements at "
                   "offset 24 of weight 'embed.weight', which has 120");
}

TEST_F(LowPrecisionTest, WrongFilesAreOneLineErrorsNamingTheTensor) {
  static const std::vector<int8_t> i8(120, 1);
  static const std::vector<uint16_t> halves(60, 0x3c00);
  static const std::vector<float> f32(60, 1.0f);
  // A converted tensor of the wrong dtype for the program.
  EXPECT_EQ(loadError({view("proj.weight", DType::I8, {3, 6}, i8.data(), 18)}),
            "tensor 'proj.weight' has dtype I8, expected BF16, F32 or F16 "
            "(the program stores it as bf16)");
  EXPECT_EQ(loadError({view("embed.weight", DType::I16, {10, 6},
                            halves.data(), 120)}),
            "tensor 'embed.weight' has dtype I16, expected I8 (int8 blocks), "
            "F32, BF16 or F16 (the program stores it as int8)");
  EXPECT_EQ(
      loadError({view("proj.bias", DType::I16, {3}, halves.data(), 6)}),
      "tensor 'proj.bias' has dtype I16, expected F32, BF16 or F16");
  // A tensor convert-weights wrote is never transposed; a checkpoint's
  // BF16 Conv1D weight is (ABf16OrF16CheckpointIsItsValues).
  EXPECT_EQ(loadError({view("proj.weight", DType::BF16, {6, 3},
                            halves.data(), 36)},
                      {{"tfmc.weight_dtype", "bf16"}}),
            "tensor 'proj.weight' has shape [6, 3], expected [3, 6]");
  // A checkpoint's narrow tensor in the wrong shape names both shapes.
  EXPECT_EQ(loadError({view("proj.weight", DType::F16, {3, 6},
                            halves.data(), 36)}),
            "tensor 'proj.weight' has shape [3, 6], expected [6, 3]");
  // int8 as another group size's blocks, or with its scales apart (as
  // tfmc's files held them before the blocks).
  EXPECT_EQ(loadError({view("embed.weight", DType::I8, {10, 6}, i8.data(),
                            60)}),
            "tensor 'embed.weight' has shape [10, 6], expected [10, 2, 6] "
            "(int8: blocks of 4 values in 6 bytes over 6 columns; the file "
            "was converted with another group size, or by a tfmc that kept "
            "the scales apart)");
  EXPECT_EQ(loadError({view("embed.weight", DType::I8, {10, 1, 10},
                            i8.data(), 100)}),
            "tensor 'embed.weight' has shape [10, 1, 10], expected [10, 2, "
            "6] (int8: blocks of 4 values in 6 bytes over 6 columns; the "
            "file was converted with another group size, or by a tfmc that "
            "kept the scales apart)");
  // A stored block whose scale is an infinity is loaded as it is: loading
  // reads no block (the kernels make its values non-finite,
  // CpuKernels.BlockScalesOverF16Range).
  std::vector<int8_t> blocks = i8;
  blocks[7 * 12 + 6] = 0x00;
  blocks[7 * 12 + 7] = 0x7c;
  std::string error;
  EXPECT_NE(load(writeF32("inf.safetensors",
                          {view("embed.weight", DType::I8, {10, 2, 6},
                                blocks.data(), 120)}),
                 error),
            nullptr)
      << error;
  // f32 values that int8 cannot hold.
  std::vector<float> embed = embedValues();
  embed[3 * 6 + 5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(loadError({view("embed.weight", DType::F32, {10, 6}, embed.data(),
                            240)}),
            "tensor 'embed.weight' cannot be quantised to int8: a NaN at "
            "[3, 5]");
  embed[3 * 6 + 5] = 1e7f; // 1e7 / 127 > 65504
  EXPECT_EQ(loadError({view("embed.weight", DType::F32, {10, 6}, embed.data(),
                            240)}),
            "tensor 'embed.weight' cannot be quantised to int8: row 3 "
            "columns 4..5: max |w| = 10000000 gives a scale max |w| / 127 "
            "beyond f16's 65504");
}

TEST_F(LowPrecisionTest, CApiStatesTheWeightDType) {
  EXPECT_STREQ(tfmc_weight_dtype(), "int8");
  EXPECT_EQ(tfmc_weight_group(), 4);
}

//===----------------------------------------------------------------------===//
// The command line (tfmc-runtime-fake-lowprec)
//===----------------------------------------------------------------------===//

/// Runs `command` with stdout and stderr to files; returns the exit code.
int shell(const std::string &command, std::string &out, std::string &err,
          const std::string &dir) {
  std::string outPath = dir + "/out.txt", errPath = dir + "/err.txt";
  int status =
      std::system((command + " >" + outPath + " 2>" + errPath).c_str());
  auto slurp = [](const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  out = slurp(outPath);
  err = slurp(errPath);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(LowPrecisionTest, ConvertWeightsThenRunGivesTheSameOutputs) {
  const std::string program = TFMC_FAKE_LOWPREC, weights = writeF32("w.safetensors");
  const std::string converted = pathOf("w8.safetensors");
  std::string out, err;
  ASSERT_EQ(shell(program + " convert-weights --weights " + weights +
                      " --output " + converted,
                  out, err, dir),
            0)
      << err;
  EXPECT_EQ(err.rfind("convert-weights: wrote 3 tensors (0.0 MiB, int8) to " +
                          converted + "; conversion took ",
                      0),
            0u)
      << err;
  std::string error;
  std::optional<SafetensorsFile> file =
      SafetensorsFile::open(converted, error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(file->metadata(),
            (std::map<std::string, std::string>{{"tfmc.group", "4"},
                                                {"tfmc.weight_dtype", "int8"}}));
  for (const std::string &w : {weights, converted})
    ASSERT_EQ(shell(program + " run --weights " + w +
                        " --ids 1,5,9 --output " + w + ".out",
                    out, err, dir),
              0)
        << err;
  std::ifstream a(weights + ".out", std::ios::binary),
      b(converted + ".out", std::ios::binary);
  std::string first(std::istreambuf_iterator<char>(a), {}),
      second(std::istreambuf_iterator<char>(b), {});
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, second);

  // info states the dtype and the bytes as stored, and with --weights the
  // time loading took.
  ASSERT_EQ(shell(program + " info --weights " + weights, out, err, dir), 0)
      << err;
  EXPECT_NE(out.find("weights: 3 tensors, 81 parameters, 168 bytes (0.0 "
                     "MiB)\nweight dtype: int8 (group 4): 1 f32, 1 bf16, 1 "
                     "int8 tensors\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("conversion "), std::string::npos) << out;
  ASSERT_EQ(shell(program + " info --weights " + converted, out, err, dir), 0);
  EXPECT_NE(out.find("no conversion"), std::string::npos) << out;

  // Errors: one line, exit code 1, no output.
  EXPECT_EQ(shell(program + " convert-weights --weights " + weights +
                      " --output " + weights,
                  out, err, dir),
            1);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(shell(std::string(TFMC_FAKE_MODEL) + " convert-weights --weights " +
                      weights + " --output " + pathOf("x.safetensors"),
                  out, err, dir),
            1);
  EXPECT_EQ(err, "tfmc-runtime-fake-model: error: model 'tiny' stores every "
                 "weight as f32 in the file's layout: there is nothing to "
                 "convert (compile it with tfmc --weight-dtype bf16, int8 or "
                 "int4, or --weight-layout panels)\n");
  EXPECT_FALSE(std::filesystem::exists(pathOf("x.safetensors")));
}

} // namespace

#endif // TFMC_RUNTIME_TEST_FAKE_MODEL
