//===- BeamSearchTest.cpp - Beam search on hand-derived steps -------------===//
//
// Each case gives the log-probabilities of every step and the hypotheses
// Hugging Face's beam search (transformers 4.47+, vectorised) keeps, worked
// out by hand in the comments.
//
//===----------------------------------------------------------------------===//

#include "runtime/generate/BeamSearch.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tfmc::runtime;

namespace {

/// log of each probability, rows of `vocab`.
std::vector<float> logs(std::vector<double> probabilities) {
  std::vector<float> out;
  for (double p : probabilities)
    out.push_back(static_cast<float>(std::log(p)));
  return out;
}

} // namespace

// N = 2, eos 2, vocab 3. Step 1 (row 0 only): eos .6 ranks first: finished
// [2] at -0.511 / 1; beams [0] (-1.050), [1] (-2.996). Step 2: beam 0's
// eos (-1.050 - 0.942 = -1.992) ranks second: finished [0, 2] at -0.996;
// beams [0, 0] (-1.561), [1, 0] (-4.094). Step 3 (the last, budget 3):
// [0, 0, 2] at -1.571 / 3 = -0.524 and [1, 0, 0] at -4.2 / 3 = -1.4: the
// two best are [2] (-0.511) and [0, 0, 2] (-0.524): [2] wins at L = 1. At
// L = 0 the sums decide: [2] (-0.511) again; at L = 2 the long one:
// -1.571 / 9 = -0.175 beats -0.511.
TEST(BeamSearch, LengthPenaltyDecides) {
  auto run = [](double lengthPenalty) {
    BeamOptions options{2, lengthPenalty, false};
    BeamSearch search(options, {2}, 3, 5);
    std::vector<int64_t> parents, tokens;
    std::vector<float> step1 = logs({0.35, 0.05, 0.60, 0.35, 0.05, 0.60});
    EXPECT_TRUE(search.step(step1.data(), 3, parents, tokens));
    EXPECT_EQ(parents, (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(tokens, (std::vector<int64_t>{0, 1}));
    std::vector<float> step2 =
        logs({0.60, 0.01, 0.39, 1.0 / 3, 1.0 / 3, 1.0 / 3});
    bool more = search.step(step2.data(), 3, parents, tokens);
    if (more) {
      EXPECT_EQ(parents, (std::vector<int64_t>{0, 1}));
      EXPECT_EQ(tokens, (std::vector<int64_t>{0, 0}));
      std::vector<float> step3 = logs({0.005, 0.005, 0.99, 0.9, 0.05, 0.05});
      EXPECT_FALSE(search.step(step3.data(), 3, parents, tokens));
    }
    return search.best();
  };
  EXPECT_EQ(run(1.0), (std::vector<int64_t>{2}));
  EXPECT_EQ(run(0.0), (std::vector<int64_t>{2}));
  EXPECT_EQ(run(2.0), (std::vector<int64_t>{0, 0, 2}));
}

// N = 2, eos 2, budget 4, L = 1. Step 1: [2] finishes at -0.693; beams [0]
// (-0.799), [1] (-2.996). Step 2: [0, 2] finishes at -1.741 / 2 = -0.870:
// two hypotheses. Early stopping ends here: [2]. Without it, the best beam
// [0, 0] (-1.310 / 2 = -0.655) can still beat -0.870: step 3 finishes
// [0, 0, 2] at -1.320 / 3 = -0.440, then the best beam (-5.19 / 3) cannot
// beat -0.693 and the search ends: [0, 0, 2].
TEST(BeamSearch, EarlyStopping) {
  auto run = [](bool early, int &steps) {
    BeamSearch search(BeamOptions{2, 1.0, early}, {2}, 4, 3);
    std::vector<int64_t> parents, tokens;
    std::vector<std::vector<float>> rows = {
        logs({0.45, 0.05, 0.50, 0.45, 0.05, 0.50}),
        logs({0.60, 0.01, 0.39, 1.0 / 3, 1.0 / 3, 1.0 / 3}),
        logs({0.005, 0.005, 0.99, 1.0 / 3, 1.0 / 3, 1.0 / 3}),
        logs({0.4, 0.3, 0.3, 0.4, 0.3, 0.3})};
    steps = 0;
    for (const std::vector<float> &row : rows) {
      ++steps;
      if (!search.step(row.data(), 3, parents, tokens))
        break;
    }
    return search.best();
  };
  int steps = 0;
  EXPECT_EQ(run(true, steps), (std::vector<int64_t>{2}));
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(run(false, steps), (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(steps, 3);
}

// Without eos every beam runs to the budget; the best sum wins. Step 1:
// beams [1] (-0.357), [0] (-1.204). Step 2 (last): [1, 0] = -0.357 -
// 0.511 = -0.868, [0, 1] = -1.204 - 0.105 = -1.309: [1, 0]. Reordering:
// the second step's beams come from both parents.
TEST(BeamSearch, NoEosRunsToTheBudget) {
  BeamSearch search(BeamOptions{2, 1.0, false}, {}, 2, 1);
  std::vector<int64_t> parents, tokens;
  std::vector<float> step1 = logs({0.3, 0.7, 0.3, 0.7});
  EXPECT_TRUE(search.step(step1.data(), 2, parents, tokens));
  EXPECT_EQ(parents, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(tokens, (std::vector<int64_t>{1, 0}));
  std::vector<float> step2 = logs({0.6, 0.4, 0.1, 0.9});
  EXPECT_FALSE(search.step(step2.data(), 2, parents, tokens));
  EXPECT_EQ(search.best(), (std::vector<int64_t>{1, 0}));
}

// Two eos ids: the candidates are max(2, 1 + 2) * N = 6, and both eos
// tokens in the first N finish at once; with early stopping the search
// ends after one step with the more probable one.
TEST(BeamSearch, SeveralEosIds) {
  BeamSearch search(BeamOptions{2, 1.0, true}, {1, 2}, 5, 1);
  std::vector<int64_t> parents, tokens;
  std::vector<float> step1 = logs({0.1, 0.5, 0.4, 0.1, 0.5, 0.4});
  EXPECT_FALSE(search.step(step1.data(), 3, parents, tokens));
  EXPECT_EQ(search.best(), (std::vector<int64_t>{1}));
}
