//===- RuntimeFixture.h - The tiny model's tests' shared fixture --------===//
//
// The tiny model (TinyModel.cpp): its weights, its logits computed the way
// the fake kernels compute them, and the RuntimeTest fixture (a temporary
// directory with the weights file, plan parsing and model loading helpers)
// that RuntimeTest.cpp and RuntimeCommandTest.cpp share.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_UNIT_RUNTIMEFIXTURE_H
#define TFMC_TEST_UNIT_RUNTIMEFIXTURE_H

#include "FakeHalide.h"
#include "runtime/core/Model.h"
#include "runtime/core/Plan.h"
#include "runtime/core/Safetensors.h"
#include "test/unit/TinyModel.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace tfmc::test {

using namespace tfmc::runtime;
using Json = nlohmann::json;

constexpr int64_t kVocab = 10, kWidth = 4, kOutputs = 3;

inline std::vector<float> embedValues() {
  std::vector<float> values;
  for (int64_t v = 0; v < kVocab; ++v)
    for (int64_t d = 0; d < kWidth; ++d)
      values.push_back(static_cast<float>(v) + 0.25f * static_cast<float>(d));
  return values;
}

inline std::vector<float> projValues() {
  std::vector<float> values;
  for (int i = 0; i < 2; ++i)
    for (int n = 0; n < kOutputs; ++n)
      for (int d = 0; d < kWidth; ++d)
        values.push_back(static_cast<float>(i * 100 + n * 10 + d));
  return values;
}

inline TensorView floatView(const std::string &name, std::vector<int64_t> shape,
                     const std::vector<float> &values) {
  TensorView view;
  view.name = name;
  view.dtype = DType::F32;
  view.shape = std::move(shape);
  view.data = values.data();
  view.bytes = values.size() * sizeof(float);
  return view;
}

inline TensorView intView(const std::string &name, std::vector<int64_t> shape,
                   const std::vector<int64_t> &values) {
  TensorView view;
  view.name = name;
  view.dtype = DType::I64;
  view.shape = std::move(shape);
  view.data = values.data();
  view.bytes = values.size() * sizeof(int64_t);
  return view;
}

inline IntegerTensor ints(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return IntegerTensor{std::move(shape), std::move(values)};
}

/// The tiny model's logits, computed the way the fake kernels compute them.
inline std::vector<float> referenceLogits(const std::vector<int64_t> &ids,
                                   const std::vector<int64_t> &mask) {
  std::vector<float> embed = embedValues(), proj = projValues(), logits;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    float hidden[kWidth];
    for (int64_t d = 0; d < kWidth; ++d)
      hidden[d] = 2.0f * embed[ids[t] * kWidth + d] *
                  static_cast<float>(mask.empty() ? 1 : mask[t]);
    for (int64_t n = 0; n < kOutputs; ++n) {
      float sum = 0;
      for (int64_t d = 0; d < kWidth; ++d)
        sum += hidden[d] * proj[12 + n * kWidth + d];
      logits.push_back(sum);
    }
  }
  return logits;
}

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfmc-runtime-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
    weights = writeWeights("w.safetensors");
    fakeHalideError.clear();
    embedIdsExtents.clear();
    fakeDeviceOpenError.clear();
    fakeDownloadError.clear();
    fakeUploads = fakeDownloads = fakeSyncs = 0;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  /// The tiny model's weights, plus `extra` tensors; `replace` swaps one.
  std::string writeWeights(const std::string &name,
                           std::vector<TensorView> extra = {},
                           const std::string &skip = "") {
    static const std::vector<float> embed = embedValues(), proj = projValues();
    static const std::vector<float> ones(kWidth, 1.0f), zeros(kWidth, 0.0f);
    std::vector<TensorView> tensors = {
        floatView("embed.weight", {kVocab, kWidth}, embed),
        floatView("proj.weight", {2, kOutputs, kWidth}, proj),
        floatView("final.norm.weight", {kWidth}, ones),
        floatView("final.norm.bias", {kWidth}, zeros)};
    std::vector<TensorView> all;
    for (TensorView &tensor : tensors) {
      bool replaced = false;
      for (const TensorView &other : extra)
        replaced = replaced || other.name == tensor.name;
      if (tensor.name != skip && !replaced)
        all.push_back(tensor);
    }
    all.insert(all.end(), extra.begin(), extra.end());
    std::string path = pathOf(name), error;
    EXPECT_TRUE(writeSafetensors(path, all, error)) << error;
    return path;
  }

  static Plan tinyPlan() { return planFrom(Json::parse(tfmc_plan_json)); }

  static Plan planFrom(const Json &json) {
    std::string error;
    std::optional<Plan> plan = parsePlan(json.dump(), error);
    EXPECT_TRUE(plan) << error;
    return plan ? *plan : Plan();
  }

  static std::string planError(const std::string &text) {
    std::string error;
    EXPECT_FALSE(parsePlan(text, error));
    EXPECT_EQ(error.find('\n'), std::string::npos);
    return error;
  }

  std::unique_ptr<Model> load(const Plan &plan, const std::string &path) {
    std::string error;
    std::unique_ptr<Model> model =
        Model::create(plan, tfmc_kernels, tfmc_num_kernels, path, error);
    EXPECT_TRUE(model) << error;
    return model;
  }

  std::string createError(const Plan &plan, const std::string &path) {
    std::string error;
    EXPECT_FALSE(
        Model::create(plan, tfmc_kernels, tfmc_num_kernels, path, error));
    EXPECT_EQ(error.find('\n'), std::string::npos);
    return error;
  }

  static std::string
  forwardError(Model &model,
               const std::map<std::string, IntegerTensor> &inputs) {
    std::string error;
    embedIdsExtents.clear();
    EXPECT_FALSE(model.forward(inputs, error));
    EXPECT_EQ(error.find('\n'), std::string::npos);
    return error;
  }

  static std::vector<float>
  run(Model &model, const std::map<std::string, IntegerTensor> &inputs,
      std::vector<int64_t> *shape = nullptr) {
    std::string error;
    std::optional<OutputView> output = model.forward(inputs, error);
    EXPECT_TRUE(output) << error;
    if (!output)
      return {};
    EXPECT_EQ(output->name, "logits");
    if (shape)
      *shape = output->shape;
    return std::vector<float>(output->data,
                              output->data + output->numElements());
  }

  std::string dir, weights;
};

} // namespace tfmc::test

#endif // TFMC_TEST_UNIT_RUNTIMEFIXTURE_H
