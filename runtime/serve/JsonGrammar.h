//===- JsonGrammar.h - Masks that keep output JSON of a schema -*- C++ -*-===//
//
// The engine behind OpenAI's `response_format`: `json_object` (any JSON
// object) and `json_schema` (a value matching a schema, as strict mode
// defines it). Three parts, each usable alone:
//
//   - compileJsonSchema: a schema -> an immutable JsonSchemaGrammar (a graph
//     of nodes; JsonSchemaCache keeps the compiled ones by the schema's
//     text). The subset is OpenAI's strict one: `type` (object, array,
//     string, number, integer, boolean, null, or a list of them),
//     `properties`, `required`, `additionalProperties` (a boolean),
//     `items`, `minItems` / `maxItems`, `enum` and `const` (any JSON value:
//     its compact text is what may be written), `anyOf`, and `$ref` to
//     `#`, `#/$defs/NAME` or `#/definitions/NAME` (recursion allowed).
//     `description`, `title`, `default`, `examples`, `$schema`, `$id`,
//     `$comment` are ignored. Every other keyword is refused with one line
//     naming it and its place: "response_format.json_schema.schema/
//     properties/age: 'minimum' is not supported".
//     An object's listed properties are written in the schema's order, no
//     other key (so the output matches with or without
//     `additionalProperties: false`); a property `required` names must
//     appear, any other may be left out. An object with no `properties`
//     and not closed is any object. A schema without `type` takes it from
//     its keywords (`properties` -> object, `items` -> array, none -> any
//     value). Schemas with no finite value (a required property that
//     recurses into itself) are refused; branches with none are pruned.
//
//   - JsonGrammarState: a byte-level pushdown matcher. A "thread" is a
//     stack of 16-byte frames (an object being written, its property and
//     phase; an array and its item count; a string's escape / UTF-8 state;
//     a number's automaton state); `anyOf` splits a thread per branch that
//     may start with the byte (at most kMaxThreads, duplicates merged), a
//     byte a thread cannot take ends it. Copying a state (or keeping one
//     as a checkpoint) copies a few frames. Whitespace between tokens is
//     allowed in runs of at most maxWhitespace bytes (2 by default), so a
//     model cannot spend its budget on spaces. Strings are JSON's: escapes
//     (a \u surrogate must pair), no control bytes, and well-formed UTF-8
//     (so that strict parsers read the output). Numbers are JSON's with
//     at most 20 integer and 20 fraction digits and a 2-digit exponent (a
//     finite double for every parser, and no endless digits); an
//     `integer` has no fraction or exponent.
//
//   - TokenTrie: a vocabulary's token bytes in a trie, built once per
//     tokenizer, laid out in depth-first order (a node's subtree is the
//     range after it). allowedTokens walks it with the matcher, one step
//     per node, skipping a subtree at the first byte the matcher refuses:
//     the cost is the number of accepted prefixes (times the stack's
//     depth), not vocabulary x length. Inside a string nearly every token
//     is accepted, so a string's usual state (at a character boundary,
//     not in an escape) has its own path: which tokens stay inside the
//     string depends on their bytes alone, so that part of the mask is
//     computed with the trie, and copied; only the tokens that close the
//     string are fed to the matcher, from the state after the quote (and
//     most fail at their next byte, whose verdict is kept). In the walk, a
//     printable ASCII byte inside a string leaves the state as it was: the
//     child shares its parent's state, no copy. eos ids are allowed
//     exactly when a whole value is written.
//
// Thread safety: grammars and tries are immutable and shared; a state
// belongs to one sequence; the scratch the steps use is thread_local.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_JSONGRAMMAR_H
#define TFMC_RUNTIME_SERVE_JSONGRAMMAR_H

#include <nlohmann/json.hpp>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tfmc::runtime::serve {

struct JsonGrammarOptions {
  /// The longest run of whitespace bytes between two tokens of JSON.
  unsigned maxWhitespace = 2;
  /// What error messages call the schema's root.
  std::string where = "response_format.json_schema.schema";
};

