//===- RuntimeTest.cpp - Tests of the plan executor and the C API -------===//
//
// The executor (runtime/core/Model.h) and the C API over the tiny model of
// TinyModel.cpp: plan parsing and its errors, weights, runs, inputs, CUDA
// plans over the fake device, the C header. The KV cache across calls is
// RuntimeCacheTest.cpp's, the command line RuntimeCommandTest.cpp's.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/CpuFeatures.h"
#include "runtime/core/HalideHooks.h"
#include "runtime/core/tfmc.h"
#include "test/unit/RuntimeFixture.h"

#include <HalideRuntime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <unistd.h>

using namespace tfmc::test;
using namespace tfmc::runtime;

namespace {

//===----------------------------------------------------------------------===//
// parsePlan
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, ParsesThePlan) {
  Plan plan = tinyPlan();
  EXPECT_EQ(plan.model, "tiny");
  EXPECT_EQ(plan.entry, "forward");
  EXPECT_EQ(plan.target, "host");
  EXPECT_EQ(plan.vocab, 10);
  EXPECT_EQ(plan.maxLen, 8);
  EXPECT_EQ(plan.maxBatch, 2);
  EXPECT_EQ(plan.maxSeq, 6);
  EXPECT_EQ(plan.arenaBytes, 528);
  EXPECT_EQ(plan.symbols, (std::vector<std::string>{"B", "S"}));
  ASSERT_EQ(plan.inputs.size(), 2u);
  EXPECT_EQ(plan.inputs[1].name, "attention_mask");
  EXPECT_EQ(plan.inputs[1].kind, InputKind::Mask);
  EXPECT_TRUE(plan.inputs[1].optional);
  EXPECT_FALSE(plan.inputs[0].optional);
  ASSERT_EQ(plan.inputs[0].dims.size(), 2u);
  EXPECT_TRUE(plan.inputs[0].dims[1][0].isSymbol);
  EXPECT_EQ(plan.inputs[0].dims[1][0].value, 1);
  ASSERT_EQ(plan.weights.size(), 4u);
  EXPECT_EQ(plan.weights[1].shape, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(plan.values.size(), 7u);
  EXPECT_EQ(plan.values[3].kind, ValueKind::Weight);
  EXPECT_EQ(plan.values[3].offset, 12);
  EXPECT_EQ(plan.values[6].kind, ValueKind::Arena);
  EXPECT_EQ(plan.values[6].offset, 384);
  EXPECT_EQ(plan.output().name, "logits");
  ASSERT_EQ(plan.output().dims.size(), 3u);
  EXPECT_FALSE(plan.output().dims[2][0].isSymbol);
  EXPECT_EQ(plan.output().dims[2][0].value, 3);
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[2].kernel, "tfmc_test_linear");
  const PlanArg &view = plan.steps[2].args[0];
  EXPECT_EQ(view.type, ElementType::F32);
  ASSERT_EQ(view.dims.size(), 2u);
  ASSERT_EQ(view.dims[1].size(), 2u); // ["B", "S"]: a product
  EXPECT_EQ(plan.steps[0].args[0].type, ElementType::I64);

  // An f32 weight in panels of rows that divide its rows.
  Json paneled = Json::parse(tfmc_plan_json);
  paneled["weights"][0]["panel"] = 5; // embed.weight [10, 4]
  EXPECT_EQ(planFrom(paneled).weights[0].panel, 5);
  EXPECT_EQ(planFrom(paneled).weights[0].storedElements(), 40);

  // A constant may be spelled as a string of digits.
  Json json = Json::parse(tfmc_plan_json);
  json["steps"][2]["args"][0]["dims"][0] = {"4"};
  Plan spelled = planFrom(json);
  ASSERT_EQ(spelled.steps.size(), 3u);
  EXPECT_FALSE(spelled.steps[2].args[0].dims[0][0].isSymbol);
  EXPECT_EQ(spelled.steps[2].args[0].dims[0][0].value, 4);
}

