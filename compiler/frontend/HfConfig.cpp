//===- HfConfig.cpp - Hugging Face config.json -> AST ---------------------===//
//
// Reads the JSON (bounded nesting, no duplicate keys) and hands it to the
// importer of its `model_type`: HfGpt2.cpp for gpt2, HfLlama.cpp for llama,
// mistral and qwen2.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfig.h"
#include "compiler/frontend/HfConfigImpl.h"
#include "compiler/frontend/Limits.h"
#include "compiler/frontend/Quote.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

namespace tfmc::frontend {
namespace hf {

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
    return "\"" + printable(value.get_ref<const std::string &>(), 40) + "\"";
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

std::optional<Model> ImportErrors::failKey(std::string_view key,
                                           const std::string &text) {
  return fail(fmt::format("key '{}': {}", printable(key), text));
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

bool ImportErrors::positiveNumber(const Json &config, const char *key,
                                  double &field) {
  auto it = config.find(key);
  if (it == config.end())
    return true;
  if (!it->is_number() || !(it->get<double>() > 0.0) ||
      !std::isfinite(it->get<double>())) {
    failKey(key, fmt::format("expected a positive number, found {}",
                             describe(*it)));
    return false;
  }
  // Norm epsilons and rope thetas are f32 in the kernels: a value that
  // becomes inf or 0 there (rms_norm_eps 1e308 turned every logit NaN) is
  // refused here.
  float single = static_cast<float>(it->get<double>());
  if (!std::isfinite(single) || !(single > 0.0f)) {
    failKey(key, fmt::format("{} does not survive the conversion to f32 (it "
                             "becomes {}); expected a positive number "
                             "between 1.4e-45 and 3.4e38",
                             describe(*it), single));
    return false;
  }
  field = it->get<double>();
  return true;
}

bool ImportErrors::boolean(const Json &config, const char *key, bool &field) {
  auto it = config.find(key);
  if (it == config.end())
    return true;
  if (!it->is_boolean()) {
    failKey(key, fmt::format("expected true or false, found {}",
                             describe(*it)));
    return false;
  }
  field = it->get<bool>();
  return true;
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

std::optional<Activation> activationOf(ImportErrors &errors,
                                       std::string_view key,
                                       const Json &value) {
  std::string name = value.is_string() ? value.get<std::string>() : "";
  if (name == "gelu")
    return Activation::Gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh")
    return Activation::GeluTanh;
  if (name == "relu")
    return Activation::Relu;
  if (name == "silu" || name == "swish")
    return Activation::Silu;
  errors.failKey(key, fmt::format("{} is not supported; expected \"gelu\", "
                                  "\"gelu_new\", \"gelu_pytorch_tanh\", "
                                  "\"relu\", \"silu\" or \"swish\"",
                                  describe(value)));
  return std::nullopt;
}

} // namespace hf

namespace {

using hf::Json;

/// Thrown by the parse callback when the nesting exceeds kMaxJsonDepth.
struct TooDeep {};

constexpr const char *kSupportedTypes =
    "tfmc imports Hugging Face \"gpt2\", \"llama\", \"mistral\", \"qwen2\", "
    "\"bert\" and \"marian\" configs";

std::optional<Model> import(const std::string &text, const std::string &path,
                            hf::ImportErrors &errors) {
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
    if (depth == 1 && event == Event::key && parsed.is_string() &&
        !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  Json config;
  try {
    config = Json::parse(text, noteKeys);
  } catch (const TooDeep &) {
    return errors.fail(fmt::format(
        "invalid JSON: nested deeper than {} levels", kMaxJsonDepth));
  } catch (const Json::exception &error) {
    std::string what = error.what();
    // "[json.exception.parse_error.101] parse error at line 2, ..." ->
    // "parse error at line 2, ...".
    if (what.rfind("[json.exception.", 0) == 0)
      if (std::size_t close = what.find("] "); close != std::string::npos)
        what = what.substr(close + 2);
    // One printable line of bounded length, whatever bytes the file held
    // ("last read: '...'" quotes the offending token).
    return errors.fail("invalid JSON: " + printable(what, 200));
  }
  if (!config.is_object())
    return errors.fail(fmt::format("expected a JSON object (a Hugging Face "
                                   "config), found {}",
                                   hf::describe(config)));
  if (!duplicate.empty())
    return errors.failKey(duplicate, "given more than once");

  // The architecture first: another model's config should say so, not
  // complain about its first unfamiliar key.
  auto modelType = config.find("model_type");
  if (modelType == config.end())
    return errors.failKey("model_type",
                          fmt::format("missing; {}", kSupportedTypes));
  std::string type =
      modelType->is_string() ? modelType->get<std::string>() : "";
  if (type == "gpt2")
    return hf::importGpt2(config, path, errors);
  if (type == "llama" || type == "mistral" || type == "qwen2")
    return hf::importLlamaFamily(config, type, path, errors);
  if (type == "bert")
    return hf::importBert(config, path, errors);
  if (type == "marian")
    return hf::importMarian(config, path, errors);
  return errors.failKey("model_type",
                        fmt::format("{} is not supported; {}",
                                    hf::describe(*modelType), kSupportedTypes));
}

} // namespace

ParseResult importHfConfigText(const std::string &text,
                               const std::string &configPath) {
  ParseResult result;
  hf::ImportErrors errors;
  std::optional<Model> model = import(text, configPath, errors);
  if (model)
    result.model = std::move(model);
  else
    result.error = Diagnostic{SourceLoc{configPath, 0, 0}, errors.message};
  return result;
}

} // namespace tfmc::frontend
