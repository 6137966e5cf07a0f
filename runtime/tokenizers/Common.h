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
#include <string>
#include <string_view>
#include <unordered_map>
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