TEST_F(RuntimeTest, PlanErrorsAreOneLineNamingThePlace) {
  struct Case {
    std::function<void(Json &)> mutate;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](Json &j) { j["format"] = 2; },
       "plan: format: 2 is not supported (this runtime reads format 1)"},
      {[](Json &j) { j.erase("model"); }, "plan: missing \"model\""},
      {[](Json &j) { j["vocab"] = "x"; },
       "plan: vocab: expected an integer, found a string"},
      {[](Json &j) { j["max_batch"] = 0; },
       "plan: max_batch: 0 is less than 1"},
      {[](Json &j) {
         j["symbols"] = {"B", "B"};
       },
       "plan: symbols 1: symbol 'B' is listed twice"},
      {[](Json &j) { j["steps"][2]["args"][1]["value"] = 99; },
       "plan: step 2 arg 1: value 99 out of range (7 values)"},
      {[](Json &j) { j["steps"][0]["args"][0]["dims"][0] = {"X"}; },
       "plan: step 0 arg 0 dim 0 term 0: unknown symbol 'X'"},
      {[](Json &j) { j["output"]["dims"][0] = "-3"; },
       "plan: output dim 0: unknown symbol '-3'"},
      {[](Json &j) { j["output"]["dims"][0] = "T"; },
       "plan: output dim 0: unknown symbol 'T'"},
      {[](Json &j) { j["steps"][0]["args"][2]["type"] = "f8"; },
       "plan: step 0 arg 2 type: 'f8' is not 'f32', 'i64', 'bf16', 'i8', "
       "'f16', 'u8' or 'i32'"},
      {[](Json &j) { j["steps"][0]["args"][2]["type"] = "u8"; },
       "plan: step 0 arg 2: value 4 is in the arena, which holds f32, i64, "
       "i8, bf16 or f16, but the arg is u8"},
      {[](Json &j) { j["steps"][1]["depth"] = 0; },
       "plan: step 1 depth: 0 is less than 1"},
      {[](Json &j) { j["steps"][1]["kernel"] = ""; },
       "plan: step 1 kernel: is empty"},
      {[](Json &j) { j["steps"][1]["activations"] = "int4"; },
       "plan: step 1 activations: must be \"int8\" or \"bf16\", got \"int4\""},
      {[](Json &j) { j["steps"][1].erase("kernel"); },
       "plan: step 1: missing \"kernel\""},
      {[](Json &j) { j["steps"][0]["args"][0]["type"] = "f32"; },
       "plan: step 0 arg 0: value 0 is an input, which is i64, but the arg "
       "is f32"},
      {[](Json &j) { j["steps"][0]["args"][1]["type"] = "i64"; },
       "plan: step 0 arg 1: value 2 is a weight, which is f32, but the arg "
       "is i64"},
      {[](Json &j) { j["values"][2]["index"] = 7; },
       "plan: value 2 index: weight 7 out of range (4 weights)"},
      {[](Json &j) { j["values"][0]["index"] = 2; },
       "plan: value 0 index: input 2 out of range (2 inputs)"},
      {[](Json &j) { j["values"][3]["offset"] = 25; },
       "plan: value 3 offset: 25 is past the end of weight 'proj.weight' (24 "
       "elements)"},
      {[](Json &j) { j["values"][4]["offset"] = 1000; },
       "plan: value 4 offset: 1000 is past the end of the arena (528 bytes)"},
      {[](Json &j) { j["values"][4]["kind"] = "stack"; },
       "plan: value 4 kind: 'stack' is not 'input', 'weight', 'arena', "
       "'cache' or 'key_rows'"},
      // Low-precision weights (Plan.h).
      {[](Json &j) { j["weights"][0]["dtype"] = "int2"; },
       "plan: weight 0 dtype: 'int2' is not 'f32', 'bf16', 'int8', 'int4', "
       "'q4_k', 'q5_k' or 'q6_k'"},
      {[](Json &j) { j["weights"][0]["dtype"] = 8; },
       "plan: weight 0 dtype: a number is not 'f32', 'bf16', 'int8', 'int4', "
       "'q4_k', 'q5_k' or 'q6_k'"},
      {[](Json &j) { j["weights"][0]["dtype"] = "q4_k"; },
       "plan: weight 0: weight 'embed.weight' is q4_k, whose rows are whole "
       "super-blocks of 256 values, but has 4 columns"},
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int4";
         j["weights"][0]["group"] = 64;
       },
       "plan: weight 0 group: weight 'embed.weight' is int4, whose group is "
       "32 (Q4_0 blocks), not 64"},
      {[](Json &j) { j["weights"][0]["dtype"] = "int4"; },
       "plan: weight 0: weight 'embed.weight' is int4 but has no \"group\""},
      // An int4 weight's offsets count bytes of blocks: [10, 4] is 10 rows
      // of one 18-byte block.
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int4";
         j["weights"][0]["group"] = 32;
         j["values"][2]["offset"] = 181;
       },
       "plan: value 2 offset: 181 is past the end of weight 'embed.weight' "
       "(180 elements)"},
      {[](Json &j) { j["weights"][1]["dtype"] = "bf16"; },
       "plan: weight 1: weight 'proj.weight' is bf16 but has rank 3, not 2"},
      {[](Json &j) { j["weights"][0]["dtype"] = "int8"; },
       "plan: weight 0: weight 'embed.weight' is int8 but has no \"group\""},
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int8";
         j["weights"][0]["group"] = 0;
       },
       "plan: weight 0 group: 0 is less than 1"},
      {[](Json &j) { j["weights"][0]["group"] = 64; },
       "plan: weight 0 group: weight 'embed.weight' is f32: only int8 and "
       "int4 weights have a group"},
      // int8's scales are in its blocks: a plan of the older layout, whose
      // scales were values of their own, is refused.
      {[](Json &j) { j["values"][2]["kind"] = "scales"; },
       "plan: value 2 kind: 'scales' is not 'input', 'weight', 'arena', "
       "'cache' or 'key_rows'"},
      // An int8 weight's offsets count bytes of blocks: [10, 4] in groups
      // of 3 is 10 rows of 2 blocks of 5 bytes.
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int8";
         j["weights"][0]["group"] = 3;
         j["values"][2]["offset"] = 101;
       },
       "plan: value 2 offset: 101 is past the end of weight 'embed.weight' "
       "(100 elements)"},
      {[](Json &j) { j["weights"][0]["dtype"] = "bf16"; },
       "plan: step 0 arg 1: value 2 is a weight, which is bf16, but the arg "
       "is f32"},
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int8";
         j["weights"][0]["group"] = 4;
         j["steps"][0]["args"][1]["type"] = "f16";
       },
       "plan: step 0 arg 1: value 2 is a weight, which is i8, but the arg "
       "is f16"},
      {[](Json &j) { j["inputs"][0]["optional"] = true; },
       "plan: input 0: input 'input_ids' is optional, but only masks and positions may be"},
      {[](Json &j) { j["inputs"][0]["kind"] = "tokens"; },
       "plan: input 0 kind: 'tokens' is not 'ids', 'mask', 'positions' or 'types'"},
      {[](Json &j) { j["inputs"][1]["name"] = "input_ids"; },
       "plan: input 1: input 'input_ids' is listed twice"},
      {[](Json &j) { j["weights"][0]["shape"][0] = -1; },
       "plan: weight 0 shape 0: -1 is less than 0"},
      // f32 weights in panels (support/WeightFormat.h): rank 2, whole panels.
      {[](Json &j) { j["weights"][0]["panel"] = 4; },
       "plan: weight 0 panel: weight 'embed.weight' has 10 rows, which panels "
       "of 4 do not divide"},
      {[](Json &j) { j["weights"][1]["panel"] = 2; },
       "plan: weight 1 panel: weight 'proj.weight' is f32 of rank 3: only f32, "
       "int4 and int8 (in groups of a multiple of 4) weights of rank 2 are "
       "stored in panels"},
      {[](Json &j) {
         j["weights"][0]["dtype"] = "bf16";
         j["weights"][0]["panel"] = 5;
       },
       "plan: weight 0 panel: weight 'embed.weight' is bf16 of rank 2: only "
       "f32, int4 and int8 (in groups of a multiple of 4) weights of rank 2 "
       "are stored in panels"},
      // int8 and int4 block panels: 16 rows, int8 groups of 4 values a lane.
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int8";
         j["weights"][0]["group"] = 6;
         j["weights"][0]["panel"] = 5;
       },
       "plan: weight 0 panel: weight 'embed.weight' is int8 of rank 2: only "
       "f32, int4 and int8 (in groups of a multiple of 4) weights of rank 2 "
       "are stored in panels"},
      {[](Json &j) {
         j["weights"][0]["dtype"] = "int4";
         j["weights"][0]["group"] = 32;
         j["weights"][0]["panel"] = 5;
       },
       "plan: weight 0 panel: weight 'embed.weight' is int4, whose panels "
       "have 16 rows, not 5"},
      {[](Json &j) { j["weights"][0]["panel"] = 0; },
       "plan: weight 0 panel: 0 is less than 1"},
      {[](Json &j) { j["weights"][0]["panel"] = "16"; },
       "plan: weight 0 panel: expected an integer, found a string"},
      {[](Json &j) { j["weights"][0]["init"] = "uniform"; },
       "plan: weight 0 init: 'uniform' is not 'normal', 'ones' or 'zeros'"},
      {[](Json &j) { j["weights"][0]["init"] = 1; },
       "plan: weight 0 init: a number is not 'normal', 'ones' or 'zeros'"},
      {[](Json &j) { j["output"]["value"] = 2; },
       "plan: output: value 2 is not in the arena"},
      {[](Json &j) { j["output"]["value"] = 7; },
       "plan: output: value 7 out of range (7 values)"},
      {[](Json &j) { j["more_outputs"] = Json::object(); },
       "plan: more_outputs: expected an array, found an object"},
      {[](Json &j) { j["more_outputs"] = Json::array({j["output"]}); },
       "plan: more_outputs[0]: output 'logits' is named twice"},
      {[](Json &j) {
         Json second = j["output"];
         second["name"] = "pooler_output";
         second["value"] = 2;
         j["more_outputs"] = Json::array({second});
       },
       "plan: more_outputs[0]: value 2 is not in the arena"},
      {[](Json &j) { j["steps"][0]["args"] = Json::array(); },
       "plan: step 0 args: is empty"},
      {[](Json &j) { j["steps"] = Json::object(); },
       "plan: steps: expected an array, found an object"},
      {[](Json &j) { j = Json::array(); },
       "plan: expected an object, found an array"},
      // Sizes past the documented bounds (Plan.h), so that the runtime's
      // size arithmetic cannot overflow.
      {[](Json &j) { j["max_batch"] = 288230376151711744ll; },
       "plan: max_batch: 288230376151711744 is more than the limit of "
       "2147483647"},
      {[](Json &j) { j["vocab"] = 2147483648ll; },
       "plan: vocab: 2147483648 is more than the limit of 2147483647"},
      {[](Json &j) { j["arena_bytes"] = (1ll << 46) + 1; },
       "plan: arena_bytes: 70368744177665 is more than the limit of "
       "70368744177664"},
      {[](Json &j) { j["weights"][0]["shape"] = {1ll << 23, 1ll << 22}; },
       "plan: weight 0: shape [8388608, 4194304] is too large"},
      {[](Json &j) { j["steps"][0]["args"][0]["dims"][0] = 4294967296ll; },
       "plan: step 0 arg 0 dim 0: 4294967296 is more than the limit of "
       "2147483647"},
      {[](Json &j) { j["steps"][0]["args"][0]["dims"][0] = "4294967296"; },
       "plan: step 0 arg 0 dim 0: 4294967296 is more than the limit of "
       "2147483647"},
      {[](Json &j) {
         j["max_len"] = 1 << 20;
         j["cache"] = {{{"slot", "k"}, {"width", 1 << 25}}};
       },
       "plan: cache 0 width: 2 x 1048576 rows of 33554432 floats are more than "
       "the limit of 70368744177664 bytes"},
      // A paged KV cache (Plan.h): its block size, its store steps, the
      // key rows' type.
      {[](Json &j) {
         j["cache"] = {{{"slot", "k"}, {"width", 4}, {"paged", true}}};
       },
       "plan: cache 0: is paged, but the plan has no block_tokens"},
      {[](Json &j) {
         j["cache"] = {{{"slot", "k"}, {"width", 4}, {"paged", "yes"}}};
       },
       "plan: cache 0 paged: expected a boolean, found a string"},
      {[](Json &j) {
         j["cache"] = {{{"slot", "k"}, {"width", 4}, {"heads", 2}}};
       },
       "plan: cache 0 heads: is only for a paged slot"},
      {[](Json &j) {
         j["cache"] = {
             {{"slot", "k"}, {"width", 4}, {"paged", true}, {"heads", 3}}};
         j["block_tokens"] = 16;
       },
       "plan: cache 0 heads: 3 heads do not divide the width 4"},
      {[](Json &j) {
         j["cache"] = {{{"slot", "k"}, {"width", 4}}};
         j["steps"][0]["store"] = 0;
       },
       "plan: step 0 store: cache slot 0 is not a paged slot of the 1"},
      {[](Json &j) {
         j["cache"] = {{{"slot", "k"}, {"width", 4}, {"paged", true}}};
         j["block_tokens"] = 16;
         j["steps"][0]["store"] = 0;
       },
       "plan: step 0: a store step has one arg: rows (width, S, B) in the "
       "arena, of its slot's type"},
      {[](Json &j) {
         j["values"].push_back({{"kind", "key_rows"}});
         j["steps"][0]["args"][0]["value"] = j["values"].size() - 1;
       },
       "plan: step 0 arg 0: value 7 is the key rows, which is i32, but the "
       "arg is i64"},
  };
  for (const Case &test : cases) {
    Json json = Json::parse(tfmc_plan_json);
    test.mutate(json);
    EXPECT_EQ(planError(json.dump()), test.message);
  }
  EXPECT_EQ(planError("{\"format\": 1,"),
            // Column 14: the end of the input, after its 13 characters.
            "plan: invalid JSON at line 1, column 14: syntax error while "
            "parsing object key - unexpected end of input; expected string "
            "literal");
  EXPECT_EQ(planError("").rfind("plan: invalid JSON at line 1, column 1: ", 0),
            0u);
  // The one reader's bounds (support/Json.h): nesting and duplicate keys.
  EXPECT_EQ(planError(std::string(100, '[')),
            "plan: invalid JSON: nested deeper than 64 levels");
  EXPECT_EQ(planError("{\"format\": 1, \"format\": 1}"),
            "plan: invalid JSON: duplicate key \"format\"");
}

