//===- MarianTokenizer.h - Marian's source.spm / target.spm -----*- C++ -*-===//
//
// Hugging Face MarianTokenizer (opus-mt translation models): a text is cut
// into pieces by the source language's SentencePiece model (source.spm,
// through Debian's libsentencepiece), each piece mapped to its id by
// vocab.json (a piece missing there is <unk>), and </s> appended; a
// leading language code (">>fr<<") is one token. Ids decode through
// vocab.json to pieces that the target language's model (target.spm)
// joins; special tokens (</s>, <pad>, <unk>) are skipped, as generate's
// output is decoded with skip_special_tokens. tokenizer_config.json may
// name other unk/eos/pad tokens; separate_vocabs is refused.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_MARIANTOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_MARIANTOKENIZER_H

#include "runtime/Tokenizer.h"

#include <memory>
#include <string>

namespace tfmc::runtime {

/// Loads DIR/source.spm, DIR/target.spm, DIR/vocab.json and
/// DIR/tokenizer_config.json (optional); the error names the file.
std::unique_ptr<Tokenizer> loadMarianTokenizer(const std::string &dir,
                                               std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_MARIANTOKENIZER_H
