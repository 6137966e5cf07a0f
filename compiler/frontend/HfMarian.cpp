//===- HfMarian.cpp - Hugging Face Marian config.json -> AST --------------===//
//
// Marian (transformers' MarianConfig, MarianMTModel: the opus-mt family) as
// tfmc sees it: the original encoder-decoder Transformer with post-norm
// layers, one shared embedding table scaled by sqrt(d_model) for both
// stacks, static sinusoidal positions in Marian's layout (sin in the first
// half of the features, cos in the second), no final norms, and logits from
// the shared table plus final_logits_bias. Masks: padding in the encoder
// and the cross-attention, causal + padding in the decoder.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfigImpl.h"
#include "compiler/frontend/Limits.h"

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

/// The .tfm setting each size key gives (their maxima: Limits.h).
constexpr KeyToSetting kSizeKeys[] = {
    {"d_model", "d_model"},
    {"encoder_attention_heads", "heads"},
    {"decoder_attention_heads", "heads"},
    {"encoder_layers", "layers"},
    {"decoder_layers", "layers"},
    {"max_position_embeddings", "max_len"},
    {"vocab_size", "vocab"},
    {"decoder_vocab_size", "vocab"},
    {"encoder_ffn_dim", "d_ff"},
    {"decoder_ffn_dim", "d_ff"}};

/// Keys that cannot change what MarianMTModel's forward pass computes:
/// dropout and layer drop (training only), token ids and generation
/// settings (the runtime takes the tokens from the checkpoint directory:
/// Tokenizer.h's readPromptTokens), keys of BART's config that Marian's
/// conversion writes but MarianModel never reads, training and bookkeeping.
constexpr std::string_view kIgnoredKeys[] = {
    // dropout
    "dropout", "attention_dropout", "activation_dropout", "encoder_layerdrop",
    "decoder_layerdrop", "classif_dropout", "classifier_dropout",
    // tokens, generation, caching
    "pad_token_id", "eos_token_id", "bos_token_id", "decoder_start_token_id",
    "forced_eos_token_id", "bad_words_ids", "num_beams", "max_length",
    "use_cache", "is_encoder_decoder",
    // BART's keys, not read by MarianModel
    "normalize_before", "normalize_embedding", "add_final_layer_norm",
    "static_position_embeddings", "add_bias_logits", "extra_pos_embeddings",
    "num_hidden_layers",
    // other tasks' heads and labels
    "id2label", "label2id", "_num_labels", "num_labels", "task_specific_params",
    // training and bookkeeping
    "init_std", "gradient_checkpointing", "architectures", "_name_or_path",
    "transformers_version", "torch_dtype"};

/// Keys read (or checked) below.
constexpr std::string_view kHonouredKeys[] = {
    "model_type",      "d_model",         "encoder_layers",
    "decoder_layers",  "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim",
    "decoder_ffn_dim", "activation_function",
    "max_position_embeddings", "scale_embedding",
    "vocab_size",      "decoder_vocab_size",
    "share_encoder_decoder_embeddings", "tie_word_embeddings"};

class MarianImporter {
public:
  MarianImporter(const Json &config, const std::string &configPath,
                 ImportErrors &errors)
      : config(config), path(configPath), errors(errors) {}

