//===- Limits.cpp - The largest models and inputs tfmc accepts ------------===//

#include "compiler/frontend/Limits.h"

#include <fmt/format.h>

namespace tfmc::frontend {

int64_t maxOfSetting(std::string_view setting) {
  if (setting == "vocab")
    return kMaxVocab;
  if (setting == "d_model")
    return kMaxDModel;
  if (setting == "heads" || setting == "kv_heads")
    return kMaxHeads;
  if (setting == "head_dim")
    return kMaxDModel;
  if (setting == "d_ff")
    return kMaxDFF;
  if (setting == "max_len" || setting == "window")
    return kMaxLen;
  if (setting == "layers")
    return kMaxLayers;
  return kMaxTensorElements;
}

std::optional<LimitProblem> checkWeightSizes(const Model &model) {
  bool attention = false, feedForward = false;
  for (const std::optional<Stack> *stack : {&model.encoder, &model.decoder})
    if (*stack)
      for (const Sublayer &sublayer : (*stack)->sublayers)
        (sublayer.kind == SublayerKind::FeedForward ? feedForward
                                                    : attention) = true;
  struct Shape {
    const char *what;
    const char *setting;
    const char *rowsName;
    int64_t rows;
  } shapes[] = {
      {"the embedding", "vocab", "vocab", model.vocab},
      {"the learned positions", "max_len", "max_len",
       model.positions == PositionKind::Learned ? model.maxLen : 0},
      // An explicit head_dim (heads * head_dim != d_model) is what makes
      // the projection wider than the model: blame it, not d_model.
      {"the packed attention projection (in_proj)",
       model.heads * model.headDim != model.dModel ? "head_dim" : "d_model",
       "(heads + 2 * kv_heads) * head_dim",
       attention ? (model.heads + 2 * model.kvHeads) * model.headDim : 0},
      {"the feed-forward layer", "d_ff", "d_ff", feedForward ? model.dFF : 0},
      // BERT's type_vocab_size: 2147483647 compiled to 343 GB of weights.
      {"the token-type embedding", "token_types", "token_types",
       model.tokenTypes},
  };
  // Rows are at most 2^31 (token types; the others 3 · 2^16 · 2^16 < 2^34)
  // and d_model 2^16: no overflow.
  for (const Shape &shape : shapes) {
    int64_t elements = shape.rows * model.dModel;
    if (elements > kMaxTensorElements)
      return LimitProblem{
          shape.setting,
          fmt::format("{} weight [{}, d_model] = [{}, {}] would hold {} "
                      "elements; tfmc's kernels index at most {} per tensor",
                      shape.what, shape.rowsName, shape.rows, model.dModel,
                      elements, kMaxTensorElements)};
  }
  return std::nullopt;
}

} // namespace tfmc::frontend
