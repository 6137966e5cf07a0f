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

/// Parses `text` again, keeping every object's keys, to name the key an
/// object holds twice and its nearest enclosing key in `error`: only after
/// the parse found that some object has one (off the common path, where
/// counting members is enough).
void nameDuplicate(std::string_view text, JsonError &error) {
  using Json = nlohmann::json;
  using Event = Json::parse_event_t;
  // Per depth: the keys of the object open there, and its last key.
  // nlohmann's `depth` counts the containers around an event: the root
  // object's keys come at depth 1.
  std::vector<std::set<std::string>> keys;
  std::vector<std::string> lastKey;
  auto atLevel = [&](std::size_t level) {
    if (keys.size() <= level) {
      keys.resize(level + 1);
      lastKey.resize(level + 1);
    }
  };
  auto callback = [&](int depth, Event event, Json &parsed) {
    if (event == Event::object_start) {
      std::size_t level = static_cast<std::size_t>(depth) + 1;
      atLevel(level);
      keys[level].clear();
    } else if (event == Event::key && parsed.is_string()) {
      std::size_t level = static_cast<std::size_t>(depth);
      atLevel(level);
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!keys[level].insert(key).second) {
        error.duplicateKey = key;
        // The nearest enclosing key (arrays between have none).
        for (std::size_t up = level; up-- > 1;)
          if (!lastKey[up].empty()) {
            error.duplicateParent = lastKey[up];
            break;
          }
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
    Json::parse(text.begin(), text.end(), callback);
  } catch (const Stop &) {
  }
  error.reason = "duplicate key \"" + error.duplicateKey.value_or("") + "\"";
  if (!error.duplicateParent.empty())
    error.reason += " in \"" + error.duplicateParent + "\"";
}

} // namespace

std::string jsonReason(const std::string &what) {
  std::size_t column = what.find("column ");
  if (column != std::string::npos) {
    std::size_t colon = what.find(": ", column);
    if (colon != std::string::npos)
      return what.substr(colon + 2);
  }
  return what;
}

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
  // Per open object (by its depth): how many keys it has read. nlohmann
  // keeps one value per key, so an object that ends with fewer members than
  // keys named one twice.
  std::vector<std::size_t> keyCounts;
  bool duplicate = false;
  auto callback = [&](int depth, Event event, Json &parsed) {
    std::size_t level = static_cast<std::size_t>(depth);
    if (event == Event::object_start || event == Event::array_start) {
      if (depth >= maxDepth) {
        error.reason = "nested deeper than " + std::to_string(maxDepth) +
                       " levels";
        throw Stop{};
      }
      if (event == Event::object_start) {
        if (keyCounts.size() <= level)
          keyCounts.resize(level + 1);
        keyCounts[level] = 0;
      }
    } else if (event == Event::key) {
      ++keyCounts[level - 1];
    } else if (event == Event::object_end && parsed.size() != keyCounts[level]) {
      duplicate = true;
      throw Stop{};
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const Stop &) {
    if (duplicate)
      nameDuplicate(text, error);
  } catch (const typename Json::parse_error &e) {
    // e.byte: the 1-based index of the character where parsing stopped.
    std::size_t at = std::min<std::size_t>(e.byte ? e.byte - 1 : 0, text.size());
    error.line = 1 + static_cast<std::size_t>(
                         std::count(text.begin(), text.begin() + at, '\n'));
    std::size_t lineStart = at == 0 ? std::string_view::npos
                                    : text.rfind('\n', at - 1);
    lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
    error.column = at - lineStart + 1;
    error.reason = jsonReason(e.what());
  } catch (const typename Json::exception &e) {
    // Not a syntax error: no place to strip, only nlohmann's tag
    // ("[json.exception.out_of_range.406] ...").
    std::string what = e.what();
    std::size_t tag = what.rfind("] ", what.find(' ') + 1);
    error.reason = tag == std::string::npos ? what : what.substr(tag + 2);
  }
  return std::nullopt;
}

template std::optional<nlohmann::json>
parseJson<nlohmann::json>(std::string_view, JsonError &, int);
template std::optional<nlohmann::ordered_json>
parseJson<nlohmann::ordered_json>(std::string_view, JsonError &, int);

} // namespace tfmc::support
