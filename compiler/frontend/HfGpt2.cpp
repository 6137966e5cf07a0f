//===- HfGpt2.cpp - Hugging Face GPT-2 config.json -> AST -----------------===//
//
// GPT-2 (transformers' GPT2Config, GPT2LMHeadModel) as tfmc sees it: a
// decoder-only stack of n_layer pre-norm layers (ln_1 -> causal
// self-attention -> residual, ln_2 -> MLP -> residual), learned positions
// (wpe) added to the unscaled token embedding (wte), a final ln_f, and logits
// from the tied embedding. Attention masks causal + padding (the
// attention_mask input), as GPT2Model does.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfigImpl.h"
#include "compiler/frontend/Limits.h"

#include <cmath>

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

/// The .tfm setting each size key gives (their maxima: Limits.h); n_ctx
/// after n_positions, which is blamed for max_len.
constexpr KeyToSetting kSizeKeys[] = {
    {"n_embd", "d_model"},      {"n_head", "heads"},   {"n_layer", "layers"},
    {"n_positions", "max_len"}, {"n_ctx", "max_len"},  {"vocab_size", "vocab"},
    {"n_inner", "d_ff"}};

/// Keys that cannot change what the forward pass computes, accepted with any
/// value: dropout (inference has none), the heads of other tasks
/// (GPT2DoubleHeadsModel's summary, sequence classification), token ids and
/// generation settings (the runtime takes them as arguments), training and
/// bookkeeping.
constexpr std::string_view kIgnoredKeys[] = {
    // dropout
    "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_first_dropout",
    // other tasks' heads
    "summary_type", "summary_use_proj", "summary_activation",
    "summary_proj_to_labels", "task_specific_params", "id2label", "label2id",
    "_num_labels", "problem_type",
    // tokens, generation, caching
    "bos_token_id", "eos_token_id", "pad_token_id", "use_cache", "output_past",
    "tokenizer_class",
    // training and bookkeeping
    "initializer_range", "gradient_checkpointing", "architectures",
    "_name_or_path", "transformers_version", "torch_dtype"};

/// Keys read (or checked) below.
constexpr std::string_view kHonouredKeys[] = {
    "model_type",        "n_embd",
    "n_head",            "n_layer",
    "n_positions",       "vocab_size",
    "n_inner",           "activation_function",
    "layer_norm_epsilon", "n_ctx",
    "tie_word_embeddings", "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
    "add_cross_attention"};

class Gpt2Importer {
public:
  Gpt2Importer(const Json &config, const std::string &configPath,
               ImportErrors &errors)
      : config(config), path(configPath), errors(errors) {}

  std::optional<Model> import() {
    if (!onlyKnownKeys(config, "GPT-2", errors, [](std::string_view key) {
          return contains(kHonouredKeys, key) || contains(kIgnoredKeys, key);
        }))
      return std::nullopt;

    Model model;
    model.name = modelNameFor(path, "gpt2");
    model.loc = SourceLoc{path, 0, 0};

    // Required sizes.
    int64_t layers = 0;
    if (!requiredSizes(config, "GPT-2",
                       {{"n_embd", &model.dModel},
                        {"n_head", &model.heads},
                        {"n_layer", &layers},
                        {"n_positions", &model.maxLen},
                        {"vocab_size", &model.vocab}},
                       kSizeKeys, errors))
      return std::nullopt;
    if (model.dModel % model.heads != 0)
      return failKey("n_head",
                     fmt::format("n_embd = {} is not divisible by n_head = {}",
                                 model.dModel, model.heads));
    model.kvHeads = model.heads;
    model.headDim = model.dModel / model.heads;

    // n_inner: null (or absent) means 4 * n_embd, as in GPT2MLP.
    model.dFF = 4 * model.dModel;
    if (auto it = config.find("n_inner"); it != config.end() && !it->is_null()) {
      std::optional<int64_t> value =
          positive("n_inner", *it, "null or a positive integer");
      if (!value)
        return std::nullopt;
      model.dFF = *value;
    }
    if (model.dFF > kMaxDFF)
      return failKey("n_inner", fmt::format("null means 4 * n_embd = {}, "
                                            "which is too large (maximum {})",
                                            model.dFF, kMaxDFF));

    // activation_function (GPT2Config's default: gelu_new).
    model.activation = Activation::GeluTanh;
    if (auto it = config.find("activation_function"); it != config.end()) {
      std::string name = it->is_string() ? it->get<std::string>() : "";
      if (name == "gelu_new" || name == "gelu_pytorch_tanh")
        model.activation = Activation::GeluTanh;
      else if (name == "gelu")
        model.activation = Activation::Gelu;
      else if (name == "relu")
        model.activation = Activation::Relu;
      else
        return failKey("activation_function",
                       fmt::format("{} is not supported; expected \"gelu_new\", "
                                   "\"gelu_pytorch_tanh\", \"gelu\" or \"relu\"",
                                   describe(*it)));
    }

    model.layerNormEps = 1e-5;
    if (!errors.positiveNumber(config, "layer_norm_epsilon", model.layerNormEps))
      return std::nullopt;

    if (auto it = config.find("n_ctx"); it != config.end()) {
      std::optional<int64_t> value = positive("n_ctx", *it);
      if (!value)
        return std::nullopt;
      if (*value != model.maxLen)
        return failKey("n_ctx", fmt::format("{} differs from n_positions = {}; "
                                            "tfmc needs one context length",
                                            *value, model.maxLen));
    }

    // Boolean switches: the value that matches tfmc's GPT-2 is accepted,
    // the other is an error (it would change the model).
    struct Switch {
      const char *key;
      bool supported;
      const char *why;
    } switches[] = {
        {"tie_word_embeddings", true,
         "tfmc's GPT-2 computes logits from wte (a tied output)"},
        {"scale_attn_weights", true,
         "tfmc's attention always scales scores by 1/sqrt(head size)"},
        {"scale_attn_by_inverse_layer_idx", false,
         "tfmc does not scale attention by 1/(layer + 1)"},
        {"reorder_and_upcast_attn", false,
         "tfmc has no reordered, upcast attention"},
        {"add_cross_attention", false,
         "tfmc's GPT-2 is decoder-only, without cross-attention"},
    };
    for (const Switch &flag : switches) {
      auto it = config.find(flag.key);
      if (it == config.end())
        continue;
      if (!it->is_boolean())
        return failKey(flag.key, fmt::format("expected true or false, found {}",
                                             describe(*it)));
      if (it->get<bool>() != flag.supported)
        return failKey(flag.key, fmt::format("{} is not supported: {}",
                                             it->get<bool>() ? "true" : "false",
                                             flag.why));
    }

    model.norm = NormPlacement::Pre;
    model.positions = PositionKind::Learned;
    model.embedScale = EmbedScale::One;
    model.finalNorm = true;
    model.output = OutputKind::Tied;
    model.weightNaming = WeightNaming::HfGpt2;

    MaskSpec causalPadding;
    causalPadding.causal = causalPadding.padding = true;
    model.decoder = importedStack(
        model, StackKind::Decoder, layers,
        {{SublayerKind::SelfAttention, causalPadding},
         {SublayerKind::FeedForward}});
    return checkedModel(std::move(model), kSizeKeys, errors);
  }

private:
  const Json &config;
  const std::string &path;
  ImportErrors &errors;

  std::optional<Model> fail(const std::string &text) {
    return errors.fail(text);
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
};

} // namespace

std::optional<Model> importGpt2(const Json &config,
                                const std::string &configPath,
                                ImportErrors &errors) {
  return Gpt2Importer(config, configPath, errors).import();
}

} // namespace tfmc::frontend::hf
