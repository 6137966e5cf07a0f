//===- Tokenizer.cpp - GPT-2 byte-level BPE tokenizer ---------------------===//
//
// See Tokenizer.h. nlohmann's exceptions stop in `load`; nothing else here
// throws but std::bad_alloc.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizers/Tokenizer.h"
#include "support/FileIO.h"
#include "support/Json.h"
#include "support/Text.h"
#include "runtime/tokenizers/Common.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <queue>
#include <set>
#include <sstream>
#include <utility>

#include <sys/stat.h>

namespace tfmc::runtime {

namespace tokenizers {

//===----------------------------------------------------------------------===//
// Code points
//===----------------------------------------------------------------------===//

namespace {
struct CharRange {
  uint32_t first;
  uint32_t last;
  CharClass cls;
};

constexpr CharRange kCharRanges[] = {
#include "runtime/tokenizers/UnicodeTables.inc"
};
} // namespace

CharClass classify(uint32_t cp) {
  if (cp < 0x80) {
    if (cp >= 'a' && cp <= 'z')
      return kLetter;
    if (cp >= 'A' && cp <= 'Z')
      return kLetter;
    if (cp >= '0' && cp <= '9')
      return kNumber;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d))
      return kSpace;
    return kOther;
  }
  const CharRange *end = std::end(kCharRanges);
  const CharRange *it = std::upper_bound(
      std::begin(kCharRanges), end, cp,
      [](uint32_t value, const CharRange &range) { return value < range.first; });
  if (it == std::begin(kCharRanges))
    return kOther;
  --it;
  return cp <= it->last ? it->cls : kOther;
}


const char kReplacement[] = "\xef\xbf\xbd"; // U+FFFD

//===----------------------------------------------------------------------===//
// GPT-2's bytes_to_unicode
//===----------------------------------------------------------------------===//

namespace {
/// byte -> code point: the printable bytes ('!'..'~', '¡'..'¬', '®'..'ÿ')
/// stand for themselves; the other 68, in byte order, for U+0100 onwards.
std::array<uint32_t, 256> byteToCodePoint() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
                     (b >= 0xae && b <= 0xff);
    table[b] = printable ? b : next++;
  }
  return table;
}

} // namespace

const std::array<uint32_t, 256> &byteTable() {
  static const std::array<uint32_t, 256> table = byteToCodePoint();
  return table;
}

namespace {
/// code point -> byte, or -1 for a code point no byte maps to.
int codePointToByte(uint32_t cp) {
  static const std::array<int16_t, 324> inverse = [] {
    std::array<int16_t, 324> table;
    table.fill(-1);
    const std::array<uint32_t, 256> &forward = byteTable();
    for (int b = 0; b < 256; ++b)
      table[forward[b]] = static_cast<int16_t>(b);
    return table;
  }();
  return cp < inverse.size() ? inverse[cp] : -1;
}

} // namespace

void replaceAll(std::string &text, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = text.find(from, at)) != std::string::npos;
       at = hit + from.size())
    out.append(text, at, hit - at).append(to);
  out.append(text, at, std::string::npos);
  text = std::move(out);
}

