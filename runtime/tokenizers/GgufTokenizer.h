//===- GgufTokenizer.h - The tokenizer of a GGUF file's metadata -*- C++ -*-===//
//
// llama.cpp keeps a model's tokenizer in its GGUF file's metadata
// (tokenizer.ggml.*). This builds it from the metadata alone (support/Gguf.h
// reads the header and metadata, never the tensors) and tokenizes as
// llama.cpp's llama-vocab.cpp does (docs/gguf.md, "The tokenizer"):
//   - tokenizer.ggml.model "gpt2": byte-level BPE over tokenizer.ggml.tokens
//     and tokenizer.ggml.merges (BpeModel, Common.h), the text split first
//     by the pre-tokenizer tokenizer.ggml.pre names: "default" (or none),
//     "gpt-2", "llama-bpe" (Llama 3; also "llama3", "llama-v3"), "qwen2";
//   - tokenizer.ggml.model "llama": SentencePiece-style, merged by the
//     tokens' tokenizer.ggml.scores as llama.cpp's llm_tokenizer_spm does,
//     spaces escaped as U+2581, a space before the text
//     (tokenizer.ggml.add_space_prefix, default true), bytes without a
//     token as their <0xXX> tokens.
// Control, user-defined and unknown tokens (tokenizer.ggml.token_type 3, 4,
// 2) are matched in the text first, longest first, as llama.cpp does for
// prompts (llama-cli and llama-server tokenize with parse_special). They
// decode to their text; unused tokens (5) decode to nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_GGUFTOKENIZER_H
#define TFMC_RUNTIME_TOKENIZERS_GGUFTOKENIZER_H

#include "runtime/tokenizers/Tokenizer.h"

#include <memory>
#include <optional>
#include <string>

namespace tfmc::runtime {

/// Whether `path` is a regular file that starts with GGUF's magic.
bool isGgufFile(const std::string &path);

/// The tokenizer in the GGUF file `path`'s metadata. On failure nothing,
/// with `error` one line naming the file and the key, e.g.
///   model.gguf: no tokenizer: the file has no tokenizer.ggml.* keys
///   model.gguf: key 'tokenizer.ggml.pre' is 'deepseek-llm', which tfmc does not implement (...)
std::unique_ptr<Tokenizer> loadGgufTokenizer(const std::string &path,
                                             std::string &error);

/// What a prompt gets and where generation stops, from the metadata of the
/// file `tokenizer` was loaded from (a loadGgufTokenizer tokenizer): BOS
/// when tokenizer.ggml.add_bos_token (default: true for "llama" and Llama
/// 3's pre-tokenizer, as llama.cpp), EOS after it when add_eos_token, and
/// eos = tokenizer.ggml.eos_token_id, eot_token_id, eom_token_id.
bool readGgufPromptTokens(const Tokenizer &tokenizer, PromptTokens &tokens,
                          std::string &error);

/// What a chat template needs from the file `tokenizer` was loaded from (a
/// loadGgufTokenizer tokenizer): tokenizer.chat_template, if the file has
/// one, and the texts of the bos and eos tokens (the template's bos_token
/// and eos_token), if it names them. False for another tokenizer.
struct GgufChatInfo {
  std::optional<std::string> chatTemplate, bos, eos;
};
bool ggufChatInfo(const Tokenizer &tokenizer, GgufChatInfo &info);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TOKENIZERS_GGUFTOKENIZER_H
