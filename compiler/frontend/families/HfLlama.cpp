//===- HfLlama.cpp - Hugging Face Llama, Mistral, Qwen2, Phi-3 ------------===//
//
// transformers' LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and
// Phi3ForCausalLM are one architecture as tfmc sees it: a decoder-only stack of pre-norm layers
// (input_layernorm -> causal self-attention -> residual,
// post_attention_layernorm -> gated MLP down(act(gate(x)) * up(x)) ->
// residual), RMSNorm everywhere, rotary positions on Q and K ("rotate half"),
// grouped-query attention with separate q/k/v_proj and o_proj, a final norm,
// and lm_head (or the tied embedding) for the logits. The families differ in
// the biases (Qwen2 biases Q, K and V; Llama may bias every attention
// projection or the MLP, which tfmc's language does not express) and in
// the sliding window (Mistral and Phi-3: every layer; Qwen2: the layers from
// max_window_layers on, when use_sliding_window is true). Phi-3 is Mistral's
// decoder with Q, K and V packed in one qkv_proj and the gate and up
// projections in one gate_up_proj, so it is a family of its own (hf-phi3,
// below), read by the same reader.
//
// Weights (hf-llama: LlamaForCausalLM's names, nothing transposed), each but
// lm_head also without `model.` (a bare LlamaModel's state dict) as the
// alternative:
//   tgt_embed.weight                          -> model.embed_tokens.weight
//   decoder.layers.i.self_attn.{q,k,v}_proj.* -> model.layers.i.self_attn.{q,k,v}_proj.*
//   decoder.layers.i.self_attn.out_proj.weight-> model.layers.i.self_attn.o_proj.weight
//   decoder.layers.i.gate/linear1/linear2.weight -> model.layers.i.mlp.gate_proj/up_proj/down_proj.weight
//   decoder.layers.i.norm1.weight, norm2.weight -> model.layers.i.input_layernorm.weight,
//                                                post_attention_layernorm.weight
//   decoder.norm.weight                       -> model.norm.weight
//   generator.weight                          -> lm_head.weight
//
// Phi-3 (hf-phi3: Phi3ForCausalLM's names): hf-llama's, except
//   decoder.layers.i.self_attn.in_proj_weight -> model.layers.i.self_attn.qkv_proj.weight
//     (rows: Q, then K, then V: [(heads + 2 kv_heads) head_dim, hidden])
//   decoder.layers.i.gate_up.weight           -> model.layers.i.mlp.gate_up_proj.weight
//     (rows: the gate, then up: Phi3MLP's chunk(2))
//
// Tokens: the checkpoints ship tokenizer.json or tokenizer.model; the
// config's bos_token_id and eos_token_id (a list for some) are what
// generation reads when generation_config.json has none, so they are
// checked here.
//
// GGUF (GgufFamily.h): llama.cpp's "llama" and "qwen2" architectures read
// as llama and qwen2 configs; their tensors bound through hf-llama's names
// (llama.cpp's src/llama-arch.cpp, LLM_TENSOR_NAMES):
//   model.embed_tokens.weight            -> token_embd.weight
//   model.layers.i.input_layernorm       -> blk.i.attn_norm
//   model.layers.i.self_attn.q/k/v_proj  -> blk.i.attn_q/k/v (.weight, .bias)
//   model.layers.i.self_attn.o_proj      -> blk.i.attn_output
//   model.layers.i.post_attention_layernorm -> blk.i.ffn_norm
//   model.layers.i.mlp.gate/up/down_proj -> blk.i.ffn_gate/up/down
//   model.norm.weight                    -> output_norm.weight
//   lm_head.weight                       -> output.weight
// A llama file's Q and K rows are in ggml's rope order (convert_hf_to_gguf
// permutes them for GGML_ROPE_TYPE_NORM); a qwen2 file's are Hugging
// Face's (GGML_ROPE_TYPE_NEOX turns the halves, as Hugging Face does).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/GgufFamily.h"
#include "compiler/frontend/HfFamily.h"
#include "compiler/frontend/Limits.h"
#include "support/Text.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

/// MistralConfig's and Qwen2Config's sliding_window when the key is absent.
constexpr int64_t kDefaultWindow = 4096;
/// Qwen2Config's max_window_layers when the key is absent.
constexpr int64_t kQwen2DefaultMaxWindowLayers = 28;

