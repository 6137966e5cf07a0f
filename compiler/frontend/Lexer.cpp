//===- Lexer.cpp - Tokens of the .tfm model description language ----------===//

#include "compiler/frontend/Lexer.h"
#include "support/Utf8.h"
#include "support/Text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace tfmc::frontend {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

// Sizes are int32 throughout the compiler and the runtime; rejecting larger
// literals here keeps every later computation free of overflow checks.
constexpr uint64_t kMaxInt = 2147483647ull;
constexpr uint64_t kMaxNegativeMagnitude = 2147483648ull;

} // namespace

std::string describe(const Token &token) {
  switch (token.kind) {
  case TokenKind::Newline:
    return "end of line";
  case TokenKind::EndOfFile:
    return "end of file";
  case TokenKind::Error:
    return "an invalid token";
  default:
    return support::quote(token.text);
  }
}

Token Lexer::make(TokenKind kind, unsigned tokLine, unsigned tokCol,
                  std::string text) {
  Token token;
  token.kind = kind;
  token.text = std::move(text);
  token.line = tokLine;
  token.col = tokCol;
  return token;
}

Token Lexer::error(unsigned tokLine, unsigned tokCol, std::string message) {
  done = true;
  last = make(TokenKind::Error, tokLine, tokCol, std::move(message));
  return last;
}

bool Lexer::skipComment(Token &errorToken) {
  // Comments may hold any text, but only as UTF-8: a stray byte usually means
  // the file is in another encoding, which is worth saying early.
  while (!atEnd() && peekChar() != '\n') {
    size_t len = support::utf8Length(source, pos);
    if (len == 0) {
      errorToken =
          error(line, col,
                fmt::format("invalid UTF-8 byte 0x{:02x}",
                            static_cast<unsigned char>(peekChar())));
      return false;
    }
    pos += len;
    col += static_cast<unsigned>(len);
  }
  return true;
}

Token Lexer::lexIdentifier() {
  unsigned startCol = col;
  size_t start = pos;
  while (isIdentChar(peekChar()))
    bump();
  return make(TokenKind::Identifier, line, startCol,
              std::string(source.substr(start, pos - start)));
}

Token Lexer::lexNumber() {
  unsigned startCol = col;
  size_t start = pos;
  bool negative = peekChar() == '-';
  if (negative)
    bump();
  // Accumulate with a cap instead of converting the text afterwards, so a
  // 40-digit literal neither overflows nor needs a big-number library.
  uint64_t magnitude = 0;
  bool tooLarge = false;
  while (isDigit(peekChar())) {
    if (!tooLarge) {
      magnitude = magnitude * 10 + static_cast<uint64_t>(peekChar() - '0');
      tooLarge = magnitude > kMaxNegativeMagnitude;
    }
    bump();
  }
  bool isFloat = false;
  if (peekChar() == '.' && isDigit(peekChar(1))) {
    isFloat = true;
    bump();
    while (isDigit(peekChar()))
      bump();
  }
  if (peekChar() == 'e' || peekChar() == 'E') {
    size_t ahead = 1;
    if (peekChar(ahead) == '+' || peekChar(ahead) == '-')
      ++ahead;
    if (isDigit(peekChar(ahead))) {
      isFloat = true;
      for (size_t i = 0; i < ahead; ++i)
        bump();
      while (isDigit(peekChar()))
        bump();
    }
  }
  // `12abc`, `1.`, `1e` and `1.2.3` are one malformed number, not a number
  // followed by something else.
  if (isIdentChar(peekChar()) || peekChar() == '.') {
    while (isIdentChar(peekChar()) || peekChar() == '.')
      bump();
    return error(line, startCol,
                 fmt::format("invalid number {}",
                             support::quote(source.substr(start, pos - start))));
  }

  std::string text(source.substr(start, pos - start));
  if (isFloat) {
    errno = 0;
    double value = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(value))
      return error(line, startCol,
                   fmt::format("number {} is too large (maximum {:g})",
                               support::escapeText(text), 1.79769313486231570e+308));
    // glibc also reports ERANGE for subnormal results; only a literal that
    // rounds to zero has lost its value.
    if (errno == ERANGE && value == 0.0)
      return error(line, startCol,
                   fmt::format("number {} is too small to represent",
                               support::escapeText(text)));
    Token token = make(TokenKind::Float, line, startCol, std::move(text));
    token.floatValue = value;
    return token;
  }

  if (negative ? tooLarge : magnitude > kMaxInt) {
    if (negative)
      return error(line, startCol,
                   fmt::format("number {} is too small (minimum -{})",
                               support::escapeText(text), kMaxNegativeMagnitude));
    return error(line, startCol,
                 fmt::format("number {} is too large (maximum {})",
                             support::escapeText(text), kMaxInt));
  }
  Token token = make(TokenKind::Integer, line, startCol, std::move(text));
  token.intValue = negative ? -static_cast<int64_t>(magnitude)
                            : static_cast<int64_t>(magnitude);
  token.floatValue = static_cast<double>(token.intValue);
  return token;
}