/// A compiled schema: immutable, shared by every sequence that uses it.
class JsonSchemaGrammar {
public:
  /// Threads a state keeps at most (an `anyOf` whose branches stay
  /// alike for long, nested in itself, would multiply them); past it the
  /// first ones are kept, which still writes only matching JSON.
  static constexpr std::size_t kMaxThreads = 32;

  unsigned maxWhitespace() const { return maxWhitespace_; }
  std::size_t nodeCount() const { return nodes.size(); }

private:
  friend class JsonGrammarState;
  friend class JsonSchemaCompiler;
  friend class JsonGrammarStepper;

  struct Property {
    std::string key; ///< its JSON text after the opening quote: `age"`
    uint32_t node;
    bool required;
  };
  struct Node {
    enum Kind : uint8_t {
      AnyOf,     ///< alts: non-AnyOf nodes, one of which is written
      Object,    ///< props in order; nextRequired
      AnyObject, ///< any keys, values any JSON
      Array,     ///< items, minItems, maxItems
      String,
      Number,
      Integer,
      Literal ///< texts: values' compact JSON, one of which is written
    } kind = AnyOf;
    std::vector<Property> props;
    /// nextRequired[i]: the first required property at or after i
    /// (props.size() if none): the keys that may come next are i..it.
    std::vector<uint32_t> nextRequired;
    uint32_t items = 0;
    uint32_t minItems = 0, maxItems = UINT32_MAX;
    /// Sorted: texts that share a prefix are neighbours, and a text's
    /// extensions follow it.
    std::vector<std::string> texts;
    std::vector<uint32_t> alts;
    std::bitset<256> first; ///< the bytes a value may begin with
  };

  std::vector<Node> nodes;
  uint32_t root = 0;
  uint32_t anyValue = 0; ///< set where a node needs any JSON value
  unsigned maxWhitespace_ = 2;
};

/// `schema` compiled, or null with `error` set (one line, naming the
/// keyword and its path under options.where). The properties' order is
/// ordered_json's, the order the request wrote them in.
std::shared_ptr<const JsonSchemaGrammar>
compileJsonSchema(const nlohmann::ordered_json &schema, std::string &error,
                  const JsonGrammarOptions &options = {});
/// The same from nlohmann::json, whose objects sort their keys: properties
/// are then written in alphabetical order.
std::shared_ptr<const JsonSchemaGrammar>
compileJsonSchema(const nlohmann::json &schema, std::string &error,
                  const JsonGrammarOptions &options = {});
/// `json_object`: any JSON object.
std::shared_ptr<const JsonSchemaGrammar>
anyJsonObjectGrammar(const JsonGrammarOptions &options = {});

/// The matcher's state over one output. A value type: copy it to
/// checkpoint, assign the copy back to roll back.
class JsonGrammarState {
public:
  explicit JsonGrammarState(std::shared_ptr<const JsonSchemaGrammar> grammar);

  /// Takes `byte`; false (and the state unchanged) when no thread can.
  bool accept(uint8_t byte);
  /// Takes every byte of `bytes`, or none (false, unchanged).
  bool accept(std::string_view bytes);
  /// A whole value has been written: the output may end here.
  bool complete() const;
  /// Live threads (1 unless an `anyOf` is undecided).
  std::size_t threadCount() const { return stacks.ends.size(); }
  const JsonSchemaGrammar &grammar() const { return *grammar_; }

  /// Same grammar, same threads.
  bool operator==(const JsonGrammarState &other) const;
  bool operator!=(const JsonGrammarState &other) const {
    return !(*this == other);
  }

