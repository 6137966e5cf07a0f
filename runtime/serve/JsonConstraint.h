//===- JsonConstraint.h - Sampling that writes JSON of a schema -*- C++ -*-===//
//
// OpenAI's response_format: `json_object` (any JSON object) and
// `json_schema` (a value matching a JSON schema). A schema is compiled once
// into a JsonGrammar (cached by the schema's text); each request's
// JsonConstraint (a TokenConstraint, runtime/generate/TokenConstraint.h)
// follows its row's bytes and says which tokens may come next, so that the
// answer, when it ends by eos, parses and matches the schema.
//
// The schema subset (that of OpenAI's strict mode): `type` (object, array,
// string, number, integer, boolean, null, or a list of them), `properties`
// with `required` (the properties are written in the schema's order;
// those not required may be left out), `additionalProperties` (false, or
// absent / true: only the listed properties are written either way, which
// matches the schema too), `items`, `minItems` / `maxItems`, `enum`,
// `const`, `anyOf`, `$ref` to `#/$defs/NAME` or `#/definitions/NAME`
// (recursive too); `description`, `title`, `default`, `examples`,
// `$schema`, `$id`, `$comment` and `strict`-mode annotations are ignored.
// An object without `properties` and not closed is any JSON object. Any
// other keyword is refused, naming it and its place in the schema.
//
// The matcher is a set of pushdown "threads" over the output's bytes (an
// `anyOf` splits one; a byte that a thread cannot take ends it).
// Whitespace between tokens is allowed in runs of at most 16 bytes, so a
// model cannot spend its budget on spaces; strings hold any byte but `"`,
// `\` and control bytes, with JSON's escapes (but no \u escape of a
// UTF-16 surrogate, which many parsers refuse alone: characters past
// U+FFFF are written as their UTF-8 bytes). The next tokens' mask: a
// token is allowed when the matcher takes all of its bytes (precomputed:
// each token's bytes in context, tokenBytesInContext). Two shortcuts keep
// it cheap: tokens are grouped by their first byte, and a group whose
// first byte is refused is skipped whole; inside a string, a token with
// none of `"`, `\`, control bytes is allowed without a check. eos is
// allowed exactly when a whole value has been written.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_JSONCONSTRAINT_H
#define TFMC_RUNTIME_SERVE_JSONCONSTRAINT_H

#include "runtime/generate/TokenConstraint.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tfmc::runtime::serve {

/// A compiled schema (immutable; shared by the requests that use it).
class JsonGrammar {
public:
  /// `json_object`: any JSON object.
  static std::shared_ptr<const JsonGrammar> anyObject();
  /// `inner`'s value between two texts (a tool call's markers, e.g.
  /// "<tool_call>" and "</tool_call>"; whitespace may come before each).
  static std::shared_ptr<const JsonGrammar>
  framed(const JsonGrammar &inner, const std::string &prefix,
         const std::string &suffix);
  /// A JSON schema; null with a one-line error naming `where` + the
  /// path within the schema of what is not supported (e.g. where
  /// "response_format.json_schema.schema":
  /// "response_format.json_schema.schema/properties/age: 'minimum' is not
  /// supported").
  static std::shared_ptr<const JsonGrammar>
  compile(const nlohmann::ordered_json &schema, const std::string &where,
          std::string &error);

  enum class Kind {
    Object,    // props
    AnyObject, // any keys, any values
    Array,     // items, minItems, maxItems
    String,
    Number,
    Integer,
    Literal,   // text: a JSON value's exact bytes
    AnyOf,     // alts
    Sequence,  // alts, one after the other
  };
  struct Property {
    std::string key; // quoted, as written: "\"name\""
    int node;
    bool required;
  };
  struct Node {
    Kind kind = Kind::AnyOf;
    std::vector<Property> props;
    int items = -1;
    int64_t minItems = 0, maxItems = -1; // -1: no bound
    std::string text;
    std::vector<int> alts;
  };
  const std::vector<Node> &nodes() const { return nodes_; }
  int root() const { return root_; }

private:
  std::vector<Node> nodes_;
  int root_ = 0;
  friend class SchemaCompiler;
};

