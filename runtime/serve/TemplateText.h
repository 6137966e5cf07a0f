//===- TemplateText.h - Python's str operations on UTF-8 --------*- C++ -*-===//
//
// The chat template engine keeps strings as UTF-8 (checked well-formed when
// they enter: the template, the messages, the caller's variables) and does
// what Python's str does to them, counting in code points: len, indexing,
// slicing, strip, split, splitlines, replace, case mapping. Python's case
// mapping is Unicode's; only ASCII is mapped here, and a string with any
// other character is refused by the case functions (an error, never text
// that differs from Python's).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TEMPLATETEXT_H
#define TFMC_RUNTIME_SERVE_TEMPLATETEXT_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime::jinja {

/// The byte offset of each code point of well-formed `text`, and text.size()
/// last (so code point i is text[offsets[i], offsets[i + 1])).
std::vector<std::size_t> codePointOffsets(std::string_view text);
std::size_t codePointCount(std::string_view text);
/// The code point at byte `pos` of well-formed `text`; `pos` advances.
uint32_t nextCodePoint(std::string_view text, std::size_t &pos);

/// Python's str.isspace() for one code point (the characters str.split()
/// and str.strip() treat as whitespace, and the lexer's `\s`).
bool isPythonSpace(uint32_t cp);

/// str.strip / lstrip / rstrip: of whitespace, or of the code points in
/// `chars` when given.
std::string pythonStrip(std::string_view text, const std::string *chars, bool left, bool right);

/// str.split(): on runs of whitespace (sep absent) or on `sep` (not empty),
/// at most `maxSplit` times (< 0: no limit). str.rsplit when `fromRight`.
std::vector<std::string> pythonSplit(std::string_view text, const std::string *sep, long long maxSplit,
                                     bool fromRight);

/// str.splitlines(): \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029.
std::vector<std::string> pythonSplitLines(std::string_view text, bool keepEnds);

/// str.replace(old, new, count) (count < 0: all); an empty `old` inserts
/// `replacement` between code points, as Python does.
std::string pythonReplace(std::string_view text, std::string_view old, std::string_view replacement,
                          long long count);

/// Case mapping of ASCII text; nothing (the caller refuses) when `text` has
/// a character outside ASCII.
enum class CaseMapping { Upper, Lower, Capitalize, Title, JinjaTitle };
std::optional<std::string> asciiCase(std::string_view text, CaseMapping mapping);
/// str.islower() / isupper() of ASCII text; nothing outside ASCII.
std::optional<bool> asciiIsLower(std::string_view text);
std::optional<bool> asciiIsUpper(std::string_view text);

/// Python's slice indices for a sequence of `length` items:
/// the items start, start + step, ... before stop.
std::vector<std::size_t> sliceIndices(std::size_t length, std::optional<long long> start,
                                      std::optional<long long> stop, long long step);

} // namespace tfmc::runtime::jinja

#endif // TFMC_RUNTIME_SERVE_TEMPLATETEXT_H
