//===- Text.h - Messages that quote untrusted text --------------*- C++ -*-===//
//
// Every error the runtime reports is one line on stderr. Much of what it
// quotes comes from files and callers (tensor names, tokens, paths, JSON
// values), so quoting goes through here: line breaks and other control
// characters, and bytes that are not UTF-8, are escaped (a message is always
// valid UTF-8), and long values are cut with "..." (a 1 MB token does not
// make a 1 MB line).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TEXT_H
#define TFMC_RUNTIME_TEXT_H

#include <cstddef>
#include <string>
#include <string_view>

namespace tfmc::runtime {

/// The longest value a message quotes, in bytes of the original text.
inline constexpr std::size_t kMaxQuotedBytes = 80;

/// The longest message line, in bytes (messages quoting several values and
/// a path stay well below it; the rest is cut with "...").
inline constexpr std::size_t kMaxMessageBytes = 1024;

/// `text` as messages show it, without quotes: `\n`, `\t`, `\\xHH` for other
/// control characters and bytes that are not UTF-8, and "..." after the
/// first `maxBytes` bytes (never inside a UTF-8 sequence).
std::string escapeText(std::string_view text,
                       std::size_t maxBytes = kMaxQuotedBytes);

/// `'text'`, escaped and cut as escapeText does.
std::string quote(std::string_view text,
                  std::size_t maxBytes = kMaxQuotedBytes);

/// A finished message as one line: line breaks become spaces, control
/// characters and bytes that are not UTF-8 are escaped, and a line longer
/// than kMaxMessageBytes is cut with "...".
std::string oneLine(std::string_view text);


} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TEXT_H
