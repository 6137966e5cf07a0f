//===- HfFamily.h - A Hugging Face model family, and their registry -*- C++ -*-===//
//
// Each family of Hugging Face checkpoints tfmc imports is one file in
// compiler/frontend/families/ (HfGpt2.cpp; HfLlama.cpp for llama, mistral
// and qwen2; HfBert.cpp; HfMarian.cpp) that describes the family in one
// HfFamily and registers it with one HfFamilyRegistration at namespace
// scope. The build globs the folder and links it whole, as it does
// compiler/codegen/kernels/, so adding a family touches no list elsewhere:
// HfConfig.cpp reads config.json and dispatches on model_type through the
// registry (which also names the supported types), and the builder finds
// the family's weight names by Model::weightNaming (WeightNames.h).
//
// A family is
//   - its model_type names, each with the name its messages use and the
//     keys only its configs have;
//   - its config keys: honoured (its reader reads or checks them), ignored
//     (they cannot change the forward pass), its token rules' keys, and its
//     size keys with the .tfm setting each gives (whose maximum, Limits.h,
//     bounds it); any other key is refused by name;
//   - its reader: the keys -> the AST Model, through ConfigReader's checks,
//     so that every family's messages read alike;
//   - its weight names: a WeightNaming for its checkpoints' tensors;
//   - its token rules: the token, tokenizer and generation keys its configs
//     carry. The compiled program picks its tokenizer by the files of the
//     directory given at run time and reads the token ids from there
//     (runtime/tokenizers/PromptTokens.cpp); a family accepts those keys and
//     checks the ids its generation relies on.
//
// The reader sees a key/value object, not a file: readHfConfig takes the
// family, the model_type and the keys. That is where GGUF plugs in: a
// family file also registers the llama.cpp architectures it reads
// (GgufFamily.h: each GGUF key's Hugging Face key, and a WeightNaming that
// binds the family's Hugging Face names onto GGUF's tensor names), and
// GgufImport.cpp translates a file's metadata into those keys, calls
// readHfConfig with them and maps its messages back to the GGUF keys.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_HFFAMILY_H
#define TFMC_FRONTEND_HFFAMILY_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/WeightNames.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// `a`, `a and b`, `a, b and c` (with `conjunction` "and" or "or").
std::string listed(const std::vector<std::string> &items,
                   std::string_view conjunction);

/// The first error an import finds, as `key 'K': ...`.
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

  std::string message;
};

/// A size key of a family's config and the .tfm setting it gives.
using KeyToSetting = std::pair<std::string_view, std::string_view>;
using KeyList = std::vector<std::string_view>;

/// A model_type a family reads.
struct ModelType {
  std::string_view name;       ///< config.json's model_type: "mistral"
  std::string_view familyName; ///< in messages: "unknown Mistral config key"
  KeyList keys = {};           ///< keys only this type's configs have
};

/// A token id key a family checks: null or an id (`listAllowed`: also a
/// non-empty list of ids, any of which stops generation).
struct TokenIdKey {
  const char *key;
  bool listAllowed;
};

/// What a family's configs say about tokens (see the file comment).
struct TokenRules {
  /// Token ids, tokenizer and generation settings: the runtime takes them
  /// from the checkpoint directory or the command line, so any value is
  /// accepted here.
  KeyList keys;
  /// Token ids generation reads from this config: checked, in this order,
  /// when the reader calls ConfigReader::tokenIds.
  std::vector<TokenIdKey> checkedIds = {};
};

/// transformers' PretrainedConfig token keys: the special tokens' ids and
/// the tokenizer's class (bos_token_id, eos_token_id, pad_token_id,
/// tokenizer_class), for a family that accepts them as they are. (A
/// function: families read it during static initialisation.)
KeyList pretrainedTokenKeys();

class ConfigReader;

/// One family of Hugging Face checkpoints (see the file comment).
struct HfFamily {
  using Reader = bool (*)(ConfigReader &config, Model &model);
  HfFamily(std::vector<ModelType> modelTypes, Reader read,
           WeightNaming weights)
      : modelTypes(std::move(modelTypes)), read(read),
        weights(std::move(weights)) {}

  std::vector<ModelType> modelTypes;
  /// Reads the keys into `model`, which is already named after the folder
  /// and located at the config; false with the message set.
  Reader read;
  /// Model::weightNaming of every model it reads.
  WeightNaming weights;
  TokenRules tokens;
  /// The setting each size key gives; the first key of a setting is blamed
  /// for a weight that setting makes too large.
  std::vector<KeyToSetting> sizeKeys;
  /// Keys the reader reads or checks (model_type included).
  KeyList honouredKeys;
  /// Keys that cannot change what the forward pass computes (dropout, other
  /// tasks' heads, caching, training, bookkeeping), accepted with any value.
  KeyList ignoredKeys;
};

/// Adds a family file's family (and its weight naming) to the registry at
/// static initialisation. A model_type or weight naming registered twice is
/// a bug in the family files, fatal at start-up.
struct HfFamilyRegistration {
  explicit HfFamilyRegistration(HfFamily family);
};