//===----------------------------------------------------------------------===//
// Model::create
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, CreateChecksKernelsAndWeights) {
  Json json = Json::parse(tfmc_plan_json);
  json["steps"][2]["kernel"] = "tfmc_nope";
  EXPECT_EQ(createError(planFrom(json), weights),
            "plan: step 2 calls kernel 'tfmc_nope', which is not linked into "
            "this program (5 kernels)");

  Plan plan = tinyPlan();
  std::string missingFile = pathOf("nope.safetensors");
  EXPECT_EQ(createError(plan, missingFile),
            missingFile + ": cannot open: No such file or directory");

  std::string noProj = writeWeights("noproj.safetensors", {}, "proj.weight");
  EXPECT_EQ(createError(plan, noProj),
            noProj + ": missing tensor 'proj.weight'");

  std::vector<float> big(36, 0.0f);
  std::string wrongShape = writeWeights(
      "shape.safetensors", {floatView("proj.weight", {3, 3, 4}, big)});
  EXPECT_EQ(createError(plan, wrongShape),
            wrongShape + ": tensor 'proj.weight' has shape [3, 3, 4], expected "
                         "[2, 3, 4]");

  std::vector<int64_t> asInts(24, 0);
  std::string wrongType = writeWeights(
      "dtype.safetensors", {intView("proj.weight", {2, 3, 4}, asInts)});
  EXPECT_EQ(createError(plan, wrongType),
            wrongType + ": tensor 'proj.weight' has dtype I64, expected F32, "
                        "BF16 or F16");
}

