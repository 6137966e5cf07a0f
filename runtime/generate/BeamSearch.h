//===- BeamSearch.h - Beam search over one prompt's beams -------*- C++ -*-===//
//
// Hugging Face generate(num_beams=N, length_penalty=L, early_stopping=E)
// for one sequence, as its vectorised beam search (transformers 4.47+)
// computes it:
//   - each step ranks, over every beam and token, the running score (the
//     sum of the beam's log-probabilities) plus the token's, and takes the
//     best max(2, 1 + #eos) * N candidates;
//   - a candidate among the first N that ends in eos (or any of the first N
//     at the last allowed step) is a finished hypothesis scored
//     sum / length^L, length = its new tokens with the eos; the N best
//     finished ones are kept;
//   - the best N candidates not ending in eos are the next step's beams;
//   - the search ends when N hypotheses are finished and, with early
//     stopping, at once; without it, when the best running beam's
//     sum / current length^L cannot beat the worst kept hypothesis; or at
//     the token budget.
// Beam b of a step is a row of the decode batch: parents say which row each
// new beam continues, so that the caller can reorder the KV cache.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_BEAMSEARCH_H
#define TFMC_RUNTIME_BEAMSEARCH_H

#include <cstdint>
#include <vector>

namespace tfmc::runtime {

struct BeamOptions {
  int64_t numBeams = 1; // 1: no beam search
  double lengthPenalty = 1;
  bool earlyStopping = false;
};

class BeamSearch {
public:
  /// `promptLength` is informational (scores count new tokens only).
  BeamSearch(const BeamOptions &options, std::vector<int64_t> eos,
             int64_t maxNewTokens, int64_t promptLength);

  /// One step. `logProbs` [numBeams, vocab]: each beam's log-probabilities
  /// of its next token (processed: repetition penalty applied). On the
  /// first step every row is the prompt's, and only row 0 counts (the
  /// others start at -1e9, as in Hugging Face). Fills parents[i] (the beam
  /// new beam i continues) and tokens[i] (its new token); false when the
  /// search is done (then they are not to be used).
  bool step(const float *logProbs, int64_t vocab,
            std::vector<int64_t> &parents, std::vector<int64_t> &tokens);

  /// The best hypothesis's new tokens (its eos included when it has one).
  std::vector<int64_t> best() const;

  /// Whether the last step found fewer than numBeams continuations with a
  /// finite score (the bad words ban all but a few tokens, or the
  /// vocabulary is smaller than the beams) before numBeams hypotheses were
  /// finished: step() returned false, and the search cannot go on with the
  /// beams it was asked for. `continuations` says how many there were.
  bool starved(int64_t &continuations) const {
    continuations = starvedWith;
    return starvedWith >= 0;
  }

private:
  struct Hypothesis {
    double score;
    std::vector<int64_t> tokens;
  };
  bool isEos(int64_t token) const;

  BeamOptions options;
  std::vector<int64_t> eos;
  int64_t maxNewTokens;
  int64_t generated = 0;            // new tokens of every running beam
  std::vector<double> running;      // running beams' sums of log-probs
  std::vector<std::vector<int64_t>> sequences; // their new tokens
  std::vector<Hypothesis> finished; // at most numBeams, best first
  bool done = false;
  int64_t starvedWith = -1; // see starved()
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_BEAMSEARCH_H
