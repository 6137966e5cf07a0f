//===- TemplateValue.h - Values of the chat template engine -----*- C++ -*-===//
//
// The values a chat template computes with, modelled on what Python's Jinja2
// gives a template (transformers renders chat templates with Jinja2): None,
// bools, 64-bit ints, floats, str (UTF-8, indexed by code point), list,
// tuple, dict (string keys, insertion order), and the objects Jinja2 hands
// out that are not plain data: Undefined (a name or key that is not there),
// range(), dict views (d.items()), one-shot iterators (what `reverse`,
// `map`, `select` and their kin return), namespace(), the loop object and
// functions. Where Python would print such an object by its address, or a
// case this engine does not model is reached, the operation is refused with
// an error instead of giving other output than Jinja2.
//
// Everything here is internal to runtime/serve (ChatTemplate.h is the API).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TEMPLATEVALUE_H
#define TFMC_RUNTIME_SERVE_TEMPLATEVALUE_H

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tfmc::runtime::jinja {

/// A place in the template (1-based line and column, in characters); 0: none.
struct Location {
  uint32_t line = 0;
  uint32_t column = 0;
};

/// What a failed operation throws inside the engine; ChatTemplate's parse
/// and render catch it and turn it into a ChatTemplateError. `location` is
/// filled by the innermost expression being evaluated when the thrower did
/// not know it.
struct TemplateFailure {
  enum class Kind { Syntax, Render, Raised, Limit };
  Kind kind = Kind::Render;
  Location location;
  std::string reason;
};

[[noreturn]] void fail(std::string reason);
[[noreturn]] void failAt(Location location, std::string reason);
[[noreturn]] void failLimit(std::string reason);

class Value;
class Interpreter;

/// How deep lists, tuples and dicts may nest (a value built deeper fails):
/// code that walks a value (str, tojson, ==) recurses once per level.
inline constexpr int kMaxValueDepth = 128;
using ValueList = std::vector<Value>;

/// A dict: string keys in insertion order (Python's dicts keep it, and
/// tojson, items() and iteration show it).
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value *find(std::string_view key) const;
  /// Appends or replaces `key` (a dict literal repeating a key keeps the
  /// first place and the last value, as Python does).
  void set(std::string key, Value value);
};

/// namespace() and the loop object: named attributes, mutable for a
/// namespace (`set ns.x = ...`).
struct Object {
  std::vector<std::pair<std::string, Value>> attributes;
  Value *find(std::string_view name);
};

/// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Function {
  std::string name;
  std::function<Value(Interpreter &, CallArgs &)> call;
};

/// A one-shot iterator: what Jinja2's generators and reversed() give.
/// Iterating it consumes it, as in Python.
struct IteratorState {
  ValueList items;
  std::size_t next = 0;
};

class Value {
public:
  enum class Kind : uint8_t {
    Undefined, None, Bool, Int, Float, String,
    List, Tuple, Range, View, // items() / keys() / values() of a dict
    Iterator, Dict, Namespace, Loop, Function,
  };

  Value() : kind_(Kind::Undefined) {}
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value sequence(Kind kind, ValueList items);
  static Value list(ValueList items) { return sequence(Kind::List, std::move(items)); }
  static Value tuple(ValueList items) { return sequence(Kind::Tuple, std::move(items)); }
  static Value dict(Dict d);
  static Value object(Kind kind, Object o);
  static Value function(std::string name, std::function<Value(Interpreter &, CallArgs &)> call);
  static Value iterator(ValueList items);

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool isUndefined() const { return kind_ == Kind::Undefined; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isString() const { return kind_ == Kind::String; }
  /// int or bool (Python's bool is an int).
  bool isIntegral() const { return kind_ == Kind::Int || kind_ == Kind::Bool; }
  /// int, bool or float.
  bool isNumeric() const { return isIntegral() || kind_ == Kind::Float; }
  /// list, tuple, range or dict view: materialized items, indexable or not.
  bool isSequence() const {
    return kind_ == Kind::List || kind_ == Kind::Tuple || kind_ == Kind::Range || kind_ == Kind::View;
  }

  bool asBool() const { return std::get<bool>(data_); }
  int64_t asInt() const { return kind_ == Kind::Bool ? int64_t(std::get<bool>(data_)) : std::get<int64_t>(data_); }
  double asFloat() const { return kind_ == Kind::Float ? std::get<double>(data_) : double(asInt()); }
  const std::string &asString() const { return *std::get<std::shared_ptr<const std::string>>(data_); }
  /// The hint of an Undefined: what was looked up ("'x' is undefined").
  const std::string &undefinedHint() const;
  const ValueList &items() const { return *std::get<std::shared_ptr<const ValueList>>(data_); }
  const Dict &asDict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Object &asObject() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const Function &asFunction() const { return *std::get<std::shared_ptr<const Function>>(data_); }
  IteratorState &asIterator() const { return *std::get<std::shared_ptr<IteratorState>>(data_); }
  /// Identity of a reference value (namespace, loop, function, iterator).
  const void *identity() const;

  /// Python's type name, for messages ("str", "list", "dict", ...).
  const char *typeName() const;
  /// Nesting depth: 0 for a scalar, 1 + the deepest item's for a container.
  int depth() const { return depth_; }

private:
  Kind kind_;
  uint8_t depth_ = 0;
  std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
               std::shared_ptr<const ValueList>, std::shared_ptr<const Dict>,
               std::shared_ptr<Object>, std::shared_ptr<const Function>,
               std::shared_ptr<IteratorState>>
      data_;
};

/// Python's truth value.
bool truthy(const Value &v);
/// Python's ==, deep (1 == 1.0 == True; [1] != (1,)); Undefined equals only
/// Undefined. Refuses comparisons it does not model (dict views).
bool equals(const Value &a, const Value &b);
/// Python's < (numbers, str, list and tuple lexicographically); other pairs
/// are a TypeError, as in Python.
bool lessThan(const Value &a, const Value &b);
/// Python's `a in b`.
bool contains(const Value &container, const Value &item);

/// A string of Python's str(v) (Undefined: ""), appended to `out`; fails
/// when `out` would exceed `limit` bytes.
void appendStr(std::string &out, const Value &v, std::size_t limit);
/// Python's repr(v), as str() of a list shows its items.
void appendRepr(std::string &out, const Value &v, std::size_t limit);
std::string str(const Value &v, std::size_t limit);

/// Python's repr of a float ("1.0", "0.1", "1e+16", "inf").
std::string floatRepr(double f);

/// transformers' tojson: json.dumps(v, ensure_ascii, indent, separators,
/// sort_keys). `indent` < 0: none; `indentText` (when not null) is a string
/// indent.
struct JsonOptions {
  bool ensureAscii = false;
  long indent = -1;
  const std::string *indentText = nullptr;
  const std::string *itemSeparator = nullptr;
  const std::string *keySeparator = nullptr;
  bool sortKeys = false;
};
void appendJson(std::string &out, const Value &v, const JsonOptions &options, std::size_t limit,
                int depth = 0);

/// A JSON input (a message, an extra variable) as a template value; fails
/// on integers beyond int64 and strings that are not UTF-8.
Value fromJson(const nlohmann::ordered_json &json);

/// The items a for loop, `list` or `join` sees: a sequence's items, a
/// dict's keys, a string's characters, an iterator's remaining items (it
/// is consumed), nothing for Undefined. Other values fail (not iterable).
ValueList iterate(const Value &v);

} // namespace tfmc::runtime::jinja

#endif // TFMC_RUNTIME_SERVE_TEMPLATEVALUE_H
