//===- Sampling.h - Choosing the next token from logits ---------*- C++ -*-===//
//
// Hugging Face generate's semantics, in its order of logits processors:
//   1. repetition penalty (RepetitionPenaltyLogitsProcessor): each token
//      already in the sequence has its logit divided by R if positive,
//      multiplied by R if negative; then OpenAI's presence and frequency
//      penalties (logit - c · frequency - (c > 0) · presence, c the count of
//      the token among the tokens generated so far, not the prompt's) and
//      logit_bias (a bias added to a token's logit), as OpenAI's API
//      defines them; then bad words (NoBadWordsLogitsProcessor):
//      the last token of each banned sequence whose other tokens end the
//      sequence so far gets -inf (a one-token sequence: always);
//   2. temperature 0: the argmax (greedy; ties go to the lowest id, as
//      torch.argmax);
//   3. otherwise logits / T, then top-k (every token whose logit is at
//      least the k-th largest: ties are kept, as TopKLogitsWarper), then
//      top-p (TopPLogitsWarper: the most probable tokens while the mass
//      before each is below P, at least one), and a draw from the softmax
//      of what is left.
// Draws come from a counter-based generator (SplitMix64 over the seed, the
// sequence's index and the draw's number), so one seed gives the same
// tokens on every run, every thread count and in any batch.
//
// The options are checked by checkGenerateOptions (GenerateOptions.h);
// next() assumes temperature >= 0, top_k >= 0 (0: off), 0 < top_p <= 1 and
// a positive penalty.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SAMPLING_H
#define TFMC_RUNTIME_SAMPLING_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tfmc::runtime {

struct SamplingOptions {
  double temperature = 0; // 0: greedy
  int64_t topK = 0;       // 0: off
  double topP = 1;        // 1: off
  uint64_t seed = 0;
  double repetitionPenalty = 1; // 1: off
  /// OpenAI's presence_penalty and frequency_penalty (0: off), over the
  /// generated tokens.
  double presencePenalty = 0;
  double frequencyPenalty = 0;
  /// OpenAI's logit_bias: (token, bias) pairs, each token inside the
  /// vocabulary (the server checks them).
  std::vector<std::pair<int64_t, double>> logitBias;
  /// Banned token sequences (Hugging Face's bad_words_ids), each non-empty
  /// and inside the vocabulary (checkGenerateRequest).
  std::vector<std::vector<int64_t>> badWords;
  /// OpenAI's logprobs: -1, none; else each choice's TokenLogprobs with
  /// this many alternatives (Sampler::lastLogprobs).
  int64_t logprobs = -1;
};

/// One choice's log-probabilities as OpenAI's logprobs report them: the
/// chosen token's under the model's own distribution (log_softmax of its
/// logits, before the processors, penalties and temperature: what vLLM
/// reports by default), and the `top` most probable tokens with theirs,
/// most probable first (equals: the lowest id first).
struct TokenLogprobs {
  double logprob = 0;
  std::vector<std::pair<int64_t, double>> top;
};

/// TokenLogprobs of `chosen` from `logits` [vocab] (finite or -inf; summed
/// in double).
void tokenLogprobs(const float *logits, int64_t vocab, int64_t chosen,
                   int64_t top, TokenLogprobs &out);

/// HF's repetition penalty on `logits` [vocab], in place, for each distinct
/// token of `history` inside the vocabulary.
void applyRepetitionPenalty(float *logits, int64_t vocab,
                            const std::vector<int64_t> &history,
                            double penalty);

/// Hugging Face's NoBadWordsLogitsProcessor on `logits` [vocab], in place:
/// for each sequence of `badWords`, its last token's logit becomes -inf when
/// the tokens before it end the sequence so far, which is `start` (when not
/// -1: an encoder-decoder's decoder start, the first of Hugging Face's
/// decoder input ids) followed by `history`. A one-token sequence is
/// always banned.
void banBadWords(float *logits, int64_t vocab,
                 const std::vector<std::vector<int64_t>> &badWords,
                 int64_t start, const std::vector<int64_t> &history);

