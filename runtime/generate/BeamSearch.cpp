//===- BeamSearch.cpp - Beam search over one prompt's beams ---------------===//

#include "runtime/generate/BeamSearch.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace tfmc::runtime {
namespace {

/// Hugging Face's stand-in for "never": beams that do not exist yet.
constexpr double kNever = -1.0e9;

struct Candidate {
  double score;
  int64_t beam, token;
  /// torch.topk order: by score, then (our tie rule) the lower flat index.
  bool operator>(const Candidate &other) const {
    if (score != other.score)
      return score > other.score;
    return beam != other.beam ? beam < other.beam : token < other.token;
  }
};

} // namespace

BeamSearch::BeamSearch(const BeamOptions &options, std::vector<int64_t> eos,
                       int64_t maxNewTokens, int64_t promptLength)
    : options(options), eos(std::move(eos)), maxNewTokens(maxNewTokens),
      running(static_cast<std::size_t>(options.numBeams), kNever),
      sequences(static_cast<std::size_t>(options.numBeams)) {
  (void)promptLength;
  running[0] = 0;
}

bool BeamSearch::isEos(int64_t token) const {
  return std::find(eos.begin(), eos.end(), token) != eos.end();
}

bool BeamSearch::step(const float *logProbs, int64_t vocab,
                      std::vector<int64_t> &parents,
                      std::vector<int64_t> &tokens) {
  if (done)
    return false;
  const int64_t beams = options.numBeams;
  const std::size_t keep = static_cast<std::size_t>(
      std::max<int64_t>(2, 1 + static_cast<int64_t>(eos.size())) * beams);
  // The best `keep` continuations: a min-heap of them, best first after.
  std::vector<Candidate> top;
  top.reserve(keep + 1);
  for (int64_t b = 0; b < beams; ++b) {
    if (running[b] == kNever) // a beam that never started: no candidates
      continue;
    for (int64_t v = 0; v < vocab; ++v) {
      Candidate c{running[b] + double(logProbs[b * vocab + v]), b, v};
      if (top.size() < keep) {
        top.push_back(c);
        std::push_heap(top.begin(), top.end(), std::greater<Candidate>());
      } else if (c > top.front()) {
        std::pop_heap(top.begin(), top.end(), std::greater<Candidate>());
        top.back() = c;
        std::push_heap(top.begin(), top.end(), std::greater<Candidate>());
      }
    }
  }
  std::sort(top.begin(), top.end(), std::greater<Candidate>());

  const int64_t length = generated + 1; // new tokens with this one
  const bool last = length >= maxNewTokens;
  // Finished hypotheses: eos (or the budget) among the first N candidates,
  // unless N are finished already and early stopping keeps them.
  const bool full = static_cast<int64_t>(finished.size()) == beams;
  if (!(full && options.earlyStopping)) {
    for (int64_t r = 0; r < beams && r < static_cast<int64_t>(top.size());
         ++r) {
      const Candidate &c = top[r];
      if ((!isEos(c.token) && !last) || !std::isfinite(c.score))
        continue;
      double score =
          c.score / std::pow(double(length), options.lengthPenalty);
      Hypothesis hypothesis{score, sequences[c.beam]};
      hypothesis.tokens.push_back(c.token);
      finished.push_back(std::move(hypothesis));
    }
    std::stable_sort(finished.begin(), finished.end(),
                     [](const Hypothesis &a, const Hypothesis &b) {
                       return a.score > b.score;
                     });
    if (static_cast<int64_t>(finished.size()) > beams)
      finished.resize(static_cast<std::size_t>(beams));
  }
  if (last) {
    done = true;
    return false;
  }
  // The next beams: the best N candidates that do not end in eos.
  parents.clear();
  tokens.clear();
  std::vector<double> scores;
  std::vector<std::vector<int64_t>> next;
  for (const Candidate &c : top) {
    if (static_cast<int64_t>(parents.size()) == beams)
      break;
    // A banned token (-inf) continues nothing. (Beams that never started,
    // all but the first at the first step, have no candidates.)
    if (isEos(c.token) || !std::isfinite(c.score))
      continue;
    parents.push_back(c.beam);
    tokens.push_back(c.token);
    scores.push_back(c.score);
    next.push_back(sequences[c.beam]);
    next.back().push_back(c.token);
  }
  if (static_cast<int64_t>(parents.size()) < beams) {
    if (static_cast<int64_t>(finished.size()) < beams)
      starvedWith = static_cast<int64_t>(parents.size());
    done = true;
    return false;
  }
  running = std::move(scores);
  sequences = std::move(next);
  generated = length;
  // Done when N hypotheses are finished and, with early stopping, at once;
  // without it, when the best running beam's score at this length cannot
  // beat the worst of them.
  if (static_cast<int64_t>(finished.size()) == beams) {
    double bestRunning =
        running[0] / std::pow(double(generated), options.lengthPenalty);
    if (options.earlyStopping || !(bestRunning > finished.back().score)) {
      done = true;
      return false;
    }
  }
  return true;
}

std::vector<int64_t> BeamSearch::best() const {
  if (!finished.empty())
    return finished.front().tokens;
  return sequences.empty() ? std::vector<int64_t>() : sequences.front();
}

} // namespace tfmc::runtime
