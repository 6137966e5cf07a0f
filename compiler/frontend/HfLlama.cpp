//===- HfLlama.cpp - Hugging Face Llama, Mistral, Qwen2 configs -> AST ----===//
//
// transformers' LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM are
// one architecture as tfmc sees it: a decoder-only stack of pre-norm layers
// (input_layernorm -> causal self-attention -> residual,
// post_attention_layernorm -> gated MLP down(act(gate(x)) * up(x)) ->
// residual), RMSNorm everywhere, rotary positions on Q and K ("rotate half"),
// grouped-query attention with separate q/k/v_proj and o_proj, a final norm,
// and lm_head (or the tied embedding) for the logits. The families differ in
// the biases (Qwen2 biases Q, K and V; Llama may bias every attention
// projection or the MLP, which tfmc's language does not express) and in
// the sliding window (Mistral: every layer; Qwen2: the layers from
// max_window_layers on, when use_sliding_window is true).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfigImpl.h"
#include "compiler/frontend/Limits.h"
#include "compiler/frontend/Quote.h"

#include <cmath>

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

/// The .tfm setting each size key gives (their maxima: Limits.h).
constexpr KeyToSetting kSizeKeys[] = {
    {"hidden_size", "d_model"},
    {"intermediate_size", "d_ff"},
    {"num_hidden_layers", "layers"},
    {"num_attention_heads", "heads"},
    {"num_key_value_heads", "kv_heads"},
    {"head_dim", "head_dim"},
    {"max_position_embeddings", "max_len"},
    {"vocab_size", "vocab"},
    {"sliding_window", "window"},
};

/// Keys every family reads (or checks) below.
constexpr std::string_view kHonouredKeys[] = {
    "model_type",          "vocab_size",          "hidden_size",
    "intermediate_size",   "num_hidden_layers",   "num_attention_heads",
    "num_key_value_heads", "head_dim",            "hidden_act",
    "max_position_embeddings", "rms_norm_eps",    "rope_theta",
    "rope_scaling",        "rope_parameters",     "tie_word_embeddings",
    "bos_token_id",        "eos_token_id"};
/// Keys only one family has: LlamaConfig's biases and tensor-parallel
/// split, Mistral's window, Qwen2's per-layer windows.
constexpr std::string_view kLlamaKeys[] = {"attention_bias", "mlp_bias",
                                           "pretraining_tp"};
constexpr std::string_view kMistralKeys[] = {"sliding_window"};
constexpr std::string_view kQwen2Keys[] = {"use_sliding_window",
                                           "sliding_window",
                                           "max_window_layers", "layer_types"};

/// Keys that cannot change what the forward pass computes, accepted with any
/// value: dropout (inference has none), the padding id (the attention mask
/// says what is padding), caching, training and bookkeeping.
constexpr std::string_view kIgnoredKeys[] = {
    "attention_dropout", "pad_token_id",   "use_cache",
    "initializer_range", "architectures",  "_name_or_path",
    "transformers_version", "torch_dtype", "dtype",
    "tokenizer_class"};

/// MistralConfig's and Qwen2Config's sliding_window when the key is absent.
constexpr int64_t kDefaultWindow = 4096;
/// Qwen2Config's max_window_layers when the key is absent.
constexpr int64_t kQwen2DefaultMaxWindowLayers = 28;

class LlamaImporter {
public:
  LlamaImporter(const Json &config, std::string modelType,
                const std::string &configPath, ImportErrors &errors)
      : config(config), type(std::move(modelType)), path(configPath),
        errors(errors) {}

