//===- Sampling.cpp - Choosing the next token from logits -----------------===//
//
// Cost per token stays far below a decode step's with a 50257-token
// vocabulary: top-k selects with nth_element, and top-p sorts only the
// tokens of the buckets (by distance below the largest logit) that hold
// the nucleus, which is a prefix of the descending order.
//
//===----------------------------------------------------------------------===//

#include "runtime/generate/Sampling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace tfmc::runtime {
namespace {

/// SplitMix64's finaliser (Steele, Lea, Flood 2014): a bijection of 64-bit
/// words with good avalanche, the step of a counter-based generator.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

/// Top-p's buckets cover scaled logits this far below the largest (e^-20
/// ~ 2e-9); the rest share one last bucket.
constexpr double kNucleusWindow = 20.0;

} // namespace

void applyRepetitionPenalty(float *logits, int64_t vocab,
                            const std::vector<int64_t> &history,
                            double penalty) {
  if (penalty == 1)
    return;
  std::unordered_set<int64_t> seen;
  for (int64_t token : history) {
    if (token < 0 || token >= vocab || !seen.insert(token).second)
      continue;
    float &logit = logits[token];
    logit = logit < 0 ? static_cast<float>(logit * penalty)
                      : static_cast<float>(logit / penalty);
  }
}

void banBadWords(float *logits, int64_t vocab,
                 const std::vector<std::vector<int64_t>> &badWords,
                 int64_t start, const std::vector<int64_t> &history) {
  const std::size_t length = history.size() + (start >= 0 ? 1 : 0);
  // Token i of the sequence so far.
  auto at = [&](std::size_t i) {
    return start >= 0 ? (i == 0 ? start : history[i - 1]) : history[i];
  };
  for (const std::vector<int64_t> &word : badWords) {
    const std::size_t before = word.size() - 1;
    if (word.back() < 0 || word.back() >= vocab || before > length)
      continue;
    bool matches = true;
    for (std::size_t i = 0; i < before && matches; ++i)
      matches = at(length - before + i) == word[i];
    if (matches)
      logits[word.back()] = -std::numeric_limits<float>::infinity();
  }
}

void applyPresencePenalties(float *logits, int64_t vocab,
                            const int64_t *generated, std::size_t count,
                            double presence, double frequency) {
  if (presence == 0 && frequency == 0)
    return;
  std::unordered_map<int64_t, int64_t> counts;
  for (std::size_t i = 0; i < count; ++i)
    if (generated[i] >= 0 && generated[i] < vocab)
      ++counts[generated[i]];
  for (const auto &[token, c] : counts)
    logits[token] = static_cast<float>(double(logits[token]) -
                                       double(c) * frequency - presence);
}

void applyLogitsProcessors(float *logits, int64_t vocab,
                           const SamplingOptions &options, int64_t start,
                           const std::vector<int64_t> &history,
                           std::size_t generatedFrom) {
  applyRepetitionPenalty(logits, vocab, history, options.repetitionPenalty);
  if (generatedFrom < history.size())
    applyPresencePenalties(logits, vocab, history.data() + generatedFrom,
                           history.size() - generatedFrom,
                           options.presencePenalty, options.frequencyPenalty);
  for (const auto &[token, bias] : options.logitBias)
    if (token >= 0 && token < vocab)
      logits[token] = static_cast<float>(double(logits[token]) + bias);
  banBadWords(logits, vocab, options.badWords, start, history);
}

void logSoftmax(float *logits, int64_t vocab) {
  float largest = logits[argmax(logits, vocab)];
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - double(largest));
  const double shift = double(largest) + std::log(sum);
  for (int64_t i = 0; i < vocab; ++i)
    logits[i] = static_cast<float>(double(logits[i]) - shift);
}

int64_t argmax(const float *logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  return best;
}

Sampler::Sampler(const SamplingOptions &options, uint64_t stream,
                 std::size_t generatedFrom)
    : options(options), generatedFrom(generatedFrom),
      state(mix(options.seed + kGolden) ^ mix(stream * kGolden + 1)) {}

double Sampler::uniform() {
  state += kGolden;
  // The top 53 bits: a double in [0, 1).
  return double(mix(state) >> 11) * 0x1.0p-53;
}

