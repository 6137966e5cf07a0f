//===- Settings.cpp - The model settings' table ---------------------------===//

#include "compiler/frontend/Settings.h"

#include <type_traits>

#include <fmt/format.h>

namespace tfmc::frontend {

namespace {

/// A value's spelling in .tfm and in dumps.
template <typename T> struct Spelling {
  const char *text;
  T value;
};

const Spelling<NormPlacement> kNormPlacements[] = {
    {"post", NormPlacement::Post},
    {"pre", NormPlacement::Pre},
    {"sandwich", NormPlacement::Sandwich}};
const Spelling<NormType> kNormTypes[] = {{"layer_norm", NormType::LayerNorm},
                                         {"rms_norm", NormType::RmsNorm}};
const Spelling<Activation> kActivations[] = {{"relu", Activation::Relu},
                                             {"gelu", Activation::Gelu},
                                             {"gelu_tanh", Activation::GeluTanh},
                                             {"silu", Activation::Silu}};
const Spelling<PositionKind> kPositions[] = {
    {"sinusoidal", PositionKind::Sinusoidal},
    {"sinusoidal_halves", PositionKind::SinusoidalHalves},
    {"learned", PositionKind::Learned},
    {"rope", PositionKind::Rope}};
const Spelling<RopeScaling> kRopeScalings[] = {{"none", RopeScaling::None},
                                               {"linear", RopeScaling::Linear},
                                               {"llama3", RopeScaling::Llama3},
                                               {"longrope", RopeScaling::LongRope}};
const Spelling<EmbedScale> kEmbedScales[] = {{"sqrt_d_model", EmbedScale::SqrtDModel},
                                             {"1", EmbedScale::One}};
const Spelling<OutputKind> kOutputs[] = {{"linear", OutputKind::Linear},
                                         {"tied", OutputKind::Tied},
                                         {"none", OutputKind::None}};
const Spelling<bool> kBooleans[] = {{"true", true}, {"false", false}};
const Spelling<bool> kNormGains[] = {{"weight", false},
                                     {"one_plus_weight", true}};

/// The index of `value` among `spellings` (N: none).
template <typename T, size_t N>
size_t indexOf(const Spelling<T> (&spellings)[N], T value) {
  for (size_t i = 0; i < N; ++i)
    if (spellings[i].value == value)
      return i;
  return N;
}

template <typename T, size_t N>
const char *spellingOf(const Spelling<T> (&spellings)[N], T value) {
  size_t i = indexOf(spellings, value);
  return i < N ? spellings[i].text : "?";
}

using Shown = bool (*)(const Setting &, const Model &);

/// The later families' settings print only where they differ from a
/// default Model's, so that dumps of models without them stay as they were.
bool unlessDefault(const Setting &setting, const Model &model) {
  static const Model defaults;
  return settingValue(setting, model) != settingValue(setting, defaults);
}

/// A setting's row, with its name, kind and when it is printed.
Setting row(const char *name, Setting::Kind kind, Shown shown) {
  Setting setting;
  setting.name = name;
  setting.kind = kind;
  setting.shown = shown;
  return setting;
}

/// A positive integer (int64_t member) or positive number (double).
template <typename T>
Setting positive(const char *name, T Model::*member, Shown shown = nullptr) {
  constexpr bool isNumber = std::is_same_v<T, double>;
  Setting setting = row(
      name, isNumber ? Setting::Kind::PositiveNumber : Setting::Kind::PositiveInt,
      shown);
  if constexpr (isNumber)
    setting.number = member;
  else
    setting.integer = member;
  return setting;
}

/// A parenthesised list of positive numbers (std::vector<double> member).
Setting positiveList(const char *name, std::vector<double> Model::*member,
                     Shown shown) {
  Setting setting = row(name, Setting::Kind::PositiveNumbers, shown);
  setting.numbers = member;
  return setting;
}

template <typename T, size_t N>
Setting choice(const char *name, T Model::*member,
               const Spelling<T> (&spellings)[N], Shown shown = nullptr) {
  Setting setting = row(name, Setting::Kind::Choice, shown);
  for (const Spelling<T> &spelling : spellings)
    setting.spellings.emplace_back(spelling.text);
  setting.chosen = [member, &spellings](const Model &model) {
    return indexOf(spellings, model.*member);
  };
  setting.choose = [member, &spellings](Model &model, size_t index) {
    model.*member = spellings[index].value;
  };
  return setting;
}

std::vector<Setting> makeSettings() {
  std::vector<Setting> settings;
  settings.push_back(positive("vocab", &Model::vocab));
  settings.push_back(positive("d_model", &Model::dModel));
  settings.push_back(positive("heads", &Model::heads));
  settings.push_back(positive("d_ff", &Model::dFF));
  settings.push_back(positive("max_len", &Model::maxLen));
  settings.push_back(choice("norm", &Model::norm, kNormPlacements));
  settings.push_back(choice("activation", &Model::activation, kActivations));
  settings.push_back(choice("positions", &Model::positions, kPositions));
  settings.push_back(choice("embed_scale", &Model::embedScale, kEmbedScales));
  settings.push_back(positive("layer_norm_eps", &Model::layerNormEps));
  settings.push_back(choice("final_norm", &Model::finalNorm, kBooleans));
  settings.push_back(choice("output", &Model::output, kOutputs));
  settings.push_back(choice("norm_type", &Model::normType, kNormTypes, unlessDefault));
  settings.push_back(positive("token_types", &Model::tokenTypes, unlessDefault));
  settings.push_back(choice("embed_norm", &Model::embedNorm, kBooleans, unlessDefault));
  settings.push_back(choice("pooler", &Model::pooler, kBooleans, unlessDefault));
  settings.push_back(choice("output_bias", &Model::outputBias, kBooleans, unlessDefault));
  settings.push_back(positive("rope_theta", &Model::ropeTheta,
                              [](const Setting &, const Model &m) {
                                return m.positions == PositionKind::Rope;
                              }));
  settings.push_back(choice("rope_scaling", &Model::ropeScaling, kRopeScalings,
                            unlessDefault));
  auto scaled = [](const Setting &, const Model &m) {
    return m.ropeScaling == RopeScaling::Linear ||
           m.ropeScaling == RopeScaling::Llama3;
  };
  auto llama3 = [](const Setting &, const Model &m) {
    return m.ropeScaling == RopeScaling::Llama3;
  };
  settings.push_back(positive("rope_factor", &Model::ropeFactor, scaled));
  settings.push_back(positive("rope_low_freq_factor",
                              &Model::ropeLowFreqFactor, llama3));
  settings.push_back(positive("rope_high_freq_factor",
                              &Model::ropeHighFreqFactor, llama3));
  auto longrope = [](const Setting &, const Model &m) {
    return m.ropeScaling == RopeScaling::LongRope;
  };
  settings.push_back(positive("rope_original_max_len",
                              &Model::ropeOriginalMaxLen,
                              [](const Setting &, const Model &m) {
                                return m.ropeScaling == RopeScaling::Llama3 ||
                                       m.ropeScaling == RopeScaling::LongRope;
                              }));
  settings.push_back(positiveList("rope_short_factors",
                                  &Model::ropeShortFactors, longrope));
  settings.push_back(positiveList("rope_long_factors", &Model::ropeLongFactors,
                                  longrope));
  settings.push_back(positive("rope_attention_factor",
                              &Model::ropeAttentionFactor, longrope));
  settings.push_back(choice("norm_gain", &Model::normGainOffset, kNormGains,
                            unlessDefault));
  settings.push_back(positive("attention_scale", &Model::attentionScale,
                              [](const Setting &, const Model &m) {
                                return m.attentionScale != 0;
                              }));
  settings.push_back(positive("attn_logit_softcap", &Model::attnLogitSoftcap,
                              [](const Setting &, const Model &m) {
                                return m.attnLogitSoftcap != 0;
                              }));
  settings.push_back(positive("final_logit_softcap",
                              &Model::finalLogitSoftcap,
                              [](const Setting &, const Model &m) {
                                return m.finalLogitSoftcap != 0;
                              }));
  settings.push_back(positive("kv_heads", &Model::kvHeads,
                              [](const Setting &, const Model &m) {
                                return m.kvHeads != m.heads;
                              }));
  settings.push_back(positive("head_dim", &Model::headDim,
                              [](const Setting &, const Model &m) {
                                return m.headDim * m.heads != m.dModel;
                              }));
  settings.push_back(choice("bias", &Model::bias, kBooleans, unlessDefault));
  settings.push_back(choice("attention_bias", &Model::attentionBias, kBooleans,
                            [](const Setting &, const Model &m) {
                              return m.attentionBias != m.bias;
                            }));
  return settings;
}

} // namespace

const std::vector<Setting> &modelSettings() {
  static const std::vector<Setting> settings = makeSettings();
  return settings;
}

const Setting *findSetting(std::string_view name) {
  for (const Setting &setting : modelSettings())
    if (name == setting.name)
      return &setting;
  return nullptr;
}

std::string settingValue(const Setting &setting, const Model &model) {
  switch (setting.kind) {
  case Setting::Kind::PositiveInt: {
    const int64_t value = model.*setting.integer;
    return value == 0 ? std::string("unset") : std::to_string(value);
  }
  case Setting::Kind::PositiveNumber:
    return fmt::format("{:g}", model.*setting.number);
  case Setting::Kind::PositiveNumbers:
    // Each factor as the shortest text that reads back as it.
    return fmt::format("({})", fmt::join(model.*setting.numbers, ", "));
  case Setting::Kind::Choice: {
    const size_t index = setting.chosen(model);
    return index < setting.spellings.size() ? setting.spellings[index] : "?";
  }
  }
  return "?";
}

bool settingShown(const Setting &setting, const Model &model) {
  return !setting.shown || setting.shown(setting, model);
}

const char *toString(NormPlacement value) {
  return spellingOf(kNormPlacements, value);
}
const char *toString(NormType value) { return spellingOf(kNormTypes, value); }
const char *toString(Activation value) {
  return spellingOf(kActivations, value);
}
const char *toString(PositionKind value) {
  return spellingOf(kPositions, value);
}
const char *toString(RopeScaling value) {
  return spellingOf(kRopeScalings, value);
}
const char *toString(EmbedScale value) {
  return spellingOf(kEmbedScales, value);
}
const char *toString(OutputKind value) { return spellingOf(kOutputs, value); }

} // namespace tfmc::frontend