  std::optional<Model> import() {
    const char *family = familyName();
    if (!onlyKnownKeys(config, family, errors, [&](std::string_view key) {
          return contains(kHonouredKeys, key) || contains(kIgnoredKeys, key) ||
                 isFamilyKey(key);
        }))
      return std::nullopt;

    Model model;
    model.name = modelNameFor(path, type);
    model.loc = SourceLoc{path, 0, 0};

    int64_t layers = 0;
    if (!requiredSizes(config, family,
                       {{"hidden_size", &model.dModel},
                        {"intermediate_size", &model.dFF},
                        {"num_hidden_layers", &layers},
                        {"num_attention_heads", &model.heads},
                        {"max_position_embeddings", &model.maxLen},
                        {"vocab_size", &model.vocab}},
                       kSizeKeys, errors))
      return std::nullopt;

    // num_key_value_heads: null (or absent) means one K/V head per query head.
    model.kvHeads = model.heads;
    if (auto it = config.find("num_key_value_heads");
        it != config.end() && !it->is_null()) {
      std::optional<int64_t> value =
          positive("num_key_value_heads", *it, "null or a positive integer");
      if (!value)
        return std::nullopt;
      model.kvHeads = *value;
    }
    if (model.heads % model.kvHeads != 0)
      return failKey("num_key_value_heads",
                     fmt::format("num_attention_heads = {} is not a multiple "
                                 "of num_key_value_heads = {}: each K/V head "
                                 "serves the same number of query heads",
                                 model.heads, model.kvHeads));

    // head_dim: null (or absent) means hidden_size / num_attention_heads.
    if (auto it = config.find("head_dim"); it != config.end() && !it->is_null()) {
      std::optional<int64_t> value =
          positive("head_dim", *it, "null or a positive integer");
      if (!value)
        return std::nullopt;
      model.headDim = *value;
    } else if (model.dModel % model.heads != 0) {
      return failKey("num_attention_heads",
                     fmt::format("hidden_size = {} is not divisible by "
                                 "num_attention_heads = {}, and no head_dim "
                                 "is given",
                                 model.dModel, model.heads));
    } else {
      model.headDim = model.dModel / model.heads;
    }
    if (model.headDim % 2 != 0)
      return failKey("head_dim",
                     fmt::format("rotary positions turn pairs of features, "
                                 "but the head width {} is odd",
                                 model.headDim));

    // hidden_act (every family's default: silu).
    model.activation = Activation::Silu;
    if (auto it = config.find("hidden_act"); it != config.end()) {
      std::string name = it->is_string() ? it->get<std::string>() : "";
      if (name == "silu" || name == "swish")
        model.activation = Activation::Silu;
      else if (name == "gelu")
        model.activation = Activation::Gelu;
      else if (name == "gelu_new" || name == "gelu_pytorch_tanh")
        model.activation = Activation::GeluTanh;
      else if (name == "relu")
        model.activation = Activation::Relu;
      else
        return failKey("hidden_act",
                       fmt::format("{} is not supported; expected \"silu\", "
                                   "\"swish\", \"gelu\", \"gelu_new\", "
                                   "\"gelu_pytorch_tanh\" or \"relu\"",
                                   describe(*it)));
    }

    model.layerNormEps = 1e-6;
    if (!positiveNumber("rms_norm_eps", model.layerNormEps))
      return std::nullopt;
    model.ropeTheta = 10000.0;
    if (!positiveNumber("rope_theta", model.ropeTheta))
      return std::nullopt;
    if (auto it = config.find("rope_scaling"); it != config.end() &&
                                               !it->is_null())
      return failKey("rope_scaling",
                     fmt::format("{} is not supported: tfmc's rotary "
                                 "positions are unscaled (null only)",
                                 describe(*it)));
    if (!ropeParameters(model.ropeTheta))
      return std::nullopt;

    bool tied = false;
    if (!boolean("tie_word_embeddings", tied))
      return std::nullopt;
    if (type == "llama") {
      for (const char *key : {"attention_bias", "mlp_bias"}) {
        bool value = false;
        if (!boolean(key, value))
          return std::nullopt;
        if (value)
          return failKey(key,
                         std::string_view(key) == "attention_bias"
                             ? "true is not supported: Hugging Face Llama "
                               "then biases o_proj as well as q/k/v_proj, "
                               "which tfmc does not express"
                             : "true is not supported: tfmc's gated "
                               "feed-forward has biases only when every "
                               "linear has them");
      }
      // pretraining_tp > 1 splits each projection into slices whose
      // products are summed: the same function.
      if (auto it = config.find("pretraining_tp"); it != config.end())
        if (!errors.positive("pretraining_tp", *it, 1 << 20))
          return std::nullopt;
    }
    for (const char *key : {"bos_token_id", "eos_token_id"})
      if (!tokenIds(key, std::string_view(key) == "eos_token_id"))
        return std::nullopt;

    std::optional<int64_t> window = slidingWindow(layers);
    if (!window)
      return std::nullopt;
    // A window at least max_len wide never hides a key: no mask needed.
    if (*window >= model.maxLen)
      window = 0;

    model.norm = NormPlacement::Pre;
    model.normType = NormType::RmsNorm;
    model.positions = PositionKind::Rope;
    model.embedScale = EmbedScale::One;
    model.finalNorm = true;
    model.output = tied ? OutputKind::Tied : OutputKind::Linear;
    model.weightNaming = WeightNaming::HfLlama;
    model.bias = false;
    model.attentionBias = type == "qwen2";

    MaskSpec mask;
    mask.causal = mask.padding = true;
    mask.window = *window;
    model.decoder = importedStack(model, StackKind::Decoder, layers,
                                  {{SublayerKind::SelfAttention, mask},
                                   {SublayerKind::FeedForward, {}, true}});
    return checkedModel(std::move(model), kSizeKeys, errors);
  }

private:
  const char *familyName() const {
    if (type == "mistral")
      return "Mistral";
    if (type == "qwen2")
      return "Qwen2";
    return "Llama";
  }

