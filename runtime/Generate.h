//===- Generate.h - Greedy autoregressive decoding --------------*- C++ -*-===//
//
// Generation over a compiled model's prefill and decode_step entry points:
// the prompt (or, for an encoder-decoder, the source and the start token)
// fills the KV cache in one prefill, whose logits are its last position's
// ([1, 1, vocab]: the compiler runs the final norm and the output head on
// that position only), then each decode step feeds the last token and
// appends one more, until the end token or the token budget.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GENERATE_H
#define TFMC_RUNTIME_GENERATE_H

#include "runtime/Model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfmc::runtime {

struct GenerateRequest {
  /// Decoder-only: the prompt. Encoder-decoder: the source sequence.
  std::vector<int64_t> prompt;
  bool encoderDecoder = false;
  int64_t bos = -1;         // encoder-decoder: the decoder's start token
  std::vector<int64_t> eos; // stop after generating any of them
  int64_t maxNewTokens = 0; // at least 1
  /// Keep the logits each new token was chosen from, for checking prefill
  /// + decode against a full forward.
  bool keepLogits = false;
};

struct GenerateResult {
  std::vector<int64_t> tokens; // the new tokens, eos included when reached
  double prefillSeconds = 0;
  double decodeSeconds = 0;
  int64_t decodeSteps = 0;
  /// With keepLogits: [new tokens, vocab], row i the logits that chose new
  /// token i: those after the prompt's last token (or bos), then after each
  /// generated token but the last; a full forward's last rows.
  std::vector<float> logits;
  int64_t vocab = 0;
};

/// Validates the request against the model (entry points, token ids,
/// max_len) before any work; then decodes greedily (argmax, first maximum
/// on ties, as PyTorch's argmax).
std::optional<GenerateResult> generate(Model &model,
                                       const GenerateRequest &request,
                                       std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GENERATE_H