/// longrope's keys of `object` (under `key`) into `model` (see ropeScaling).
bool longRopeScaling(ConfigReader &config, const char *key, const Json &object,
                     Model &model) {
  const size_t pairs = size_t(model.headDim / 2);
  for (const char *name : {"short_factor", "long_factor"}) {
    auto it = object.find(name);
    if (it == object.end())
      return config.failKey(key, fmt::format("{} is missing (rope_type "
                                             "\"longrope\" needs it)",
                                             name));
    if (!it->is_array() || it->size() != pairs)
      return config.failKey(
          key, fmt::format("{}: expected a list of {} numbers (one per pair "
                           "of a head's {} features), found {}",
                           name, pairs, model.headDim, describe(*it)));
    std::vector<double> &factors = std::string_view(name) == "short_factor"
                                       ? model.ropeShortFactors
                                       : model.ropeLongFactors;
    factors.clear();
    for (const Json &each : *it) {
      if (!each.is_number() || !(each.get<double>() > 0.0) ||
          !std::isfinite(float(each.get<double>())))
        return config.failKey(
            key, fmt::format("{}[{}]: expected a positive number, found {}",
                             name, factors.size(), describe(each)));
      factors.push_back(each.get<double>());
    }
  }
  // The context it was trained at: here, else the config's (Phi-3's), else
  // max_position_embeddings.
  const Json *original = nullptr;
  if (auto it = object.find("original_max_position_embeddings");
      it != object.end())
    original = &*it;
  else
    original = config.find("original_max_position_embeddings");
  model.ropeOriginalMaxLen = model.maxLen;
  if (original) {
    if (!original->is_number_integer() || original->get<int64_t>() <= 0)
      return config.failKey(key, fmt::format("original_max_position_embeddings"
                                             ": expected a positive integer, "
                                             "found {}",
                                             describe(*original)));
    model.ropeOriginalMaxLen = original->get<int64_t>();
  }
  if (auto it = object.find("attention_factor"); it != object.end()) {
    if (!it->is_number() || !(it->get<double>() > 0.0) ||
        !std::isfinite(float(it->get<double>())))
      return config.failKey(key, fmt::format("attention_factor: expected a "
                                             "positive number, found {}",
                                             describe(*it)));
    model.ropeAttentionFactor = it->get<double>();
  } else {
    // transformers' _compute_longrope_parameters, in Python's doubles.
    const double scale =
        double(model.maxLen) / double(model.ropeOriginalMaxLen);
    model.ropeAttentionFactor =
        scale <= 1.0 ? 1.0
                     : std::sqrt(1.0 + std::log(scale) /
                                           std::log(double(
                                               model.ropeOriginalMaxLen)));
  }
  return true;
}

