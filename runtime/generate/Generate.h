//===- Generate.h - Autoregressive generation ---------------------*- C++ -*-===//
//
// Generation over a compiled model's prefill and decode_step entry points,
// for batches of prompts (or sources) at once:
//   - prompts run in batches of up to the plan's max_batch rows. A
//     decoder-only batch is padded on the left, as Hugging Face's generate
//     pads it: the prefill takes attention_mask (0 on the pads) and
//     position_ids (each row counts its own positions from 0), so every
//     row's last prompt token is the batch's last column, and the KV cache
//     holds one shared length. An encoder-decoder batch pads its sources on
//     the right (attention_mask); every decoder row starts at bos.
//   - a prefill's logits are each row's last position ([B, 1, vocab]); each
//     decode step feeds every row's newest token ([B, 1]) and appends one
//     cache position. A finished row (eos, budget, or its callback) leaves
//     the batch: the rows still going move into its KV-cache rows
//     (Model::reorderCache), and the next steps run fewer rows.
//   - tokens are chosen greedily, by sampling (Sampler), or by beam search
//     (BeamSearch), whose beams are rows of one batch: their KV-cache rows
//     are reordered (Model::reorderCache) as beams are selected.
// A model without padding masks or position_ids cannot pad: its batches then
// hold prompts of one length only.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GENERATE_H
#define TFMC_RUNTIME_GENERATE_H

#include "runtime/generate/BeamSearch.h"
#include "runtime/generate/GenerateOptions.h"
#include "runtime/core/Model.h"
#include "runtime/generate/Sampling.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::runtime {

/// What the per-token callback asks for.
enum class TokenAction {
  Continue,     ///< go on
  StopSequence, ///< end this sequence (the token is kept)
  Cancel,       ///< end the whole call (tokens so far are kept)
};

/// Called for each new token of sequence `index` (input order) as soon as
/// it is chosen (greedy or sampling); with beam search, for each token of
/// the best hypothesis when that prompt's search ends.
/// Each new token of sequence `index`, with its log-probabilities where the
/// request's sampling asks for them (SamplingOptions::logprobs), else null.
using TokenCallback = std::function<TokenAction(
    int64_t index, int64_t token, const TokenLogprobs *logprobs)>;

struct GenerateRequest {
  /// Decoder-only: the prompts. Encoder-decoder: the sources.
  std::vector<std::vector<int64_t>> prompts;
  bool encoderDecoder = false;
  int64_t bos = -1;         // encoder-decoder: the decoder's start token
  /// What gave the prompt and the bos, for messages: "--text-file", or the
  /// tokenizer config's "decoder_start_token_id". Empty: --prompt (or
  /// --source) and --bos.
  std::string promptName, bosName;
  /// What messages call the budget and the eos ids ("max_tokens" and "eos"
  /// for a server's request). Empty: --max-new-tokens and --eos.
  std::string maxNewTokensName, eosName;
  std::vector<int64_t> eos; // a sequence stops after any of them
  int64_t maxNewTokens = 0; // at least 1
  SamplingOptions sampling;
  BeamOptions beams;
  /// Keep the logits each new token was chosen from, for checking prefill
  /// + decode against a full forward (one prompt, no beams).
  bool keepLogits = false;
  /// Run the prompt this many tokens at a time (prefill, then extend
  /// steps); 0: all at once. One decoder-only prompt only.
  int64_t prefillChunk = 0;
  /// Name options in messages as the C API's fields (top_p), not as the
  /// CLI's flags (--top-p).
  bool cApiNames = false;
};

struct SequenceResult {
  std::vector<int64_t> tokens;  // the new tokens, eos included when reached
  double firstTokenSeconds = 0; // from the call's start to its first token
  double decodeSeconds = 0;     // from its first token to its last
};

/// One batch's figures (--stats).
struct BatchStats {
  int64_t sequences = 0;     // prompts (with beams: 1, run as numBeams rows)
  int64_t rows = 0;          // rows of the batch (beams: numBeams)
  int64_t promptTokens = 0;  // tokens the prefill ran, padding included
  double prefillSeconds = 0;
  double firstTokenSeconds = 0; // from the call's start
  int64_t decodeSteps = 0;
  double decodeSeconds = 0;
  int64_t decodedTokens = 0; // tokens of all sequences after their first
  double reorderSeconds = 0; // beams: KV-cache row copies
};

struct GenerateResult {
  std::vector<SequenceResult> sequences; // input order
  std::vector<BatchStats> batches;
  bool cancelled = false;
  /// With keepLogits: [new tokens, vocab], row i the logits that chose new
  /// token i: those after the prompt's last token (or bos), then after each
  /// generated token but the last; a full forward's last rows.
  std::vector<float> logits;
  int64_t vocab = 0;
};

/// Whether entry point `entry` of the model takes the input `name`.
bool entryTakes(const Model &model, const std::string &entry,
                const std::string &name);

/// Runs tokens [done, done + chunk) of one decoder-only sequence's prompt
/// (all that are left when chunk is 0 or past the end): the prefill when
/// done is 0, else the extend step that appends them to its KV cache. The
/// logits of the chunk's last position, [1, 1, vocab].
std::optional<OutputView> runPromptChunk(Model &model,
                                         const std::vector<int64_t> &prompt,
                                         int64_t done, int64_t chunk,
                                         std::string &error);

/// Checks the request against the model (entry points, token ids, max_len,
/// options) before any work: false with a one-line message naming the
/// option (as the CLI spells it) otherwise.
bool checkGenerateRequest(const Model &model, const GenerateRequest &request,
                          std::string &error);

/// Validates the request (checkGenerateRequest), then generates.
std::optional<GenerateResult> generate(Model &model,
                                       const GenerateRequest &request,
                                       std::string &error,
                                       const TokenCallback &onToken = {});

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GENERATE_H
