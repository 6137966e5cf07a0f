//===- SamplingTest.cpp - Sampler against hand-derived sets and statistics ===//

#include "runtime/generate/Sampling.h"

#include <gtest/gtest.h>

#include <functional>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>

using namespace tfmc::runtime;

namespace {

std::vector<float> exampleLogits() {
  // Distinct values, ids out of order: sorted descending the ids are
  // 3, 0, 6, 1, 5, 7, 2, 4.
  return {2.0f, 0.5f, -1.0f, 3.0f, -2.0f, 0.0f, 1.0f, -0.5f};
}

/// Softmax of logits / T in double.
std::vector<double> softmax(const std::vector<float> &logits, double t) {
  double largest = *std::max_element(logits.begin(), logits.end()) / t;
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < logits.size(); ++i)
    sum += p[i] = std::exp(logits[i] / t - largest);
  for (double &x : p)
    x /= sum;
  return p;
}

/// What Hugging Face's warpers leave, written here from their definitions
/// (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, in that
/// order) and not from the sampler's own filteredProbabilities: softmax of
/// logits / T over the k largest logits (ties kept), then, in descending
/// order, each token while the renormalised mass before it is below P;
/// renormalised over what is kept.
std::vector<double> referenceProbabilities(const std::vector<float> &logits,
                                           double t, int64_t topK,
                                           double topP) {
  const std::size_t n = logits.size();
  std::vector<bool> kept(n, true);
  if (topK > 0 && topK < int64_t(n)) {
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (std::size_t i = 0; i < n; ++i)
      kept[i] = logits[i] >= sorted[topK - 1];
  }
  auto normalised = [&]() {
    double largest = -INFINITY;
    for (std::size_t i = 0; i < n; ++i)
      if (kept[i])
        largest = std::max(largest, logits[i] / t);
    std::vector<double> p(n, 0.0);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (kept[i])
        sum += p[i] = std::exp(logits[i] / t - largest);
    for (double &x : p)
      x /= sum;
    return p;
  };
  std::vector<double> p = normalised();
  if (topP < 1) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
    double before = 0;
    for (std::size_t i : order) {
      if (before >= topP)
        kept[i] = false;
      before += p[i];
    }
    p = normalised();
  }
  return p;
}

/// Draws `n` tokens with a fresh copy of the logits each time.
std::vector<int64_t> draw(const std::vector<float> &logits,
                          const SamplingOptions &options, uint64_t stream,
                          int n) {
  Sampler sampler(options, stream);
  std::vector<int64_t> tokens;
  for (int i = 0; i < n; ++i) {
    std::vector<float> copy = logits;
    tokens.push_back(sampler.next(copy.data(), int64_t(copy.size()), {}));
  }
  return tokens;
}

} // namespace

TEST(Sampling, TemperatureZeroIsArgmaxLowestIdOnTies) {
  std::vector<float> logits = {1.0f, 4.0f, 4.0f, -3.0f};
  SamplingOptions options; // temperature 0
  EXPECT_EQ(draw(logits, options, 0, 5), std::vector<int64_t>(5, 1));
}

TEST(Sampling, TinyTemperatureEqualsGreedy) {
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  SamplingOptions options;
  options.temperature = 1e-6;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(100);
    for (float &x : logits)
      x = normal(random);
    int64_t greedy = argmax(logits.data(), 100);
    for (int64_t token : draw(logits, options, trial, 20))
      ASSERT_EQ(token, greedy);
  }
}

TEST(Sampling, TopKNeverDrawsOutsideTheKLargest) {
  std::vector<float> logits = exampleLogits();
  const std::vector<std::set<int64_t>> largest = {
      {3}, {3, 0}, {3, 0, 6}, {3, 0, 6, 1}, {3, 0, 6, 1, 5}};
  for (int64_t k = 1; k <= 5; ++k) {
    SamplingOptions options;
    options.temperature = 2.0; // flat enough to reach every kept token
    options.topK = k;
    std::set<int64_t> seen;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      options.seed = seed;
      for (int64_t token : draw(logits, options, seed, 500)) {
        ASSERT_TRUE(largest[k - 1].count(token)) << "k " << k << " drew " << token;
        seen.insert(token);
      }
    }
    EXPECT_EQ(seen, largest[k - 1]) << "k " << k;
  }
}

TEST(Sampling, TopKKeepsTies) {
  // HF's TopKLogitsWarper removes only logits below the k-th largest.
  std::vector<float> logits = {1.0f, 2.0f, 2.0f, 0.0f};
  SamplingOptions options;
  options.temperature = 1.0;
  options.topK = 1;
  std::vector<double> p;
  filteredProbabilities(logits.data(), 4, options, p);
  EXPECT_DOUBLE_EQ(p[1], 0.5);
  EXPECT_DOUBLE_EQ(p[2], 0.5);
  EXPECT_EQ(p[0], 0.0);
  EXPECT_EQ(p[3], 0.0);
}

