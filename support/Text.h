//===- Text.h - Messages that quote untrusted text --------------*- C++ -*-===//
//
// Every error tfmc and its programs report is one line. Much of what a
// message quotes comes from files and callers (names, tokens, paths, JSON
// values), so quoting goes through here, with one policy:
//   - line breaks, tabs and other control characters, C1 controls, the
//     Unicode line and paragraph separators, and bytes that are not UTF-8
//     are escaped (`\n`, `\t`, `\x1b`, `\u2028`, `\xff`): a message is
//     always valid UTF-8 and one line in any terminal or editor;
//   - a backslash in a quoted value is doubled, so an escape in the output
//     always means one;
//   - a quoted value is cut after kMaxQuotedChars characters and a whole
//     line after kMaxMessageBytes bytes, with "..." (a 1 MB token does not
//     make a 1 MB line).
// docs/user-guide.md ("Limits") states the limits.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_TEXT_H
#define TFMC_SUPPORT_TEXT_H

#include <cstddef>
#include <string>
#include <string_view>

namespace tfmc::support {

/// How many characters of a value a message quotes before cutting it.
inline constexpr std::size_t kMaxQuotedChars = 64;

/// The longest message line, in bytes of the message before escaping;
/// the rest is cut with "...".
inline constexpr std::size_t kMaxMessageBytes = 1024;

/// `text` as messages show it, without quotes: escaped as above and cut
/// after `maxChars` characters with "..." (never inside a UTF-8 sequence).
std::string escapeText(std::string_view text,
                       std::size_t maxChars = kMaxQuotedChars);

/// `'text'`, escaped and cut as escapeText does.
std::string quote(std::string_view text,
                  std::size_t maxChars = kMaxQuotedChars);

/// `"text"` as JSON writes a string (a `"` in it escaped too), escaped and
/// cut as escapeText does: tokens, which are JSON strings in their files.
std::string quoteJson(std::string_view text,
                      std::size_t maxChars = kMaxQuotedChars);

/// A finished message as one line: line breaks become spaces, tabs stay,
/// other characters are escaped as above (backslashes kept: the message's
/// own escapes), and a line longer than kMaxMessageBytes is cut with "...".
std::string oneLine(std::string_view text);

} // namespace tfmc::support

#endif // TFMC_SUPPORT_TEXT_H
