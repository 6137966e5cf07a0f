//===- HfBert.cpp - Hugging Face BERT -------------------------------------===//
//
// BERT (transformers' BertConfig, BertModel) as tfmc sees it: an
// encoder-only stack of num_hidden_layers post-norm layers (self-attention
// -> residual -> LayerNorm, feed-forward -> residual -> LayerNorm) over the
// embeddings word + position (learned) + token type, normalised by the
// embeddings' LayerNorm. Attention masks padding only (the attention_mask
// input). Outputs last_hidden_state and, when the checkpoint has BERT's
// pooler, pooler_output = tanh(dense(h[:, 0])).
//
// Weights (hf-bert: BertModel's names, with `bert.` as the alternative;
// gamma/beta for old LayerNorm names), Q, K and V separate:
//   src_embed/src_pos/src_type.weight -> embeddings.{word,position,token_type}_embeddings.weight
//   src_embed_norm.*                  -> embeddings.LayerNorm.*
//   encoder.layers.i.self_attn.{q,k,v}_proj.* -> encoder.layer.i.attention.self.{query,key,value}.*
//   encoder.layers.i.self_attn.out_proj.*     -> encoder.layer.i.attention.output.dense.*
//   encoder.layers.i.norm1.*, linear1.*, linear2.*, norm2.* ->
//     attention.output.LayerNorm.*, intermediate.dense.*, output.dense.*, output.LayerNorm.*
//   pooler.*                          -> pooler.dense.*
//
// Tokens: the checkpoints ship tokenizer.json or vocab.txt (WordPiece,
// which adds [CLS] and [SEP]); BERT does not generate, so every token key
// is accepted as it is.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfFamily.h"

#include <algorithm>

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

bool readBert(ConfigReader &config, Model &model) {
  int64_t layers = 0;
  if (!config.requiredSizes(
          {{"hidden_size", &model.dModel},
           {"num_attention_heads", &model.heads},
           {"num_hidden_layers", &layers},
           {"max_position_embeddings", &model.maxLen},
           {"vocab_size", &model.vocab}, {"intermediate_size", &model.dFF}}) ||
      !config.dividedHeads(model, "hidden_size", "num_attention_heads"))
    return false;

  // BertConfig's defaults for the keys a config may leave out.
  model.tokenTypes = 2;
  model.activation = Activation::Gelu;
  model.layerNormEps = 1e-12;
  if (!config.size("type_vocab_size", model.tokenTypes) ||
      !config.activation("hidden_act",
                         {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu",
                          "silu", "swish"},
                         model.activation) ||
      !config.positiveNumber("layer_norm_eps", model.layerNormEps))
    return false;
  if (const Json *positions = config.find("position_embedding_type");
      positions && !(positions->is_string() && *positions == "absolute"))
    return config.failKey("position_embedding_type",
                          fmt::format("{} is not supported; tfmc's BERT has "
                                      "\"absolute\" (learned) positions",
                                      describe(*positions)));
  for (const char *key : {"is_decoder", "add_cross_attention"})
    if (!config.onlySupported(key, false,
                              "tfmc's BERT is an encoder (bidirectional, "
                              "without cross-attention)"))
      return false;

  // The pooler, unless every architecture named is one Hugging Face builds
  // without it (add_pooling_layer=False): their checkpoints hold no pooler
  // weights.
  static const std::string_view kWithoutPooler[] = {
      "BertForMaskedLM", "BertForTokenClassification",
      "BertForQuestionAnswering", "BertLMHeadModel"};
  model.pooler = true;
  if (const Json *architectures = config.find("architectures")) {
    if (!architectures->is_array() || architectures->empty())
      return config.failKey("architectures",
                            fmt::format("expected a non-empty list of class "
                                        "names, found {}",
                                        describe(*architectures)));
    bool anyWithPooler = false;
    for (const Json &name : *architectures) {
      if (!name.is_string())
        return config.failKey("architectures",
                              fmt::format("expected class names, found {}",
                                          describe(name)));
      anyWithPooler |= std::find(std::begin(kWithoutPooler),
                                 std::end(kWithoutPooler),
                                 name.get<std::string>()) ==
                       std::end(kWithoutPooler);
    }
    model.pooler = anyWithPooler;
  }

  model.norm = NormPlacement::Post;
  model.positions = PositionKind::Learned;
  model.embedScale = EmbedScale::One;
  model.embedNorm = true;
  model.finalNorm = false;
  model.output = OutputKind::None;

  MaskSpec padding;
  padding.padding = true;
  model.encoder = importedStack(model, StackKind::Encoder, layers,
                                {{SublayerKind::SelfAttention, padding},
                                 {SublayerKind::FeedForward}});
  return true;
}

