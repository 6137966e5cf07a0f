//===- HfFamily.cpp - The Hugging Face families' registry and checks ------===//

#include "compiler/frontend/HfFamily.h"
#include "compiler/frontend/Limits.h"
#include "support/Text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

/// The registered families (at stable addresses) and model_type -> its
/// family and entry, filled by the family files' registrations during
/// static initialisation (their library is linked whole).
struct Registry {
  std::vector<std::unique_ptr<HfFamily>> families;
  std::map<std::string_view, std::pair<const HfFamily *, const ModelType *>>
      byType;
};

Registry &registry() {
  static Registry instance;
  return instance;
}

[[noreturn]] void registrationBug(const std::string &what) {
  // The frontend has no LLVM to report it with; a family file's bug shows
  // at start-up, whatever is being compiled.
  std::fprintf(stderr, "tfmc: %s (compiler/frontend/families)\n",
               what.c_str());
  std::abort();
}

bool contains(const KeyList &list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

} // namespace

KeyList pretrainedTokenKeys() {
  return {"bos_token_id", "eos_token_id", "pad_token_id", "tokenizer_class"};
}

HfFamilyRegistration::HfFamilyRegistration(HfFamily family) {
  if (family.modelTypes.empty() || !family.read)
    registrationBug("a Hugging Face family without a model_type or a reader");
  Registry &known = registry();
  known.families.push_back(std::make_unique<HfFamily>(std::move(family)));
  const HfFamily &added = *known.families.back();
  for (const ModelType &type : added.modelTypes)
    if (!known.byType.emplace(type.name, std::make_pair(&added, &type)).second)
      registrationBug(fmt::format("model_type \"{}\" is registered by two "
                                  "Hugging Face families",
                                  type.name));
  WeightNamingRegistration naming(added.weights);
}

std::pair<const HfFamily *, const ModelType *>
findHfFamily(std::string_view modelType) {
  auto it = registry().byType.find(modelType);
  if (it == registry().byType.end())
    return {nullptr, nullptr};
  return it->second;
}

std::vector<std::string_view> hfModelTypes() {
  std::vector<std::string_view> types;
  for (const auto &entry : registry().byType)
    types.push_back(entry.first);
  return types;
}

std::string describe(const Json &value) {
  // Dumping a container whole would print a line of any length, and recurse
  // once per level of nesting.
  switch (value.type()) {
  case Json::value_t::array:
    return fmt::format("an array of {} element{}", value.size(),
                       value.size() == 1 ? "" : "s");
  case Json::value_t::object:
    return fmt::format("an object of {} key{}", value.size(),
                       value.size() == 1 ? "" : "s");
  case Json::value_t::string:
    return "\"" + support::escapeText(value.get_ref<const std::string &>(), 40) + "\"";
  default:
    return value.dump();
  }
}

std::string modelNameFor(const std::string &configPath,
                         std::string_view family) {
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
    return std::string(family);
  if (std::isdigit(static_cast<unsigned char>(name[0])))
    name = std::string(family) + "_" + name;
  return name;
}

std::string listed(const std::vector<std::string> &items,
                   std::string_view conjunction) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0)
      text += i + 1 == items.size() ? " " + std::string(conjunction) + " "
                                    : std::string(", ");
    text += items[i];
  }
  return text;
}

std::optional<Model> ImportErrors::failKey(std::string_view key,
                                           const std::string &text) {
  return fail(fmt::format("key '{}': {}", support::escapeText(key), text));
}

std::optional<int64_t> ImportErrors::positive(std::string_view key,
                                              const Json &value, int64_t max,
                                              const char *expected) {
  if (value.is_number_unsigned() ||
      (value.is_number_integer() && value.get<int64_t>() > 0)) {
    uint64_t number = value.get<uint64_t>();
    if (number >= 1 && number <= static_cast<uint64_t>(max))
      return static_cast<int64_t>(number);
    if (number > static_cast<uint64_t>(max)) {
      failKey(key, fmt::format("{} is too large (maximum {})", number, max));
      return std::nullopt;
    }
  }
  failKey(key, fmt::format("expected {}, found {}", expected, describe(value)));
  return std::nullopt;
}

std::optional<Model> readHfConfig(const HfFamily &family,
                                  const ModelType &type, const Json &config,
                                  const std::string &path,
                                  ImportErrors &errors) {
  ConfigReader reader(family, type, config, errors);
  if (!reader.onlyKnownKeys())
    return std::nullopt;
  Model model;
  model.name = modelNameFor(path, type.name);
  model.loc = SourceLoc{path, 0, 0};
  if (!family.read(reader, model))
    return std::nullopt;
  model.weightNaming = family.weights.name;
  // A weight too large for the kernels blames the first key that gives the
  // setting at fault (Limits.h's checkWeightSizes).
  if (std::optional<LimitProblem> problem = checkWeightSizes(model)) {
    std::string_view key = problem->setting;
    for (const auto &[hfKey, setting] : family.sizeKeys)
      if (setting == problem->setting) {
        key = hfKey;
        break;
      }
    return errors.failKey(key, problem->message);
  }
  return model;
}

