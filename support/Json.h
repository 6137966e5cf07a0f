//===- Json.h - The one depth-bounded JSON reader ---------------*- C++ -*-===//
//
// Every JSON input tfmc and its programs read goes through parseJson:
// config.json and the tokenizer files, a safetensors header, a sharded
// checkpoint's index, the runtime plan. nlohmann's parser, with
//   - nesting bounded while parsing (kMaxJsonDepth, or less where a format
//     nests less), before any code that walks the value recurses;
//   - every object's keys unique (nlohmann keeps the last of two silently,
//     which makes a file mean something else than it says);
//   - a failure as a place (line and column where parsing stopped) and a
//     reason, which JsonError::message formats one way for every caller.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_JSON_H
#define TFMC_SUPPORT_JSON_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tfmc::support {

/// How deep objects and arrays may nest in any JSON input: the formats tfmc
/// reads nest a few levels (tokenizer.json's Sequences of pre-tokenizers the
/// deepest), and code that walks a value recurses once per level.
constexpr int kMaxJsonDepth = 64;

struct JsonError {
  /// Where parsing stopped (1-based), for a syntax error; 0 otherwise.
  std::size_t line = 0;
  std::size_t column = 0;
  /// What is wrong: nlohmann's reason ("syntax error while parsing value -
  /// unexpected end of input; ..."), "nested deeper than N levels" or
  /// "duplicate key \"K\"" (with "in \"PARENT\"" below the top level). Raw
  /// bytes of the input may appear in it: quote it (oneLine) to print it.
  std::string reason;
  /// For a duplicate key: the key, and the nearest enclosing object's key
  /// ("" at the top level), for callers that say what the key means
  /// ("token 'x' appears twice").
  std::optional<std::string> duplicateKey;
  std::string duplicateParent;

  /// "PATH:LINE:COLUMN: invalid JSON: REASON" for a file, or "PATH:
  /// invalid JSON: REASON" when there is no place.
  std::string message(const std::string &path) const;
  /// "invalid JSON at line LINE, column COLUMN: REASON" (or without the
  /// place), for JSON inside something else (a safetensors header).
  std::string describe() const;
};

/// nlohmann's message without its position prefix: "[json.exception.
/// parse_error.101] parse error at line 2, column 7: syntax error ..." ->
/// "syntax error ..." (the place is kept apart, as numbers); a message
/// with no place (a type error while reading a value) unchanged.
std::string jsonReason(const std::string &what);

/// Parses `text` as one JSON value whose containers nest at most `maxDepth`
/// deep (the root is depth 1) and whose objects have unique keys. On
/// failure returns nothing and fills `error`. `JsonType` is nlohmann::json
/// (objects in key order) or nlohmann::ordered_json (in the file's order,
/// for messages that name the first offending key as the file has it).
template <typename JsonType = nlohmann::json>
std::optional<JsonType> parseJson(std::string_view text, JsonError &error,
                                  int maxDepth = kMaxJsonDepth);

extern template std::optional<nlohmann::json>
parseJson<nlohmann::json>(std::string_view, JsonError &, int);
extern template std::optional<nlohmann::ordered_json>
parseJson<nlohmann::ordered_json>(std::string_view, JsonError &, int);

} // namespace tfmc::support

#endif // TFMC_SUPPORT_JSON_H