TEST_F(RuntimeTest, UnusedTensorsAreOneWarningLine) {
  std::vector<float> one(1, 0.0f);
  std::vector<std::string> names = {
      "extra0", "extra1",        "extra2",
      "extra3", "extra4",        "extra5",
      "extra6", "h.0.attn.bias", "h.0.attn.masked_bias",
      "model.layers.0.self_attn.rotary_emb.inv_freq"};
  std::vector<TensorView> extra;
  for (const std::string &name : names)
    extra.push_back(floatView(name, {1}, one));
  std::string path = writeWeights("extra.safetensors", extra);
  testing::internal::CaptureStderr();
  std::unique_ptr<Model> model = load(tinyPlan(), path);
  std::string printed = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(model);
  std::string expected =
      path + ": warning: 7 tensors the model does not use: 'extra0', "
             "'extra1', 'extra2', 'extra3', 'extra4' and 2 more";
  EXPECT_EQ(model->warning(), expected);
  EXPECT_EQ(printed, expected + "\n");

  std::string single =
      writeWeights("single.safetensors", {floatView("extra", {1}, one)});
  testing::internal::CaptureStderr();
  model = load(tinyPlan(), single);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            single + ": warning: 1 tensor the model does not use: 'extra'\n");

  testing::internal::CaptureStderr();
  model = load(tinyPlan(), weights);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(model->warning(), "");
  EXPECT_EQ(model->copiedWeightBytes(), 0u); // the writer aligns: zero copy
}

TEST_F(RuntimeTest, MisalignedWeightsAreCopiedOnce) {
  // A one-byte tensor first puts every F32 tensor at an odd address.
  std::vector<float> embed = embedValues(), proj = projValues();
  std::vector<float> ones(kWidth, 1.0f), zeros(kWidth, 0.0f);
  std::string data(1, '\x07');
  Json header;
  header["a.pad"] = {{"dtype", "U8"}, {"shape", {1}}, {"data_offsets", {0, 1}}};
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 const std::vector<float> &values) {
    std::size_t begin = data.size();
    data.append(reinterpret_cast<const char *>(values.data()),
                values.size() * sizeof(float));
    header[name] = {{"dtype", "F32"},
                    {"shape", shape},
                    {"data_offsets", {begin, data.size()}}};
  };
  add("embed.weight", {kVocab, kWidth}, embed);
  add("proj.weight", {2, kOutputs, kWidth}, proj);
  add("final.norm.weight", {kWidth}, ones);
  add("final.norm.bias", {kWidth}, zeros);
  std::string text = header.dump();
  while (text.size() % 8)
    text += ' ';
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes += static_cast<char>((text.size() >> (8 * i)) & 0xff);
  bytes += text + data;
  std::string path = pathOf("odd.safetensors");
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());

  testing::internal::CaptureStderr();
  std::unique_ptr<Model> model = load(tinyPlan(), path);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            path + ": warning: 1 tensor the model does not use: 'a.pad'\n");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->copiedWeightBytes(), (40u + 24u + 4u + 4u) * 4u);
  std::vector<int64_t> ids = {1, 9, 0};
  EXPECT_EQ(run(*model, {{"input_ids", ints({1, 3}, ids)}}),
            referenceLogits(ids, {}));
}

//===----------------------------------------------------------------------===//
// Model::forward
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, RunsThePlan) {
  std::unique_ptr<Model> model = load(tinyPlan(), weights);
  ASSERT_TRUE(model);
  EXPECT_TRUE(fakeHandlerInstalled);
  std::vector<int64_t> ids = {1, 2, 3, 9, 0, 5}, mask = {1, 1, 1, 1, 1, 0};
  std::vector<int64_t> shape;
  std::vector<float> logits = run(*model,
                                  {{"input_ids", ints({2, 3}, ids)},
                                   {"attention_mask", ints({2, 3}, mask)}},
                                  &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(logits, referenceLogits(ids, mask));
  // The masked position is exactly zero; spot-check one by hand:
  // hidden = 2 * embed[1] = [2, 2.5, 3, 3.5]; proj[1][0] = [100, 101, 102,
  // 103].
  EXPECT_FLOAT_EQ(logits[0], 2 * 100 + 2.5f * 101 + 3 * 102 + 3.5f * 103);
  EXPECT_EQ(logits[15], 0.0f);
  EXPECT_EQ(logits[17], 0.0f);
}

TEST_F(RuntimeTest, SymbolsAreBoundFromTheInputs) {
  std::unique_ptr<Model> model = load(tinyPlan(), weights);
  ASSERT_TRUE(model);
  std::vector<int64_t> shape;
  std::vector<int64_t> ids = {4, 4, 7, 1, 2};
  EXPECT_EQ(run(*model, {{"input_ids", ints({1, 5}, ids)}}, &shape),
            referenceLogits(ids, {}));
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 5, 3}));
  EXPECT_EQ(embedIdsExtents,
            (std::vector<int32_t>{5, 1})); // [S, B] in Halide order

  ids = {3, 1, 8, 8};
  EXPECT_EQ(run(*model, {{"input_ids", ints({2, 2}, ids)}}, &shape),
            referenceLogits(ids, {}));
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(embedIdsExtents, (std::vector<int32_t>{2, 2}));

  ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}; // the maximum: B 2, S 6
  EXPECT_EQ(run(*model, {{"input_ids", ints({2, 6}, ids)}}, &shape),
            referenceLogits(ids, {}));
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 6, 3}));
}

