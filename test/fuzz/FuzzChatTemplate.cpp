//===- FuzzChatTemplate.cpp - The serve library's chat template engine ----===//
//
// The text of a chat template (tokenizer_config.json's "chat_template"),
// parsed and rendered as `NAME serve` renders one, with a fixed
// conversation (contents with quotes, braces, non-ASCII text and
// whitespace), tokens and a "tools" variable, under small bounds. Properties:
// every error is one line starting "chat template"; a rendering is valid
// UTF-8 within the output bound; rendering again gives the same text (a
// parsed template keeps no state between renderings).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "runtime/serve/ChatTemplate.h"
#include "support/Utf8.h"

using tfmc::runtime::ChatTemplate;
using tfmc::runtime::ChatTemplateError;
using tfmc::runtime::ChatTemplateInputs;
using tfmc::runtime::ChatTemplateLimits;

namespace {

void checkError(const ChatTemplateError &error) {
  std::string message = error.message();
  TFMC_FUZZ_CHECK(message.rfind("chat template", 0) == 0);
  TFMC_FUZZ_CHECK(message.find('\n') == std::string::npos);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ChatTemplateLimits limits;
  limits.maxOutputBytes = 1 << 16;
  limits.maxWorkBytes = 1 << 22;
  limits.maxIterations = 20000;
  ChatTemplateError error;
  auto chat = ChatTemplate::parse(tfmc::fuzz::asText(data, size), error, limits);
  if (!chat) {
    checkError(error);
    return 0;
  }
  ChatTemplateInputs inputs;
  inputs.messages = {{"system", "Be brief."},
                     {"user", "Hi {{ x }} {% if %} 'q' \"qq\" \xc3\xa9\xf0\x9f\x98\x80"},
                     {"assistant", "  ok  "},
                     {"user", "\n"}};
  inputs.bosToken = "<s>";
  inputs.eosToken = "</s>";
  inputs.addGenerationPrompt = true;
  inputs.variables = {{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {}}}}}}}};
  auto first = chat->render(inputs, error);
  if (!first) {
    checkError(error);
    return 0;
  }
  TFMC_FUZZ_CHECK(first->size() <= limits.maxOutputBytes);
  TFMC_FUZZ_CHECK(tfmc::support::isValidUtf8(*first));
  ChatTemplateError again;
  auto second = chat->render(inputs, again);
  TFMC_FUZZ_CHECK(second && *second == *first);
  return 0;
}
