//===- MarianTokenizer.h - Marian: source.spm + vocab.json -----*- C++ -*-===//
//
// The tokenizer of Hugging Face's Marian translation models: two
// SentencePiece models, source.spm (the text to translate) and target.spm
// (the translation), read by Debian's libsentencepiece, and vocab.json, the
// model's ids of their pieces (piece -> id; shared by both sides).
//   encode: the special tokens (eos, unk, pad as spelled) are matched in
//     the text first, longest first, and kept whole; in each chunk between
//     them a leading language code such as ">>fra<<" (Hugging Face's
//     ">>.+<<" on the first line) is kept as one token, and the rest is
//     split into source.spm's pieces; each piece is mapped through
//     vocab.json, a piece that vocab.json lacks to unk_token's id. ownSpecials: eos_token
//     ("</s>") after the text; nothing before it.
//   decode: ids -> pieces through vocab.json; eos, unk and pad are skipped
//     (Hugging Face's skip_special_tokens), the rest decoded by target.spm,
//     "▁" made a space and the text stripped of surrounding spaces. An id
//     that is no piece decodes to U+FFFD.
// tokenizer_config.json (optional) gives eos_token, unk_token, pad_token
// (defaults "</s>", "<unk>", "<pad>"); separate_vocabs = true is refused.
// The decoder's first token (decoder_start_token_id) is the model's
// config.json's business, not the tokenizer's.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_MARIANTOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_MARIANTOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

#include <memory>
#include <string>

namespace tfmc::runtime {

/// Loads DIR's source.spm, target.spm, vocab.json and tokenizer_config.json;
/// errors name the file, e.g.
///   DIR: missing target.spm (a Marian tokenizer needs source.spm, target.spm and vocab.json)
std::unique_ptr<Tokenizer> loadMarianTokenizer(const std::string &dir,
                                               std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_MARIANTOKENIZER_H
