//===- Quote.cpp - User text as one-line messages show it -----------------===//

#include "compiler/frontend/Quote.h"
#include "support/Utf8.h"

#include <fmt/format.h>

namespace tfmc::frontend {

std::string printable(std::string_view text, size_t maxChars) {
  std::string out;
  size_t chars = 0;
  for (size_t pos = 0; pos < text.size(); ++chars) {
    if (chars == maxChars)
      return out + "...";
    auto byte = static_cast<unsigned char>(text[pos]);
    if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte == '\\') {
      // Doubled so that an escape in the output always means one.
      out += "\\\\";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else if (byte < 0x80) {
      out += static_cast<char>(byte);
    } else if (uint32_t codePoint = 0;
               size_t len = support::decodeUtf8(text, pos, codePoint)) {
      // C1 controls and the Unicode line and paragraph separators end a
      // line in some terminals and editors.
      if (codePoint < 0xA0 || codePoint == 0x2028 || codePoint == 0x2029)
        out += fmt::format("\\u{:04x}", codePoint);
      else
        out.append(text.substr(pos, len));
      pos += len;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
    ++pos;
  }
  return out;
}

std::string quoted(std::string_view text, size_t maxChars) {
  return "'" + printable(text, maxChars) + "'";
}

} // namespace tfmc::frontend
