//===- Lexer.h - Tokens of the .tfm model description language --*- C++ -*-===//
//
// A hand-written lexer for `.tfm` files. Newlines are tokens because they
// separate settings and sublayers, except inside parentheses, where (as in
// Python) they only continue the line. Lexical errors (a byte that is not
// UTF-8, a stray character, a number out of range) come back as an `Error`
// token carrying the message, so that the parser reports them in source order
// with everything else.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_LEXER_H
#define TFMC_FRONTEND_LEXER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tfmc::frontend {

enum class TokenKind {
  Identifier, // [A-Za-z_][A-Za-z0-9_]*
  Integer,    // -?[0-9]+, within int32
  Float,      // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with a '.' or exponent
  LBrace,
  RBrace,
  LParen,
  RParen,
  Equal,
  Comma,
  Plus,
  Newline,
  EndOfFile,
  Error, // `text` holds the diagnostic message.
};

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  /// The spelling as written; for `Error`, the message.
  std::string text;
  unsigned line = 1;
  unsigned col = 1;
  int64_t intValue = 0;    // For `Integer`.
  double floatValue = 0.0; // For `Integer` and `Float`.

  bool is(TokenKind k) const { return kind == k; }
  bool isIdentifier(std::string_view name) const {
    return kind == TokenKind::Identifier && text == name;
  }
};

/// How a token is named in "found ..." messages: `'vocab'`, `'{'`,
/// `end of line`, `end of file`.
std::string describe(const Token &token);

class Lexer {
public:
  explicit Lexer(std::string_view text) : source(text) {}

  /// The next token. After an `Error` or `EndOfFile` token, keeps returning
  /// that same token: the parser stops at the first error anyway.
  Token next();

private:
  char peekChar(size_t ahead = 0) const {
    return pos + ahead < source.size() ? source[pos + ahead] : '\0';
  }
  bool atEnd() const { return pos >= source.size(); }
  /// Consumes one byte that is not a line break.
  void bump() {
    ++pos;
    ++col;
  }

  Token make(TokenKind kind, unsigned line, unsigned col, std::string text);
  Token error(unsigned line, unsigned col, std::string message);

  /// Skips a `#` comment up to (not including) the line break; returns an
  /// error token if the comment holds bytes that are not UTF-8.
  bool skipComment(Token &errorToken);
  Token lexNumber();
  Token lexIdentifier();
  Token lexUnexpected();

  std::string_view source;
  size_t pos = 0;
  unsigned line = 1;
  unsigned col = 1;
  /// Newlines inside parentheses continue the line.
  int parenDepth = 0;
  bool done = false;
  Token last;
};


} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_LEXER_H
