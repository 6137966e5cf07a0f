//===- Utf8.h - The one UTF-8 decoder ---------------------------*- C++ -*-===//
//
// Every reader of untrusted text (the .tfm lexer, message quoting, the
// tokenizers) decodes UTF-8 here, by Unicode's Table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_UTF8_H
#define TFMC_SUPPORT_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tfmc::support {

/// Decodes the well-formed sequence at `text[i]`: its length (1 to 4) with
/// `cp` set, or 0 when it is ill-formed or `i` is past the end.
std::size_t decodeUtf8(std::string_view text, std::size_t i, uint32_t &cp);

/// The length decodeUtf8 gives, without the code point.
inline std::size_t utf8Length(std::string_view text, std::size_t i) {
  uint32_t cp;
  return decodeUtf8(text, i, cp);
}

/// For an ill-formed sequence at `text[i]`, the bytes one U+FFFD replaces:
/// the lead byte and the continuation bytes still allowed after it
/// (Unicode's "substitution of maximal subparts", which Python and browsers
/// follow); at least 1.
std::size_t maximalSubpart(std::string_view text, std::size_t i);

/// Appends code point `cp` (at most U+10FFFF) as UTF-8.
void appendUtf8(std::string &out, uint32_t cp);

/// Whether all of `text` is well-formed.
bool isValidUtf8(std::string_view text);

} // namespace tfmc::support

#endif // TFMC_SUPPORT_UTF8_H