double Sampler::keep(const float *logits, int64_t vocab) {
  const double inverse = 1.0 / options.temperature;
  double largest = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i)
    largest = std::max(largest, double(logits[i]) * inverse);
  // exp(logit / T - max), in float (a relative error of 1e-7 in a weight).
  auto weightOf = [&](double scaled) {
    return double(std::exp(float(scaled - largest)));
  };
  candidates.clear();
  kept.clear();
  const bool topK = options.topK > 0 && options.topK < vocab;
  const bool topP = options.topP < 1;
  if (topK) {
    // The k-th largest logit (a min-heap of the k largest so far: most
    // tokens fail one comparison), then every token at least as large
    // (ties kept). T > 0 keeps the order of the raw logits.
    heap.assign(logits, logits + options.topK);
    std::make_heap(heap.begin(), heap.end(), std::greater<float>());
    for (int64_t i = options.topK; i < vocab; ++i)
      if (logits[i] > heap.front()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
        heap.back() = logits[i];
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      }
    const float threshold = heap.front();
    for (int64_t i = 0; i < vocab; ++i)
      if (logits[i] >= threshold)
        candidates.push_back({double(logits[i]) * inverse, i});
  }
  if (!topP) {
    double mass = 0;
    if (topK) {
      for (const Candidate &c : candidates) {
        kept.push_back({weightOf(c.logit), c.id});
        mass += kept.back().logit;
      }
    } else {
      for (int64_t i = 0; i < vocab; ++i) {
        kept.push_back({weightOf(double(logits[i]) * inverse), i});
        mass += kept.back().logit;
      }
    }
    return mass;
  }
  // The mass top-p's fractions are of: the top-k set's, or every token's.
  // Without top-k, the tokens are bucketed by their distance below the
  // largest (kBucketsPerUnit per unit of scaled logit): the nucleus lies
  // in the buckets up to the first whose cumulative mass reaches P, and
  // only their tokens are sorted.
  double total = 0;
  if (topK) {
    for (const Candidate &c : candidates)
      total += weightOf(c.logit);
  } else {
    constexpr int kBucketsPerUnit = 8;
    constexpr int kBuckets = int(kNucleusWindow) * kBucketsPerUnit + 1;
    double bucketMass[kBuckets] = {};
    for (int64_t i = 0; i < vocab; ++i) {
      double scaled = double(logits[i]) * inverse;
      double weight = weightOf(scaled);
      total += weight;
      bucketMass[std::min(kBuckets - 1,
                          int((largest - scaled) * kBucketsPerUnit))] += weight;
    }
    int last = 0;
    double mass = bucketMass[0];
    while (last + 1 < kBuckets && mass < options.topP * total)
      mass += bucketMass[++last];
    const double floor = largest - double(last + 1) / kBucketsPerUnit;
    for (int64_t i = 0; i < vocab; ++i) {
      double scaled = double(logits[i]) * inverse;
      if (last == kBuckets - 1 || scaled > floor)
        candidates.push_back({scaled, i});
    }
  }
  auto descending = [](const Candidate &a, const Candidate &b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  // Sorted, each token kept while the mass of the ones before it is below
  // P; returns the kept mass.
  const double bound = options.topP * total;
  auto nucleus = [&]() {
    std::sort(candidates.begin(), candidates.end(), descending);
    kept.clear();
    double before = 0;
    for (const Candidate &c : candidates) {
      if (before >= bound)
        break;
      double weight = weightOf(c.logit);
      kept.push_back({weight, c.id});
      before += weight;
    }
    return before;
  };
  double mass = nucleus();
  if (mass < bound && !topK &&
      static_cast<int64_t>(candidates.size()) < vocab) {
    // Rounding left the buckets' tokens short of P: all of them.
    candidates.clear();
    for (int64_t i = 0; i < vocab; ++i)
      candidates.push_back({double(logits[i]) * inverse, i});
    mass = nucleus();
  }
  return mass;
}

bool anyFiniteLogit(const float *logits, int64_t vocab) {
  for (int64_t i = 0; i < vocab; ++i)
    if (std::isfinite(logits[i]))
      return true;
  return false;
}

int64_t Sampler::next(float *logits, int64_t vocab,
                      const std::vector<int64_t> &history, int64_t start,
                      const uint8_t *allowed) {
  if (options.logprobs >= 0)
    raw.assign(logits, logits + vocab);
  const int64_t token = choose(logits, vocab, history, start, allowed);
  chose = token >= 0;
  if (chose && options.logprobs >= 0)
    tokenLogprobs(raw.data(), vocab, token, options.logprobs, last);
  return token;
}

int64_t Sampler::choose(float *logits, int64_t vocab,
                        const std::vector<int64_t> &history, int64_t start,
                        const uint8_t *allowed) {
  applyLogitsProcessors(logits, vocab, options, start, history,
                        generatedFrom);
  if (allowed)
    for (int64_t i = 0; i < vocab; ++i)
      if (!allowed[i])
        logits[i] = -INFINITY;
  if (!anyFiniteLogit(logits, vocab))
    return -1;
  if (options.temperature == 0)
    return argmax(logits, vocab);
  const double mass = keep(logits, vocab);
  double target = uniform() * mass;
  for (const Candidate &c : kept) {
    target -= c.logit;
    if (target < 0)
      return c.id;
  }
  // Rounding left a sliver past the last kept token.
  return kept.back().id;
}

void tokenLogprobs(const float *logits, int64_t vocab, int64_t chosen,
                   int64_t top, TokenLogprobs &out) {
  double largest = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i)
    largest = std::max(largest, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += std::exp(double(logits[i]) - largest);
  const double shift = largest + std::log(sum);
  out.logprob = double(logits[chosen]) - shift;
  out.top.clear();
  top = std::min(top, vocab);
  if (top <= 0)
    return;
  std::vector<int64_t> ids(static_cast<std::size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    ids[i] = i;
  auto before = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + top, ids.end(), before);
  for (int64_t i = 0; i < top; ++i)
    out.top.emplace_back(ids[i], double(logits[ids[i]]) - shift);
}

void filteredProbabilities(const float *logits, int64_t vocab,
                           const SamplingOptions &options,
                           std::vector<double> &probabilities) {
  Sampler sampler(options, 0);
  const double mass = sampler.keep(logits, vocab);
  probabilities.assign(static_cast<std::size_t>(vocab), 0.0);
  for (const Sampler::Candidate &c : sampler.kept)
    probabilities[c.id] = c.logit / mass;
}

} // namespace tfmc::runtime
