//===- HfGemma2.cpp - Hugging Face Gemma 2 --------------------------------===//
//
// transformers' Gemma2ForCausalLM: a decoder-only stack whose layers put an
// RMSNorm before and after each sublayer (norm = sandwich:
//   h = h + post_attention_layernorm(self_attn(input_layernorm(h)))
//   h = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))),
// each RMSNorm's gain 1 + its weight (norm_gain = one_plus_weight), the
// embeddings times sqrt(hidden_size), grouped-query attention with rotary
// positions ("rotate half") and scores scaled by query_pre_attn_scalar^-1/2
// (not head_dim's), soft-capped (attn_logit_softcapping) before the masks,
// a sliding window on every other layer (layers 0, 2, 4, ...: window(N,
// full_every = 2)), a GeGLU feed-forward (down(gelu_tanh(gate(x)) · up(x))),
// a final norm, and the tied embedding's logits soft-capped
// (final_logit_softcapping). No biases anywhere.
//
// Keys: Gemma2Config's defaults where a key is absent (head_dim 256,
// query_pre_attn_scalar 256, sliding_window 4096, the caps 50 and 30,
// tie_word_embeddings true, hidden_activation gelu_pytorch_tanh); a cap of
// null is none. Which layers slide: layer_types when given (any list tfmc's
// full_every expresses: every K-th layer full, or all alike), else
// Gemma2Config's rule (layer i slides when (i + 1) % 2 is nonzero).
// hidden_act is not read by Gemma2MLP (hidden_activation is): ignored.
//
// Weights (hf-gemma2: Gemma2ForCausalLM's names), as hf-llama's (HfLlama.cpp)
// but for the four norms of a layer:
//   decoder.layers.i.norm1.weight       -> model.layers.i.input_layernorm.weight
//   decoder.layers.i.post_norm1.weight  -> model.layers.i.post_attention_layernorm.weight
//   decoder.layers.i.norm2.weight       -> model.layers.i.pre_feedforward_layernorm.weight
//   decoder.layers.i.post_norm2.weight  -> model.layers.i.post_feedforward_layernorm.weight
// (Llama's post_attention_layernorm is the feed-forward's pre-norm;
// Gemma 2's is the attention's post-norm.)
//
// GGUF (GgufFamily.h): llama.cpp's "gemma2" architecture (convert_hf_to_gguf's
// Gemma2Model), read as a gemma2 config: the Llama keys, the caps as
// gemma2.attn_logit_softcapping and gemma2.final_logit_softcapping, the
// window as gemma2.attention.sliding_window; the norms as
//   input_layernorm -> blk.i.attn_norm, post_attention_layernorm ->
//   blk.i.post_attention_norm, pre_feedforward_layernorm -> blk.i.ffn_norm,
//   post_feedforward_layernorm -> blk.i.post_ffw_norm
// and the rest as llama files name them, Q and K in Hugging Face's order
// (GGML_ROPE_TYPE_NEOX). The converter stores each norm's whole gain, 1 + w,
// and no lm_head (the logits always use token_embd). The file has no
// query_pre_attn_scalar: llama.cpp scales the scores by head_dim^-1/2, or
// by (hidden / heads)^-1/2 for a model of 46 layers (Gemma 2 27B), which
// gives the published checkpoints' own values; tfmc does the same for any
// gemma2 file, so that it computes what llama.cpp computes.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/GgufFamily.h"
#include "compiler/frontend/HfFamily.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

// Gemma2Config's defaults.
constexpr int64_t kDefaultHeadDim = 256;
constexpr double kDefaultQueryScalar = 256.0;
constexpr int64_t kDefaultWindow = 4096;
constexpr double kDefaultAttnCap = 50.0;
constexpr double kDefaultFinalCap = 30.0;
/// Gemma 2 alternates: every second layer attends without the window.
constexpr int64_t kFullEvery = 2;

/// A soft-cap under `key`: absent: `fallback`; null: none (0).
bool softcap(ConfigReader &config, const char *key, double fallback,
             double &field) {
  field = fallback;
  if (const Json *value = config.find(key); value && value->is_null()) {
    field = 0;
    return true;
  }
  return config.positiveNumber(key, field);
}

