//===- Text.cpp - Messages that quote untrusted text ----------------------===//

#include "runtime/core/Text.h"
#include "support/Utf8.h"

#include <cstdint>
#include <cstdio>

namespace tfmc::runtime {
namespace {

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
      std::size_t length = support::utf8Length(text, i);
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

} // namespace tfmc::runtime