/// The matcher's state over one output: copyable.
class JsonMatcher {
public:
  explicit JsonMatcher(std::shared_ptr<const JsonGrammar> grammar);
  /// Takes one byte; false (and the state unchanged) when no thread can.
  bool accept(uint8_t byte);
  bool accept(const std::string &bytes);
  /// A whole value has been written (eos may end the output).
  bool complete() const;
  /// Every thread is inside a string's characters (not an escape): a byte
  /// other than `"`, `\` and control bytes keeps every thread alive.
  bool inPlainString() const;

  struct Frame {
    enum Kind : uint8_t {
      Value,  // a value of `node` may start (leading whitespace)
      Object, // inside an object of `node`: `phase`, property `index`
      Key,    // an object's key, `count` bytes of it matched
      Array,  // inside an array: `phase`, `count` items so far
      String, // `phase`: 0 characters, 1 after \, 2..5 \u's hex digits
              // (6: after \uD)
      Number, // `phase`: the number automaton's state
      Literal, // `count` bytes of node's text matched
      Sequence // `index` parts of node started
    } kind;
    uint8_t phase = 0;
    uint8_t spaces = 0; // whitespace bytes in the current run
    int32_t node = 0;
    int32_t index = 0;
    int64_t count = 0;
    bool operator==(const Frame &o) const {
      return kind == o.kind && phase == o.phase && spaces == o.spaces &&
             node == o.node && index == o.index && count == o.count;
    }
  };
  using Thread = std::vector<Frame>;

private:
  /// Feeds `byte` to `thread`, appending the threads it becomes to `out`.
  void step(Thread thread, uint8_t byte, std::vector<Thread> &out) const;
  std::shared_ptr<const JsonGrammar> grammar;
  std::vector<Thread> threads;
};

/// The tokens of one vocabulary, indexed for masks (built once per server:
/// tokenBytesInContext's bytes).
class TokenIndex {
public:
  TokenIndex(std::vector<std::string> bytes, std::vector<int64_t> eos);
  /// allowed[id] = 1 for each token `matcher` takes whole next, and for
  /// eos when it is complete.
  void allowed(const JsonMatcher &matcher, std::vector<uint8_t> &allowed) const;
  const std::string &bytes(int64_t id) const { return bytes_[id]; }
  bool isEos(int64_t id) const;

private:
  std::vector<std::string> bytes_;
  std::vector<int64_t> eos_;
  /// Token ids by first byte.
  std::vector<int64_t> byFirst_[256];
  /// Has none of `"`, `\`, control bytes.
  std::vector<uint8_t> plain_;
};

/// One request's constraint.
class JsonConstraint : public TokenConstraint {
public:
  JsonConstraint(std::shared_ptr<const JsonGrammar> grammar,
                 std::shared_ptr<const TokenIndex> index);
  void allowed(std::vector<uint8_t> &allowed) override;
  void accept(int64_t token) override;
  bool complete() const override { return matcher.complete(); }

private:
  JsonMatcher matcher;
  std::shared_ptr<const TokenIndex> index;
};

/// Compiled schemas by their canonical text, at most kCapacity (the oldest
/// go first). Thread-safe.
class JsonGrammarCache {
public:
  static constexpr std::size_t kCapacity = 64;
  std::shared_ptr<const JsonGrammar> get(const nlohmann::ordered_json &schema,
                                         const std::string &where,
                                         std::string &error);

private:
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const JsonGrammar>> grammars;
  std::vector<std::string> order;
};

} // namespace tfmc::runtime::serve

#endif // TFMC_RUNTIME_SERVE_JSONCONSTRAINT_H