TEST(Sampling, TopPNeverDrawsOutsideTheNucleus) {
  std::vector<float> logits = exampleLogits();
  std::vector<double> p = softmax(logits, 1.0);
  // Descending ids 3, 0, 6, 1, ...: token j is kept while the mass of the
  // tokens before it is below P (HF: ascending cumulative mass <= 1 - P is
  // removed).
  const std::vector<int64_t> order = {3, 0, 6, 1, 5, 7, 2, 4};
  for (double topP : {0.3, 0.6, 0.8, 0.9, 0.95, 0.99}) {
    std::set<int64_t> nucleus;
    double before = 0;
    for (int64_t id : order) {
      if (before >= topP)
        break;
      nucleus.insert(id);
      before += p[id];
    }
    SamplingOptions options;
    options.temperature = 1.0;
    options.topP = topP;
    std::vector<double> filtered;
    filteredProbabilities(logits.data(), 8, options, filtered);
    for (int64_t id = 0; id < 8; ++id)
      EXPECT_EQ(filtered[id] > 0, nucleus.count(id) == 1)
          << "top-p " << topP << " token " << id;
    std::set<int64_t> seen;
    for (int64_t token : draw(logits, options, 3, 3000)) {
      ASSERT_TRUE(nucleus.count(token)) << "top-p " << topP << " drew " << token;
      seen.insert(token);
    }
    EXPECT_EQ(seen, nucleus) << "top-p " << topP;
  }
}

TEST(Sampling, TopPAfterTopKRenormalises) {
  // Top-k 3 keeps ids 3, 0, 6 (softmax masses 0.665, 0.245, 0.090 of the
  // three); top-p 0.9 then keeps 3 and 0 (0.665 < 0.9, 0.910 >= 0.9).
  std::vector<float> logits = exampleLogits();
  SamplingOptions options;
  options.temperature = 1.0;
  options.topK = 3;
  options.topP = 0.9;
  std::vector<double> p;
  filteredProbabilities(logits.data(), 8, options, p);
  const double e3 = std::exp(3.0), e2 = std::exp(2.0);
  EXPECT_NEAR(p[3], e3 / (e3 + e2), 1e-7); // weights are float exps
  EXPECT_NEAR(p[0], e2 / (e3 + e2), 1e-7);
  for (int64_t id : {1, 2, 4, 5, 6, 7})
    EXPECT_EQ(p[id], 0.0) << id;
}

// Chi-square goodness of fit: 200,000 draws over 8 tokens against the
// filtered softmax. With 7 degrees of freedom, the statistic exceeds 24.32
// with probability 0.001 when the sampler is right; a wrong distribution
// (e.g. one token's probability off by 1% absolute) gives a statistic in
// the hundreds at this many draws. The seed is fixed, so the test is
// deterministic; with a random seed it would fail once in 1000 runs.
TEST(Sampling, FrequenciesMatchSoftmaxChiSquare) {
  std::vector<float> logits = exampleLogits();
  struct Case {
    double temperature;
    int64_t topK;
    double topP;
  };
  // The expected distribution is the test's own (referenceProbabilities),
  // never the sampler's: a temperature applied twice, or top-p taken of the
  // wrong mass, moves it. T != 1 with top-k and top-p together included.
  for (Case c : {Case{1.0, 0, 1.0}, Case{0.7, 0, 1.0}, Case{1.5, 6, 1.0},
                 Case{1.0, 0, 0.97}, Case{0.7, 5, 0.9}, Case{1.6, 7, 0.95},
                 Case{2.5, 0, 0.8}}) {
    SamplingOptions options;
    options.temperature = c.temperature;
    options.topK = c.topK;
    options.topP = c.topP;
    options.seed = 1234;
    std::vector<double> expected =
        referenceProbabilities(logits, c.temperature, c.topK, c.topP);
    // The sampler's own account agrees with the reference.
    std::vector<double> claimed;
    filteredProbabilities(logits.data(), 8, options, claimed);
    for (int id = 0; id < 8; ++id)
      EXPECT_NEAR(claimed[id], expected[id], 1e-6)
          << "T " << c.temperature << " top-k " << c.topK << " top-p "
          << c.topP << " id " << id;
    const int draws = 200000;
    std::vector<int> counts(8, 0);
    for (int64_t token : draw(logits, options, 0, draws))
      ++counts[token];
    double chi2 = 0;
    int categories = 0;
    for (int id = 0; id < 8; ++id) {
      if (expected[id] == 0) {
        EXPECT_EQ(counts[id], 0);
        continue;
      }
      double e = expected[id] * draws;
      chi2 += (counts[id] - e) * (counts[id] - e) / e;
      ++categories;
    }
    // Critical values at p = 0.001 by degrees of freedom (categories - 1).
    const double critical[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46,
                               24.32};
    EXPECT_LT(chi2, critical[categories - 1])
        << "T " << c.temperature << " top-k " << c.topK << " top-p " << c.topP;
  }
  // The unfiltered case equals the plain softmax.
  std::vector<double> plain = softmax(logits, 1.0), filtered;
  SamplingOptions options;
  options.temperature = 1.0;
  filteredProbabilities(logits.data(), 8, options, filtered);
  for (int id = 0; id < 8; ++id)
    EXPECT_NEAR(filtered[id], plain[id], 1e-7);
}

