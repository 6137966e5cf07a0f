//===- HfConfig.cpp - Hugging Face config.json -> AST ---------------------===//
//
// Reads the JSON (bounded nesting, no duplicate keys) and hands it to the
// family that registered its `model_type` (HfFamily.h: one file per family
// in compiler/frontend/families/).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/HfConfig.h"
#include "compiler/frontend/HfFamily.h"
#include "compiler/frontend/Limits.h"
#include "support/Json.h"
#include "support/Text.h"

#include <fmt/format.h>

namespace tfmc::frontend {
namespace {

using hf::Json;

/// "tfmc imports Hugging Face "bert", "gpt2", ... and "qwen2" configs": the
/// registered model_types in alphabetical order.
std::string supportedTypes() {
  std::vector<std::string> types;
  for (std::string_view type : hf::hfModelTypes())
    types.push_back("\"" + std::string(type) + "\"");
  return "tfmc imports Hugging Face " + hf::listed(types, "and") + " configs";
}

std::optional<Model> import(const Json &config, const std::string &path,
                            hf::ImportErrors &errors) {
  if (!config.is_object())
    return errors.fail(fmt::format("expected a JSON object (a Hugging Face "
                                   "config), found {}",
                                   hf::describe(config)));

  // The architecture first: another model's config should say so, not
  // complain about its first unfamiliar key.
  auto modelType = config.find("model_type");
  if (modelType == config.end())
    return errors.failKey("model_type",
                          fmt::format("missing; {}", supportedTypes()));
  std::string type =
      modelType->is_string() ? modelType->get<std::string>() : "";
  auto [family, entry] = hf::findHfFamily(type);
  if (family)
    return hf::readHfConfig(*family, *entry, config, path, errors);
  return errors.failKey("model_type", fmt::format("{} is not supported; {}",
                                                  hf::describe(*modelType),
                                                  supportedTypes()));
}

} // namespace

ParseResult importHfConfigText(const std::string &text,
                               const std::string &configPath) {
  ParseResult result;
  hf::ImportErrors errors;
  // support/Json.h: nesting bounded while parsing (printing and comparing
  // values recurse), and every object's keys unique (nlohmann would keep
  // the last of two silently).
  support::JsonError failure;
  std::optional<Json> config = support::parseJson<Json>(text, failure);
  if (!config && failure.duplicateKey && failure.duplicateParent.empty()) {
    errors.failKey(*failure.duplicateKey, "given more than once");
    result.error = Diagnostic{SourceLoc{configPath, 0, 0}, errors.message};
    return result;
  }
  if (!config) {
    // One printable line of bounded length, whatever bytes the file held
    // ("last read: '...'" quotes the offending token).
    result.error = Diagnostic{
        SourceLoc{configPath, static_cast<unsigned>(failure.line),
                  static_cast<unsigned>(failure.column)},
        "invalid JSON: " + support::escapeText(failure.reason, 200)};
    return result;
  }
  std::optional<Model> model = import(*config, configPath, errors);
  if (model)
    result.model = std::move(model);
  else
    result.error = Diagnostic{SourceLoc{configPath, 0, 0}, errors.message};
  return result;
}

} // namespace tfmc::frontend