/// rope_scaling (or transformers 5's rope_parameters, which also carries
/// rope_theta): how rope's inverse frequencies are scaled, as transformers'
/// ROPE_INIT_FUNCTIONS compute them:
///   - "default" (or no type): unscaled;
///   - "linear": every inv_freq / factor;
///   - "llama3": Llama 3.1's (factor, low_freq_factor, high_freq_factor,
///     original_max_position_embeddings: each required, as transformers
///     requires them);
///   - "dynamic" (NTK): transformers scales only for a sequence longer than
///     the context it was trained at, which the compiled program never runs
///     (its max_len is at most max_position_embeddings): unscaled;
///   - "longrope" (Phi-3's; "su", and for phi3 "yarn", are its old names):
///     short_factor and long_factor (one per frequency), the context it was
///     trained at (original_max_position_embeddings, here or in the config;
///     else max_position_embeddings), and attention_factor, or the one
///     transformers derives: sqrt(1 + ln(s) / ln(original)) with s =
///     max_position_embeddings / original, 1 where s <= 1;
/// any other type, or a key none of these takes, is refused by name.
bool ropeScaling(ConfigReader &config, const char *key, Model &model) {
  const Json *object = config.find(key);
  if (!object || object->is_null())
    return true;
  if (!object->is_object())
    return config.failKey(key, fmt::format("expected null or an object, "
                                           "found {}",
                                           describe(*object)));
  const bool parameters = std::string_view(key) == "rope_parameters";
  // The type: rope_type, or the older "type" (both may be given alike).
  std::string type = "default";
  bool typed = false;
  for (const char *name : {"rope_type", "type"}) {
    auto it = object->find(name);
    if (it == object->end())
      continue;
    if (!it->is_string())
      return config.failKey(key, fmt::format("{}: expected a string, found "
                                             "{}",
                                             name, describe(*it)));
    if (typed && it->get<std::string>() != type)
      return config.failKey(key, "rope_type and type differ");
    type = it->get<std::string>();
    typed = true;
  }
  const std::string quotedType = "\"" + support::escapeText(type) + "\"";
  std::vector<std::string> takes = {"rope_type", "type"};
  if (parameters)
    takes.push_back("rope_theta");
  if (type == "default") {
    model.ropeScaling = RopeScaling::None;
  } else if (type == "linear" || type == "dynamic") {
    takes.push_back("factor");
    if (type == "dynamic")
      takes.push_back("original_max_position_embeddings");
    model.ropeScaling =
        type == "linear" ? RopeScaling::Linear : RopeScaling::None;
  } else if (type == "llama3") {
    takes.insert(takes.end(),
                 {"factor", "low_freq_factor", "high_freq_factor",
                  "original_max_position_embeddings"});
    model.ropeScaling = RopeScaling::Llama3;
  } else if (type == "longrope" || type == "su" ||
             (type == "yarn" && config.modelType() == "phi3")) {
    takes.insert(takes.end(),
                 {"short_factor", "long_factor", "attention_factor",
                  "original_max_position_embeddings"});
    model.ropeScaling = RopeScaling::LongRope;
  } else {
    return config.failKey(
        key, fmt::format("rope_type {} is not supported: tfmc scales rope's "
                         "frequencies as \"default\", \"linear\", "
                         "\"dynamic\", \"llama3\" and \"longrope\"",
                         quotedType));
  }
  for (auto entry = object->begin(); entry != object->end(); ++entry)
    if (std::find(takes.begin(), takes.end(), entry.key()) == takes.end())
      return config.failKey(
          key, fmt::format("'{}' is not supported with rope_type {}",
                           support::escapeText(entry.key()),
                           quotedType));
  // The numbers each type takes: all required.
  auto number = [&](const char *name, double &field) {
    auto it = object->find(name);
    if (it == object->end())
      return config.failKey(key, fmt::format("{} is missing (rope_type {} "
                                             "needs it)",
                                             name, quotedType));
    if (!it->is_number() || !(it->get<double>() > 0.0) ||
        !std::isfinite(float(it->get<double>())))
      return config.failKey(key, fmt::format("{}: expected a positive "
                                             "number, found {}",
                                             name, describe(*it)));
    field = it->get<double>();
    return true;
  };
  if (parameters && object->contains("rope_theta")) {
    double theta = 0;
    if (!number("rope_theta", theta))
      return false;
    const Json *given = config.find("rope_theta");
    if (given && *given != (*object)["rope_theta"])
      return config.failKey(key,
                            "its rope_theta differs from the config's "
                            "rope_theta");
    model.ropeTheta = theta;
  }
  if (type == "default")
    return true;
  if (model.ropeScaling == RopeScaling::LongRope)
    return longRopeScaling(config, key, *object, model);
  double factor = 0;
  if (!number("factor", factor))
    return false;
  if (type == "dynamic") {
    // Within the context it was trained at, dynamic NTK is the default.
    if (auto it = object->find("original_max_position_embeddings");
        it != object->end() &&
        (!it->is_number_integer() || it->get<int64_t>() < model.maxLen))
      return config.failKey(
          key, fmt::format("original_max_position_embeddings {} is below "
                           "max_position_embeddings {}: dynamic NTK would "
                           "scale positions the program runs, which tfmc "
                           "does not",
                           describe(*it), model.maxLen));
    return true;
  }
  model.ropeFactor = factor;
  if (type == "linear")
    return true;
  double original = 0;
  if (!number("low_freq_factor", model.ropeLowFreqFactor) ||
      !number("high_freq_factor", model.ropeHighFreqFactor) ||
      !number("original_max_position_embeddings", original))
    return false;
  if (original != std::floor(original) || original > double(kMaxLen))
    return config.failKey(key, fmt::format("original_max_position_embeddings: "
                                           "expected an integer up to {}, "
                                           "found {}",
                                           kMaxLen,
                                           describe((*object)["original_max_position_embeddings"])));
  model.ropeOriginalMaxLen = int64_t(original);
  if (model.ropeHighFreqFactor <= model.ropeLowFreqFactor)
    return config.failKey(key, fmt::format("high_freq_factor {:g} must be "
                                           "larger than low_freq_factor {:g}",
                                           model.ropeHighFreqFactor,
                                           model.ropeLowFreqFactor));
  return true;
}