int byteFallbackValue(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>')
    return -1;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (digit < 0)
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

/// The bytes a vocabulary token stands for (characters outside the mapping
/// kept as their UTF-8). `token` is valid UTF-8 (nlohmann checks strings).
std::string tokenToBytes(std::string_view token) {
  std::string bytes;
  std::size_t i = 0;
  while (i < token.size()) {
    uint32_t cp = 0;
    std::size_t length = decodeUtf8(token, i, cp);
    if (length == 0) { // not expected; keep the byte
      bytes += token[i++];
      continue;
    }
    int b = codePointToByte(cp);
    if (b >= 0)
      bytes += static_cast<char>(b);
    else
      bytes.append(token.substr(i, length));
    i += length;
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

void applyMerges(std::vector<int32_t> &ids, const MergeTable &table) {
  const std::size_t n = ids.size();
  if (n < 2)
    return;
  // One symbol per initial id in a linked list; a symbol keeps its first
  // index, and a merge keeps the left one (the right one dies).
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols(n);
  for (std::size_t k = 0; k < n; ++k)
    symbols[k] = Symbol{ids[k], static_cast<int32_t>(k) - 1,
                        k + 1 < n ? static_cast<int32_t>(k + 1) : -1};

  // Candidate merges, best rank first, then leftmost; stale entries (a
  // symbol since merged away or changed) are skipped when they come up.
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t leftId;
    int32_t rightId;
    bool operator>(const Candidate &other) const {
      return rank != other.rank ? rank > other.rank : left > other.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>,
                      std::greater<Candidate>>
      queue;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0)
      return;
    auto it = table.merges.find(MergeTable::key(symbols[left].id, symbols[right].id));
    if (it != table.merges.end())
      queue.push(Candidate{it->second.rank, left, right, symbols[left].id,
                           symbols[right].id});
  };
  for (std::size_t k = 0; k + 1 < n; ++k)
    consider(static_cast<int32_t>(k), static_cast<int32_t>(k + 1));

  std::vector<Candidate> batch;
  while (!queue.empty()) {
    // All occurrences of the best pair, left to right, as one pass (as
    // GPT-2 does): pairs this pass creates wait for the next one, even a
    // better one (possible only with an inconsistent merges.txt).
    const int32_t rank = queue.top().rank;
    batch.clear();
    while (!queue.empty() && queue.top().rank == rank) {
      batch.push_back(queue.top());
      queue.pop();
    }
    const int32_t result = table.merges.at(MergeTable::key(batch[0].leftId, batch[0].rightId)).result;
    for (const Candidate &c : batch) {
      Symbol &left = symbols[c.left];
      if (left.id != c.leftId || left.next != c.right ||
          symbols[c.right].id != c.rightId)
        continue; // stale
      Symbol &right = symbols[c.right];
      left.id = result;
      left.next = right.next;
      if (right.next >= 0)
        symbols[right.next].prev = c.left;
      right.id = -1;
      right.prev = right.next = -1;
      consider(left.prev, c.left);
      consider(c.left, left.next);
    }
  }

  ids.clear();
  for (int32_t k = 0; k >= 0; k = symbols[k].next)
    ids.push_back(symbols[k].id);
}

bool BpeModel::addMerge(const std::string &left, const std::string &right,
                        int32_t rank, std::string &missing) {
  auto l = vocab.find(left), r = vocab.find(right);
  std::string merged = left + right;
  auto result = vocab.find(merged);
  if (l == vocab.end() || r == vocab.end() || result == vocab.end()) {
    missing = l == vocab.end()   ? left
              : r == vocab.end() ? right
                                 : merged;
    return false;
  }
  merges.merges.emplace(MergeTable::key(l->second, r->second),
                        MergeTable::Merge{rank, result->second});
  return true;
}

void BpeModel::encodePiece(const std::string &piece,
                           std::vector<int64_t> &ids) {
  if (ignoreMerges) {
    auto whole = vocab.find(piece);
    if (whole != vocab.end()) {
      ids.push_back(whole->second);
      return;
    }
  }
  constexpr std::size_t kMaxCachedPiece = 256;
  constexpr std::size_t kMaxCacheEntries = 1 << 16;
  if (piece.size() <= kMaxCachedPiece) {
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  // One symbol per character; a character with no token becomes its bytes'
  // <0xXX> tokens (byte_fallback), else unk (fused with an unk before it
  // when fuse_unk), else nothing, as in `tokenizers`.
  std::vector<int32_t> symbols;
  for (std::size_t i = 0; i < piece.size();) {
    uint32_t cp = 0;
    std::size_t length = std::max<std::size_t>(decodeUtf8(piece, i, cp), 1);
    auto it = vocab.find(piece.substr(i, length));
    if (it != vocab.end()) {
      symbols.push_back(it->second);
    } else {
      bool allBytes = byteFallback;
      for (std::size_t k = i; k < i + length && allBytes; ++k)
        allBytes = byteFallbackIds[static_cast<unsigned char>(piece[k])] >= 0;
      if (allBytes) {
        for (std::size_t k = i; k < i + length; ++k)
          symbols.push_back(
              byteFallbackIds[static_cast<unsigned char>(piece[k])]);
      } else if (unk >= 0 &&
                 !(fuseUnk && !symbols.empty() && symbols.back() == unk)) {
        symbols.push_back(unk);
      }
    }
    i += length;
  }
  applyMerges(symbols, merges);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
  if (piece.size() <= kMaxCachedPiece) {
    if (cache_.size() >= kMaxCacheEntries)
      cache_.clear();
    cache_.emplace(piece, std::move(symbols));
  }
}

bool readJsonFile(const std::string &path, nlohmann::json &root,
                  std::string &error) {
  std::string text;
  if (!support::readRegularFile(path, text, error))
    return false;
  // Nesting is bounded while parsing (support/Json.h), before a deep value
  // can exhaust the stack of the code that walks it (a Sequence of
  // Sequences...).
  support::JsonError failure;
  std::optional<nlohmann::json> parsed = support::parseJson(text, failure);
  if (!parsed) {
    error = support::oneLine(failure.message(path));
    return false;
  }
  root = std::move(*parsed);
  return true;
}

} // namespace tokenizers

namespace {

using Json = nlohmann::json;
using namespace tokenizers;

/// vocab.json is one object of scalars: nesting past this is refused while
/// parsing, before a deep value can exhaust the stack of anything that
/// walks it.
constexpr int kMaxVocabDepth = 8;

/// A JSON value as messages show it: scalars as JSON, cut; containers by
/// kind only (dumping one could be long or deeply recursive).
std::string describe(const Json &value) {
  if (value.is_array() || value.is_object())
    return value.is_array() ? "an array" : "an object";
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return support::escapeText(text);
}

} // namespace

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

std::optional<Gpt2Tokenizer> Gpt2Tokenizer::load(const std::string &dir,
                                                 std::string &error) {
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0) {
    error = fmt::format("{}: no such directory (a GPT-2 tokenizer is a "
                        "directory holding vocab.json and merges.txt)",
                        dir);
    return std::nullopt;
  }
  if (!S_ISDIR(info.st_mode)) {
    error = fmt::format("{}: not a directory (a GPT-2 tokenizer is a "
                        "directory holding vocab.json and merges.txt)",
                        dir);
    return std::nullopt;
  }
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/')
    prefix += '/';
  const std::string vocabPath = prefix + "vocab.json";
  const std::string mergesPath = prefix + "merges.txt";
  for (const char *name : {"vocab.json", "merges.txt"}) {
    if (!exists(prefix + name)) {
      error = fmt::format("{}: missing {} (a GPT-2 tokenizer needs "
                          "vocab.json and merges.txt)",
                          dir, name);
      return std::nullopt;
    }
  }

  Gpt2Tokenizer tokenizer;
  tokenizer.dir_ = dir;

  // vocab.json: {"token": id, ...}.
  std::string text;
  if (!support::readRegularFile(vocabPath, text, error))
    return std::nullopt;
  support::JsonError failure;
  std::optional<Json> parsed = support::parseJson(text, failure, kMaxVocabDepth);
  if (!parsed && failure.duplicateKey && failure.duplicateParent.empty()) {
    error = fmt::format("{}: token {} appears twice", vocabPath,
                        support::quoteJson(*failure.duplicateKey));
    return std::nullopt;
  }
  if (!parsed) {
    error = support::oneLine(failure.message(vocabPath));
    if (failure.line == 0)
      error += "; expected one JSON object mapping each token to its id";
    return std::nullopt;
  }
  Json root = std::move(*parsed);
  if (!root.is_object()) {
    error = fmt::format("{}: expected a JSON object mapping each token to "
                        "its id, got {}",
                        vocabPath, root.type_name());
    return std::nullopt;
  }
  if (root.empty()) {
    error = fmt::format("{}: no tokens", vocabPath);
    return std::nullopt;
  }
  constexpr int64_t kMaxId = INT32_MAX - 1;
  std::unordered_map<int64_t, const std::string *> tokenOfId;
  tokenizer.vocab_.reserve(root.size());
  for (auto it = root.begin(); it != root.end(); ++it) {
    const Json &value = it.value();
    std::optional<int64_t> id;
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() <= static_cast<uint64_t>(kMaxId))
        id = static_cast<int64_t>(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      int64_t v = value.get<int64_t>();
      if (v >= 0 && v <= kMaxId)
        id = v;
    }
    if (!id) {
      error = fmt::format("{}: token {} has id {}; expected an integer "
                          "in [0, {}]",
                          vocabPath, support::quoteJson(it.key()), describe(value),
                          kMaxId);
      return std::nullopt;
    }
    auto [entry, inserted] = tokenizer.vocab_.emplace(it.key(),
                                                      static_cast<int32_t>(*id));
    (void)inserted;
    auto [other, fresh] = tokenOfId.emplace(*id, &entry->first);
    if (!fresh) {
      error = fmt::format("{}: id {} is given to both {} and {}", vocabPath,
                          *id, support::quoteJson(*other->second), support::quoteJson(it.key()));
      return std::nullopt;
    }
  }
  for (const auto &[id, token] : tokenOfId)
    tokenizer.tokenBytes_.insert(id, tokenToBytes(*token));
  root = Json();
  for (int b = 0; b < 256; ++b) {
    std::string token;
    appendUtf8(token, byteTable()[b]);
    auto it = tokenizer.vocab_.find(token);
    if (it == tokenizer.vocab_.end()) {
      error = fmt::format("{}: no token {} for byte 0x{:02x} (a byte-level "
                          "vocabulary has a token for each of the 256 bytes)",
                          vocabPath, support::quoteJson(token), b);
      return std::nullopt;
    }
    tokenizer.byteIds_[b] = it->second;
  }

  // merges.txt: "#version: ..." then "LEFT RIGHT" per line, best first.
  if (!support::readRegularFile(mergesPath, text, error))
    return std::nullopt;
  std::size_t lineNumber = 0;
  int32_t rank = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty())
      continue;
    if (lineNumber == 1 && line.substr(0, 8) == "#version")
      continue;
    std::string lineError;
    if (!validateUtf8(line, lineError)) {
      error = fmt::format("{}:{}: not valid UTF-8: {}", mergesPath, lineNumber,
                          support::quoteJson(line));
      return std::nullopt;
    }
    std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 ||
        space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      error = fmt::format("{}:{}: expected two tokens separated by one "
                          "space, got {}",
                          mergesPath, lineNumber, support::quoteJson(line));
      return std::nullopt;
    }
    std::string left(line.substr(0, space));
    std::string right(line.substr(space + 1));
    auto leftIt = tokenizer.vocab_.find(left);
    auto rightIt = tokenizer.vocab_.find(right);
    auto resultIt = tokenizer.vocab_.find(left + right);
    const std::string *missing =
        leftIt == tokenizer.vocab_.end()    ? &left
        : rightIt == tokenizer.vocab_.end() ? &right
                                            : nullptr;
    if (missing) {
      error = fmt::format("{}:{}: token {} is not in vocab.json", mergesPath,
                          lineNumber, support::quoteJson(*missing));
      return std::nullopt;
    }
    if (resultIt == tokenizer.vocab_.end()) {
      error = fmt::format("{}:{}: the merged token {} is not in vocab.json",
                          mergesPath, lineNumber, support::quoteJson(left + right));
      return std::nullopt;
    }
    // A repeated merge keeps its first (best) rank.
    tokenizer.merges_.merges.emplace(
        MergeTable::key(leftIt->second, rightIt->second),
        MergeTable::Merge{rank, resultIt->second});
    if (rank == INT32_MAX) {
      error = fmt::format("{}:{}: too many merges", mergesPath, lineNumber);
      return std::nullopt;
    }
    ++rank;
  }
  return tokenizer;
}