/// The family that reads `modelType` and its entry, or {null, null}.
std::pair<const HfFamily *, const ModelType *>
findHfFamily(std::string_view modelType);

/// Every registered model_type, in alphabetical order: the order messages
/// list them in ("tfmc imports Hugging Face ... configs").
std::vector<std::string_view> hfModelTypes();

/// Reads `config` (the keys of one model, by their Hugging Face names) as a
/// `type` of `family`: refuses unknown keys, names the model after
/// `path`'s folder and locates it at `path`, runs the family's reader, and
/// checks the weight sizes. Nullopt with `errors.message` set on the first
/// error.
std::optional<Model> readHfConfig(const HfFamily &family,
                                  const ModelType &type, const Json &config,
                                  const std::string &path,
                                  ImportErrors &errors);

/// The keys of one config, as a family's reader reads them: every check
/// fails with one message naming the key, in the family's words.
class ConfigReader {
public:
  ConfigReader(const HfFamily &family, const ModelType &type,
               const Json &config, ImportErrors &errors)
      : errors(errors), family(family), type(type), config(config) {}

  /// The model_type read ("mistral").
  std::string_view modelType() const { return type.name; }
  /// The value under `key`, or null when the config has none.
  const Json *find(std::string_view key) const;

  /// Fails on `key` with `text`; returns false.
  bool failKey(std::string_view key, const std::string &text);

  /// True when every key is honoured, ignored, a token key or the type's;
  /// otherwise fails on the first other key: tfmc cannot tell whether it
  /// changes the model, so it never ignores an unknown key.
  bool onlyKnownKeys();

  /// A size key every config of the family gives, and where it goes.
  struct RequiredSize {
    const char *key;
    int64_t *field;
  };
  /// Reads each required size (a positive integer up to the maximum of the
  /// setting it gives); fails on the first one missing ("missing; FAMILY
  /// configs give a, b and c") or out of range.
  bool requiredSizes(std::initializer_list<RequiredSize> sizes);

  /// `value` as a positive integer up to the maximum of the setting `key`
  /// gives; nullopt (with the message set) else.
  std::optional<int64_t> positive(std::string_view key, const Json &value,
                                  const char *expected = "a positive integer");
  /// `field` from the size under `key`, if given (and not null, where
  /// `nullAllowed`); false for any other value, which is expected to be
  /// `expected` (by default "a positive integer", or "null or a positive
  /// integer" where `nullAllowed`).
  bool size(const char *key, int64_t &field, bool nullAllowed = false,
            const char *expected = nullptr);
  /// Checks that `value` (under `key`) equals `other` (under `otherKey`);
  /// fails with "V differs from OTHERKEY = O; WHY".
  bool agrees(const char *key, int64_t value, const char *otherKey,
              int64_t other, const char *why);
  /// `field` from a positive number under `key`, if given, that stays
  /// positive and finite as f32.
  bool positiveNumber(const char *key, double &field);
  /// `field` from true or false under `key`, if given.
  bool boolean(const char *key, bool &field);
  /// A switch tfmc supports with one value: absent or `supported` is fine,
  /// the other value fails ("true is not supported: WHY").
  bool onlySupported(const char *key, bool supported, const char *why);
  /// `field` from the activation under `key`, if given: one of `accepted`
  /// (transformers' ACT2FN names, listed in that order when refused).
  bool activation(const char *key,
                  std::initializer_list<std::string_view> accepted,
                  Activation &field);
  /// Checks that `headsKey` divides `widthKey` (model.heads, model.dModel)
  /// and gives each query head its own K/V head of d_model / heads.
  bool dividedHeads(Model &model, const char *widthKey, const char *headsKey);
  /// A rotary family's heads (model.heads and model.dModel read): K/V
  /// heads from num_key_value_heads (null or absent: one per query head),
  /// a divisor of num_attention_heads; the head width from head_dim (null or
  /// absent: `defaultHeadDim`, the config class's default, or where that is
  /// 0, hidden_size / num_attention_heads), even, as rope turns pairs.
  bool rotaryHeads(Model &model, int64_t defaultHeadDim);
  /// Checks the family's token id keys (TokenRules::checkedIds).
  bool tokenIds();

  ImportErrors &errors;

private:
  const HfFamily &family;
  const ModelType &type;
  const Json &config;
};

/// The token rules and size keys of the rotary decoder families (the Llama
/// reader's, Gemma 2): bos_token_id and eos_token_id (a list allowed)
/// checked, pad_token_id (the attention mask says what is padding) and
/// tokenizer_class accepted; hidden_size -> d_model, intermediate_size ->
/// d_ff, ..., sliding_window -> window.
void setRotaryDecoderKeys(HfFamily &family);

/// One sublayer of an imported stack.
struct ImportedSublayer {
  SublayerKind kind;
  MaskSpec mask = {};
  bool gated = false;
};
/// A stack of `layers` layers, each the sublayers in order, located at the
/// config (model.loc) as every part of an imported model is.
Stack importedStack(const Model &model, StackKind kind, int64_t layers,
                    std::initializer_list<ImportedSublayer> sublayers);

} // namespace tfmc::frontend::hf

#endif // TFMC_FRONTEND_HFFAMILY_H
