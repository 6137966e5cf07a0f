//===- Json.cpp - The one depth-bounded JSON reader -------------------------===//

#include "support/Json.h"

#include <algorithm>
#include <set>
#include <vector>

namespace tfmc::support {
namespace {


/// Thrown by the parser callback to stop at the first nesting or key error
/// (the reason is already in the JsonError).
struct Stop {};

/// nlohmann's "[json.exception.parse_error.101] parse error at line 2,
/// column 7: syntax error ..." -> "syntax error ...": the place is kept
/// apart, as numbers.
std::string reasonOf(const std::string &what) {
  std::size_t column = what.find("column ");
  if (column != std::string::npos) {
    std::size_t colon = what.find(": ", column);
    if (colon != std::string::npos)
      return what.substr(colon + 2);
  }
  std::size_t bracket = what.rfind("] ", what.find(' ') + 1);
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

} // namespace

std::string JsonError::message(const std::string &path) const {
  if (line == 0)
    return path + ": invalid JSON: " + reason;
  return path + ":" + std::to_string(line) + ":" + std::to_string(column) +
         ": invalid JSON: " + reason;
}

std::string JsonError::describe() const {
  if (line == 0)
    return "invalid JSON: " + reason;
  return "invalid JSON at line " + std::to_string(line) + ", column " +
         std::to_string(column) + ": " + reason;
}

template <typename Json>
std::optional<Json> parseJson(std::string_view text, JsonError &error,
                              int maxDepth) {
  using Event = typename Json::parse_event_t;
  error = JsonError();
  // Per depth: the keys of the object open there, and its last key (the
  // parent named in a duplicate's message). nlohmann's `depth` counts the
  // containers around an event: the root object's keys come at depth 1.
  std::vector<std::set<std::string>> keys;
  std::vector<std::string> lastKey;
  auto callback = [&](int depth, Event event, Json &parsed) {
    if (event == Event::object_start || event == Event::array_start) {
      if (depth >= maxDepth) {
        error.reason = "nested deeper than " + std::to_string(maxDepth) +
                       " levels";
        throw Stop{};
      }
      if (event == Event::object_start) {
        std::size_t level = static_cast<std::size_t>(depth) + 1;
        if (keys.size() <= level) {
          keys.resize(level + 1);
          lastKey.resize(level + 1);
        }
        keys[level].clear();
      }
    } else if (event == Event::key && parsed.is_string()) {
      std::size_t level = static_cast<std::size_t>(depth);
      if (keys.size() <= level) {
        keys.resize(level + 1);
        lastKey.resize(level + 1);
      }
      const std::string &key =
          parsed.template get_ref<const std::string &>();
      if (!keys[level].insert(key).second) {
        error.duplicateKey = key;
        // The nearest enclosing key (arrays between have none).
        for (std::size_t up = level; up-- > 1;)
          if (!lastKey[up].empty()) {
            error.duplicateParent = lastKey[up];
            break;
          }
        error.reason = "duplicate key \"" + key + "\"";
        if (!error.duplicateParent.empty())
          error.reason += " in \"" + error.duplicateParent + "\"";
        throw Stop{};
      }
      lastKey[level] = key;
      // Keys deeper than this belong to objects inside this value.
      for (std::size_t below = level + 1; below < lastKey.size(); ++below)
        lastKey[below].clear();
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const Stop &) {
  } catch (const typename Json::parse_error &e) {
    // e.byte: the 1-based index of the character where parsing stopped.
    std::size_t at = std::min<std::size_t>(e.byte ? e.byte - 1 : 0, text.size());
    error.line = 1 + static_cast<std::size_t>(
                         std::count(text.begin(), text.begin() + at, '\n'));
    std::size_t lineStart = at == 0 ? std::string_view::npos
                                    : text.rfind('\n', at - 1);
    lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
    error.column = at - lineStart + 1;
    error.reason = reasonOf(e.what());
  } catch (const typename Json::exception &e) {
    error.reason = reasonOf(e.what());
  }
  return std::nullopt;
}

template std::optional<nlohmann::json>
parseJson<nlohmann::json>(std::string_view, JsonError &, int);
template std::optional<nlohmann::ordered_json>
parseJson<nlohmann::ordered_json>(std::string_view, JsonError &, int);

} // namespace tfmc::support
