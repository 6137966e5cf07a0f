//===- Text.cpp - Messages that quote untrusted text ----------------------===//

#include "runtime/Text.h"

#include <cstdint>
#include <cstdio>

namespace tfmc::runtime {
namespace {

/// Bytes of the well-formed UTF-8 sequence at `text[i]` (2 to 4), or 0 when
/// it is not one (ASCII is handled by the callers).
std::size_t utf8Length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) {
    return static_cast<unsigned char>(text[k]);
  };
  unsigned char lead = byte(i);
  std::size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (length == 0 || lead > 0xf4 || i + length > text.size())
    return 0;
  uint32_t cp = lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static const uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return length;
}

void appendHex(std::string &out, unsigned char c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
  out += buffer;
}

/// Escapes `text` into `out`, stopping after `maxBytes` bytes of input;
/// `breaksAsSpaces` turns line breaks into spaces and keeps tabs (a finished
/// message) instead of escaping them (a quoted value).
void escapeInto(std::string &out, std::string_view text, std::size_t maxBytes,
                bool breaksAsSpaces) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (i >= maxBytes) {
      out += "...";
      return;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t length = utf8Length(text, i);
      if (length == 0) {
        appendHex(out, c);
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    ++i;
    if ((c == '\n' || c == '\r') && breaksAsSpaces)
      out += ' ';
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += breaksAsSpaces ? "\t" : "\\t";
    else if (c < 0x20 || c == 0x7f)
      appendHex(out, c);
    else
      out += static_cast<char>(c);
  }
}

} // namespace

std::string escapeText(std::string_view text, std::size_t maxBytes) {
  std::string out;
  escapeInto(out, text, maxBytes, false);
  return out;
}

std::string quote(std::string_view text, std::size_t maxBytes) {
  std::string out = "'";
  escapeInto(out, text, maxBytes, false);
  return out + "'";
}

std::string oneLine(std::string_view text) {
  std::string out;
  escapeInto(out, text, kMaxMessageBytes, true);
  return out;
}

bool isValidUtf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = utf8Length(text, i);
    if (length == 0)
      return false;
    i += length;
  }
  return true;
}

} // namespace tfmc::runtime
