//===- TemplateLexer.h - Chat templates to tokens ---------------*- C++ -*-===//
//
// The first half of TemplateParser: Jinja2's lexer, with Hugging Face's
// whitespace settings (trim_blocks, lstrip_blocks). Internal to
// runtime/serve.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TEMPLATELEXER_H
#define TFMC_RUNTIME_SERVE_TEMPLATELEXER_H

#include "runtime/serve/TemplateValue.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime::jinja {

[[noreturn]] void syntaxError(Location location, std::string reason);

enum class TokenKind : uint8_t {
  Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  Location location;
  std::string text; // Text, Name, String (unescaped), Operator
  int64_t integer = 0;
  double number = 0;
};

/// The tokens of a template: text (whitespace control applied), tag
/// delimiters and the tokens inside tags, then End. Checks the template's
/// size and that it is UTF-8 without NUL; throws TemplateFailure (Syntax).
std::vector<Token> lexTemplate(std::string_view source, std::size_t maxTemplateBytes);

} // namespace tfmc::runtime::jinja

#endif // TFMC_RUNTIME_SERVE_TEMPLATELEXER_H