/// The window every layer's attention has (0: none), or nullopt with the
/// message set. Mistral's applies to every layer; Qwen2's to layers from
/// max_window_layers on (Qwen2Config's layer_types), when
/// use_sliding_window is true, or as layer_types says when given.
std::optional<int64_t> slidingWindow(ConfigReader &config, int64_t layers) {
  if (config.modelType() == "llama")
    return 0;
  const bool phi3 = config.modelType() == "phi3";
  // sliding_window: null (0 here) means none; absent means the configs'
  // default (Phi3Config's: none).
  int64_t size = phi3 ? 0 : kDefaultWindow;
  if (const Json *window = config.find("sliding_window");
      window && window->is_null())
    size = 0;
  else if (!config.size("sliding_window", size, /*nullAllowed=*/true))
    return std::nullopt;
  // Phi-3 (Mistral's decoder in transformers) windows every layer too.
  if (config.modelType() == "mistral" || phi3)
    return size;

  bool useWindow = false;
  if (!config.boolean("use_sliding_window", useWindow))
    return std::nullopt;
  int64_t firstWindowed = kQwen2DefaultMaxWindowLayers;
  if (const Json *maxLayers = config.find("max_window_layers")) {
    bool nonNegative =
        maxLayers->is_number_unsigned() ||
        (maxLayers->is_number_integer() && maxLayers->get<int64_t>() >= 0);
    if (!nonNegative) {
      config.failKey("max_window_layers",
                     fmt::format("expected a non-negative integer, found {}",
                                 describe(*maxLayers)));
      return std::nullopt;
    }
    // Any count at least num_hidden_layers means the same: none windowed.
    firstWindowed = maxLayers->is_number_unsigned() &&
                            maxLayers->get<uint64_t>() > uint64_t(layers)
                        ? layers
                        : maxLayers->get<int64_t>();
  }
  // Qwen2Config drops sliding_window unless use_sliding_window.
  if (!useWindow)
    size = 0;

  // Which layers slide: layer_types when given, else from the keys above.
  int64_t windowed = 0;
  const Json *layerTypes = config.find("layer_types");
  bool explicitTypes = layerTypes && !layerTypes->is_null();
  if (explicitTypes) {
    if (!layerTypes->is_array() ||
        layerTypes->size() != static_cast<size_t>(layers)) {
      config.failKey("layer_types",
                     fmt::format("expected null or a list of "
                                 "num_hidden_layers = {} layer types, found {}",
                                 layers, describe(*layerTypes)));
      return std::nullopt;
    }
    for (const Json &layerType : *layerTypes) {
      std::string name =
          layerType.is_string() ? layerType.get<std::string>() : "";
      if (name == "sliding_attention")
        ++windowed;
      else if (name != "full_attention") {
        config.failKey("layer_types",
                       fmt::format("{} is not a layer type; expected "
                                   "\"full_attention\" or "
                                   "\"sliding_attention\"",
                                   describe(layerType)));
        return std::nullopt;
      }
    }
  } else if (size != 0) {
    windowed = layers - std::min(firstWindowed, layers);
  }
  if (windowed == 0)
    return 0;
  if (windowed != layers) {
    if (explicitTypes)
      config.failKey("layer_types",
                     fmt::format("{} of the {} layers have a sliding window "
                                 "and the others none; tfmc gives every layer "
                                 "the same attention mask",
                                 windowed, layers));
    else
      config.failKey("max_window_layers",
                     fmt::format("{} gives layers {}..{} a sliding window and "
                                 "layers 0..{} none; tfmc gives every layer "
                                 "the same attention mask (with "
                                 "use_sliding_window true, use 0 or at least "
                                 "num_hidden_layers = {})",
                                 firstWindowed, firstWindowed, layers - 1,
                                 firstWindowed - 1, layers));
    return std::nullopt;
  }
  if (size == 0) {
    config.failKey("sliding_window",
                   useWindow ? "null, but layer_types asks for sliding-window "
                               "attention"
                             : "unused (use_sliding_window is false), but "
                               "layer_types asks for sliding-window attention");
    return std::nullopt;
  }
  return size;
}

