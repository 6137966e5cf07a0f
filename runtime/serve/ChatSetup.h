//===- ChatSetup.h - A tokenizer's chat template and its tokens --*- C++ -*-===//
//
// What a chat request is rendered with: the chat template of a tokenizer
// directory's tokenizer_config.json ("chat_template", with "bos_token" and
// "eos_token"), or of a GGUF file's metadata (tokenizer.chat_template and
// the texts of its BOS and EOS tokens).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_CHATSETUP_H
#define TFMC_RUNTIME_SERVE_CHATSETUP_H

#include "runtime/serve/ChatTemplate.h"
#include "runtime/serve/ToolCalls.h"
#include "runtime/tokenizers/Tokenizer.h"

#include <optional>
#include <string>

namespace tfmc::runtime::serve {

struct ChatSetup {
  std::optional<ChatTemplate> chatTemplate;
  std::optional<std::string> bos, eos;
  /// How the template asks the model to call a tool (ToolCalls.h).
  ToolCallSyntax toolCalls = ToolCallSyntax::None;
  /// Where the template would be, for the refusal of a chat request when
  /// there is none ("DIR/tokenizer_config.json has no chat_template").
  std::string missing;
};

/// The chat setup of the tokenizer loaded from `dir`. No template is not
/// an error (`chatTemplate` stays empty); a file or template that cannot
/// be read is: false, with one line naming the file (and key).
bool readChatSetup(const std::string &dir, const Tokenizer &tokenizer,
                   ChatSetup &setup, std::string &error);

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_CHATSETUP_H
