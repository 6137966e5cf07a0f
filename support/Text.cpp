//===- Text.cpp - Messages that quote untrusted text ----------------------===//

#include "support/Text.h"
#include "support/Utf8.h"

#include <cstdint>
#include <cstdio>

namespace tfmc::support {
namespace {

void appendEscape(std::string &out, const char *format, unsigned value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, format, value);
  out += buffer;
}

/// What escapeInto writes: a quoted value, or a finished message line.
enum class Mode { Value, JsonValue, Line };

/// Escapes `text` into `out`, stopping after `limit` characters (a value)
/// or bytes (a line) of input.
void escapeInto(std::string &out, std::string_view text, std::size_t limit,
                Mode mode) {
  std::size_t pos = 0;
  for (std::size_t chars = 0; pos < text.size(); ++chars) {
    if ((mode == Mode::Line ? pos : chars) >= limit) {
      out += "...";
      return;
    }
    auto byte = static_cast<unsigned char>(text[pos]);
    if (byte >= 0x80) {
      uint32_t codePoint = 0;
      std::size_t length = decodeUtf8(text, pos, codePoint);
      if (length == 0) {
        appendEscape(out, "\\x%02x", byte);
        ++pos;
      } else {
        // C1 controls and the Unicode line and paragraph separators end a
        // line in some terminals and editors.
        if (codePoint < 0xA0 || codePoint == 0x2028 || codePoint == 0x2029)
          appendEscape(out, "\\u%04x", codePoint);
        else
          out.append(text.substr(pos, length));
        pos += length;
      }
      continue;
    }
    ++pos;
    if (mode == Mode::Line && (byte == '\n' || byte == '\r'))
      out += ' ';
    else if (mode == Mode::Line && (byte == '\t' || byte == '\\'))
      out += static_cast<char>(byte);
    else if (byte == '\n')
      out += "\\n";
    else if (byte == '\t')
      out += "\\t";
    else if (byte == '\\')
      out += "\\\\";
    else if (byte == '"' && mode == Mode::JsonValue)
      out += "\\\"";
    else if (byte < 0x20 || byte == 0x7f)
      appendEscape(out, "\\x%02x", byte);
    else
      out += static_cast<char>(byte);
  }
}

} // namespace

std::string escapeText(std::string_view text, std::size_t maxChars) {
  std::string out;
  escapeInto(out, text, maxChars, Mode::Value);
  return out;
}

std::string quote(std::string_view text, std::size_t maxChars) {
  std::string out = "'";
  escapeInto(out, text, maxChars, Mode::Value);
  return out + "'";
}

std::string quoteJson(std::string_view text, std::size_t maxChars) {
  std::string out = "\"";
  escapeInto(out, text, maxChars, Mode::JsonValue);
  return out + "\"";
}

std::string oneLine(std::string_view text) {
  std::string out;
  escapeInto(out, text, kMaxMessageBytes, Mode::Line);
  return out;
}

} // namespace tfmc::support
