//===- Common.h - What the runtime's tokenizers share -----------*- C++ -*-===//
//
// Internal to runtime/tokenizers/Tokenizer.cpp and runtime/tokenizers/: UTF-8
// (support/Utf8's decoder and encoder), the code point classes of UnicodeTables.inc, GPT-2's byte-to-character
// mapping (byte-level BPE), the merge loop of byte-pair encoding and the
// messages' quoting. Defined in runtime/tokenizers/Tokenizer.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TOKENIZERS_COMMON_H
#define TFMC_RUNTIME_TOKENIZERS_COMMON_H

#include "support/Utf8.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tfmc::runtime::tokenizers {

enum CharClass : uint8_t { kOther, kLetter, kNumber, kSpace };

/// \p{L}, \p{N}, White_Space (UnicodeTables.inc), or none of them.
CharClass classify(uint32_t cp);

/// support/Utf8.h's decoder and encoder, which every tokenizer uses.
using support::appendUtf8;
using support::decodeUtf8;

extern const char kReplacement[]; // U+FFFD in UTF-8

/// GPT-2's bytes_to_unicode: byte -> the code point that stands for it.
const std::array<uint32_t, 256> &byteTable();
/// The bytes a byte-level token stands for (other characters kept).
std::string tokenToBytes(std::string_view token);
/// The byte a byte-fallback token stands for ("<0x0A>" -> 0x0a, either
/// case of hex digit); -1 for any other token.
int byteFallbackValue(std::string_view token);
/// Every occurrence of `from` (not empty) in `text` replaced by `to`, left
/// to right, without rescanning what was put in.
void replaceAll(std::string &text, std::string_view from, std::string_view to);

bool exists(const std::string &path);

/// Reads and parses the JSON file `path` (support/Json.h: nesting bounded,
/// keys unique); the error names the file (and the line and column of a
/// syntax error).
bool readJsonFile(const std::string &path, nlohmann::json &root,
                  std::string &error);

/// Byte-pair merges: (left id, right id) -> rank (lower first) and result.
struct MergeTable {
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  std::unordered_map<uint64_t, Merge> merges;
};

/// Merges `symbols` in place: always the best-ranked adjacent pair, every
/// non-overlapping occurrence left to right, until no pair merges.
void applyMerges(std::vector<int32_t> &symbols, const MergeTable &table);

/// A byte-pair-encoding model built from in-memory lists (tokenizer.json's
/// model, a GGUF file's tokenizer.ggml.tokens and merges): the vocabulary,
/// the ranked merges, and what a character without a token becomes.
/// Defined in runtime/tokenizers/Tokenizer.cpp.
struct BpeModel {
  /// token -> id.
  std::unordered_map<std::string, int32_t> vocab;
  MergeTable merges;
  /// A character with no token becomes its bytes' <0xXX> tokens
  /// (byteFallbackIds, -1 for none), else unk (one for a run of them with
  /// fuseUnk), else nothing.
  bool byteFallback = false;
  bool fuseUnk = false;
  /// A piece that is a token as a whole is that token (Llama 3).
  bool ignoreMerges = false;
  int32_t unk = -1;
  std::array<int32_t, 256> byteFallbackIds = filledByteIds();

  /// Adds the merge LEFT RIGHT with `rank` (the first of duplicates wins),
  /// or returns false with `missing` the first of LEFT, RIGHT and
  /// LEFT + RIGHT that is not in the vocabulary.
  bool addMerge(const std::string &left, const std::string &right,
                int32_t rank, std::string &missing);
  /// Appends the ids of one pre-tokenized piece: one symbol per UTF-8
  /// character, merged by rank (applyMerges). Pieces and their ids are
  /// cached (bounded). Not thread-safe.
  void encodePiece(const std::string &piece, std::vector<int64_t> &ids);

private:
  static std::array<int32_t, 256> filledByteIds() {
    std::array<int32_t, 256> ids;
    ids.fill(-1);
    return ids;
  }
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

/// An Oniguruma regex (Ruby syntax over UTF-8, the engine Hugging Face's
/// tokenizers use): tokenizer.json's Split patterns and the pre-tokenizer
/// patterns of GGUF files. Defined in runtime/tokenizers/HfTokenizer.cpp.
class Regex {
public:
  /// Compiles `pattern`; on failure false, with `error` Oniguruma's reason
  /// (one line).
  bool compile(const std::string &pattern, std::string &error);
  /// The [start, end) byte ranges of the matches in `text`, left to right,
  /// not overlapping; empty matches are skipped.
  std::vector<std::pair<std::size_t, std::size_t>>
  findAll(const std::string &text) const;
  bool empty() const { return !regex_; }

private:
  std::shared_ptr<void> regex_;
};

/// id -> token, stored sparsely as Hugging Face's tokenizers store theirs
/// (a map): a vocabulary may have gaps, and one stray id of 100,000,000 in
/// a 17 KB file costs one entry, where a table indexed by id took 3.1 GB
/// and seconds to fill (issue 25).
class TokenTable {
public:
  /// Gives `id` its token; false (and nothing changes) when it has one.
  bool insert(int64_t id, std::string token) {
    if (!tokens_.emplace(id, std::move(token)).second)
      return false;
    size_ = std::max(size_, id + 1);
    return true;
  }
  /// Gives `id` its token, replacing any it had.
  void assign(int64_t id, std::string token) {
    tokens_[id] = std::move(token);
    size_ = std::max(size_, id + 1);
  }
  bool has(int64_t id) const { return tokens_.count(id) != 0; }
  /// The token of an id that has one (check `has` first).
  const std::string &at(int64_t id) const { return tokens_.at(id); }
  /// One more than the largest id.
  int64_t size() const { return size_; }

private:
  std::unordered_map<int64_t, std::string> tokens_;
  int64_t size_ = 0;
};

} // namespace tfmc::runtime::tokenizers

#endif // TFMC_RUNTIME_TOKENIZERS_COMMON_H