  std::optional<Model> import() {
    if (!onlyKnownKeys(config, "Marian", errors, [](std::string_view key) {
          return contains(kHonouredKeys, key) || contains(kIgnoredKeys, key);
        }))
      return std::nullopt;

    Model model;
    model.name = modelNameFor(path, "marian");
    model.loc = SourceLoc{path, 0, 0};

    int64_t encoderLayers = 0, decoderLayers = 0, decoderHeads = 0,
            decoderFF = 0;
    if (!requiredSizes(config, "Marian",
                       {{"d_model", &model.dModel},
                        {"encoder_layers", &encoderLayers},
                        {"decoder_layers", &decoderLayers},
                        {"encoder_attention_heads", &model.heads},
                        {"decoder_attention_heads", &decoderHeads},
                        {"encoder_ffn_dim", &model.dFF},
                        {"decoder_ffn_dim", &decoderFF},
                        {"max_position_embeddings", &model.maxLen},
                        {"vocab_size", &model.vocab}},
                       kSizeKeys, errors))
      return std::nullopt;
    // tfmc's encoder-decoder has one width per setting for both stacks.
    if (decoderHeads != model.heads)
      return errors.failKey(
          "decoder_attention_heads",
          fmt::format("{} differs from encoder_attention_heads = {}; tfmc "
                      "needs one head count for both stacks",
                      decoderHeads, model.heads));
    if (decoderFF != model.dFF)
      return errors.failKey(
          "decoder_ffn_dim",
          fmt::format("{} differs from encoder_ffn_dim = {}; tfmc needs one "
                      "feed-forward width for both stacks",
                      decoderFF, model.dFF));
    if (model.dModel % model.heads != 0)
      return errors.failKey(
          "encoder_attention_heads",
          fmt::format("d_model = {} is not divisible by "
                      "encoder_attention_heads = {}",
                      model.dModel, model.heads));
    if (model.dModel % 2 != 0)
      return errors.failKey(
          "d_model", fmt::format("{} is odd; Marian's sinusoidal positions "
                                 "pair each sin feature with a cos one",
                                 model.dModel));
    model.kvHeads = model.heads;
    model.headDim = model.dModel / model.heads;

    // One vocabulary: decoder_vocab_size (null: vocab_size) must agree, and
    // the shared table must be shared.
    if (auto it = config.find("decoder_vocab_size");
        it != config.end() && !it->is_null()) {
      std::optional<int64_t> value = positive("decoder_vocab_size", *it);
      if (!value)
        return std::nullopt;
      if (*value != model.vocab)
        return errors.failKey(
            "decoder_vocab_size",
            fmt::format("{} differs from vocab_size = {}; tfmc's Marian has "
                        "one vocabulary for both stacks",
                        *value, model.vocab));
    }
    for (const char *key :
         {"share_encoder_decoder_embeddings", "tie_word_embeddings"}) {
      bool shared = true;
      if (!errors.boolean(config, key, shared))
        return std::nullopt;
      if (!shared)
        return errors.failKey(key, "false is not supported: tfmc's Marian "
                                   "embeds both stacks and computes the "
                                   "logits with one shared table");
    }

    model.activation = Activation::Gelu; // MarianConfig's default
    if (auto it = config.find("activation_function"); it != config.end()) {
      std::optional<Activation> activation =
          activationOf(errors, "activation_function", *it);
      if (!activation)
        return std::nullopt;
      model.activation = *activation;
    }
    bool scale = false;
    if (!errors.boolean(config, "scale_embedding", scale))
      return std::nullopt;
    model.embedScale = scale ? EmbedScale::SqrtDModel : EmbedScale::One;

    model.norm = NormPlacement::Post;
    model.positions = PositionKind::SinusoidalHalves;
    model.layerNormEps = 1e-5; // nn.LayerNorm's default, as MarianModel's
    model.finalNorm = false;
    model.output = OutputKind::Tied;
    model.outputBias = true;
    model.weightNaming = WeightNaming::HfMarian;

    MaskSpec padding, causalPadding;
    padding.padding = causalPadding.padding = causalPadding.causal = true;
    model.encoder = importedStack(model, StackKind::Encoder, encoderLayers,
                                  {{SublayerKind::SelfAttention, padding},
                                   {SublayerKind::FeedForward}});
    model.decoder = importedStack(model, StackKind::Decoder, decoderLayers,
                                  {{SublayerKind::SelfAttention, causalPadding},
                                   {SublayerKind::CrossAttention, padding},
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

std::optional<Model> importMarian(const Json &config,
                                  const std::string &configPath,
                                  ImportErrors &errors) {
  return MarianImporter(config, configPath, errors).import();
}

} // namespace tfmc::frontend::hf
