//===- HfMarian.cpp - Hugging Face Marian (opus-mt) -----------------------===//
//
// Marian (transformers' MarianConfig, MarianMTModel: the opus-mt family) as
// tfmc sees it: the original encoder-decoder Transformer with post-norm
// layers, one shared embedding table scaled by sqrt(d_model) for both
// stacks, static sinusoidal positions in Marian's layout (sin in the first
// half of the features, cos in the second), no final norms, and logits from
// the shared table plus final_logits_bias. Masks: padding in the encoder
// and the cross-attention, causal + padding in the decoder.
//
// Weights (hf-marian: MarianModel's names under `model.`, bare as the
// alternative):
//   src_embed.weight, tgt_embed.weight -> model.shared.weight (or a tied copy)
//   {encoder,decoder}.layers.i.self_attn.*     -> the same names
//   decoder.layers.i.multihead_attn.*          -> decoder.layers.i.encoder_attn.*
//   norm1 / norm2 / norm3, linear1 / linear2   -> self_attn_layer_norm /
//     (encoder) final_layer_norm, (decoder) encoder_attn_layer_norm /
//     final_layer_norm, fc1 / fc2
//   generator.bias                    -> final_logits_bias
//
// Tokens: the checkpoints ship source.spm, target.spm and vocab.json
// (MarianTokenizer appends </s>); generation reads the decoder start and
// the bad words from the config itself at run time
// (runtime/tokenizers/PromptTokens.cpp), so every token and generation key
// is accepted as it is.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfFamily.h"

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

bool readMarian(ConfigReader &config, Model &model) {
  int64_t encoderLayers = 0, decoderLayers = 0, decoderHeads = 0,
          decoderFF = 0;
  if (!config.requiredSizes(
          {{"d_model", &model.dModel}, {"encoder_layers", &encoderLayers},
           {"decoder_layers", &decoderLayers},
           {"encoder_attention_heads", &model.heads},
           {"decoder_attention_heads", &decoderHeads},
           {"encoder_ffn_dim", &model.dFF}, {"decoder_ffn_dim", &decoderFF},
           {"max_position_embeddings", &model.maxLen},
           {"vocab_size", &model.vocab}}))
    return false;
  // tfmc's encoder-decoder has one width per setting for both stacks.
  if (!config.agrees("decoder_attention_heads", decoderHeads,
                     "encoder_attention_heads", model.heads,
                     "tfmc needs one head count for both stacks") ||
      !config.agrees("decoder_ffn_dim", decoderFF, "encoder_ffn_dim",
                     model.dFF,
                     "tfmc needs one feed-forward width for both stacks") ||
      !config.dividedHeads(model, "d_model", "encoder_attention_heads"))
    return false;
  if (model.dModel % 2 != 0)
    return config.failKey(
        "d_model", fmt::format("{} is odd; Marian's sinusoidal positions "
                               "pair each sin feature with a cos one",
                               model.dModel));

  // One vocabulary: decoder_vocab_size (null: vocab_size) must agree, and
  // the shared table must be shared.
  int64_t decoderVocab = model.vocab;
  if (!config.size("decoder_vocab_size", decoderVocab, /*nullAllowed=*/true,
                   "a positive integer") ||
      !config.agrees("decoder_vocab_size", decoderVocab, "vocab_size",
                     model.vocab,
                     "tfmc's Marian has one vocabulary for both stacks"))
    return false;
  for (const char *key :
       {"share_encoder_decoder_embeddings", "tie_word_embeddings"})
    if (!config.onlySupported(key, true,
                              "tfmc's Marian embeds both stacks and computes "
                              "the logits with one shared table"))
      return false;

  model.activation = Activation::Gelu; // MarianConfig's default
  bool scale = false;
  if (!config.activation("activation_function",
                         {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu",
                          "silu", "swish"},
                         model.activation) ||
      !config.boolean("scale_embedding", scale))
    return false;
  model.embedScale = scale ? EmbedScale::SqrtDModel : EmbedScale::One;

  model.norm = NormPlacement::Post;
  model.positions = PositionKind::SinusoidalHalves;
  model.layerNormEps = 1e-5; // nn.LayerNorm's default, as MarianModel's
  model.finalNorm = false;
  model.output = OutputKind::Tied;
  model.outputBias = true;

  MaskSpec padding, causalPadding;
  padding.padding = causalPadding.padding = causalPadding.causal = true;
  model.encoder = importedStack(model, StackKind::Encoder, encoderLayers,
                                {{SublayerKind::SelfAttention, padding},
                                 {SublayerKind::FeedForward}});
  model.decoder = importedStack(model, StackKind::Decoder, decoderLayers,
                                {{SublayerKind::SelfAttention, causalPadding},
                                 {SublayerKind::CrossAttention, padding},
                                 {SublayerKind::FeedForward}});
  return true;
}