const Json *ConfigReader::find(std::string_view key) const {
  auto it = config.find(std::string(key));
  return it == config.end() ? nullptr : &*it;
}

bool ConfigReader::failKey(std::string_view key, const std::string &text) {
  errors.failKey(key, text);
  return false;
}

bool ConfigReader::onlyKnownKeys() {
  for (auto it = config.begin(); it != config.end(); ++it) {
    std::string_view key = it.key();
    bool tokenId = std::any_of(
        family.tokens.checkedIds.begin(), family.tokens.checkedIds.end(),
        [&](const TokenIdKey &id) { return key == id.key; });
    if (!contains(family.honouredKeys, key) &&
        !contains(family.ignoredKeys, key) &&
        !contains(family.tokens.keys, key) && !tokenId &&
        !contains(type.keys, key))
      return failKey(key, std::string("unknown ") +
                              std::string(type.familyName) +
                              " config key; tfmc does not know whether it "
                              "changes the model, so it does not ignore it");
  }
  return true;
}

bool ConfigReader::requiredSizes(std::initializer_list<RequiredSize> sizes) {
  for (const RequiredSize &size : sizes) {
    const Json *value = find(size.key);
    if (!value) {
      std::vector<std::string> all;
      for (const RequiredSize &each : sizes)
        all.push_back(each.key);
      return failKey(size.key, "missing; " + std::string(type.familyName) +
                                   " configs give " + listed(all, "and"));
    }
    std::optional<int64_t> number = positive(size.key, *value);
    if (!number)
      return false;
    *size.field = *number;
  }
  return true;
}

std::optional<int64_t> ConfigReader::positive(std::string_view key,
                                              const Json &value,
                                              const char *expected) {
  std::string_view setting = key;
  for (const auto &[hfKey, name] : family.sizeKeys)
    if (hfKey == key) {
      setting = name;
      break;
    }
  return errors.positive(key, value, maxOfSetting(setting), expected);
}

bool ConfigReader::size(const char *key, int64_t &field, bool nullAllowed,
                        const char *expected) {
  const Json *value = find(key);
  if (!value || (nullAllowed && value->is_null()))
    return true;
  if (!expected)
    expected =
        nullAllowed ? "null or a positive integer" : "a positive integer";
  std::optional<int64_t> number = positive(key, *value, expected);
  if (!number)
    return false;
  field = *number;
  return true;
}

bool ConfigReader::agrees(const char *key, int64_t value, const char *otherKey,
                          int64_t other, const char *why) {
  if (value == other)
    return true;
  return failKey(key, fmt::format("{} differs from {} = {}; {}", value,
                                  otherKey, other, why));
}

bool ConfigReader::positiveNumber(const char *key, double &field) {
  const Json *value = find(key);
  if (!value)
    return true;
  if (!value->is_number() || !(value->get<double>() > 0.0) ||
      !std::isfinite(value->get<double>()))
    return failKey(key, fmt::format("expected a positive number, found {}",
                                    describe(*value)));
  // Norm epsilons and rope thetas are f32 in the kernels: a value that
  // becomes inf or 0 there (rms_norm_eps 1e308 turned every logit NaN) is
  // refused here.
  float single = static_cast<float>(value->get<double>());
  if (!std::isfinite(single) || !(single > 0.0f))
    return failKey(key,
                   fmt::format("{} does not survive the conversion to f32 (it "
                               "becomes {}); expected a positive number "
                               "between 1.4e-45 and 3.4e38",
                               describe(*value), single));
  field = value->get<double>();
  return true;
}

bool ConfigReader::boolean(const char *key, bool &field) {
  const Json *value = find(key);
  if (!value)
    return true;
  if (!value->is_boolean())
    return failKey(key, fmt::format("expected true or false, found {}",
                                    describe(*value)));
  field = value->get<bool>();
  return true;
}

bool ConfigReader::onlySupported(const char *key, bool supported,
                                 const char *why) {
  bool value = supported;
  if (!boolean(key, value))
    return false;
  if (value != supported)
    return failKey(key, fmt::format("{} is not supported: {}",
                                    value ? "true" : "false", why));
  return true;
}