TEST(Sampling, OneSeedOneSequencePerStream) {
  std::vector<float> logits = exampleLogits();
  SamplingOptions options;
  options.temperature = 1.0;
  options.seed = 42;
  EXPECT_EQ(draw(logits, options, 0, 200), draw(logits, options, 0, 200));
  EXPECT_NE(draw(logits, options, 0, 200), draw(logits, options, 1, 200));
  SamplingOptions other = options;
  other.seed = 43;
  EXPECT_NE(draw(logits, options, 0, 200), draw(logits, other, 0, 200));
}

TEST(Sampling, RepetitionPenaltyHandDerived) {
  // HF: a seen token's logit is divided by R when positive, multiplied by
  // R when negative; each distinct token once, unseen ones untouched.
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, -3.0f};
  applyRepetitionPenalty(logits.data(), 4, {0, 1, 0, 1, 7, -2}, 2.0);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[1], -2.0f);
  EXPECT_FLOAT_EQ(logits[2], 0.5f);
  EXPECT_FLOAT_EQ(logits[3], -3.0f);
  // With greedy decoding the penalty can change the choice.
  std::vector<float> close = {2.0f, 1.5f};
  SamplingOptions options;
  options.repetitionPenalty = 1.5;
  Sampler sampler(options, 0);
  EXPECT_EQ(sampler.next(close.data(), 2, {0}), 1);
}

TEST(Sampling, OpenAiPenaltiesAndBiasHandDerived) {
  // History: prompt {3, 3}, then generated {0, 0, 1}. Repetition penalty 2
  // first (tokens 3, 0, 1: HF's, over the whole sequence), then OpenAI's
  // over the generated tokens only: token 0 (c = 2) loses 2 * 0.5 + 0.25,
  // token 1 (c = 1) 0.5 + 0.25, token 3 (only in the prompt) nothing more;
  // then the biases; then the bad word (token 2) is banned.
  SamplingOptions options;
  options.repetitionPenalty = 2.0;
  options.presencePenalty = 0.25;
  options.frequencyPenalty = 0.5;
  options.logitBias = {{3, -1.5}, {4, 2.0}};
  options.badWords = {{2}};
  std::vector<float> logits = {4.0f, -1.0f, 9.0f, 6.0f, 0.5f};
  applyLogitsProcessors(logits.data(), 5, options, -1, {3, 3, 0, 0, 1},
                        /*generatedFrom=*/2);
  EXPECT_FLOAT_EQ(logits[0], 4.0f / 2 - 2 * 0.5f - 0.25f); // 0.75
  EXPECT_FLOAT_EQ(logits[1], -1.0f * 2 - 0.5f - 0.25f);    // -2.75
  EXPECT_EQ(logits[2], -std::numeric_limits<float>::infinity());
  EXPECT_FLOAT_EQ(logits[3], 6.0f / 2 - 1.5f);              // 1.5
  EXPECT_FLOAT_EQ(logits[4], 0.5f + 2.0f);                  // 2.5
  // The greedy choice is token 4, which only the bias lifted; a sampler
  // told where the generated tokens start chooses the same.
  std::vector<float> again = {4.0f, -1.0f, 9.0f, 6.0f, 0.5f};
  Sampler sampler(options, 0, /*generatedFrom=*/2);
  EXPECT_EQ(sampler.next(again.data(), 5, {3, 3, 0, 0, 1}), 4);
  // Without generatedFrom every token counts: token 3 (c = 2) loses 1.25
  // more.
  std::vector<float> all = {4.0f, -1.0f, 9.0f, 6.0f, 0.5f};
  applyLogitsProcessors(all.data(), 5, options, -1, {3, 3, 0, 0, 1});
  EXPECT_FLOAT_EQ(all[3], 6.0f / 2 - 2 * 0.5f - 0.25f - 1.5f);
}

