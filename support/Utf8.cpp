//===- Utf8.cpp - The one UTF-8 decoder -----------------------------------===//

#include "support/Utf8.h"

namespace tfmc::support {
namespace {

/// A lead byte's sequence length (0: not a lead byte) and the range its
/// second byte must fall in (which excludes overlong forms after E0 and F0,
/// surrogates after ED, and code points above U+10FFFF after F4).
struct Lead {
  std::size_t length;
  unsigned char lo, hi;
};

Lead leadOf(unsigned char b0) {
  if (b0 >= 0xc2 && b0 <= 0xdf)
    return {2, 0x80, 0xbf};
  if (b0 >= 0xe0 && b0 <= 0xef)
    return {3, static_cast<unsigned char>(b0 == 0xe0 ? 0xa0 : 0x80),
            static_cast<unsigned char>(b0 == 0xed ? 0x9f : 0xbf)};
  if (b0 >= 0xf0 && b0 <= 0xf4)
    return {4, static_cast<unsigned char>(b0 == 0xf0 ? 0x90 : 0x80),
            static_cast<unsigned char>(b0 == 0xf4 ? 0x8f : 0xbf)};
  return {0, 0, 0};
}

/// How many bytes from `text[i]` are a prefix of a well-formed sequence
/// led by `lead` (at most lead.length).
std::size_t validPrefix(std::string_view text, std::size_t i, Lead lead) {
  std::size_t k = 1;
  for (; k < lead.length && i + k < text.size(); ++k) {
    auto b = static_cast<unsigned char>(text[i + k]);
    if (k == 1 ? (b < lead.lo || b > lead.hi) : (b < 0x80 || b > 0xbf))
      break;
  }
  return k;
}

} // namespace

std::size_t decodeUtf8(std::string_view text, std::size_t i, uint32_t &cp) {
  if (i >= text.size())
    return 0;
  auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  Lead lead = leadOf(b0);
  if (lead.length == 0 || validPrefix(text, i, lead) != lead.length)
    return 0;
  uint32_t value = b0 & (0x7f >> lead.length);
  for (std::size_t k = 1; k < lead.length; ++k)
    value = (value << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
  cp = value;
  return lead.length;
}

std::size_t maximalSubpart(std::string_view text, std::size_t i) {
  Lead lead = leadOf(static_cast<unsigned char>(text[i]));
  return lead.length == 0 ? 1 : validPrefix(text, i, lead);
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

bool isValidUtf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8Length(text, i);
    if (length == 0)
      return false;
    i += length;
  }
  return true;
}

} // namespace tfmc::support
