//===- HfConfig.cpp - Hugging Face config.json -> AST ---------------------===//
//
// GPT-2 (transformers' GPT2Config, GPT2LMHeadModel) as tfmc sees it: a
// decoder-only stack of n_layer pre-norm layers (ln_1 -> causal
// self-attention -> residual, ln_2 -> MLP -> residual), learned positions
// (wpe) added to the unscaled token embedding (wte), a final ln_f, and logits
// from the tied embedding. Attention masks causal + padding (the
// attention_mask input), as GPT2Model does.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfig.h"
#include "compiler/frontend/Limits.h"
#include "compiler/frontend/Quote.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tfmc::frontend {
namespace {

using Json = nlohmann::ordered_json;

/// The .tfm setting each size key gives (their maxima: Limits.h).
constexpr std::pair<std::string_view, std::string_view> kSettingOfKey[] = {
    {"n_embd", "d_model"},     {"n_head", "heads"},    {"n_layer", "layers"},
    {"n_positions", "max_len"}, {"n_ctx", "max_len"},  {"vocab_size", "vocab"},
    {"n_inner", "d_ff"}};

std::string_view settingOfKey(std::string_view key) {
  for (const auto &[hfKey, setting] : kSettingOfKey)
    if (hfKey == key)
      return setting;
  return key;
}

/// The key that gives `setting` (n_positions, not n_ctx, for max_len).
std::string_view keyOfSetting(std::string_view setting) {
  for (const auto &[hfKey, name] : kSettingOfKey)
    if (name == setting)
      return hfKey;
  return setting;
}

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

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

/// A value as messages show it: scalars as JSON, strings cut and escaped,
/// containers by kind only. Dumping a container whole would print a line of
/// any length, and recurse once per level of nesting.
std::string describe(const Json &value) {
  switch (value.type()) {
  case Json::value_t::array:
    return fmt::format("an array of {} element{}", value.size(),
                       value.size() == 1 ? "" : "s");
  case Json::value_t::object:
    return fmt::format("an object of {} key{}", value.size(),
                       value.size() == 1 ? "" : "s");
  case Json::value_t::string:
    return "\"" + printable(value.get_ref<const std::string &>(), 40) + "\"";
  default:
    return value.dump();
  }
}

/// Thrown by the parse callback when the nesting exceeds kMaxJsonDepth.
struct TooDeep {};

/// The folder's name as a .tfm identifier (`gpt2-medium` -> `gpt2_medium`).
std::string modelNameFor(const std::string &configPath) {
  std::string folder;
  try {
    std::filesystem::path absolute =
        std::filesystem::absolute(configPath).lexically_normal();
    folder = absolute.parent_path().filename().string();
  } catch (const std::exception &) {
  }
  std::string name;
  for (unsigned char c : folder)
    name += std::isalnum(c) ? static_cast<char>(c) : '_';
  if (name.empty() || std::all_of(name.begin(), name.end(),
                                  [](char c) { return c == '_'; }))
    return "gpt2";
  if (std::isdigit(static_cast<unsigned char>(name[0])))
    name = "gpt2_" + name;
  return name;
}

class Importer {
public:
  explicit Importer(std::string configPath) : path(std::move(configPath)) {}

  ParseResult run(const std::string &text) {
    ParseResult result;
    std::optional<Model> model = import(text);
    if (model)
      result.model = std::move(model);
    else
      result.error = Diagnostic{SourceLoc{path, 0, 0}, message};
    return result;
  }

private:
  std::optional<Model> fail(const std::string &text) {
    message = text;
    return std::nullopt;
  }
  std::optional<Model> failKey(std::string_view key, const std::string &text) {
    return fail(fmt::format("key '{}': {}", printable(key), text));
  }

  /// A positive integer up to the maximum of the setting the key gives;
  /// nullopt (with the message set) else.
  std::optional<int64_t> positive(std::string_view key, const Json &value,
                                  const char *expected = "a positive integer") {
    auto max = static_cast<uint64_t>(maxOfSetting(settingOfKey(key)));
    if (value.is_number_unsigned() ||
        (value.is_number_integer() && value.get<int64_t>() > 0)) {
      uint64_t number = value.get<uint64_t>();
      if (number >= 1 && number <= max)
        return static_cast<int64_t>(number);
      if (number > max) {
        failKey(key, fmt::format("{} is too large (maximum {})", number, max));
        return std::nullopt;
      }
    }
    failKey(key, fmt::format("expected {}, found {}", expected,
                             describe(value)));
    return std::nullopt;
  }