  bool isFamilyKey(std::string_view key) const {
    if (type == "llama")
      return contains(kLlamaKeys, key);
    if (type == "mistral")
      return contains(kMistralKeys, key);
    return contains(kQwen2Keys, key);
  }

  std::optional<Model> failKey(std::string_view key, const std::string &text) {
    return errors.failKey(key, text);
  }

  /// A positive integer up to the maximum of the setting the key gives.
  std::optional<int64_t> positive(std::string_view key, const Json &value,
                                  const char *expected = "a positive integer") {
    return errors.positive(key, value,
                           maxOfSetting(settingOfKey(kSizeKeys, key)),
                           expected);
  }

  bool positiveNumber(const char *key, double &field) {
    return errors.positiveNumber(config, key, field);
  }
  bool boolean(const char *key, bool &field) {
    return errors.boolean(config, key, field);
  }

  /// transformers 5's rope_parameters, which replaces rope_theta and
  /// rope_scaling: only the unscaled "default" rope, whose rope_theta (when
  /// given) sets `theta`.
  bool ropeParameters(double &theta) {
    auto it = config.find("rope_parameters");
    if (it == config.end() || it->is_null())
      return true;
    if (!it->is_object()) {
      failKey("rope_parameters",
              fmt::format("expected null or an object, found {}",
                          describe(*it)));
      return false;
    }
    for (auto entry = it->begin(); entry != it->end(); ++entry) {
      const Json &value = entry.value();
      if (entry.key() == "rope_type") {
        if (value.is_string() && value.get<std::string>() == "default")
          continue;
        failKey("rope_parameters",
                fmt::format("rope_type {} is not supported: tfmc's rotary "
                            "positions are unscaled (\"default\" only)",
                            describe(value)));
        return false;
      }
      if (entry.key() == "rope_theta") {
        if (value.is_number() && value.get<double>() > 0.0 &&
            std::isfinite(value.get<double>())) {
          if (config.contains("rope_theta") &&
              config.at("rope_theta") != value) {
            failKey("rope_parameters",
                    "its rope_theta differs from the config's rope_theta");
            return false;
          }
          theta = value.get<double>();
          continue;
        }
        failKey("rope_parameters",
                fmt::format("rope_theta: expected a positive number, found {}",
                            describe(value)));
        return false;
      }
      failKey("rope_parameters",
              fmt::format("'{}' is not supported: tfmc's rotary positions "
                          "take rope_type \"default\" and rope_theta only",
                          printable(entry.key())));
      return false;
    }
    return true;
  }