std::optional<int64_t> Gpt2Tokenizer::tokenId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end())
    return std::nullopt;
  return it->second;
}

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

bool Tokenizer::validateUtf8(std::string_view text, std::string &error) {
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp = 0;
    std::size_t length = decodeUtf8(text, i, cp);
    if (length == 0) {
      error = fmt::format("text is not valid UTF-8: byte 0x{:02x} at offset {}",
                          c, i);
      return false;
    }
    i += length;
  }
  return true;
}

std::vector<std::string> tokenBytesInContext(Tokenizer &tokenizer,
                                             int64_t vocab) {
  std::vector<std::string> bytes(static_cast<std::size_t>(vocab));
  std::vector<int64_t> anchor;
  std::string error;
  if (!tokenizer.encode("a", anchor, error) || anchor.empty())
    anchor.clear();
  else
    anchor.resize(1);
  const std::string before = tokenizer.decode(anchor);
  std::vector<int64_t> ids = anchor;
  ids.push_back(0);
  for (int64_t id = 0; id < vocab; ++id) {
    if (!tokenizer.hasId(id))
      continue;
    ids.back() = id;
    std::string text = tokenizer.decode(ids);
    if (text.compare(0, before.size(), before) == 0)
      bytes[static_cast<std::size_t>(id)] = text.substr(before.size());
  }
  return bytes;
}