/// The layers' window pattern as full_every (0: every layer slides; -1: none
/// does), from layer_types when given, else Gemma 2's alternation; nullopt
/// (message set) for a list tfmc does not express.
std::optional<int64_t> fullEvery(ConfigReader &config, int64_t layers) {
  const Json *types = config.find("layer_types");
  if (!types || types->is_null())
    return kFullEvery;
  if (!types->is_array() || types->size() != size_t(layers)) {
    config.failKey("layer_types",
                   fmt::format("expected null or a list of num_hidden_layers "
                               "= {} layer types, found {}",
                               layers, describe(*types)));
    return std::nullopt;
  }
  std::vector<bool> full;
  for (const Json &type : *types) {
    std::string name = type.is_string() ? type.get<std::string>() : "";
    if (name != "sliding_attention" && name != "full_attention") {
      config.failKey("layer_types",
                     fmt::format("{} is not a layer type; expected "
                                 "\"full_attention\" or \"sliding_attention\"",
                                 describe(type)));
      return std::nullopt;
    }
    full.push_back(name == "full_attention");
  }
  // The first full layer fixes K; every layer must then follow it.
  int64_t first = 0;
  while (first < layers && !full[first])
    ++first;
  if (first == layers)
    return 0;
  if (first == 0) {
    if (std::find(full.begin(), full.end(), false) == full.end())
      return -1;
  } else {
    const int64_t k = first + 1;
    bool follows = true;
    for (int64_t i = 0; i < layers; ++i)
      follows = follows && full[i] == ((i + 1) % k == 0);
    if (follows)
      return k;
  }
  config.failKey("layer_types",
                 "tfmc gives full attention to every K-th layer (layers K-1, "
                 "2K-1, ...) and the window to the others, or the same "
                 "attention to all; this list is neither");
  return std::nullopt;
}

bool readGemma2(ConfigReader &config, Model &model) {
  int64_t layers = 0;
  if (!config.requiredSizes(
          {{"hidden_size", &model.dModel}, {"intermediate_size", &model.dFF},
           {"num_hidden_layers", &layers},
           {"num_attention_heads", &model.heads},
           {"max_position_embeddings", &model.maxLen},
           {"vocab_size", &model.vocab}}))
    return false;
  if (!config.rotaryHeads(model, kDefaultHeadDim))
    return false;

  model.activation = Activation::GeluTanh;
  model.layerNormEps = 1e-6;
  model.ropeTheta = 10000.0;
  double queryScalar = kDefaultQueryScalar;
  bool tied = true;
  if (!config.activation("hidden_activation",
                         {"gelu_pytorch_tanh", "gelu_new", "gelu", "silu",
                          "relu"},
                         model.activation) ||
      !config.positiveNumber("rms_norm_eps", model.layerNormEps) ||
      !config.positiveNumber("rope_theta", model.ropeTheta) ||
      !config.positiveNumber("query_pre_attn_scalar", queryScalar) ||
      !softcap(config, "attn_logit_softcapping", kDefaultAttnCap,
               model.attnLogitSoftcap) ||
      !softcap(config, "final_logit_softcapping", kDefaultFinalCap,
               model.finalLogitSoftcap) ||
      !config.boolean("tie_word_embeddings", tied) ||
      !config.onlySupported("attention_bias", false,
                            "Gemma 2 then biases o_proj as well as "
                            "q/k/v_proj, which tfmc does not express") ||
      !config.tokenIds())
    return false;
  model.attentionScale = 1.0 / std::sqrt(queryScalar);

  int64_t window = kDefaultWindow;
  if (!config.size("sliding_window", window))
    return false;
  std::optional<int64_t> every = fullEvery(config, layers);
  if (!every)
    return false;
  MaskSpec mask;
  mask.causal = mask.padding = true;
  // A window at least max_len wide never hides a key: no mask needed.
  if (*every >= 0 && window < model.maxLen) {
    mask.window = window;
    mask.fullEvery = *every;
  }

  model.norm = NormPlacement::Sandwich;
  model.normType = NormType::RmsNorm;
  model.normGainOffset = true;
  model.positions = PositionKind::Rope;
  model.embedScale = EmbedScale::SqrtDModel;
  model.finalNorm = true;
  model.output = tied ? OutputKind::Tied : OutputKind::Linear;
  model.bias = false;
  model.attentionBias = false;
  model.decoder = importedStack(model, StackKind::Decoder, layers,
                                {{SublayerKind::SelfAttention, mask},
                                 {SublayerKind::FeedForward, {}, true}});
  return true;
}