  std::optional<Model> import(const std::string &text) {
    // Duplicate keys would otherwise keep the last value silently.
    std::string duplicate;
    std::set<std::string> seen;
    using Event = nlohmann::detail::parse_event_t;
    Json::parser_callback_t noteKeys = [&](int depth, Event event,
                                           Json &parsed) {
      // nlohmann's parser is iterative, but printing and comparing values
      // recurse: bound the nesting while parsing. `depth` counts the
      // containers around the one that starts.
      if ((event == Event::object_start || event == Event::array_start) &&
          depth >= kMaxJsonDepth)
        throw TooDeep{};
      if (depth == 1 && event == nlohmann::detail::parse_event_t::key &&
          parsed.is_string() && !seen.insert(parsed.get<std::string>()).second &&
          duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    };
    Json config;
    try {
      config = Json::parse(text, noteKeys);
    } catch (const TooDeep &) {
      return fail(fmt::format("invalid JSON: nested deeper than {} levels",
                              kMaxJsonDepth));
    } catch (const Json::exception &error) {
      std::string what = error.what();
      // "[json.exception.parse_error.101] parse error at line 2, ..." ->
      // "parse error at line 2, ...".
      if (what.rfind("[json.exception.", 0) == 0)
        if (std::size_t close = what.find("] "); close != std::string::npos)
          what = what.substr(close + 2);
      // One printable line of bounded length, whatever bytes the file held
      // ("last read: '...'" quotes the offending token).
      return fail("invalid JSON: " + printable(what, 200));
    }
    if (!config.is_object())
      return fail(fmt::format("expected a JSON object (a Hugging Face "
                              "config), found {}",
                              describe(config)));
    if (!duplicate.empty())
      return failKey(duplicate, "given more than once");

    // The architecture first: another model's config should say so, not
    // complain about its first unfamiliar key.
    auto modelType = config.find("model_type");
    if (modelType == config.end())
      return failKey("model_type",
                     "missing; tfmc imports Hugging Face GPT-2 configs "
                     "(\"model_type\": \"gpt2\")");
    if (!modelType->is_string() || modelType->get<std::string>() != "gpt2")
      return failKey("model_type",
                     fmt::format("{} is not supported; tfmc imports Hugging "
                                 "Face GPT-2 configs (\"gpt2\")",
                                 describe(*modelType)));

    for (auto it = config.begin(); it != config.end(); ++it)
      if (!contains(kHonouredKeys, it.key()) &&
          !contains(kIgnoredKeys, it.key()))
        return failKey(it.key(),
                       "unknown GPT-2 config key; tfmc does not know whether "
                       "it changes the model, so it does not ignore it");

    Model model;
    model.name = modelNameFor(path);
    model.loc = SourceLoc{path, 0, 0};

    // Required sizes.
    int64_t layers = 0;
    struct Size {
      const char *key;
      int64_t *field;
    } sizes[] = {{"n_embd", &model.dModel},
                 {"n_head", &model.heads},
                 {"n_layer", &layers},
                 {"n_positions", &model.maxLen},
                 {"vocab_size", &model.vocab}};
    for (const Size &size : sizes) {
      auto it = config.find(size.key);
      if (it == config.end())
        return failKey(size.key, "missing; GPT-2 configs give n_embd, "
                                 "n_head, n_layer, n_positions and vocab_size");
      std::optional<int64_t> value = positive(size.key, *it);
      if (!value)
        return std::nullopt;
      *size.field = *value;
    }
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
    if (auto it = config.find("layer_norm_epsilon"); it != config.end()) {
      if (!it->is_number() || !(it->get<double>() > 0.0) ||
          !std::isfinite(it->get<double>()))
        return failKey("layer_norm_epsilon",
                       fmt::format("expected a positive number, found {}",
                                   describe(*it)));
      model.layerNormEps = it->get<double>();
    }

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

    Stack decoder;
    decoder.kind = StackKind::Decoder;
    decoder.layers = layers;
    decoder.loc = model.loc;
    Sublayer attention;
    attention.kind = SublayerKind::SelfAttention;
    attention.mask.causal = true;
    attention.mask.padding = true;
    attention.loc = model.loc;
    Sublayer feedForward;
    feedForward.kind = SublayerKind::FeedForward;
    feedForward.loc = model.loc;
    decoder.sublayers = {attention, feedForward};
    model.decoder = std::move(decoder);
    if (std::optional<LimitProblem> problem = checkWeightSizes(model))
      return failKey(keyOfSetting(problem->setting), problem->message);
    return model;
  }

  std::string path;
  std::string message;
};

} // namespace

ParseResult importHfConfigText(const std::string &text,
                               const std::string &configPath) {
  return Importer(configPath).run(text);
}

} // namespace tfmc::frontend