Token Lexer::lexUnexpected() {
  auto byte = static_cast<unsigned char>(peekChar());
  if (byte < 0x80) {
    if (byte > 0x20 && byte < 0x7F)
      return error(line, col,
                   fmt::format("unexpected character '{}'",
                               static_cast<char>(byte)));
    return error(line, col,
                 fmt::format("unexpected character 0x{:02x}", byte));
  }
  size_t len = support::utf8Length(source, pos);
  if (len == 0)
    return error(line, col, fmt::format("invalid UTF-8 byte 0x{:02x}", byte));

  // Decode only to name the code point; the sequence is known to be valid.
  uint32_t codePoint = byte & (0xFFu >> (len + 1));
  for (size_t i = 1; i < len; ++i)
    codePoint = (codePoint << 6) |
                (static_cast<unsigned char>(source[pos + i]) & 0x3Fu);
  // C1 controls and the Unicode line separators would break the one-line
  // diagnostic, so those are named by code point only.
  if (codePoint < 0xA0 || codePoint == 0x2028 || codePoint == 0x2029)
    return error(line, col,
                 fmt::format("unexpected character U+{:04X}", codePoint));
  return error(line, col,
               fmt::format("unexpected character '{}' (U+{:04X})",
                           source.substr(pos, len), codePoint));
}

Token Lexer::next() {
  if (done)
    return last;
  while (true) {
    if (atEnd()) {
      done = true;
      last = make(TokenKind::EndOfFile, line, col, "");
      return last;
    }
    char c = peekChar();
    unsigned tokCol = col;
    if (c == ' ' || c == '\t') {
      bump();
      continue;
    }
    // A lone '\r' is treated as blank space; "\r\n" is a line break, so
    // files written on Windows lex exactly like their Unix twins.
    if (c == '\r' && peekChar(1) != '\n') {
      bump();
      continue;
    }
    if (c == '\r' || c == '\n') {
      unsigned tokLine = line;
      pos += c == '\r' ? 2 : 1;
      ++line;
      col = 1;
      if (parenDepth > 0)
        continue;
      return make(TokenKind::Newline, tokLine, tokCol, "\n");
    }
    if (c == '#') {
      Token errorToken;
      if (!skipComment(errorToken))
        return errorToken;
      continue;
    }
    if (isIdentStart(c))
      return lexIdentifier();
    if (isDigit(c) || (c == '-' && isDigit(peekChar(1))))
      return lexNumber();

    TokenKind kind;
    switch (c) {
    case '{':
      kind = TokenKind::LBrace;
      break;
    case '}':
      kind = TokenKind::RBrace;
      break;
    case '(':
      kind = TokenKind::LParen;
      ++parenDepth;
      break;
    case ')':
      kind = TokenKind::RParen;
      if (parenDepth > 0)
        --parenDepth;
      break;
    case '=':
      kind = TokenKind::Equal;
      break;
    case ',':
      kind = TokenKind::Comma;
      break;
    case '+':
      kind = TokenKind::Plus;
      break;
    default:
      return lexUnexpected();
    }
    bump();
    return make(kind, line, tokCol, std::string(1, c));
  }
}

} // namespace tfmc::frontend
