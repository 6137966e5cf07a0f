//===- TemplateLexer.cpp - Chat templates to tokens -----------------------===//
//
// Jinja2's lexer (jinja2/lexer.py) restated: text up to the next {{, {% or
// {#; inside a tag, names, numbers, strings and operators up to its end
// marker at bracket depth 0. Whitespace control as transformers sets it:
// a `-` beside a marker strips the whitespace on that side; trim_blocks
// drops the first newline after a block or comment tag; lstrip_blocks drops
// the spaces and tabs between a line's start and a block or comment tag;
// `+` turns either off for its tag. \r\n and \r read as \n; one trailing
// newline of the template is dropped.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/TemplateLexer.h"

#include "runtime/serve/TemplateText.h"
#include "support/Text.h"
#include "support/Utf8.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tfmc::runtime::jinja {

void syntaxError(Location location, std::string reason) {
  throw TemplateFailure{TemplateFailure::Kind::Syntax, location, std::move(reason)};
}

namespace {

/// Byte offsets to (line, column in code points), for offsets that mostly
/// grow (the lexer's order).
class Locator {
public:
  explicit Locator(std::string_view source) : source_(source) {}

  Location at(std::size_t offset) {
    if (offset < offset_) {
      offset_ = 0;
      line_ = 1;
      column_ = 1;
    }
    for (; offset_ < offset && offset_ < source_.size(); ++offset_) {
      char c = source_[offset_];
      if (c == '\n') {
        ++line_;
        column_ = 1;
      } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
        ++column_;
      }
    }
    return {line_, column_};
  }

private:
  std::string_view source_;
  std::size_t offset_ = 0;
  uint32_t line_ = 1, column_ = 1;
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }
int hexDigit(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

class Lexer {
public:
  Lexer(std::string source) : src_(std::move(source)), locator_(src_) {}

  std::vector<Token> run() {
    bool lineStarting = true;
    while (pos_ < src_.size()) {
      std::size_t tag = findTagStart(pos_);
      std::string text = src_.substr(pos_, (tag == std::string::npos ? src_.size() : tag) - pos_);
      if (tag == std::string::npos) {
        emitText(pos_, std::move(text));
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      if (sign == '-') {
        text = pythonStrip(text, nullptr, false, true);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: whitespace between the line's start and the tag.
        std::size_t lineStart = text.rfind('\n');
        lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
        if ((lineStart > 0 || lineStarting) && lineStart < text.size() && allSpace(text, lineStart))
          text.resize(lineStart);
      }
      emitText(pos_, std::move(text));
      Location tagLocation = locator_.at(tag);
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#')
        lineStarting = lexComment(tagLocation);
      else
        lineStarting = lexTag(kind == '{', tagLocation);
    }
    Token end;
    end.kind = TokenKind::End;
    end.location = locator_.at(src_.size());
    tokens_.push_back(end);
    return std::move(tokens_);
  }

private:
  std::size_t findTagStart(std::size_t from) const {
    for (std::size_t at = src_.find('{', from); at != std::string::npos; at = src_.find('{', at + 1))
      if (at + 1 < src_.size() && (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#'))
        return at;
    return std::string::npos;
  }

  static bool allSpace(const std::string &text, std::size_t from) {
    for (std::size_t pos = from; pos < text.size();)
      if (!isPythonSpace(nextCodePoint(text, pos)))
        return false;
    return true;
  }

  void emitText(std::size_t offset, std::string text) {
    if (text.empty())
      return;
    Token token;
    token.kind = TokenKind::Text;
    token.location = locator_.at(offset);
    token.text = std::move(text);
    tokens_.push_back(std::move(token));
  }

  void skipSpace() {
    while (pos_ < src_.size()) {
      std::size_t next = pos_;
      if (!isPythonSpace(nextCodePoint(src_, next)))
        break;
      pos_ = next;
    }
  }

  bool startsWith(const char *text) const { return src_.compare(pos_, std::strlen(text), text) == 0; }

  /// `{# ... #}`; returns whether what it consumed ends a line.
  bool lexComment(Location start) {
    std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos)
      syntaxError(start, "unterminated comment: expected '#}'");
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    pos_ = end + 2;
    return finishTag(sign);
  }

  /// After a tag's closing marker: `-` strips the whitespace that follows,
  /// trim_blocks drops one newline after a block or comment tag.
  bool finishTag(char sign, bool block = true) {
    if (sign == '-') {
      std::size_t before = pos_;
      skipSpace();
      return pos_ > before && src_[pos_ - 1] == '\n';
    }
    if (sign != '+' && block && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      return true;
    }
    return false;
  }

  bool lexTag(bool variable, Location start) {
    Token begin;
    begin.kind = variable ? TokenKind::VariableBegin : TokenKind::BlockBegin;
    begin.location = start;
    tokens_.push_back(begin);
    if (!variable) {
      std::size_t save = pos_;
      skipSpace();
      if (src_.compare(pos_, 3, "raw") == 0 && (pos_ + 3 >= src_.size() || !isNameChar(src_[pos_ + 3])))
        syntaxError(start, "'raw' blocks are not supported");
      pos_ = save;
    }
    std::vector<char> balance;
    const char *close = variable ? "}}" : "%}";
    for (;;) {
      skipSpace();
      if (pos_ >= src_.size())
        syntaxError(start, std::string("unterminated tag: expected '") + close + "' before the end of the template");
      if (balance.empty()) {
        char sign = 0;
        if ((src_[pos_] == '-' || (!variable && src_[pos_] == '+')) && src_.compare(pos_ + 1, 2, close) == 0)
          sign = src_[pos_++];
        if (src_.compare(pos_, 2, close) == 0) {
          Token end;
          end.kind = variable ? TokenKind::VariableEnd : TokenKind::BlockEnd;
          end.location = locator_.at(pos_);
          tokens_.push_back(end);
          pos_ += 2;
          return finishTag(sign, !variable);
        }
      }
      lexToken(balance);
    }
  }

  void lexToken(std::vector<char> &balance) {
    Token token;
    token.location = locator_.at(pos_);
    char c = src_[pos_];
    if (isDigit(c)) {
      lexNumber(token);
    } else if (isNameStart(c)) {
      std::size_t start = pos_;
      while (pos_ < src_.size() && isNameChar(src_[pos_]))
        ++pos_;
      token.kind = TokenKind::Name;
      token.text = src_.substr(start, pos_ - start);
    } else if (c == '\'' || c == '"') {
      lexString(token);
    } else {
      static const char *const operators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%",
                                              "~",  "[",  "]",  "(",  ")",  "{",  "}", ">", "<", "=", ".",
                                              ":",  "|",  ",",  ";"};
      const char *match = nullptr;
      for (const char *op : operators)
        if (startsWith(op)) {
          match = op;
          break;
        }
      if (!match) {
        std::size_t next = pos_;
        nextCodePoint(src_, next);
        syntaxError(token.location, "unexpected character " + support::quote(src_.substr(pos_, next - pos_)));
      }
      token.kind = TokenKind::Operator;
      token.text = match;
      pos_ += token.text.size();
      if (token.text == "(" || token.text == "[" || token.text == "{") {
        balance.push_back(token.text == "(" ? ')' : token.text == "[" ? ']' : '}');
      } else if (token.text == ")" || token.text == "]" || token.text == "}") {
        if (balance.empty())
          syntaxError(token.location, "unexpected '" + token.text + "'");
        if (balance.back() != token.text[0])
          syntaxError(token.location, "unexpected '" + token.text + "', expected '" + balance.back() + "'");
        balance.pop_back();
      }
    }
    tokens_.push_back(std::move(token));
  }

  /// Digits with single underscores between them; returns them without.
  std::string digitRun() {
    std::string digits;
    while (pos_ < src_.size()) {
      if (isDigit(src_[pos_]))
        digits += src_[pos_++];
      else if (src_[pos_] == '_' && !digits.empty() && pos_ + 1 < src_.size() && isDigit(src_[pos_ + 1]))
        ++pos_;
      else
        break;
    }
    return digits;
  }

  void lexNumber(Token &token) {
    std::size_t start = pos_;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && std::strchr("xXoObB", src_[pos_ + 1]))
      syntaxError(token.location, "hexadecimal, octal and binary literals are not supported");
    bool afterDot = start > 0 && src_[start - 1] == '.';
    std::string text = digitRun();
    bool isFloat = false;
    if (!afterDot && pos_ + 1 < src_.size() && src_[pos_] == '.' && isDigit(src_[pos_ + 1])) {
      ++pos_;
      text += "." + digitRun();
      isFloat = true;
    }
    if (!afterDot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t save = pos_++;
      std::string exponent = "e";
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-'))
        exponent += src_[pos_++];
      if (pos_ < src_.size() && isDigit(src_[pos_])) {
        text += exponent + digitRun();
        isFloat = true;
      } else {
        pos_ = save;
      }
    }
    if (isFloat) {
      token.kind = TokenKind::Float;
      token.number = std::strtod(text.c_str(), nullptr);
      return;
    }
    // Jinja2 reads "01" as two integers; a leading zero starts only "0".
    if (text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos) {
      pos_ = start + 1;
      text = "0";
    }
    token.kind = TokenKind::Integer;
    errno = 0;
    unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || value > static_cast<unsigned long long>(INT64_MAX))
      syntaxError(token.location, "integer literal beyond 64 bits");
    token.integer = static_cast<int64_t>(value);
  }

  /// A string literal, unescaped as Python's "unicode-escape" codec does
  /// (what Jinja2 applies): \\ \' \" \a \b \f \n \r \t \v, \ooo, \xhh,
  /// \uXXXX, \UXXXXXXXX; a backslash before a newline joins the lines; an
  /// unknown escape keeps its backslash.
  void lexString(Token &token) {
    char quote = src_[pos_++];
    std::string value;
    for (;;) {
      if (pos_ >= src_.size())
        syntaxError(token.location, "unterminated string");
      char c = src_[pos_++];
      if (c == quote)
        break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= src_.size())
        syntaxError(token.location, "unterminated string");
      char e = src_[pos_++];
      switch (e) {
      case '\n': break;
      case '\\': value += '\\'; break;
      case '\'': value += '\''; break;
      case '"': value += '"'; break;
      case 'a': value += '\a'; break;
      case 'b': value += '\b'; break;
      case 'f': value += '\f'; break;
      case 'n': value += '\n'; break;
      case 'r': value += '\r'; break;
      case 't': value += '\t'; break;
      case 'v': value += '\v'; break;
      case 'x':
      case 'u':
      case 'U': {
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 0; i < digits; ++i) {
          int d = pos_ < src_.size() ? hexDigit(src_[pos_]) : -1;
          if (d < 0)
            syntaxError(token.location, std::string("truncated \\") + e + " escape in a string");
          cp = cp * 16 + static_cast<uint32_t>(d);
          ++pos_;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          syntaxError(token.location, "an escape in a string names no Unicode scalar value");
        support::appendUtf8(value, cp);
        break;
      }
      case 'N':
        syntaxError(token.location, "\\N{...} escapes are not supported");
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = static_cast<uint32_t>(e - '0');
          for (int i = 0; i < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++i)
            cp = cp * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
          support::appendUtf8(value, cp);
        } else {
          value += '\\';
          value += e;
        }
      }
    }
    token.kind = TokenKind::String;
    token.text = std::move(value);
  }

  std::string src_;
  Locator locator_;
  std::size_t pos_ = 0;
  std::vector<Token> tokens_;
};

/// Jinja2's source preparation: \r\n and \r become \n; one trailing newline
/// goes.
std::string normalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

} // namespace

std::vector<Token> lexTemplate(std::string_view source, std::size_t maxTemplateBytes) {
  if (source.size() > maxTemplateBytes)
    syntaxError({}, "the template is longer than " + std::to_string(maxTemplateBytes) + " bytes");
  std::string normalized = normalizeNewlines(source);
  for (std::size_t pos = 0; pos < normalized.size();) {
    std::size_t length = support::utf8Length(normalized, pos);
    if (length == 0)
      syntaxError(Locator(normalized).at(pos), "the template is not valid UTF-8");
    if (normalized[pos] == '\0')
      syntaxError(Locator(normalized).at(pos), "the template contains a NUL character");
    pos += length;
  }
  Lexer lexer(std::move(normalized));
  return lexer.run();
}

} // namespace tfmc::runtime::jinja
