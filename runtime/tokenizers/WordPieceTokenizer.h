//===- WordPieceTokenizer.h - BERT's vocab.txt ------------------*- C++ -*-===//
//
// BERT's tokenizer (Hugging Face BertTokenizer / tokenizers' BertNormalizer
// + BertPreTokenizer + WordPiece), from a checkpoint's vocab.txt (one token
// per line, its id the line number) and tokenizer_config.json
// (do_lower_case, default true; strip_accents, default do_lower_case;
// tokenize_chinese_chars, default true; unk/cls/sep tokens):
//   - normalization: control characters and U+FFFD removed, whitespace made
//     a space, CJK ideographs set apart by spaces, accents stripped (NFD,
//     marks of category Mn dropped), lower case;
//   - words: split at whitespace (dropped) and at each punctuation
//     character (kept alone: ASCII non-alphanumeric symbols and Unicode P*);
//   - WordPiece: the longest vocabulary prefix, then "##" continuations;
//     a word with no complete split, or longer than 100 characters, is
//     [UNK].
// Special tokens written in the text ([SEP], [MASK], ...) are kept whole.
// Prompts get [CLS] before and [SEP] after (ownSpecials). Decoding joins
// the tokens with spaces, glues "##" pieces, and cleans the spaces before
// punctuation and English contractions, as the WordPiece decoder does.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_WORDPIECETOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_WORDPIECETOKENIZER_H

#include "runtime/Tokenizer.h"

#include <memory>
#include <string>

namespace tfmc::runtime {

/// Loads DIR/vocab.txt and DIR/tokenizer_config.json (optional); the error
/// names the file (and the line of a bad vocabulary entry).
std::unique_ptr<Tokenizer> loadWordPieceTokenizer(const std::string &dir,
                                                  std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_WORDPIECETOKENIZER_H
