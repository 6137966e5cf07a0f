//===- RuntimeCacheTest.cpp - The executor's KV cache across calls ------===//
//
// runtime/core/Model.h's KV cache over hand-written plans of TinyModel.cpp's
// test kernels: a dense slot on the host and on the fake device, the paged
// cache's blocks (runtime/core/KvBlocks.h: sequences, beams, joins, the
// frame, save and restore), and Models made by share() running on threads
// at once.
//
//===----------------------------------------------------------------------===//

#include "test/unit/RuntimeFixture.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace tfmc::test;
using namespace tfmc::runtime;

namespace {

/// A decoder's entry points over a KV cache slot of width 4: the prefill
/// embeds its tokens, appends them to the cache and sums the cached rows;
/// each decode step appends its token at row P and sums the L = P + 1 rows.
/// Output: the sum of the embeddings of every token so far.
std::vector<Plan> cachePlans(const char *device) {
  auto entry = [&](const char *name, bool decode) {
    Json steps = Json::array(
        {{{"kernel", "tfmc_test_embed"},
          {"args",
           {{{"value", 0}, {"type", "i64"}, {"dims", {{"S"}, {"B"}}}},
            {{"value", 1}, {"type", "f32"}, {"dims", {{4}, {10}}}},
            {{"value", 2}, {"type", "f32"}, {"dims", {{4}, {"S"}, {"B"}}}}}}},
         {{"kernel", "tfmc_test_copy"},
          {"args",
           {{{"value", 2}, {"type", "f32"}, {"dims", {{4}, {"S"}, {"B"}}}},
            {{"value", 3}, {"type", "f32"}, {"dims", {{4}, {"S"}, {"B"}}}}}}},
         {{"kernel", "tfmc_test_sum_rows"},
          {"args",
           {{{"value", 4},
             {"type", "f32"},
             {"dims", {{4}, {decode ? "L" : "S"}, {"B"}}}},
            {{"value", 5}, {"type", "f32"}, {"dims", {{4}, {1}, {"B"}}}}}}}});
    Json plan = {
        {"format", 1}, {"model", "cached"}, {"entry", name},
        {"target", "test"}, {"device", device}, {"vocab", 10},
        {"max_len", 8}, {"max_batch", 1}, {"max_seq", 8},
        {"arena_bytes", 256},
        {"symbols", decode ? Json({"B", "S", "P", "L"}) : Json({"B", "S"})},
        {"inputs", {{{"name", "input_ids"}, {"kind", "ids"}, {"dims", {"B", "S"}}}}},
        {"weights", {{{"name", "embed.weight"}, {"shape", {10, 4}}},
                     {{"name", "proj.weight"}, {"shape", {2, 3, 4}}},
                     {{"name", "final.norm.weight"}, {"shape", {4}}},
                     {{"name", "final.norm.bias"}, {"shape", {4}}}}},
        {"cache", {{{"slot", "k"}, {"width", 4}}}},
        {"values",
         {{{"kind", "input"}, {"index", 0}},
          {{"kind", "weight"}, {"index", 0}, {"offset", 0}},
          {{"kind", "arena"}, {"offset", 0}},
          {{"kind", "cache"}, {"index", 0}, {"row", decode ? Json("P") : Json(0)}},
          {{"kind", "cache"}, {"index", 0}, {"row", 0}},
          {{"kind", "arena"}, {"offset", 128}}}},
        {"output", {{"name", "logits"}, {"value", 5}, {"dims", {"B", 1, 4}}}},
        {"steps", steps}};
    return plan;
  };
  std::string error;
  std::optional<std::vector<Plan>> plans = parsePlans(
      Json::array({entry("forward", false), entry("prefill", false),
                   entry("decode_step", true)})
          .dump(),
      error);
  EXPECT_TRUE(plans) << error;
  return plans ? *plans : std::vector<Plan>();
}

/// The kernels cachePlans' steps call.
const tfmc_kernel_entry kCacheKernels[] = {
    {"tfmc_test_embed", tfmc_test_embed},
    {"tfmc_test_copy", tfmc_test_copy},
    {"tfmc_test_sum_rows", tfmc_test_sum_rows}};

/// What cachePlans' entries output after seeing `ids`: the sum of their
/// embedding rows.
std::vector<float> sumOf(const std::vector<int64_t> &ids) {
  static const std::vector<float> embed = embedValues();
  std::vector<float> sum(kWidth, 0.0f);
  for (int64_t id : ids)
    for (int64_t d = 0; d < kWidth; ++d)
      sum[d] += embed[id * kWidth + d];
  return sum;
}

TEST_F(RuntimeTest, ACudaPlanKeepsTheKvCacheInDeviceMemory) {
  for (const char *device : {"host", "cuda"}) {
    SCOPED_TRACE(device);
    std::string error;
    std::unique_ptr<Model> model =
        Model::create(cachePlans(device), kCacheKernels, 3, weights, error);
    ASSERT_TRUE(model) << error;
    auto step = [&](const char *entry, std::vector<int64_t> ids) {
      InputView input{"input_ids", {1, int64_t(ids.size())}, ids.data()};
      std::optional<OutputView> output = model->run(entry, {input}, error);
      EXPECT_TRUE(output) << error;
      return output ? std::vector<float>(output->data,
                                         output->data + output->numElements())
                    : std::vector<float>();
    };
    EXPECT_EQ(step("prefill", {1, 2, 3}), sumOf({1, 2, 3}));
    EXPECT_EQ(step("decode_step", {4}), sumOf({1, 2, 3, 4}));
    EXPECT_EQ(step("decode_step", {9}), sumOf({1, 2, 3, 4, 9}));
    EXPECT_EQ(model->cachedTokens(), 5);
    // A new prefill starts the cache over.
    EXPECT_EQ(step("prefill", {7}), sumOf({7}));
    EXPECT_EQ(step("decode_step", {0}), sumOf({7, 0}));
  }
  EXPECT_TRUE(fakeDeviceMemory.empty());
}

/// cachePlans over a paged cache (Plan.h): blocks of 2 positions, 2
/// sequences of at most 8, rows of 2 heads (head-major blocks: the kernel
/// reads head h of pool row r at run ((r / 2)·2 + h)·2 + r % 2). The prefill embeds its tokens, stores them into
/// their sequences' blocks and sums its own rows; each decode step stores
/// its token and sums every pool row key_rows names for its sequence.
/// Output: the sum of the embeddings of the sequence's tokens.
std::vector<Plan> pagedPlans() {
  auto entry = [&](const char *name, bool cached, bool decode) {
    Json steps = Json::array(
        {{{"kernel", "tfmc_test_embed"},
          {"args",
           {{{"value", 0}, {"type", "i64"}, {"dims", {{"S"}, {"B"}}}},
            {{"value", 1}, {"type", "f32"}, {"dims", {{4}, {10}}}},
            {{"value", 2}, {"type", "f32"}, {"dims", {{4}, {"S"}, {"B"}}}}}}}});
    if (cached)
      steps.push_back(
          {{"store", 0},
           {"args",
            {{{"value", 2}, {"type", "f32"}, {"dims", {{4}, {"S"}, {"B"}}}}}}});
    if (decode)
      steps.push_back(
          {{"kernel", "tfmc_test_sum_paged"},
           {"args",
            {{{"value", 3}, {"type", "f32"}, {"dims", {{2}, {2}, {2}, {"N"}}}},
             {{"value", 4}, {"type", "i32"}, {"dims", {{"L"}, {"B"}}}},
             {{"value", 5}, {"type", "f32"}, {"dims", {{4}, {1}, {"B"}}}}}}});
    else
      steps.push_back(
          {{"kernel", "tfmc_test_sum_rows"},
           {"args",
            {{{"value", 2}, {"type", "f32"}, {"dims", {{4}, {"S"}, {"B"}}}},
             {{"value", 5}, {"type", "f32"}, {"dims", {{4}, {1}, {"B"}}}}}}});
    return Json{
        {"format", 1}, {"model", "paged"}, {"entry", name},
        {"target", "test"}, {"device", "host"}, {"vocab", 10},
        {"max_len", 8}, {"max_batch", 2}, {"max_seq", 8},
        {"arena_bytes", 1024},
        {"symbols",
         decode ? Json({"B", "S", "P", "L", "N"}) : Json({"B", "S"})},
        {"inputs", {{{"name", "input_ids"}, {"kind", "ids"}, {"dims", {"B", "S"}}}}},
        {"weights", {{{"name", "embed.weight"}, {"shape", {10, 4}}},
                     {{"name", "proj.weight"}, {"shape", {2, 3, 4}}},
                     {{"name", "final.norm.weight"}, {"shape", {4}}},
                     {{"name", "final.norm.bias"}, {"shape", {4}}}}},
        {"cache", {{{"slot", "k"}, {"width", 4}, {"paged", true}, {"heads", 2}}}},
        {"block_tokens", 2},
        {"values",
         {{{"kind", "input"}, {"index", 0}},
          {{"kind", "weight"}, {"index", 0}, {"offset", 0}},
          {{"kind", "arena"}, {"offset", 0}},
          {{"kind", "cache"}, {"index", 0}},
          {{"kind", "key_rows"}},
          {{"kind", "arena"}, {"offset", 512}}}},
        {"output", {{"name", "logits"}, {"value", 5}, {"dims", {"B", 1, 4}}}},
        {"steps", steps}};
  };
  std::string error;
  std::optional<std::vector<Plan>> plans = parsePlans(
      Json::array({entry("forward", false, false),
                   entry("prefill", true, false),
                   entry("decode_step", true, true)})
          .dump(),
      error);
  EXPECT_TRUE(plans) << error;
  return plans ? *plans : std::vector<Plan>();
}

// The paged KV cache (KvBlocks.h, ModelCache.cpp): a sequence holds the
// blocks its tokens need and no more; beams that continue one sequence
// share its blocks and copy the one they write into; a sequence another
// Model of the load prefilled joins by handing over its blocks (no rows
// copied), right-aligned in the batch's frame; the frame shrinks over
// padding without a copy; every block goes back when its holders let go.
// Each step's sums check that the rows read are the sequence's own.
TEST_F(RuntimeTest, APagedCacheHoldsBlocksForItsTokens) {
  const tfmc_kernel_entry kernels[] = {
      {"tfmc_test_embed", tfmc_test_embed},
      {"tfmc_test_sum_rows", tfmc_test_sum_rows},
      {"tfmc_test_sum_paged", tfmc_test_sum_paged}};
  std::string error;
  std::unique_ptr<Model> model =
      Model::create(pagedPlans(), kernels, 3, weights, error);
  ASSERT_TRUE(model) << error;
  // (2 sequences + 1) x 8 / 2 + 2 copies.
  EXPECT_EQ(model->kvBlocks().blocks, 14);
  EXPECT_EQ(model->kvBlocks().blockTokens, 2);
  auto run = [&](Model &on, const char *entry,
                 std::vector<std::vector<int64_t>> rows) {
    std::vector<int64_t> ids;
    for (const auto &row : rows)
      ids.insert(ids.end(), row.begin(), row.end());
    InputView input{"input_ids",
                    {int64_t(rows.size()), int64_t(rows[0].size())},
                    ids.data()};
    std::optional<OutputView> output = on.run(entry, {input}, error);
    EXPECT_TRUE(output) << error;
    std::vector<std::vector<float>> sums;
    for (std::size_t b = 0; output && b < rows.size(); ++b)
      sums.emplace_back(output->data + b * kWidth,
                        output->data + (b + 1) * kWidth);
    return sums;
  };
  using Sums = std::vector<std::vector<float>>;
  auto used = [&] { return model->kvBlocks().used; };

  EXPECT_EQ(run(*model, "prefill", {{1, 2, 3}, {4, 5, 6}}),
            (Sums{sumOf({1, 2, 3}), sumOf({4, 5, 6})}));
  EXPECT_EQ(used(), 4); // 2 x ceil(3 / 2)
  EXPECT_EQ(run(*model, "decode_step", {{7}, {8}}),
            (Sums{sumOf({1, 2, 3, 7}), sumOf({4, 5, 6, 8})}));
  EXPECT_EQ(used(), 4);
  EXPECT_EQ(run(*model, "decode_step", {{9}, {0}}),
            (Sums{sumOf({1, 2, 3, 7, 9}), sumOf({4, 5, 6, 8, 0})}));
  EXPECT_EQ(used(), 6);

  // Two beams of sequence 0: its 3 blocks, shared; sequence 1's are free.
  ASSERT_TRUE(model->reorderCache({0, 0}, 0, false, error)) << error;
  EXPECT_EQ(used(), 3);
  // Position 5 is in the shared third block: the first beam copies it.
  EXPECT_EQ(run(*model, "decode_step", {{1}, {2}}),
            (Sums{sumOf({1, 2, 3, 7, 9, 1}), sumOf({1, 2, 3, 7, 9, 2})}));
  EXPECT_EQ(used(), 4);

  // A sequence a second Model prefilled joins as row 1 (replacing it) by
  // handing over its block: the pool is one, nothing is copied. (A Model
  // shared without kvBlocks has a pool of its own, and cannot hand over.)
  std::unique_ptr<Model> own = model->share(error);
  ASSERT_TRUE(own) << error;
  EXPECT_EQ(run(*own, "prefill", {{3, 3}}), (Sums{sumOf({3, 3})}));
  EXPECT_EQ(used(), 4);
  EXPECT_EQ(own->kvBlocks().used, 1);
  EXPECT_FALSE(model->insertSequence(*own, 0, 1, error));
  EXPECT_EQ(error, "insertSequence: the donor does not share this Model's "
                   "KV cache blocks (make it with share(error, true))");
  own.reset();
  std::unique_ptr<Model> donor = model->share(error, /*kvBlocks=*/true);
  ASSERT_TRUE(donor) << error;
  EXPECT_EQ(run(*donor, "prefill", {{3, 3}}), (Sums{sumOf({3, 3})}));
  EXPECT_EQ(used(), 5);
  ASSERT_TRUE(model->insertSequence(*donor, 0, 1, error)) << error;
  EXPECT_EQ(used(), 4); // row 1's old blocks went back but the shared two
  donor->clearCache();
  EXPECT_EQ(used(), 4); // the joined block stays the row's
  EXPECT_EQ(model->cachedTokens(), 6);
  EXPECT_EQ(run(*model, "decode_step", {{4}, {5}}),
            (Sums{sumOf({1, 2, 3, 7, 9, 1, 4}), sumOf({3, 3, 5})}));
  EXPECT_EQ(used(), 6); // 4 + 2

  // The frame cannot drop positions a sequence holds...
  EXPECT_FALSE(model->shiftCache(-4, error));
  EXPECT_EQ(error, "shiftCache: sequence 0 has 7 positions, more than the "
                   "3 left");
  // ...but once the long one has left, it drops the padding: no copy.
  ASSERT_TRUE(model->reorderCache({1}, 0, false, error)) << error;
  EXPECT_EQ(used(), 2);
  ASSERT_TRUE(model->shiftCache(-4, error)) << error;
  EXPECT_EQ(model->cachedTokens(), 3);
  EXPECT_EQ(run(*model, "decode_step", {{6}}), (Sums{sumOf({3, 3, 5, 6})}));
  EXPECT_EQ(used(), 2);

  // Saved and restored positions read the sequence's own rows.
  std::vector<uint8_t> saved(4 * model->cachePositionBytes());
  ASSERT_TRUE(model->saveCachePositions(0, 0, 4, saved.data(), error))
      << error;
  ASSERT_TRUE(donor->restoreCachePositions(0, 4, saved.data(), error))
      << error;
  EXPECT_EQ(used(), 4);
  EXPECT_EQ(run(*donor, "decode_step", {{2}}),
            (Sums{sumOf({3, 3, 5, 6, 2})}));

  model->clearCache();
  donor.reset();
  EXPECT_EQ(used(), 0);

  // A prefill empties the cache before it takes blocks: two full batches
  // in a row fit (8 blocks each of the 14), not 16 at once.
  const std::vector<int64_t> eight = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(run(*model, "prefill", {eight, eight}),
            (Sums{sumOf(eight), sumOf(eight)}));
  EXPECT_EQ(used(), 8);
  EXPECT_EQ(run(*model, "prefill", {eight, eight}),
            (Sums{sumOf(eight), sumOf(eight)}));
  EXPECT_EQ(used(), 8);
  model->clearCache();
  EXPECT_EQ(used(), 0);
}

// Models made by share() run on different threads at once: each has its
// own arena and KV cache over the one load's weights, every result is what
// a Model alone computes, and the weights outlive whichever Model goes
// first. (The fake device is not thread-safe: host plans only.)
TEST_F(RuntimeTest, SharedModelsRunOnThreadsAtOnce) {
  std::string error;
  std::unique_ptr<Model> first =
      Model::create(cachePlans("host"), kCacheKernels, 3, weights, error);
  ASSERT_TRUE(first) << error;
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<Model>> models;
  for (int t = 0; t < kThreads; ++t) {
    models.push_back(first->share(error));
    ASSERT_TRUE(models.back()) << error;
    EXPECT_EQ(models.back()->cachedTokens(), 0);
    EXPECT_EQ(models.back()->loadStats().weightBytes,
              first->loadStats().weightBytes);
  }
  // A prefill on `first` leaves the others' caches empty.
  std::vector<int64_t> ids = {3, 3};
  InputView input{"input_ids", {1, 2}, ids.data()};
  ASSERT_TRUE(first->run("prefill", {input}, error)) << error;
  EXPECT_EQ(first->cachedTokens(), 2);
  EXPECT_EQ(models[0]->cachedTokens(), 0);
  first.reset(); // the weights stay while a Model uses them

  std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Model &model = *models[t];
      std::string threadError;
      for (int round = 0; round < 200; ++round) {
        // Each thread its own sequence: a prefill of two ids, then steps.
        std::vector<int64_t> seen = {(t + round) % 10, (t * 3 + 1) % 10};
        std::vector<int64_t> step = seen;
        for (int s = 0; s < 4; ++s) {
          InputView view{"input_ids", {1, int64_t(step.size())}, step.data()};
          std::optional<OutputView> output =
              model.run(s == 0 ? "prefill" : "decode_step", {view},
                        threadError);
          if (!output) {
            ++failures[t];
            return;
          }
          if (std::vector<float>(output->data,
                                 output->data + output->numElements()) !=
              sumOf(seen))
            ++mismatches[t];
          step = {(t + s + round) % 10};
          seen.push_back(step[0]);
        }
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

// tfmc_share: the C API's handle for another thread, and its errors.
} // namespace