std::optional<WeightBinding> bindGemma2Weight(std::string_view canonical) {
  if (auto layerName = splitLayerName(canonical)) {
    auto [layer, parameter] = *layerName;
    std::optional<std::string> name =
        renamed(parameter,
                {{"norm1.", "input_layernorm."},
                 {"post_norm1.", "post_attention_layernorm."},
                 {"norm2.", "pre_feedforward_layernorm."},
                 {"post_norm2.", "post_feedforward_layernorm."}},
                {"weight"});
    if (name)
      return bareOrPrefixed("layers." + std::string(layer) + "." + *name,
                            "model.", /*prefixedFirst=*/true);
  }
  // The projections, embeddings, final norm and lm_head as Llama's.
  return bindWeight("hf-llama", std::string(canonical));
}

HfFamily gemma2() {
  HfFamily family({{"gemma2", "Gemma 2", {}}}, readGemma2,
                  {"hf-gemma2", /*packedProjections=*/false,
                   bindGemma2Weight});
  setRotaryDecoderKeys(family);
  family.honouredKeys = {
      "model_type", "vocab_size", "hidden_size", "intermediate_size",
      "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
      "head_dim", "hidden_activation", "max_position_embeddings",
      "rms_norm_eps", "rope_theta", "query_pre_attn_scalar",
      "attn_logit_softcapping", "final_logit_softcapping", "sliding_window",
      "layer_types", "attention_bias", "tie_word_embeddings"};
  // Dropout, caching (cache_implementation "hybrid" is how transformers
  // caches the alternating layers), training, bookkeeping, and hidden_act
  // (see the file comment).
  family.ignoredKeys = {"attention_dropout", "use_cache", "cache_implementation",
                        "initializer_range", "hidden_act", "architectures",
                        "_name_or_path", "transformers_version", "torch_dtype",
                        "dtype"};
  return family;
}

const HfFamilyRegistration registration(gemma2());

// GGUF.

std::optional<WeightBinding> bindGgufGemma2(std::string_view canonical) {
  if (auto layerName = splitLayerName(canonical)) {
    auto [layer, parameter] = *layerName;
    std::optional<WeightBinding> norm = ggufBlockBinding(
        std::string(layer) + "." + std::string(parameter),
        {{"norm1.", "attn_norm."},
         {"post_norm1.", "post_attention_norm."},
         {"norm2.", "ffn_norm."},
         {"post_norm2.", "post_ffw_norm."}});
    if (norm)
      return norm;
  }
  // The projections, embeddings, final norm and output as llama files'.
  return bindWeight("gguf-llama", std::string(canonical));
}

const WeightNamingRegistration ggufGemma2Naming(
    {"gguf-gemma2", /*packedProjections=*/false, bindGgufGemma2,
     /*ropeInterleaved=*/false});

/// llama.cpp's attention scale for a gemma2 file (see the file comment).
void impliedGemma2Keys(Json &config) {
  auto count = [&](const char *key) -> int64_t {
    auto it = config.find(key);
    return it != config.end() && it->is_number_unsigned()
               ? int64_t(it->get<uint64_t>())
               : 0;
  };
  const int64_t hidden = count("hidden_size"),
                heads = count("num_attention_heads");
  // llama.cpp's head width: attention.key_length, else hidden / heads (not
  // Gemma2Config's 256).
  int64_t headDim = count("head_dim");
  if (headDim == 0 && heads > 0)
    config["head_dim"] = headDim = hidden / heads;
  const int64_t scalar =
      count("num_hidden_layers") == 46 && heads > 0 ? hidden / heads : headDim;
  if (scalar > 0)
    config["query_pre_attn_scalar"] = scalar;
}

GgufArchitecture ggufGemma2() {
  std::vector<GgufKeyMap> keys = ggufRotaryKeys();
  keys.push_back({"attn_logit_softcapping", "attn_logit_softcapping",
                  GgufExpect::Float});
  keys.push_back({"final_logit_softcapping", "final_logit_softcapping",
                  GgufExpect::Float});
  keys.push_back({"attention.sliding_window", "sliding_window",
                  GgufExpect::Count});
  GgufArchitecture arch{"gemma2", "gemma2", keys, {}, "gguf-gemma2",
                        /*rotary=*/true,
                        /*noBiases=*/"Gemma 2's projections have no biases"};
  arch.impliedKeys = impliedGemma2Keys;
  arch.wholeNormGains = true;
  return arch;
}

const GgufArchitectureRegistration ggufGemma2Registration(ggufGemma2());

} // namespace
} // namespace tfmc::frontend::hf