TEST(Sampling, BadWordsHandDerived) {
  const float inf = std::numeric_limits<float>::infinity();
  // HF's NoBadWordsLogitsProcessor: [3] always; [1, 2] only right after a
  // 1; [0, 1, 5] only after 0, 1; an id past the vocabulary never.
  const std::vector<std::vector<int64_t>> words = {{3}, {1, 2}, {0, 1, 5}, {9}};
  auto banned = [&](int64_t start, std::vector<int64_t> history) {
    std::vector<float> logits(6, 0.0f);
    banBadWords(logits.data(), 6, words, start, history);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 6; ++i)
      if (logits[i] == -inf)
        ids.push_back(i);
    return ids;
  };
  EXPECT_EQ(banned(-1, {}), (std::vector<int64_t>{3}));
  EXPECT_EQ(banned(-1, {4, 1}), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(banned(-1, {1, 4}), (std::vector<int64_t>{3}));
  EXPECT_EQ(banned(-1, {0, 1}), (std::vector<int64_t>{2, 3, 5}));
  // An encoder-decoder's decoder start is the sequence's first token.
  EXPECT_EQ(banned(0, {1}), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(banned(1, {}), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(banned(4, {}), (std::vector<int64_t>{3}));

  // After the penalty, before the choice: greedy takes the best unbanned.
  std::vector<float> logits = {0.0f, 1.0f, 3.0f, 2.0f};
  SamplingOptions options;
  options.badWords = {{1, 2}};
  Sampler sampler(options, 0);
  EXPECT_EQ(sampler.next(logits.data(), 4, {0, 1}), 3);
  logits = {0.0f, 1.0f, 3.0f, 2.0f};
  EXPECT_EQ(sampler.next(logits.data(), 4, {1, 0}), 2);
  // Sampling never draws a banned token.
  options.temperature = 1;
  options.badWords = {{2}};
  Sampler draws(options, 7);
  for (int i = 0; i < 200; ++i) {
    logits = {0.0f, 1.0f, 3.0f, 2.0f};
    EXPECT_NE(draws.next(logits.data(), 4, {}), 2);
  }
}

TEST(Sampling, AllowedTokensOnlyAndLogprobsStayTheModels) {
  // Greedy takes the best allowed token; sampling with top-k 2 keeps the
  // two best allowed ones (3 and 0 are the best, but 3 is out: 0 and 6);
  // the logprobs are of the unmasked logits.
  std::vector<float> logits = exampleLogits();
  std::vector<uint8_t> allowed(logits.size(), 1);
  allowed[3] = 0;
  SamplingOptions greedy;
  greedy.logprobs = 0;
  Sampler first(greedy, 0);
  std::vector<float> copy = logits;
  EXPECT_EQ(first.next(copy.data(), int64_t(copy.size()), {}, -1,
                       allowed.data()),
            0);
  std::vector<float> reference = logits;
  logSoftmax(reference.data(), int64_t(reference.size()));
  ASSERT_NE(first.lastLogprobs(), nullptr);
  EXPECT_NEAR(first.lastLogprobs()->logprob, reference[0], 1e-6);
  SamplingOptions sampled;
  sampled.temperature = 2.0;
  sampled.topK = 2;
  Sampler sampler(sampled, 1);
  std::set<int64_t> seen;
  for (int i = 0; i < 400; ++i) {
    copy = logits;
    seen.insert(sampler.next(copy.data(), int64_t(copy.size()), {}, -1,
                             allowed.data()));
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 6}));
  // Nothing allowed: nothing to choose.
  std::vector<uint8_t> none(logits.size(), 0);
  copy = logits;
  EXPECT_EQ(sampler.next(copy.data(), int64_t(copy.size()), {}, -1,
                         none.data()),
            -1);
}

TEST(Sampling, LogSoftmaxHandDerived) {
  std::vector<float> logits = {0.0f, std::log(3.0f)};
  logSoftmax(logits.data(), 2);
  EXPECT_NEAR(logits[0], std::log(0.25), 1e-6);
  EXPECT_NEAR(logits[1], std::log(0.75), 1e-6);
}

// Not a timed test (nothing is asserted about time): prints the cost of one
// token at GPT-2's vocabulary, for the reader; make bench measures the
// overhead against decode steps.
TEST(Sampling, FullVocabularyCostIsPrinted) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(50257);
  for (float &x : logits)
    x = normal(random);
  SamplingOptions options;
  options.temperature = 0.8;
  options.topK = 50;
  options.topP = 0.95;
  for (auto [k, p] : {std::pair<int64_t, double>{50, 0.95}, {0, 0.95}, {0, 1.0}}) {
    options.topK = k;
    options.topP = p;
    Sampler sampler(options, 0);
    auto start = std::chrono::steady_clock::now();
    int64_t sum = 0;
    for (int i = 0; i < 20; ++i) {
      std::vector<float> copy = logits;
      sum += sampler.next(copy.data(), 50257, {});
    }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count() /
                20;
    std::printf("sampling, vocab 50257, top-k %lld top-p %.2f: %.3f ms per "
                "token (checksum %lld)\n",
                static_cast<long long>(k), p, ms, static_cast<long long>(sum));
  }
}