/// MarianModel's name (without the `model.` MarianMTModel adds) of a layer's
/// nn.Transformer name. Sublayer norms are numbered in sublayer order: the
/// encoder's norm2 follows its feed-forward, the decoder's norm2 its
/// cross-attention.
std::optional<std::string> marianLayerName(std::string_view canonical) {
  if (auto layerName = splitLayerName(canonical, "encoder"))
    if (auto name = renamed(layerName->second,
                            {{"self_attn.", "self_attn."},
                             {"norm1.", "self_attn_layer_norm."},
                             {"linear1.", "fc1."}, {"linear2.", "fc2."},
                             {"norm2.", "final_layer_norm."}},
                            {}))
      return "encoder.layers." + std::string(layerName->first) + "." + *name;
  if (auto layerName = splitLayerName(canonical, "decoder"))
    if (auto name = renamed(layerName->second,
                            {{"self_attn.", "self_attn."},
                             {"norm1.", "self_attn_layer_norm."},
                             {"multihead_attn.", "encoder_attn."},
                             {"norm2.", "encoder_attn_layer_norm."},
                             {"linear1.", "fc1."}, {"linear2.", "fc2."},
                             {"norm3.", "final_layer_norm."}},
                            {}))
      return "decoder.layers." + std::string(layerName->first) + "." + *name;
  return std::nullopt;
}

std::optional<WeightBinding> bindMarianWeight(std::string_view canonical) {
  // final_logits_bias is outside MarianModel.
  if (canonical == "generator.bias")
    return WeightBinding{"final_logits_bias", {}, false};
  // MarianMTModel's state dict (every opus-mt checkpoint) puts
  // MarianModel's tensors under `model.`; a bare MarianModel's has none.
  // One table (`shared`) embeds both stacks and gives the tied logits; it
  // is tied to each stack's embed_tokens (and lm_head), and a file may
  // keep it under any of those names.
  if (canonical == "src_embed.weight" || canonical == "tgt_embed.weight") {
    WeightBinding binding =
        bareOrPrefixed("shared.weight", "model.", /*prefixedFirst=*/true);
    for (const char *tied :
         {"model.encoder.embed_tokens.weight", "encoder.embed_tokens.weight",
          "model.decoder.embed_tokens.weight", "decoder.embed_tokens.weight",
          "lm_head.weight"})
      binding.altNames.push_back(tied);
    return binding;
  }
  std::optional<std::string> name = marianLayerName(canonical);
  if (!name)
    return std::nullopt;
  return bareOrPrefixed(*name, "model.", /*prefixedFirst=*/true);
}

HfFamily marian() {
  HfFamily family({{"marian", "Marian"}}, readMarian,
                  {"hf-marian", /*packedProjections=*/false,
                    bindMarianWeight});
  family.tokens.keys = {"pad_token_id", "eos_token_id", "bos_token_id",
                        "decoder_start_token_id", "forced_eos_token_id",
                        "bad_words_ids", "num_beams", "max_length"};
  family.sizeKeys = {{"d_model", "d_model"},
                     {"encoder_attention_heads", "heads"},
                     {"decoder_attention_heads", "heads"},
                     {"encoder_layers", "layers"}, {"decoder_layers", "layers"},
                     {"max_position_embeddings", "max_len"},
                     {"vocab_size", "vocab"}, {"decoder_vocab_size", "vocab"},
                     {"encoder_ffn_dim", "d_ff"}, {"decoder_ffn_dim", "d_ff"}};
  family.honouredKeys = {
      "model_type", "d_model", "encoder_layers", "decoder_layers",
      "encoder_attention_heads", "decoder_attention_heads", "encoder_ffn_dim",
      "decoder_ffn_dim", "activation_function", "max_position_embeddings",
      "scale_embedding", "vocab_size", "decoder_vocab_size",
      "share_encoder_decoder_embeddings", "tie_word_embeddings"};
  // Keys that cannot change what MarianMTModel's forward pass computes:
  // dropout and layer drop (training only), caching, keys of BART's config
  // that Marian's conversion writes but MarianModel never reads, other
  // tasks' heads, training and bookkeeping.
  family.ignoredKeys = {
      "dropout", "attention_dropout", "activation_dropout",
      "encoder_layerdrop", "decoder_layerdrop", "classif_dropout",
      "classifier_dropout", "use_cache", "is_encoder_decoder",
      "normalize_before", "normalize_embedding", "add_final_layer_norm",
      "static_position_embeddings", "add_bias_logits", "extra_pos_embeddings",
      "num_hidden_layers", "id2label", "label2id", "_num_labels", "num_labels",
      "task_specific_params", "init_std", "gradient_checkpointing",
      "architectures", "_name_or_path", "transformers_version", "torch_dtype"};
  return family;
}

const HfFamilyRegistration registration(marian());

} // namespace
} // namespace tfmc::frontend::hf