/// Phi-3's own keys: original_max_position_embeddings (the context it was
/// trained at: only longrope scaling reads it, so elsewhere it is checked
/// and has no effect) and partial_rotary_factor (transformers turns the
/// first factor x head_dim features of each head; tfmc turns them all).
bool readPhi3Keys(ConfigReader &config) {
  if (const Json *value = config.find("original_max_position_embeddings");
      value && !config.errors.positive("original_max_position_embeddings",
                                       *value, int64_t(1) << 40))
    return false;
  if (const Json *factor = config.find("partial_rotary_factor");
      factor && !(factor->is_number() && factor->get<double>() == 1.0))
    return config.failKey(
        "partial_rotary_factor",
        fmt::format("{} is not supported: tfmc's rope turns every feature of "
                    "a head (1.0)",
                    describe(*factor)));
  return true;
}

bool readLlama(ConfigReader &config, Model &model) {
  int64_t layers = 0;
  if (!config.requiredSizes(
          {{"hidden_size", &model.dModel}, {"intermediate_size", &model.dFF},
           {"num_hidden_layers", &layers},
           {"num_attention_heads", &model.heads},
           {"max_position_embeddings", &model.maxLen},
           {"vocab_size", &model.vocab}}))
    return false;

  if (!config.rotaryHeads(model, /*defaultHeadDim=*/0))
    return false;

  // Every family's defaults: silu, eps 1e-6, theta 10000.
  model.activation = Activation::Silu;
  model.layerNormEps = 1e-6;
  model.ropeTheta = 10000.0;
  if (!config.activation("hidden_act",
                         {"silu", "swish", "gelu", "gelu_new",
                          "gelu_pytorch_tanh", "relu"},
                         model.activation) ||
      !config.positiveNumber("rms_norm_eps", model.layerNormEps) ||
      !config.positiveNumber("rope_theta", model.ropeTheta))
    return false;
  if (!ropeScaling(config, "rope_scaling", model) ||
      !ropeScaling(config, "rope_parameters", model))
    return false;

  bool tied = false;
  if (!config.boolean("tie_word_embeddings", tied))
    return false;
  if (config.modelType() == "phi3" && !readPhi3Keys(config))
    return false;
  // Llama's own keys (any other type's config refused them already; Phi-3's
  // attention_bias is ignored, below).
  if (config.modelType() == "llama" &&
      !config.onlySupported("attention_bias", false,
                            "Hugging Face Llama then biases o_proj as well "
                            "as q/k/v_proj, which tfmc does not express"))
    return false;
  if (!config.onlySupported("mlp_bias", false,
                            "tfmc's gated feed-forward has biases only when "
                            "every linear has them"))
    return false;
  // pretraining_tp > 1 splits each projection into slices whose products
  // are summed: the same function.
  if (const Json *slices = config.find("pretraining_tp"))
    if (!config.errors.positive("pretraining_tp", *slices, 1 << 20))
      return false;
  if (!config.tokenIds())
    return false;

  std::optional<int64_t> window = slidingWindow(config, layers);
  if (!window)
    return false;
  // A window at least max_len wide never hides a key: no mask needed.
  if (*window >= model.maxLen)
    window = 0;

  model.norm = NormPlacement::Pre;
  model.normType = NormType::RmsNorm;
  model.positions = PositionKind::Rope;
  model.embedScale = EmbedScale::One;
  model.finalNorm = true;
  model.output = tied ? OutputKind::Tied : OutputKind::Linear;
  model.bias = false;
  model.attentionBias = config.modelType() == "qwen2";

  MaskSpec mask;
  mask.causal = mask.padding = true;
  mask.window = *window;
  model.decoder = importedStack(model, StackKind::Decoder, layers,
                                {{SublayerKind::SelfAttention, mask},
                                 {SublayerKind::FeedForward, {}, true}});
  return true;
}