/// BertModel's name (without the `bert.` the task models add) of an
/// nn.Transformer name.
std::optional<std::string> bertName(std::string_view canonical) {
  if (auto layerName = splitLayerName(canonical, "encoder")) {
    auto [layer, parameter] = *layerName;
    std::optional<std::string> name = renamed(
        parameter,
        {{"self_attn.q_proj.", "attention.self.query."},
         {"self_attn.k_proj.", "attention.self.key."},
         {"self_attn.v_proj.", "attention.self.value."},
         {"self_attn.out_proj.", "attention.output.dense."},
         {"norm1.", "attention.output.LayerNorm."},
         {"linear1.", "intermediate.dense."}, {"linear2.", "output.dense."},
         {"norm2.", "output.LayerNorm."}},
        {"weight", "bias"});
    if (!name)
      return std::nullopt;
    return "encoder.layer." + std::string(layer) + "." + *name;
  }
  if (std::optional<std::string> name =
          renamed(canonical,
                  {{"src_embed.", "embeddings.word_embeddings."},
                   {"src_pos.", "embeddings.position_embeddings."},
                   {"src_type.", "embeddings.token_type_embeddings."}},
                  {"weight"}))
    return name;
  return renamed(canonical,
                 {{"src_embed_norm.", "embeddings.LayerNorm."},
                  {"pooler.", "pooler.dense."}},
                 {"weight", "bias"});
}

std::optional<WeightBinding> bindBertWeight(std::string_view canonical) {
  std::optional<std::string> bert = bertName(canonical);
  if (!bert)
    return std::nullopt;
  // BertModel's state dict has no prefix; the task models' (BertForMaskedLM,
  // BertForSequenceClassification, ...) put the same tensors under
  // `bert.`. Checkpoints converted from the original TensorFlow code name
  // LayerNorm's parameters gamma and beta.
  WeightBinding binding =
      bareOrPrefixed(*bert, "bert.", /*prefixedFirst=*/false);
  std::string_view name = *bert;
  for (auto [ours, theirs] : {std::pair<std::string_view, std::string_view>{
                                  "LayerNorm.weight", "LayerNorm.gamma"},
                              {"LayerNorm.bias", "LayerNorm.beta"}})
    if (name.size() >= ours.size() &&
        name.substr(name.size() - ours.size()) == ours) {
      std::string old = std::string(name.substr(0, name.size() - ours.size())) +
                        std::string(theirs);
      binding.altNames.push_back(old);
      binding.altNames.push_back("bert." + old);
    }
  return binding;
}

HfFamily bert() {
  HfFamily family({{"bert", "BERT"}}, readBert,
                  {"hf-bert", /*packedProjections=*/false, bindBertWeight});
  // pad_token_id only zeroes the padding row's gradient.
  family.tokens.keys = pretrainedTokenKeys();
  family.sizeKeys = {{"hidden_size", "d_model"},
                     {"num_attention_heads", "heads"},
                     {"num_hidden_layers", "layers"},
                     {"max_position_embeddings", "max_len"},
                     {"vocab_size", "vocab"}, {"intermediate_size", "d_ff"},
                     {"type_vocab_size", "token_types"}};
  family.honouredKeys = {
      "model_type", "vocab_size", "hidden_size", "num_hidden_layers",
      "num_attention_heads", "intermediate_size", "hidden_act",
      "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
      "position_embedding_type", "is_decoder", "add_cross_attention",
      "architectures"};
  // Keys that cannot change what BertModel's forward pass computes:
  // dropout, other tasks' heads and labels, caching, chunked feed-forward
  // (the same sums in pieces), the pooler description that checkpoints
  // converted from the original TensorFlow code carry (BertModel's pooler
  // is always dense + tanh on the first token), training and bookkeeping.
  family.ignoredKeys = {
      "hidden_dropout_prob", "attention_probs_dropout_prob",
      "classifier_dropout", "id2label", "label2id", "_num_labels",
      "num_labels", "problem_type", "finetuning_task", "task_specific_params",
      "tie_word_embeddings", "use_cache", "output_past",
      "chunk_size_feed_forward", "directionality", "pooler_fc_size",
      "pooler_num_attention_heads", "pooler_num_fc_layers",
      "pooler_size_per_head", "pooler_type", "initializer_range",
      "gradient_checkpointing", "_name_or_path", "transformers_version",
      "torch_dtype"};
  return family;
}

const HfFamilyRegistration registration(bert());

} // namespace
} // namespace tfmc::frontend::hf