  /// bos_token_id / eos_token_id: null or a token id (eos also a non-empty
  /// list of them). Generation reads them from the config itself; here
  /// they are only checked.
  bool tokenIds(const char *key, bool listAllowed) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null())
      return true;
    auto isId = [](const Json &value) {
      return value.is_number_unsigned() ||
             (value.is_number_integer() && value.get<int64_t>() >= 0);
    };
    if (isId(*it))
      return true;
    if (listAllowed && it->is_array() && !it->empty() &&
        std::all_of(it->begin(), it->end(), isId))
      return true;
    failKey(key, fmt::format("expected null, a token id{}, found {}",
                             listAllowed ? " or a list of token ids" : "",
                             describe(*it)));
    return false;
  }

  /// The window every layer's attention has (0: none), or nullopt with the
  /// message set. Mistral's applies to every layer; Qwen2's to layers from
  /// max_window_layers on (Qwen2Config's layer_types), when
  /// use_sliding_window is true, or as layer_types says when given.
  std::optional<int64_t> slidingWindow(int64_t layers) {
    if (type == "llama")
      return 0;
    // sliding_window: null (0 here) means none; absent means the configs'
    // default.
    int64_t size = kDefaultWindow;
    if (auto it = config.find("sliding_window"); it != config.end()) {
      if (it->is_null()) {
        size = 0;
      } else {
        std::optional<int64_t> value =
            positive("sliding_window", *it, "null or a positive integer");
        if (!value)
          return std::nullopt;
        size = *value;
      }
    }
    if (type == "mistral")
      return size;

    bool useWindow = false;
    if (!boolean("use_sliding_window", useWindow))
      return std::nullopt;
    int64_t firstWindowed = kQwen2DefaultMaxWindowLayers;
    if (auto it = config.find("max_window_layers"); it != config.end()) {
      bool nonNegative =
          it->is_number_unsigned() ||
          (it->is_number_integer() && it->get<int64_t>() >= 0);
      if (!nonNegative) {
        failKey("max_window_layers",
                fmt::format("expected a non-negative integer, found {}",
                            describe(*it)));
        return std::nullopt;
      }
      // Any count at least num_hidden_layers means the same: none windowed.
      firstWindowed = it->is_number_unsigned() &&
                              it->get<uint64_t>() > uint64_t(layers)
                          ? layers
                          : it->get<int64_t>();
    }
    // Qwen2Config drops sliding_window unless use_sliding_window.
    if (!useWindow)
      size = 0;

    // Which layers slide: layer_types when given, else from the keys above.
    int64_t windowed = 0;
    auto layerTypes = config.find("layer_types");
    bool explicitTypes = layerTypes != config.end() && !layerTypes->is_null();
    if (explicitTypes) {
      if (!layerTypes->is_array() ||
          layerTypes->size() != static_cast<size_t>(layers)) {
        failKey("layer_types",
                fmt::format("expected null or a list of num_hidden_layers = "
                            "{} layer types, found {}",
                            layers, describe(*layerTypes)));
        return std::nullopt;
      }
      for (const Json &layerType : *layerTypes) {
        std::string name =
            layerType.is_string() ? layerType.get<std::string>() : "";
        if (name == "sliding_attention")
          ++windowed;
        else if (name != "full_attention") {
          failKey("layer_types",
                  fmt::format("{} is not a layer type; expected "
                              "\"full_attention\" or \"sliding_attention\"",
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
        failKey("layer_types",
                fmt::format("{} of the {} layers have a sliding window and "
                            "the others none; tfmc gives every layer the "
                            "same attention mask",
                            windowed, layers));
      else
        failKey("max_window_layers",
                fmt::format("{} gives layers {}..{} a sliding window and "
                            "layers 0..{} none; tfmc gives every layer the "
                            "same attention mask (with use_sliding_window "
                            "true, use 0 or at least num_hidden_layers = {})",
                            firstWindowed, firstWindowed, layers - 1,
                            firstWindowed - 1, layers));
      return std::nullopt;
    }
    if (size == 0) {
      failKey("sliding_window",
              useWindow ? "null, but layer_types asks for sliding-window "
                          "attention"
                        : "unused (use_sliding_window is false), but "
                          "layer_types asks for sliding-window attention");
      return std::nullopt;
    }
    return size;
  }

  const Json &config;
  std::string type;
  const std::string &path;
  ImportErrors &errors;
};

} // namespace

std::optional<Model> importLlamaFamily(const Json &config,
                                       const std::string &modelType,
                                       const std::string &configPath,
                                       ImportErrors &errors) {
  return LlamaImporter(config, modelType, configPath, errors).import();
}

} // namespace tfmc::frontend::hf