std::string Tokenizer::toValidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    uint32_t cp = 0;
    std::size_t length = decodeUtf8(bytes, i, cp);
    if (length) {
      out.append(bytes.substr(i, length));
      i += length;
      continue;
    }
    // The maximal subpart (Unicode's "U+FFFD substitution of maximal
    // subparts", which Python and browsers follow).
    out += kReplacement;
    i += support::maximalSubpart(bytes, i);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Pre-tokenisation
//===----------------------------------------------------------------------===//

bool Gpt2Tokenizer::pretokenize(std::string_view utf8,
                                std::vector<std::string_view> &pieces,
                                std::string &error) {
  pieces.clear();
  if (!validateUtf8(utf8, error))
    return false;
  // Code points, their classes and byte offsets (offset[n] == size).
  std::vector<uint32_t> cps;
  std::vector<CharClass> classes;
  std::vector<std::size_t> offset;
  cps.reserve(utf8.size());
  classes.reserve(utf8.size());
  offset.reserve(utf8.size() + 1);
  for (std::size_t i = 0; i < utf8.size();) {
    uint32_t cp = 0;
    std::size_t length = decodeUtf8(utf8, i, cp);
    cps.push_back(cp);
    classes.push_back(classify(cp));
    offset.push_back(i);
    i += length;
  }
  offset.push_back(utf8.size());
  const std::size_t n = cps.size();

  // The end of the run of class `cls` starting at `k` (k itself if none).
  auto runEnd = [&](std::size_t k, auto inClass) {
    while (k < n && inClass(classes[k]))
      ++k;
    return k;
  };
  auto isOther = [](CharClass c) { return c == kOther; };
  auto isLetter = [](CharClass c) { return c == kLetter; };
  auto isNumber = [](CharClass c) { return c == kNumber; };
  auto isSpace = [](CharClass c) { return c == kSpace; };

  std::size_t i = 0;
  while (i < n) {
    std::size_t end = i;
    // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive), the first that matches.
    if (cps[i] == '\'' && i + 1 < n) {
      uint32_t c1 = cps[i + 1];
      uint32_t c2 = i + 2 < n ? cps[i + 2] : 0;
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')
        end = i + 2;
      else if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') ||
               (c1 == 'l' && c2 == 'l'))
        end = i + 3;
    }
    if (end == i) {
      // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020
      // and a run of one class (a space is \s, so never starts the run).
      std::size_t start = cps[i] == ' ' ? i + 1 : i;
      if (start < n) {
        CharClass cls = classes[start];
        if (cls == kLetter)
          end = runEnd(start, isLetter);
        else if (cls == kNumber)
          end = runEnd(start, isNumber);
        else if (cls == kOther)
          end = runEnd(start, isOther);
      }
    }
    if (end == i) {
      // Here classes[i] is kSpace. `\s+(?!\S)`: the whole run when it ends
      // the text, else the run less its last character (which is then
      // matched with what follows it, or alone by `\s+`), when that
      // leaves one; else `\s+`, a single character.
      std::size_t run = runEnd(i, isSpace);
      if (run == n)
        end = n;
      else if (run - i >= 2)
        end = run - 1;
      else
        end = run;
    }
    pieces.push_back(utf8.substr(offset[i], offset[end] - offset[i]));
    i = end;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Encoding and decoding
//===----------------------------------------------------------------------===//

void Gpt2Tokenizer::encodePiece(std::string_view piece,
                                std::vector<int64_t> &ids) {
  const std::size_t n = piece.size();
  if (n == 1) {
    ids.push_back(byteIds_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  constexpr std::size_t kMaxCachedPiece = 256;
  constexpr std::size_t kMaxCacheEntries = 1 << 16;
  if (n <= kMaxCachedPiece) {
    auto it = cache_.find(std::string(piece));
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }

  std::vector<int32_t> pieceIds(n);
  for (std::size_t k = 0; k < n; ++k)
    pieceIds[k] = byteIds_[static_cast<unsigned char>(piece[k])];
  applyMerges(pieceIds, merges_);
  ids.insert(ids.end(), pieceIds.begin(), pieceIds.end());
  if (n <= kMaxCachedPiece) {
    if (cache_.size() >= kMaxCacheEntries)
      cache_.clear();
    cache_.emplace(std::string(piece), std::move(pieceIds));
  }
}

bool Gpt2Tokenizer::encode(std::string_view utf8, std::vector<int64_t> &ids,
                           std::string &error) {
  ids.clear();
  std::vector<std::string_view> pieces;
  if (!pretokenize(utf8, pieces, error))
    return false;
  for (std::string_view piece : pieces)
    encodePiece(piece, ids);
  return true;
}

std::string Gpt2Tokenizer::decode(const std::vector<int64_t> &ids) const {
  std::string text;
  for (int64_t id : ids) {
    if (hasId(id))
      text += tokenBytes_.at(id);
    else
      text += kReplacement;
  }
  return text;
}

} // namespace tfmc::runtime