bool ConfigReader::activation(const char *key,
                              std::initializer_list<std::string_view> accepted,
                              Activation &field) {
  const Json *value = find(key);
  if (!value)
    return true;
  // transformers' ACT2FN names of the activations tfmc computes.
  static const std::pair<std::string_view, Activation> kNames[] = {
      {"gelu", Activation::Gelu},          {"gelu_new", Activation::GeluTanh},
      {"gelu_pytorch_tanh", Activation::GeluTanh}, {"relu", Activation::Relu},
      {"silu", Activation::Silu},          {"swish", Activation::Silu}};
  std::string name = value->is_string() ? value->get<std::string>() : "";
  if (std::find(accepted.begin(), accepted.end(), name) != accepted.end())
    for (const auto &[known, kind] : kNames)
      if (known == name) {
        field = kind;
        return true;
      }
  std::vector<std::string> expected;
  for (std::string_view each : accepted)
    expected.push_back("\"" + std::string(each) + "\"");
  return failKey(key, fmt::format("{} is not supported; expected {}",
                                  describe(*value), listed(expected, "or")));
}

bool ConfigReader::dividedHeads(Model &model, const char *widthKey,
                                const char *headsKey) {
  if (model.dModel % model.heads != 0)
    return failKey(headsKey,
                   fmt::format("{} = {} is not divisible by {} = {}", widthKey,
                               model.dModel, headsKey, model.heads));
  model.kvHeads = model.heads;
  model.headDim = model.dModel / model.heads;
  return true;
}

bool ConfigReader::rotaryHeads(Model &model, int64_t defaultHeadDim) {
  model.kvHeads = model.heads;
  if (!size("num_key_value_heads", model.kvHeads, /*nullAllowed=*/true))
    return false;
  if (model.heads % model.kvHeads != 0)
    return failKey(
        "num_key_value_heads",
        fmt::format("num_attention_heads = {} is not a multiple of "
                    "num_key_value_heads = {}: each K/V head serves the same "
                    "number of query heads",
                    model.heads, model.kvHeads));
  model.headDim = 0;
  if (!size("head_dim", model.headDim, /*nullAllowed=*/true))
    return false;
  if (model.headDim == 0)
    model.headDim = defaultHeadDim;
  if (model.headDim == 0) {
    if (model.dModel % model.heads != 0)
      return failKey(
          "num_attention_heads",
          fmt::format("hidden_size = {} is not divisible by "
                      "num_attention_heads = {}, and no head_dim is given",
                      model.dModel, model.heads));
    model.headDim = model.dModel / model.heads;
  }
  if (model.headDim % 2 != 0)
    return failKey("head_dim", fmt::format("rotary positions turn pairs of "
                                           "features, but the head width {} "
                                           "is odd",
                                           model.headDim));
  return true;
}

bool ConfigReader::tokenIds() {
  auto isId = [](const Json &value) {
    return value.is_number_unsigned() ||
           (value.is_number_integer() && value.get<int64_t>() >= 0);
  };
  for (const TokenIdKey &id : family.tokens.checkedIds) {
    const Json *value = find(id.key);
    if (!value || value->is_null() || isId(*value))
      continue;
    if (id.listAllowed && value->is_array() && !value->empty() &&
        std::all_of(value->begin(), value->end(), isId))
      continue;
    return failKey(id.key,
                   fmt::format("expected null, a token id{}, found {}",
                               id.listAllowed ? " or a list of token ids" : "",
                               describe(*value)));
  }
  return true;
}

void setRotaryDecoderKeys(HfFamily &family) {
  family.tokens.keys = {"pad_token_id", "tokenizer_class"};
  family.tokens.checkedIds = {{"bos_token_id", false}, {"eos_token_id", true}};
  family.sizeKeys = {{"hidden_size", "d_model"}, {"intermediate_size", "d_ff"},
                     {"num_hidden_layers", "layers"},
                     {"num_attention_heads", "heads"},
                     {"num_key_value_heads", "kv_heads"},
                     {"head_dim", "head_dim"},
                     {"max_position_embeddings", "max_len"},
                     {"vocab_size", "vocab"}, {"sliding_window", "window"}};
}

Stack importedStack(const Model &model, StackKind kind, int64_t layers,
                    std::initializer_list<ImportedSublayer> sublayers) {
  Stack stack;
  stack.kind = kind;
  stack.layers = layers;
  stack.loc = model.loc;
  for (const ImportedSublayer &part : sublayers) {
    Sublayer sublayer;
    sublayer.kind = part.kind;
    sublayer.mask = part.mask;
    sublayer.gated = part.gated;
    sublayer.loc = model.loc;
    stack.sublayers.push_back(sublayer);
  }
  return stack;
}

} // namespace tfmc::frontend::hf
