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
#include "compiler/frontend/Quote.h"

#include <set>

#include <fmt/format.h>

namespace tfmc::frontend {
namespace {

using hf::Json;

/// Thrown by the parse callback when the nesting exceeds kMaxJsonDepth.
struct TooDeep {};

/// "tfmc imports Hugging Face "bert", "gpt2", ... and "qwen2" configs": the
/// registered model_types in alphabetical order.
std::string supportedTypes() {
  std::vector<std::string> types;
  for (std::string_view type : hf::hfModelTypes())
    types.push_back("\"" + std::string(type) + "\"");
  return "tfmc imports Hugging Face " + hf::listed(types, "and") + " configs";
}

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
  std::optional<Model> model = import(text, configPath, errors);
  if (model)
    result.model = std::move(model);
  else
    result.error = Diagnostic{SourceLoc{configPath, 0, 0}, errors.message};
  return result;
}

} // namespace tfmc::frontend
