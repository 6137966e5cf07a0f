//===- HfTokenizer.h - tokenizer.json (Hugging Face tokenizers) -*- C++ -*-===//
//
// A Hugging Face `tokenizers` file whose model is BPE, in the two forms the
// Llama family ships:
//   - byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM): pre_tokenizer Split
//     (a regex, matched with Oniguruma, the engine `tokenizers` itself
//     uses) and/or ByteLevel, decoder ByteLevel;
//   - SentencePiece-style BPE (Llama 2, Mistral, TinyLlama): normalizer
//     Prepend("▁") + Replace(" ", "▁") or pre_tokenizer Metaspace,
//     byte_fallback (<0x0A> tokens), decoder Replace + ByteFallback + Fuse +
//     Strip (or Metaspace).
// Supported components, each checked when loading:
//   normalizer     Sequence, Prepend, Replace (String pattern), NFC
//   pre_tokenizer  Sequence, Split (Regex or String; Isolated or Removed,
//                  not inverted), ByteLevel, Metaspace, Digits
//   model          BPE (merges as "a b" strings or ["a", "b"] pairs;
//                  byte_fallback, unk_token, fuse_unk, ignore_merges)
//   decoder        Sequence, ByteLevel, Replace (String), ByteFallback,
//                  Fuse, Strip, Metaspace
//   post_processor TemplateProcessing, ByteLevel, Sequence
//   added_tokens   matched in the raw text before anything else, longest
//                  first; lstrip and rstrip take the White_Space before and
//                  after the token (single_word is refused)
// Anything else is a one-line error naming the file and the JSON path:
//   DIR/tokenizer.json: normalizer.normalizers[0]: type 'NFKC' is not supported
//
// Decoding keeps bytes raw where the `tokenizers` library would put U+FFFD
// for a byte-fallback run that is not UTF-8, so that a generation cut in
// the middle of a character can be printed once it is complete.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_HFTOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_HFTOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

#include <memory>
#include <string>

namespace tfmc::runtime {

/// Loads `path` (a tokenizer.json); messages and directory() name it.
std::unique_ptr<Tokenizer> loadHfTokenizer(const std::string &path,
                                           std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_HFTOKENIZER_H
