//===- SentencePieceTokenizer.h - tokenizer.model ---------------*- C++ -*-===//
//
// A SentencePiece model file (tokenizer.model: Llama 2, Mistral, TinyLlama),
// encoded and decoded by Debian's libsentencepiece, the reference
// implementation, with the model's own normalization. Control tokens
// (<s>, </s>) decode to nothing, as SentencePiece does; an id outside the
// vocabulary decodes to U+FFFD. Its BOS (bos_id) is added to prompts unless
// tokenizer_config.json says add_bos_token = false (PromptTokens.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_SENTENCEPIECETOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_SENTENCEPIECETOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

#include <memory>
#include <string>

namespace sentencepiece {
class SentencePieceProcessor;
} // namespace sentencepiece

namespace tfmc::runtime {

/// Reads the SentencePiece model file `path` into `processor` (the
/// runtime's input-file checks apply); the error names the file and says
/// why the library refused it.
bool loadSentencePieceModel(const std::string &path,
                            sentencepiece::SentencePieceProcessor &processor,
                            std::string &error);

/// Loads `path` (a tokenizer.model); the error names it.
std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const std::string &path,
                                                      std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_SENTENCEPIECETOKENIZER_H
