//===- HfBert.cpp - Hugging Face BERT config.json -> AST ------------------===//
//
// BERT (transformers' BertConfig, BertModel) as tfmc sees it: an
// encoder-only stack of num_hidden_layers post-norm layers (self-attention
// -> residual -> LayerNorm, feed-forward -> residual -> LayerNorm) over the
// embeddings word + position (learned) + token type, normalised by the
// embeddings' LayerNorm. Attention masks padding only (the attention_mask
// input). Outputs last_hidden_state and, when the checkpoint has BERT's
// pooler, pooler_output = tanh(dense(h[:, 0])).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfigImpl.h"
#include "compiler/frontend/Limits.h"

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

/// The .tfm setting each size key gives (their maxima: Limits.h).
constexpr KeyToSetting kSizeKeys[] = {
    {"hidden_size", "d_model"},
    {"num_attention_heads", "heads"},
    {"num_hidden_layers", "layers"},
    {"max_position_embeddings", "max_len"},
    {"vocab_size", "vocab"},
    {"intermediate_size", "d_ff"},
    {"type_vocab_size", "token_types"}};

/// Keys that cannot change what BertModel's forward pass computes:
/// dropout, other tasks' heads and labels, token ids (pad_token_id only
/// zeroes the padding row's gradient), chunked feed-forward (the same sums
/// in pieces), the pooler description that checkpoints converted from the
/// original TensorFlow code carry (BertModel's pooler is always dense +
/// tanh on the first token), training and bookkeeping.
constexpr std::string_view kIgnoredKeys[] = {
    // dropout
    "hidden_dropout_prob", "attention_probs_dropout_prob",
    "classifier_dropout",
    // other tasks' heads and labels
    "id2label", "label2id", "_num_labels", "num_labels", "problem_type",
    "finetuning_task", "task_specific_params", "tie_word_embeddings",
    // tokens, generation, caching
    "pad_token_id", "bos_token_id", "eos_token_id", "use_cache",
    "output_past", "tokenizer_class",
    // computed alike
    "chunk_size_feed_forward",
    // the original BERT's conversion
    "directionality", "pooler_fc_size", "pooler_num_attention_heads",
    "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type",
    // training and bookkeeping
    "initializer_range", "gradient_checkpointing", "_name_or_path",
    "transformers_version", "torch_dtype"};

/// Keys read (or checked) below.
constexpr std::string_view kHonouredKeys[] = {
    "model_type",          "vocab_size",
    "hidden_size",         "num_hidden_layers",
    "num_attention_heads", "intermediate_size",
    "hidden_act",          "max_position_embeddings",
    "type_vocab_size",     "layer_norm_eps",
    "position_embedding_type", "is_decoder",
    "add_cross_attention", "architectures"};

/// The task models that Hugging Face builds without BERT's pooler
/// (add_pooling_layer=False): their checkpoints hold no pooler weights.
constexpr std::string_view kWithoutPooler[] = {
    "BertForMaskedLM", "BertForTokenClassification",
    "BertForQuestionAnswering", "BertLMHeadModel"};

class BertImporter {
public:
  BertImporter(const Json &config, const std::string &configPath,
               ImportErrors &errors)
      : config(config), path(configPath), errors(errors) {}

  std::optional<Model> import() {
    if (!onlyKnownKeys(config, "BERT", errors, [](std::string_view key) {
          return contains(kHonouredKeys, key) || contains(kIgnoredKeys, key);
        }))
      return std::nullopt;

    Model model;
    model.name = modelNameFor(path, "bert");
    model.loc = SourceLoc{path, 0, 0};

    int64_t layers = 0;
    if (!requiredSizes(config, "BERT",
                       {{"hidden_size", &model.dModel},
                        {"num_attention_heads", &model.heads},
                        {"num_hidden_layers", &layers},
                        {"max_position_embeddings", &model.maxLen},
                        {"vocab_size", &model.vocab},
                        {"intermediate_size", &model.dFF}},
                       kSizeKeys, errors))
      return std::nullopt;
    if (model.dModel % model.heads != 0)
      return errors.failKey(
          "num_attention_heads",
          fmt::format("hidden_size = {} is not divisible by "
                      "num_attention_heads = {}",
                      model.dModel, model.heads));
    model.kvHeads = model.heads;
    model.headDim = model.dModel / model.heads;

    // BertConfig's defaults for the keys a config may leave out.
    model.tokenTypes = 2;
    if (auto it = config.find("type_vocab_size"); it != config.end()) {
      std::optional<int64_t> value = positive("type_vocab_size", *it);
      if (!value)
        return std::nullopt;
      model.tokenTypes = *value;
    }
    model.activation = Activation::Gelu;
    if (auto it = config.find("hidden_act"); it != config.end()) {
      std::optional<Activation> activation =
          activationOf(errors, "hidden_act", *it);
      if (!activation)
        return std::nullopt;
      model.activation = *activation;
    }
    model.layerNormEps = 1e-12;
    if (!errors.positiveNumber(config, "layer_norm_eps", model.layerNormEps))
      return std::nullopt;
    if (auto it = config.find("position_embedding_type");
        it != config.end() && !(it->is_string() && *it == "absolute"))
      return errors.failKey(
          "position_embedding_type",
          fmt::format("{} is not supported; tfmc's BERT has \"absolute\" "
                      "(learned) positions",
                      describe(*it)));
    for (const char *key : {"is_decoder", "add_cross_attention"}) {
      bool value = false;
      if (!errors.boolean(config, key, value))
        return std::nullopt;
      if (value)
        return errors.failKey(key, "true is not supported: tfmc's BERT is "
                                   "an encoder (bidirectional, without "
                                   "cross-attention)");
    }

    // The pooler, unless every architecture named is one Hugging Face
    // builds without it.
    model.pooler = true;
    if (auto it = config.find("architectures"); it != config.end()) {
      if (!it->is_array() || it->empty())
        return errors.failKey("architectures",
                              fmt::format("expected a non-empty list of "
                                          "class names, found {}",
                                          describe(*it)));
      bool anyWithPooler = false;
      for (const Json &name : *it) {
        if (!name.is_string())
          return errors.failKey("architectures",
                                fmt::format("expected class names, found {}",
                                            describe(name)));
        anyWithPooler |= !contains(kWithoutPooler, name.get<std::string>());
      }
      model.pooler = anyWithPooler;
    }

    model.norm = NormPlacement::Post;
    model.positions = PositionKind::Learned;
    model.embedScale = EmbedScale::One;
    model.embedNorm = true;
    model.finalNorm = false;
    model.output = OutputKind::None;
    model.weightNaming = WeightNaming::HfBert;

    MaskSpec padding;
    padding.padding = true;
    model.encoder = importedStack(model, StackKind::Encoder, layers,
                                  {{SublayerKind::SelfAttention, padding},
                                   {SublayerKind::FeedForward}});
    return checkedModel(std::move(model), kSizeKeys, errors);
  }

private:
  const Json &config;
  const std::string &path;
  ImportErrors &errors;

  std::optional<int64_t> positive(std::string_view key, const Json &value) {
    return errors.positive(key, value,
                           maxOfSetting(settingOfKey(kSizeKeys, key)));
  }
};

} // namespace

std::optional<Model> importBert(const Json &config,
                                const std::string &configPath,
                                ImportErrors &errors) {
  return BertImporter(config, configPath, errors).import();
}

} // namespace tfmc::frontend::hf
