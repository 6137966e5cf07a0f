//===- HfConfigImpl.h - Shared parts of the config.json importers -*- C++ -*-===//
//
// HfConfig.cpp reads the JSON and picks the importer by `model_type`; each
// model family's importer (HfGpt2.cpp, HfLlama.cpp) maps its keys onto the
// AST with the helpers here, so every family's messages read alike.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_HFCONFIGIMPL_H
#define TFMC_FRONTEND_HFCONFIGIMPL_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Limits.h"

#include <algorithm>
#include <initializer_list>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace tfmc::frontend::hf {

using Json = nlohmann::ordered_json;

/// A value as messages show it: scalars as JSON, strings cut and escaped,
/// containers by kind only.
std::string describe(const Json &value);

/// The config's folder name as a .tfm identifier (`gpt2-medium` ->
/// `gpt2_medium`); `family` when the folder gives no usable name, and the
/// prefix `family_` when it starts with a digit.
std::string modelNameFor(const std::string &configPath,
                         std::string_view family);

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

/// A size key of a family's config and the .tfm setting it gives (whose
/// maximum, Limits.h, bounds it).
using KeyToSetting = std::pair<std::string_view, std::string_view>;

/// The setting `key` gives (`key` itself when the table has no entry).
template <size_t N>
std::string_view settingOfKey(const KeyToSetting (&table)[N],
                              std::string_view key) {
  for (const auto &[hfKey, setting] : table)
    if (hfKey == key)
      return setting;
  return key;
}

/// The first key that gives `setting`, to blame for a limit it exceeds.
template <size_t N>
std::string_view keyOfSetting(const KeyToSetting (&table)[N],
                              std::string_view setting) {
  for (const auto &[hfKey, name] : table)
    if (name == setting)
      return hfKey;
  return setting;
}

/// The first error an importer finds, as `key 'K': ...`.
class ImportErrors {
public:
  std::optional<Model> fail(const std::string &text) {
    message = text;
    return std::nullopt;
  }
  std::optional<Model> failKey(std::string_view key, const std::string &text);

  /// A positive integer up to `max`; nullopt (with the message set) else.
  std::optional<int64_t> positive(std::string_view key, const Json &value,
                                  int64_t max,
                                  const char *expected = "a positive integer");

  /// `field` from a positive, finite number under `key` of `config`, if
  /// given; false (with the message set) for any other value.
  bool positiveNumber(const Json &config, const char *key, double &field);
  /// `field` from true or false under `key` of `config`, if given.
  bool boolean(const Json &config, const char *key, bool &field);

  std::string message;
};

/// True when every key of `config` is in `known` (honoured, ignored, or the
/// family's); otherwise fails on the first other key: tfmc cannot tell
/// whether it changes the model, so it never ignores an unknown key.
template <typename Known>
bool onlyKnownKeys(const Json &config, std::string_view family,
                   ImportErrors &errors, Known known) {
  for (auto it = config.begin(); it != config.end(); ++it)
    if (!known(std::string_view(it.key()))) {
      errors.failKey(it.key(),
                     std::string("unknown ") + std::string(family) +
                         " config key; tfmc does not know whether it changes "
                         "the model, so it does not ignore it");
      return false;
    }
  return true;
}

/// A size key every config of a family gives, and where it goes.
struct RequiredSize {
  const char *key;
  int64_t *field;
};

/// Reads each required size (a positive integer up to the maximum of the
/// setting it gives); fails on the first one missing ("missing; FAMILY
/// configs give a, b and c") or out of range.
template <size_t N>
bool requiredSizes(const Json &config, std::string_view family,
                   std::initializer_list<RequiredSize> sizes,
                   const KeyToSetting (&sizeKeys)[N], ImportErrors &errors) {
  for (const RequiredSize &size : sizes) {
    auto it = config.find(size.key);
    if (it == config.end()) {
      std::string all;
      std::size_t i = 0;
      for (const RequiredSize &each : sizes)
        all += std::string(i++ == 0 ? "" : i == sizes.size() ? " and " : ", ") +
               each.key;
      errors.failKey(size.key, "missing; " + std::string(family) +
                                   " configs give " + all);
      return false;
    }
    std::optional<int64_t> value = errors.positive(
        size.key, *it, maxOfSetting(settingOfKey(sizeKeys, size.key)));
    if (!value)
      return false;
    *size.field = *value;
  }
  return true;
}

/// A stack of `layers` layers, each the sublayers in order, located at the
/// config (model.loc) as every part of an imported model is.
struct ImportedSublayer {
  SublayerKind kind;
  MaskSpec mask = {};
  bool gated = false;
};
Stack importedStack(const Model &model, StackKind kind, int64_t layers,
                    std::initializer_list<ImportedSublayer> sublayers);

/// The finished model, or (with the message set) the key whose setting
/// makes a weight too large (Limits.h's checkWeightSizes).
template <size_t N>
std::optional<Model> checkedModel(Model model,
                                  const KeyToSetting (&sizeKeys)[N],
                                  ImportErrors &errors) {
  if (std::optional<LimitProblem> problem = checkWeightSizes(model))
    return errors.failKey(keyOfSetting(sizeKeys, problem->setting),
                          problem->message);
  return model;
}

/// The activation a hidden_act / activation_function value names
/// (transformers' ACT2FN): "gelu" (erf), "gelu_new" and "gelu_pytorch_tanh"
/// (tanh form), "relu", "silu" and "swish"; nullopt (with the message set)
/// for any other value.
std::optional<Activation> activationOf(ImportErrors &errors,
                                       std::string_view key,
                                       const Json &value);

/// Each importer fills `errors.message` when it returns nullopt.
std::optional<Model> importGpt2(const Json &config,
                                const std::string &configPath,
                                ImportErrors &errors);
/// model_type bert (encoder-only).
std::optional<Model> importBert(const Json &config,
                                const std::string &configPath,
                                ImportErrors &errors);
/// model_type marian (encoder-decoder).
std::optional<Model> importMarian(const Json &config,
                                  const std::string &configPath,
                                  ImportErrors &errors);
/// model_type llama, mistral or qwen2.
std::optional<Model> importLlamaFamily(const Json &config,
                                       const std::string &modelType,
                                       const std::string &configPath,
                                       ImportErrors &errors);

} // namespace tfmc::frontend::hf

#endif // TFMC_FRONTEND_HFCONFIGIMPL_H
