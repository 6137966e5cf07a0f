//===- Quote.h - User text as one-line messages show it ---------*- C++ -*-===//
//
// Every message is one line of bounded length (docs/user-guide.md, "Limits"), even when
// it quotes a file's contents: a name from the file may hold line breaks,
// control bytes, bytes that are not UTF-8, or a million characters.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_QUOTE_H
#define TFMC_FRONTEND_QUOTE_H

#include <cstddef>
#include <string>
#include <string_view>

namespace tfmc::frontend {

/// How many characters of user text a message quotes before cutting it.
constexpr size_t kMaxQuotedChars = 64;
/// The longest message text, in bytes, before it is cut.
constexpr size_t kMaxMessageBytes = 1000;

/// `text` as a message shows it: valid, printable UTF-8 kept; control
/// characters, C1 controls, line separators and bytes that are not UTF-8
/// escaped (`\n`, `\t`, `\x1b`, `\u2028`); cut after `maxChars` characters
/// with `...` appended.
std::string printable(std::string_view text,
                      size_t maxChars = kMaxQuotedChars);

/// The same, in single quotes: `'text'`.
std::string quoted(std::string_view text, size_t maxChars = kMaxQuotedChars);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_QUOTE_H