TEST_F(RuntimeTest, AnAbsentMaskIsAllOnes) {
  std::unique_ptr<Model> model = load(tinyPlan(), weights);
  ASSERT_TRUE(model);
  std::vector<int64_t> ids = {5, 6, 7, 8};
  std::vector<float> without = run(*model, {{"input_ids", ints({2, 2}, ids)}});
  std::vector<float> withOnes =
      run(*model, {{"input_ids", ints({2, 2}, ids)},
                   {"attention_mask", ints({2, 2}, {1, 1, 1, 1})}});
  EXPECT_EQ(without, withOnes);
  EXPECT_EQ(without, referenceLogits(ids, {}));
  // After a call with a zero mask, the default is ones again.
  run(*model, {{"input_ids", ints({2, 2}, ids)},
               {"attention_mask", ints({2, 2}, {0, 0, 0, 0})}});
  EXPECT_EQ(run(*model, {{"input_ids", ints({2, 2}, ids)}}), without);
}

TEST_F(RuntimeTest, AMaskNoKernelReadsTakesOnlyWhatCannotChangeTheOutput) {
  // attention_mask as codegen lists a mask the model's kind takes but no
  // attention reads: all ones always; zeros only for causal attention, as
  // right padding.
  Json json = Json::parse(tfmc_plan_json);
  json["inputs"][1]["unused"] = true;
  json["inputs"][1]["causal"] = false;
  std::unique_ptr<Model> bidirectional = load(planFrom(json), weights);
  json["inputs"][1]["causal"] = true;
  std::unique_ptr<Model> causal = load(planFrom(json), weights);
  ASSERT_TRUE(bidirectional && causal);
  auto ids = ints({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<float> noMask = run(*causal, {{"input_ids", ids}});
  EXPECT_EQ(run(*causal, {{"input_ids", ids},
                          {"attention_mask", ints({2, 3}, {1, 1, 1, 1, 1, 1})}}),
            noMask);
  EXPECT_EQ(run(*bidirectional,
                {{"input_ids", ids},
                 {"attention_mask", ints({2, 3}, {1, 1, 1, 1, 1, 1})}}),
            noMask);
  run(*causal, {{"input_ids", ids},
                {"attention_mask", ints({2, 3}, {1, 1, 1, 1, 0, 0})}});
  EXPECT_EQ(forwardError(*causal,
                         {{"input_ids", ids},
                          {"attention_mask", ints({2, 3}, {1, 1, 1, 1, 0, 1})}}),
            "attention_mask[1, 2] = 1 after a 0: model 'tiny' reads no "
            "attention_mask (its attention is causal, without padding), which "
            "leaves the outputs unchanged only for right padding (ones, then "
            "zeros)");
  EXPECT_EQ(forwardError(*bidirectional,
                         {{"input_ids", ids},
                          {"attention_mask", ints({2, 3}, {1, 1, 0, 1, 1, 1})}}),
            "attention_mask[0, 2] = 0, but model 'tiny' reads no "
            "attention_mask (no padding in its masks) and its attention is "
            "not causal, so padding would change the outputs; give all ones, "
            "or compile the model with padding in its masks");
  json["inputs"][1]["causal"] = 1;
  EXPECT_EQ(planError(json.dump()),
            "plan: input 1 causal: expected a boolean, found a number");
  json["inputs"][1]["causal"] = true;
  json["inputs"][1]["optional"] = false;
  EXPECT_EQ(planError(json.dump()),
            "plan: input 1: input 'attention_mask' is unused but not optional");
}

TEST_F(RuntimeTest, InputErrorsAreCaughtBeforeAnyKernelRuns) {
  std::unique_ptr<Model> model = load(tinyPlan(), weights);
  ASSERT_TRUE(model);
  auto ids = [](std::vector<int64_t> shape) {
    std::size_t count = 1;
    for (int64_t d : shape)
      count *= static_cast<std::size_t>(d);
    return ints(shape, std::vector<int64_t>(count, 1));
  };
  struct Case {
    std::map<std::string, IntegerTensor> inputs;
    std::string message;
  };
  std::vector<Case> cases = {
      {{{"input_ids", ids({1, 3})}, {"foo", ids({1, 3})}},
       "unknown input 'foo'; this model takes input_ids, attention_mask"},
      {{{"attention_mask", ids({1, 3})}},
       "missing input 'input_ids'; this model takes input_ids, attention_mask"},
      {{},
       "missing input 'input_ids'; this model takes input_ids, "
       "attention_mask"},
      {{{"input_ids", ids({1, 2, 3})}},
       "input 'input_ids' has rank 3, expected 2 ([B, S])"},
      {{{"input_ids", ids({3})}},
       "input 'input_ids' has rank 1, expected 2 ([B, S])"},
      {{{"input_ids", ids({1, 3})}, {"attention_mask", ids({1, 3, 1})}},
       "input 'attention_mask' has rank 3, expected 2 ([B, S])"},
      {{{"input_ids", ids({2, 5})}, {"attention_mask", ids({2, 4})}},
       "attention_mask has shape [2, 4], but input_ids has [2, 5]"},
      {{{"input_ids", ids({2, 5})}, {"attention_mask", ids({1, 5})}},
       "attention_mask has shape [1, 5], but input_ids has [2, 5]"},
      {{{"input_ids", ids({0, 3})}}, "input_ids has batch 0 (shape [0, 3])"},
      {{{"input_ids", ids({1, 0})}}, "input_ids has 0 tokens (shape [1, 0])"},
      {{{"input_ids", ids({3, 2})}},
       "batch 3 is more than the 2 this binary was compiled for (tfmc "
       "--max-batch 3)"},
      {{{"input_ids", ids({1, 9})}},
       "input_ids has 9 tokens, more than max_len 8"},
      {{{"input_ids", ids({1, 7})}},
       "input_ids has 7 tokens, more than the 6 this binary was compiled for "
       "(tfmc --max-seq 7)"},
      {{{"input_ids", ints({2, 3}, {1, 2, 3, 4, 5, 10})}},
       "input_ids[1, 2] = 10 is not a token id (vocab 10)"},
      {{{"input_ids", ints({2, 3}, {1, -1, 3, 4, 5, 6})}},
       "input_ids[0, 1] = -1 is not a token id (vocab 10)"},
      {{{"input_ids", ids({2, 3})},
        {"attention_mask", ints({2, 3}, {1, 1, 1, 1, 2, 1})}},
       "attention_mask[1, 1] = 2: expected 0 or 1"},
      {{{"input_ids", ids({1, 2})}, {"attention_mask", ints({1, 2}, {1, -1})}},
       "attention_mask[0, 1] = -1: expected 0 or 1"},
      {{{"input_ids", ints({1, 3}, {1, 2})}},
       "input 'input_ids' has shape [1, 3] but 2 values"},
  };
  for (const Case &test : cases) {
    EXPECT_EQ(forwardError(*model, test.inputs), test.message);
    EXPECT_TRUE(embedIdsExtents.empty()) << "a kernel ran for " << test.message;
  }

  std::vector<int64_t> values = {1, 2};
  std::string error;
  EXPECT_FALSE(model->forward({{"input_ids", {1, 2}, values.data()},
                               {"input_ids", {1, 2}, values.data()}},
                              error));
  EXPECT_EQ(error, "input 'input_ids' is given twice");
  EXPECT_FALSE(model->forward({{"input_ids", {1, 2}, nullptr}}, error));
  EXPECT_EQ(error, "input 'input_ids' has no data");

  // The model still works after every one of those.
  std::vector<int64_t> good = {1, 2};
  EXPECT_EQ(run(*model, {{"input_ids", ints({1, 2}, good)}}),
            referenceLogits(good, {}));
}

TEST_F(RuntimeTest, AFailingKernelNamesItselfAndHalidesMessage) {
  Json json = Json::parse(tfmc_plan_json);
  json["steps"][1]["kernel"] = "tfmc_test_fail";
  std::unique_ptr<Model> model = load(planFrom(json), weights);
  ASSERT_TRUE(model);
  EXPECT_EQ(forwardError(*model, {{"input_ids", ints({1, 2}, {1, 2})}}),
            "kernel tfmc_test_fail (step 2 of 3) failed: Input buffer b0 is "
            "accessed at 10, which is beyond the max (9) in dimension 0");

  json["steps"][1]["kernel"] = "tfmc_test_fail_silently";
  model = load(planFrom(json), weights);
  ASSERT_TRUE(model);
  EXPECT_EQ(
      forwardError(*model, {{"input_ids", ints({1, 2}, {1, 2})}}),
      "kernel tfmc_test_fail_silently (step 2 of 3) failed: error code -7");
}

TEST_F(RuntimeTest, BuffersOutsideTheirMemoryArePlanErrors) {
  Json json = Json::parse(tfmc_plan_json);
  json["steps"][2]["args"][1]["dims"] = {{4}, {4}};
  std::unique_ptr<Model> model = load(planFrom(json), weights);
  ASSERT_TRUE(model);
  EXPECT_EQ(forwardError(*model, {{"input_ids", ints({1, 2}, {1, 2})}}),
            "plan: step 2 arg 1: dims [4, 4] view 16 elements at offset 12 of "
            "weight 'proj.weight', which has 24");

  json = Json::parse(tfmc_plan_json);
  json["arena_bytes"] = 400;
  model = load(planFrom(json), weights);
  ASSERT_TRUE(model);
  EXPECT_EQ(forwardError(*model, {{"input_ids", ints({1, 2}, {1, 2})}}),
            "plan: output 'logits' [B, S, 3] does not fit in the arena at "
            "offset 384 (400 bytes) for B=1, S=2");

  json = Json::parse(tfmc_plan_json);
  json["steps"][0]["args"][2]["dims"] = {{100}, {"S"}, {"B"}};
  model = load(planFrom(json), weights);
  ASSERT_TRUE(model);
  EXPECT_EQ(
      forwardError(*model, {{"input_ids", ints({1, 2}, {1, 2})}}),
      "plan: step 0 arg 2: dims [100, S, B] (800 bytes) at arena offset 0 "
      "run past the arena (528 bytes) for B=1, S=2");

  json = Json::parse(tfmc_plan_json);
  json["steps"][0]["args"][0]["dims"] = {{"S"}, {"B"}, {2}};
  model = load(planFrom(json), weights);
  ASSERT_TRUE(model);
  EXPECT_EQ(forwardError(*model, {{"input_ids", ints({1, 2}, {1, 2})}}),
            "plan: step 0 arg 0: dims [S, B, 2] view 4 elements of input "
            "'input_ids', which has 2 for B=1, S=2");
}

TEST_F(RuntimeTest, SetThreadsGoesThroughTheHooks) {
  std::string error;
  EXPECT_TRUE(Model::setThreads(3, error));
  EXPECT_EQ(fakeThreads, 3);
  EXPECT_FALSE(Model::setThreads(0, error));
  EXPECT_EQ(error, "the thread count must be at least 1, got 0");
  EXPECT_EQ(fakeThreads, 3);
}

#if defined(__x86_64__)
// A caller that flushes subnormals (-ffast-math sets FTZ and DAZ at start-up)
// gets IEEE subnormals inside the kernels, and its own flags back.
TEST_F(RuntimeTest, KernelsRunWithIeeeSubnormals) {
  std::unique_ptr<Model> model = load(tinyPlan(), weights);
  ASSERT_TRUE(model);
  const unsigned before = _mm_getcsr(), flush = 0x8000 | 0x40;
  _mm_setcsr(before | flush);
  tfmc::test::embedFloatControl = flush;
  std::vector<int64_t> ids = {1, 2, 3};
  std::vector<float> logits = run(*model, {{"input_ids", ints({1, 3}, ids)}});
  const unsigned after = _mm_getcsr();
  _mm_setcsr(before);
  EXPECT_EQ(logits.size(), 9u);
  EXPECT_EQ(tfmc::test::embedFloatControl & flush, 0u);
  EXPECT_EQ(after, before | flush);
}
#endif

//===----------------------------------------------------------------------===//
// Plans compiled for CUDA ("device": "cuda"), on the test double's fake GPU
//===----------------------------------------------------------------------===//

Plan cudaPlan() {
  Json json = Json::parse(tfmc_plan_json);
  json["device"] = "cuda";
  std::string error;
  std::optional<Plan> plan = parsePlan(json.dump(), error);
  EXPECT_TRUE(plan) << error;
  return plan ? *plan : Plan();
}

TEST_F(RuntimeTest, ACudaPlanRunsOverDeviceMemory) {
  Plan plan = cudaPlan();
  EXPECT_EQ(plan.device, "cuda");
  EXPECT_EQ(tinyPlan().device, "host");
  ASSERT_TRUE(fakeDeviceMemory.empty());
  {
    std::unique_ptr<Model> model = load(plan, weights);
    ASSERT_TRUE(model);
    // At load: the 4 weights are uploaded; the arena is not (its contents
    // are irrelevant: the fake device's are NaN), and each of the 2 inputs
    // gets a staging buffer.
    EXPECT_EQ(fakeUploads, 4);
    EXPECT_EQ(fakeDeviceMemory.size(), 7u);
    // Every kernel argument is device memory only (the fake kernels check
    // it), and the numbers are the host plan's.
    std::vector<int64_t> ids = {1, 2, 3, 9, 0, 5}, mask = {1, 1, 1, 1, 1, 0};
    std::vector<int64_t> shape;
    EXPECT_EQ(run(*model,
                  {{"input_ids", ints({2, 3}, ids)},
                   {"attention_mask", ints({2, 3}, mask)}},
                  &shape),
              referenceLogits(ids, mask));
    EXPECT_EQ(shape, (std::vector<int64_t>{2, 3, 3}));
    // Per call: each input is uploaded once, the output downloaded once.
    EXPECT_EQ(fakeUploads, 6);
    EXPECT_EQ(fakeDownloads, 1);
    // An absent mask is uploaded as ones.
    EXPECT_EQ(run(*model, {{"input_ids", ints({1, 2}, {4, 7})}}),
              referenceLogits({4, 7}, {}));
    EXPECT_EQ(fakeUploads, 8);
    EXPECT_EQ(fakeDownloads, 2);
    // Timed steps wait for their kernel.
    std::vector<double> times;
    model->setStepTimes(&times);
    run(*model, {{"input_ids", ints({1, 2}, {4, 7})}});
    model->setStepTimes(nullptr);
    EXPECT_EQ(times.size(), 3u);
    EXPECT_EQ(fakeSyncs, 3);
  }
  // Device memory is freed with the model.
  EXPECT_TRUE(fakeDeviceMemory.empty());
}

TEST_F(RuntimeTest, CApiShare) {
  tfmc_model *model = nullptr, *shared = nullptr;
  ASSERT_EQ(tfmc_create(weights.c_str(), &model), 0) << tfmc_last_error();
  ASSERT_EQ(tfmc_share(model, &shared), 0) << tfmc_last_error();
  ASSERT_NE(shared, nullptr);
  tfmc_destroy(model); // any order
  int64_t ids[] = {1, 2, 3};
  tfmc_input input = {"input_ids", ids, 1, 3};
  const float *logits = nullptr;
  int64_t shape[3];
  ASSERT_EQ(tfmc_forward(shared, &input, 1, &logits, shape), 0)
      << tfmc_last_error();
  EXPECT_EQ(std::vector<float>(logits, logits + 9),
            referenceLogits({1, 2, 3}, {}));
  tfmc_destroy(shared);
  EXPECT_NE(tfmc_share(nullptr, &shared), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_share: model is null");
  EXPECT_NE(tfmc_share(model, nullptr), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_share: shared is null");
}

TEST_F(RuntimeTest, ACudaPlanWithoutAGpuIsOneLineError) {
  fakeDeviceOpenError = "no CUDA device: cannot load the CUDA driver "
                        "(libcuda.so.1: cannot open shared object file: No "
                        "such file or directory)";
  EXPECT_EQ(createError(cudaPlan(), weights), fakeDeviceOpenError);
  EXPECT_TRUE(fakeDeviceMemory.empty());
  // Weight errors come first, as on the host.
  EXPECT_EQ(createError(cudaPlan(), pathOf("missing.safetensors")),
            createError(tinyPlan(), pathOf("missing.safetensors")));
}

TEST_F(RuntimeTest, ADeviceCopyFailureNamesTheCopy) {
  std::unique_ptr<Model> model = load(cudaPlan(), weights);
  ASSERT_TRUE(model);
  fakeDownloadError = "CUDA: cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS";
  EXPECT_EQ(forwardError(*model, {{"input_ids", ints({1, 2}, {4, 7})}}),
            "cannot copy the output 'logits' from the GPU: CUDA: cuMemcpyDtoH "
            "failed: CUDA_ERROR_ILLEGAL_ADDRESS");
  fakeDownloadError.clear();
  EXPECT_EQ(run(*model, {{"input_ids", ints({1, 2}, {4, 7})}}),
            referenceLogits({4, 7}, {}));
}

TEST_F(RuntimeTest, APlanDeviceIsHostOrCuda) {
  Json json = Json::parse(tfmc_plan_json);
  json["device"] = "tpu";
  EXPECT_EQ(planError(json.dump()),
            "plan: device: 'tpu' is neither 'host' nor 'cuda'");
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

TEST_F(RuntimeTest, CApi) {
  EXPECT_STREQ(tfmc_model_name(), "tiny");

  tfmc_model *model = nullptr;
  ASSERT_EQ(tfmc_create(weights.c_str(), &model), 0) << tfmc_last_error();
  ASSERT_NE(model, nullptr);

  std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6}, mask = {1, 1, 0, 1, 1, 1};
  tfmc_input inputs[] = {{"input_ids", ids.data(), 2, 3},
                         {"attention_mask", mask.data(), 2, 3}};
  const float *output = nullptr;
  int64_t shape[3] = {0, 0, 0};
  ASSERT_EQ(tfmc_forward(model, inputs, 2, &output, shape), 0)
      << tfmc_last_error();
  EXPECT_EQ(shape[0], 2);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape[2], 3);
  EXPECT_EQ(std::vector<float>(output, output + 18),
            referenceLogits(ids, mask));

  // An error through the API: non-zero, and the message.
  tfmc_input unknown = {"token_type_ids", ids.data(), 2, 3};
  EXPECT_NE(tfmc_forward(model, &unknown, 1, &output, shape), 0);
  EXPECT_STREQ(tfmc_last_error(),
               "unknown input 'token_type_ids'; this model takes input_ids, "
               "attention_mask");
  EXPECT_EQ(output, nullptr);
  std::vector<int64_t> bad = {1, 12};
  tfmc_input badIds = {"input_ids", bad.data(), 1, 2};
  EXPECT_NE(tfmc_forward(model, &badIds, 1, &output, shape), 0);
  EXPECT_STREQ(tfmc_last_error(),
               "input_ids[0, 1] = 12 is not a token id (vocab 10)");
  tfmc_input negative = {"input_ids", bad.data(), -1, 2};
  EXPECT_NE(tfmc_forward(model, &negative, 1, &output, shape), 0);
  EXPECT_STREQ(tfmc_last_error(), "input 'input_ids' has shape [-1, 2]");
  EXPECT_NE(tfmc_forward(nullptr, inputs, 1, &output, shape), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_forward: model is null");
  EXPECT_NE(tfmc_forward(model, inputs, 1, nullptr, shape), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_forward: output or shape is null");
  tfmc_input unnamed = {nullptr, ids.data(), 1, 1};
  EXPECT_NE(tfmc_forward(model, &unnamed, 1, &output, shape), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_forward: input 0 has no name");

  // Still usable after errors; a missing mask is all ones.
  ASSERT_EQ(tfmc_forward(model, inputs, 1, &output, shape), 0)
      << tfmc_last_error();
  EXPECT_EQ(std::vector<float>(output, output + 18), referenceLogits(ids, {}));
  tfmc_destroy(model);
  tfmc_destroy(nullptr);

  std::string missing = pathOf("missing.safetensors");
  model = reinterpret_cast<tfmc_model *>(this);
  EXPECT_NE(tfmc_create(missing.c_str(), &model), 0);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(std::string(tfmc_last_error()),
            missing + ": cannot open: No such file or directory");
  EXPECT_NE(tfmc_create(nullptr, &model), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_create: weights_path is null");
  EXPECT_NE(tfmc_create(weights.c_str(), nullptr), 0);
  EXPECT_STREQ(tfmc_last_error(), "tfmc_create: model is null");

  EXPECT_EQ(tfmc_set_threads(2), 0);
  EXPECT_EQ(fakeThreads, 2);
  EXPECT_NE(tfmc_set_threads(0), 0);
  EXPECT_STREQ(tfmc_last_error(), "the thread count must be at least 1, got 0");
}

TEST_F(RuntimeTest, CApiHeaderIsPlainC) {
  // tfmc.h must compile as C: no C++ in it.
  std::string source = pathOf("c_api.c");
  std::ofstream(source) << "#include \"runtime/core/tfmc.h\"\n"
                           "int main(void) { tfmc_model *m = 0; "
                           "return tfmc_create(\"w\", &m); }\n";
  std::string command = std::string(TFMC_C_COMPILER) +
                        " -std=c99 -Wall -Wextra -Werror -pedantic "
                        "-fsyntax-only -I" +
                        TFMC_SOURCE_DIR + " " + source + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0);
}


// A program's variants are tried widest first; a CPU that has none of
// them gets one line naming each variant's missing features and the widest
// registered target it has (hand-written feature sets, not this CPU's).
TEST(CpuVariants, TheWidestVariantTheCpuHasRuns) {
  const std::vector<CpuTargetFeatures> registry = {
      {"x86-64-avx512", "avx2 fma avx512f avx512bw"},
      {"x86-64-avx2", "avx2 fma"}};
  auto cpuWith = [](std::set<std::string> features) {
    return [features](const std::string &f) { return features.count(f) > 0; };
  };
  // A fleet program on an AVX-512 CPU, then on an AVX2 one.
  EXPECT_EQ(chooseVariant(registry, registry,
                          cpuWith({"avx2", "fma", "avx512f", "avx512bw"}))
                .index,
            0);
  EXPECT_EQ(chooseVariant(registry, registry, cpuWith({"avx2", "fma"})).index,
            1);
  // An AVX-512 program on an AVX2 CPU: no SIGILL, a reason.
  VariantChoice refused = chooseVariant({registry[0]}, registry,
                                        cpuWith({"avx2", "fma", "avx512f"}));
  EXPECT_EQ(refused.index, -1);
  EXPECT_EQ(refused.error,
            "this CPU cannot run the program's kernels (x86-64-avx512 needs "
            "avx512bw, which it lacks); rebuild it with `tfmc --target "
            "x86-64-avx2`");
  // A CPU without AVX2 runs no tfmc target.
  refused = chooseVariant(registry, registry, cpuWith({"fma"}));
  EXPECT_EQ(refused.index, -1);
  EXPECT_EQ(refused.error,
            "this CPU cannot run the program's kernels (x86-64-avx512 needs "
            "avx2 avx512f avx512bw; x86-64-avx2 needs avx2, which it lacks); "
            "no tfmc target runs on it (x86-64-avx2 needs avx2 fma)");
  // A variant that needs nothing (a CUDA program's host side) always runs.
  EXPECT_EQ(chooseVariant({{"cuda", ""}}, registry, cpuWith({})).index, 0);
}

// The real CPUID reading: a feature every x86-64 has, one no name has.
TEST(CpuVariants, ReadsThisCpu) {
  EXPECT_TRUE(cpuHasFeature("sse4.1") || !cpuHasFeature("avx2"));
  EXPECT_FALSE(cpuHasFeature("no-such-feature"));
  EXPECT_EQ(missingCpuFeatures("no-such-feature"),
            std::vector<std::string>{"no-such-feature"});
}

} // namespace