std::optional<WeightBinding> bindLlamaWeight(std::string_view canonical) {
  // lm_head is outside LlamaModel.
  if (canonical == "generator.weight")
    return WeightBinding{"lm_head.weight", {}, false};
  std::optional<std::string> name;
  if (auto layerName = splitLayerName(canonical)) {
    auto [layer, parameter] = *layerName;
    // Q, K and V keep their names and may have biases (Qwen2's); the rest
    // are weights only.
    name = renamed(parameter,
                   {{"self_attn.q_proj.", "self_attn.q_proj."},
                    {"self_attn.k_proj.", "self_attn.k_proj."},
                    {"self_attn.v_proj.", "self_attn.v_proj."}},
                   {"weight", "bias"});
    if (!name)
      name = renamed(parameter,
                     {{"self_attn.out_proj.", "self_attn.o_proj."},
                      {"gate.", "mlp.gate_proj."}, {"linear1.", "mlp.up_proj."},
                      {"linear2.", "mlp.down_proj."},
                      {"norm1.", "input_layernorm."},
                      {"norm2.", "post_attention_layernorm."}},
                     {"weight"});
    if (name)
      name = "layers." + std::string(layer) + "." + *name;
  } else {
    name = renamed(
        canonical,
        {{"tgt_embed.", "embed_tokens."}, {"decoder.norm.", "norm."}},
        {"weight"});
  }
  if (!name)
    return std::nullopt;
  // LlamaForCausalLM's state dict (every hub checkpoint) puts LlamaModel's
  // tensors under `model.`; a bare LlamaModel's has no prefix.
  return bareOrPrefixed(*name, "model.", /*prefixedFirst=*/true);
}

/// The token, size, honoured and ignored keys of the Llama reader's
/// families (Phi-3 adds its own).
void setLlamaKeys(HfFamily &family) {
  setRotaryDecoderKeys(family);
  family.honouredKeys = {
      "model_type", "vocab_size", "hidden_size", "intermediate_size",
      "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
      "head_dim", "hidden_act", "max_position_embeddings", "rms_norm_eps",
      "rope_theta", "rope_scaling", "rope_parameters", "tie_word_embeddings"};
  // Dropout (inference has none), caching, training and bookkeeping.
  family.ignoredKeys = {"attention_dropout", "use_cache", "initializer_range",
                        "architectures", "_name_or_path",
                        "transformers_version", "torch_dtype", "dtype"};
}

HfFamily llama() {
  // Keys only one type has: LlamaConfig's biases and tensor-parallel split,
  // Mistral's window, Qwen2's per-layer windows.
  HfFamily family(
      {{"llama", "Llama", {"attention_bias", "mlp_bias", "pretraining_tp"}},
       {"mistral", "Mistral", {"sliding_window"}},
       {"qwen2", "Qwen2",
        {"use_sliding_window", "sliding_window", "max_window_layers",
         "layer_types"}}},
      readLlama, {"hf-llama", /*packedProjections=*/false, bindLlamaWeight});
  setLlamaKeys(family);
  return family;
}

const HfFamilyRegistration registration(llama());

std::optional<WeightBinding> bindPhi3Weight(std::string_view canonical) {
  if (auto layerName = splitLayerName(canonical)) {
    auto [layer, parameter] = *layerName;
    std::optional<std::string> name =
        parameter == "self_attn.in_proj_weight" ? "self_attn.qkv_proj.weight"
        : parameter == "gate_up.weight"         ? "mlp.gate_up_proj.weight"
                                                : std::optional<std::string>();
    if (name)
      return bareOrPrefixed("layers." + std::string(layer) + "." + *name,
                            "model.", /*prefixedFirst=*/true);
  }
  // The rest as Llama's (the builder asks for no separate Q, K, V, gate or
  // up under this naming).
  return bindLlamaWeight(canonical);
}

HfFamily phi3() {
  WeightNaming naming{"hf-phi3", /*packedProjections=*/true, bindPhi3Weight};
  naming.packedGateUp = true;
  HfFamily family({{"phi3",
                    "Phi-3",
                    {"sliding_window"}}},
                  readLlama, naming);
  setLlamaKeys(family);
  family.honouredKeys.insert(family.honouredKeys.end(),
                             {"original_max_position_embeddings",
                              "partial_rotary_factor"});
  // Dropout (resid_pdrop and embd_pdrop too), remote code (auto_map), and
  // attention_bias, which Phi3Attention never reads (its qkv_proj and
  // o_proj have no biases whatever it says).
  family.ignoredKeys.insert(family.ignoredKeys.end(),
                            {"resid_pdrop", "embd_pdrop", "attention_bias",
                             "auto_map"});
  return family;
}

const HfFamilyRegistration phi3Registration(phi3());