  /// One level of a thread's stack (no padding: compared as bytes).
  struct Frame {
    enum Kind : uint8_t {
      Root,      ///< under the value: trailing whitespace only
      Value,     ///< a value of `node` may begin (after whitespace)
      Object,    ///< phase; a: property (Key: candidate), b: key bytes
      AnyObject, ///< phase
      Array,     ///< phase; a: items so far
      String,    ///< phase: escapes; a: \u's digits; b: UTF-8 state
      Number,    ///< phase: automaton state; a: 1 for an integer
      Literal    ///< a: the first text still possible; b: bytes written
    };
    uint8_t kind = Root;
    uint8_t phase = 0;
    uint8_t spaces = 0; ///< whitespace bytes in the current run
    uint8_t unused = 0;
    uint32_t node = 0;
    uint32_t a = 0;
    uint32_t b = 0;
  };
  /// Threads' frames end to end; ends[t] is one past thread t's last.
  struct Stacks {
    std::vector<Frame> frames;
    std::vector<uint32_t> ends;
    /// Every thread is in a string's text at a character boundary: a
    /// printable ASCII byte other than `"` and `\` changes nothing.
    bool plainString = false;
  };

private:
  friend class TokenTrie;
  std::shared_ptr<const JsonSchemaGrammar> grammar_;
  Stacks stacks;
};

/// A vocabulary indexed for masks. bytes[id] is token id's raw bytes (as
/// the detokenizer emits them); an empty string (special tokens), or one
/// over 65535 bytes, is a token never allowed. eos ids are allowed only
/// where a value is complete, whatever their bytes.
class TokenTrie {
public:
  TokenTrie(const std::vector<std::string> &bytes,
            const std::vector<int64_t> &eos);

  /// mask (resized to the vocabulary): 1 for each token whose every byte
  /// `state` accepts in turn, and for eos when state.complete(); else 0.
  void allowedTokens(const JsonGrammarState &state,
                     std::vector<uint8_t> &mask) const;

  std::size_t vocabSize() const { return bytes_.size(); }
  const std::string &bytes(int64_t id) const { return bytes_[id]; }
  std::size_t nodeCount() const { return byte_.size(); }

private:
  std::vector<std::string> bytes_;
  std::vector<int64_t> eos_;
  // Nodes in depth-first order, children by byte; node 0 the root. Node
  // i's subtree is [i, subtreeEnd[i]); the tokens ending at node i are
  // ids_[tokenStart[i] .. tokenStart[i + 1]), so a subtree's tokens are
  // one range of ids_ too.
  std::vector<uint8_t> byte_;
  std::vector<uint16_t> depth_;
  std::vector<uint32_t> subtreeEnd_;
  std::vector<uint32_t> tokenStart_;
  std::vector<int32_t> ids_;
  /// Inside a string, from a character boundary: the tokens that stay
  /// in it (whatever the grammar), and those that close it with text
  /// before (`after`: the offset past their closing quote).
  std::vector<uint8_t> contentMask_;
  struct Closer {
    int32_t id;
    uint32_t after;
  };
  std::vector<Closer> closers_;
  std::size_t maxDepth_ = 0;
};

/// Compiled grammars by their schema's compact text (and the whitespace
/// option), at most `capacity`, least recently used out first; refusals
/// are not kept. Thread-safe.
class JsonSchemaCache {
public:
  explicit JsonSchemaCache(std::size_t capacity = 64) : capacity(capacity) {}
  std::shared_ptr<const JsonSchemaGrammar>
  get(const nlohmann::ordered_json &schema, std::string &error,
      const JsonGrammarOptions &options = {});
  std::shared_ptr<const JsonSchemaGrammar>
  anyObject(const JsonGrammarOptions &options = {});
  std::size_t size() const;

private:
  using Entry =
      std::pair<std::string, std::shared_ptr<const JsonSchemaGrammar>>;
  std::shared_ptr<const JsonSchemaGrammar> find(const std::string &key);
  void insert(const std::string &key,
              std::shared_ptr<const JsonSchemaGrammar> grammar);

  std::size_t capacity;
  mutable std::mutex mutex;
  std::list<Entry> entries; ///< most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index;
};

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_JSONGRAMMAR_H