/// Whether any of `logits` [vocab] is finite: a choice needs one.
bool anyFiniteLogit(const float *logits, int64_t vocab);

/// OpenAI's presence and frequency penalties on `logits` [vocab], in place:
/// each token of `generated` inside the vocabulary, counted c times, has
/// c · frequency + presence subtracted from its logit.
void applyPresencePenalties(float *logits, int64_t vocab,
                            const int64_t *generated, std::size_t count,
                            double presence, double frequency);

/// The logits processors before the choice, in the order of this file's
/// comment: the repetition penalty over `history`, OpenAI's penalties over
/// its tokens from `generatedFrom` on (the generated ones), logit_bias,
/// then the bad words (banBadWords with `start`). Sampler::next and beam
/// search both start with it.
void applyLogitsProcessors(float *logits, int64_t vocab,
                           const SamplingOptions &options, int64_t start,
                           const std::vector<int64_t> &history,
                           std::size_t generatedFrom = 0);

/// log(softmax(logits)), in place (max-shifted, summed in double).
void logSoftmax(float *logits, int64_t vocab);

/// The index of the largest logit (the lowest index among equals).
int64_t argmax(const float *logits, int64_t vocab);

/// The distribution a draw is taken from after temperature, top-k and top-p
/// (no penalty): `probabilities` [vocab], zero outside the kept tokens.
/// Temperature must be > 0. Exposed for tests.
void filteredProbabilities(const float *logits, int64_t vocab,
                           const SamplingOptions &options,
                           std::vector<double> &probabilities);

/// The choices of one sequence: its own stream of draws.
class Sampler {
public:
  /// `generatedFrom`: where the generated tokens start in the `history`
  /// next() is given (its prompt's length; OpenAI's penalties count them).
  Sampler(const SamplingOptions &options, uint64_t stream,
          std::size_t generatedFrom = 0);

  /// The next token from `logits` [vocab] (modified in place by the
  /// penalty and the bad words), given the tokens the sequence holds so
  /// far: `start` (-1: none; banBadWords) and `history`. -1 when no logit
  /// is finite after the processors (every token banned, or the model's
  /// logits are NaN or infinite): there is nothing to choose from, and
  /// Hugging Face raises an error there too.
  /// `allowed` [vocab] (optional, TokenConstraint.h): tokens whose entry
  /// is 0 are out after the processors, before temperature, top-k and
  /// top-p; the logprobs stay the model's own.
  int64_t next(float *logits, int64_t vocab,
               const std::vector<int64_t> &history, int64_t start = -1,
               const uint8_t *allowed = nullptr);

  /// A uniform double in [0, 1): the stream's next draw.
  double uniform();

  /// The last choice's log-probabilities, with options.logprobs >= 0 (and
  /// after a choice); else null.
  const TokenLogprobs *lastLogprobs() const {
    return options.logprobs >= 0 && chose ? &last : nullptr;
  }

private:
  /// next() without the logprobs.
  int64_t choose(float *logits, int64_t vocab,
                 const std::vector<int64_t> &history, int64_t start,
                 const uint8_t *allowed);
  struct Candidate {
    double logit;
    int64_t id;
  };
  /// Fills `kept` with the tokens top-k and top-p keep, most probable
  /// first, with their unnormalised probabilities; returns their mass.
  double keep(const float *logits, int64_t vocab);

  SamplingOptions options;
  std::size_t generatedFrom;
  uint64_t state;
  std::vector<Candidate> candidates;
  std::vector<Candidate> kept; // logit holds exp(logit / T - max)
  std::vector<float> heap;     // top-k's k largest logits
  std::vector<float> raw;      // the model's logits (logprobs)
  TokenLogprobs last;
  bool chose = false;
  friend void filteredProbabilities(const float *, int64_t,
                                    const SamplingOptions &,
                                    std::vector<double> &);
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_SAMPLING_H