// GGUF.

/// A Hugging Face tensor name of the Llama reader's families (`hf`, as
/// hf-llama or hf-phi3 binds it) as llama.cpp names it; Phi-3's packed
/// tensors keep their packing (attn_qkv, ffn_up).
std::optional<WeightBinding> ggufFromHf(std::optional<WeightBinding> hf) {
  if (!hf)
    return std::nullopt;
  std::string_view name = hf->name;
  if (name == "lm_head.weight")
    return WeightBinding{"output.weight", {}, false};
  consumePrefix(name, "model.");
  if (consumePrefix(name, "layers."))
    return ggufBlockBinding(
        name,
        {{"self_attn.q_proj.", "attn_q."}, {"self_attn.k_proj.", "attn_k."},
         {"self_attn.v_proj.", "attn_v."}, {"self_attn.qkv_proj.", "attn_qkv."},
         {"self_attn.o_proj.", "attn_output."},
         {"mlp.gate_proj.", "ffn_gate."}, {"mlp.up_proj.", "ffn_up."},
         {"mlp.gate_up_proj.", "ffn_up."}, {"mlp.down_proj.", "ffn_down."},
         {"input_layernorm.", "attn_norm."},
         {"post_attention_layernorm.", "ffn_norm."}});
  return ggufBinding(renamed(
      name, {{"embed_tokens.", "token_embd."}, {"norm.", "output_norm."}},
      {"weight"}));
}

std::optional<WeightBinding> bindGgufLlama(std::string_view canonical) {
  return ggufFromHf(bindWeight("hf-llama", std::string(canonical)));
}

const WeightNamingRegistration ggufLlamaNaming(
    {"gguf-llama", /*packedProjections=*/false, bindGgufLlama,
     /*ropeInterleaved=*/true});
const WeightNamingRegistration ggufQwen2Naming(
    {"gguf-qwen2", /*packedProjections=*/false, bindGgufLlama,
     /*ropeInterleaved=*/false});

// Old converters' tensor_data_layout notes that Q and K are in ggml's rope
// layout, as they always are in a llama file.
const GgufArchitectureRegistration ggufLlama(
    {"llama", "llama", ggufRotaryKeys(), {"tensor_data_layout"}, "gguf-llama",
     /*rotary=*/true,
     /*noBiases=*/"tfmc's Llama has no biases (Hugging Face's attention_bias "
     "and mlp_bias)"});
const GgufArchitectureRegistration ggufQwen2(
    {"qwen2", "qwen2", ggufRotaryKeys(), {}, "gguf-qwen2", /*rotary=*/true});

// llama.cpp's "phi3" (convert_hf_to_gguf's Phi3MiniModel): Phi-3's packed
// tensors kept packed (qkv_proj -> attn_qkv, gate_up_proj -> ffn_up, the
// gate's rows first as ggml_swiglu reads them), Q and K in Hugging Face's
// order (GGML_ROPE_TYPE_NEOX), the window as attention.sliding_window (0 for
// none), longrope as rope_factors_long/short tensors and
// rope.scaling.attn_factor (GgufImport.cpp reads those into rope_scaling).
std::optional<WeightBinding> bindGgufPhi3(std::string_view canonical) {
  return ggufFromHf(bindWeight("hf-phi3", std::string(canonical)));
}

WeightNaming ggufPhi3Naming() {
  WeightNaming naming{"gguf-phi3", /*packedProjections=*/true, bindGgufPhi3,
                      /*ropeInterleaved=*/false};
  naming.packedGateUp = true;
  return naming;
}
const WeightNamingRegistration ggufPhi3NamingRegistration(ggufPhi3Naming());

std::vector<GgufKeyMap> ggufPhi3Keys() {
  std::vector<GgufKeyMap> keys = ggufRotaryKeys();
  keys.push_back({"rope.scaling.original_context_length",
                  "original_max_position_embeddings", GgufExpect::Count});
  keys.push_back({"attention.sliding_window", "sliding_window",
                  GgufExpect::Count});
  return keys;
}

const GgufArchitectureRegistration ggufPhi3(
    {"phi3", "phi3", ggufPhi3Keys(), {}, "gguf-phi3", /*rotary=*/true,
     /*noBiases=*/"Phi-3's projections have no biases"});

} // namespace
} // namespace tfmc::frontend::hf
