//===- JsonConstraint.cpp - Sampling that writes JSON of a schema ---------===//

#include "runtime/serve/JsonConstraint.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace tfmc::runtime::serve {

namespace {

using ordered = nlohmann::ordered_json;
using Kind = JsonGrammar::Kind;
using Frame = JsonMatcher::Frame;

/// The longest run of whitespace between two tokens of the output.
constexpr uint8_t kMaxSpaces = 16;
/// The longest number, in bytes.
constexpr int64_t kMaxNumberBytes = 40;

bool isSpace(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }
bool isDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool isHex(uint8_t b) {
  return isDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

// The number automaton (JSON's grammar): its states and which are final.
enum NumberState : uint8_t {
  Start, Minus, Zero, Digits, Dot, Fraction, E, ESign, Exponent, Dead
};
bool isFinal(uint8_t state) {
  return state == Zero || state == Digits || state == Fraction ||
         state == Exponent;
}
uint8_t numberNext(uint8_t state, uint8_t b, bool integer) {
  switch (state) {
  case Start:
    return b == '-' ? Minus : b == '0' ? Zero : isDigit(b) ? Digits : Dead;
  case Minus:
    return b == '0' ? Zero : isDigit(b) ? Digits : Dead;
  case Zero:
  case Digits:
    if (state == Digits && isDigit(b))
      return Digits;
    if (integer)
      return Dead;
    return b == '.' ? Dot : (b == 'e' || b == 'E') ? E : Dead;
  case Dot:
    return isDigit(b) ? Fraction : Dead;
  case Fraction:
    return isDigit(b) ? Fraction : (b == 'e' || b == 'E') ? E : Dead;
  case E:
    return (b == '+' || b == '-') ? ESign : isDigit(b) ? Exponent : Dead;
  case ESign:
  case Exponent:
    return isDigit(b) ? Exponent : Dead;
  }
  return Dead;
}

Frame frame(Frame::Kind kind, int node, uint8_t spaces = 0) {
  Frame f;
  f.kind = kind;
  f.node = node;
  f.spaces = spaces;
  return f;
}

} // namespace

/// Schema -> nodes.
class SchemaCompiler {
public:
  SchemaCompiler(const ordered &root, std::string where, std::string &error)
      : root(root), where(std::move(where)), error(error) {}

  std::shared_ptr<const JsonGrammar> compile() {
    auto grammar = std::make_shared<JsonGrammar>();
    g = grammar.get();
    anyNode();
    int top = node(root, "");
    if (top < 0)
      return nullptr;
    g->root_ = top;
    return grammar;
  }

  std::shared_ptr<const JsonGrammar> anyObjectGrammar() {
    auto grammar = std::make_shared<JsonGrammar>();
    g = grammar.get();
    int any = anyNode();
    g->root_ = g->nodes_[any].alts[0];
    return grammar;
  }

private:
  int add(JsonGrammar::Node n) {
    g->nodes_.push_back(std::move(n));
    return static_cast<int>(g->nodes_.size()) - 1;
  }
  int literal(std::string text) {
    JsonGrammar::Node n;
    n.kind = Kind::Literal;
    n.text = std::move(text);
    return add(std::move(n));
  }
  /// Any JSON value (made once per grammar).
  int anyNode() {
    if (any >= 0)
      return any;
    any = add(JsonGrammar::Node());
    g->nodes_[any].kind = Kind::AnyOf;
    JsonGrammar::Node object;
    object.kind = Kind::AnyObject;
    object.items = any;
    JsonGrammar::Node array;
    array.kind = Kind::Array;
    array.items = any;
    JsonGrammar::Node string, number;
    string.kind = Kind::String;
    number.kind = Kind::Number;
    std::vector<int> alts = {add(object), add(array), add(string), add(number),
                             literal("true"), literal("false"),
                             literal("null")};
    g->nodes_[any].alts = alts;
    return any;
  }
  bool fail(const std::string &path, const std::string &message) {
    error = fmt::format("{}{}: {}", where, path, message);
    return false;
  }

  int node(const ordered &s, const std::string &path) {
    if (s.is_boolean()) {
      if (s.get<bool>())
        return anyNode();
      fail(path, "the schema false matches nothing");
      return -1;
    }
    if (!s.is_object()) {
      fail(path, "a schema must be an object");
      return -1;
    }
    static const std::set<std::string> supported = {
        "type", "properties", "required", "additionalProperties", "items",
        "minItems", "maxItems", "enum", "const", "anyOf", "$ref", "$defs",
        "definitions", "description", "title", "default", "examples",
        "$schema", "$id", "$comment"};
    for (const auto &[key, value] : s.items())
      if (!supported.count(key)) {
        fail(path, fmt::format("'{}' is not supported", key));
        return -1;
      }
    if (s.contains("$ref"))
      return ref(s["$ref"], path + "/$ref");
    if (s.contains("anyOf")) {
      const ordered &list = s["anyOf"];
      if (!list.is_array() || list.empty()) {
        fail(path + "/anyOf", "anyOf must be a non-empty list of schemas");
        return -1;
      }
      std::vector<int> alts;
      for (std::size_t i = 0; i < list.size(); ++i) {
        int alt = node(list[i], fmt::format("{}/anyOf/{}", path, i));
        if (alt < 0)
          return -1;
        alts.push_back(alt);
      }
      JsonGrammar::Node n;
      n.kind = Kind::AnyOf;
      n.alts = alts;
      return add(std::move(n));
    }
    if (s.contains("const"))
      return literal(s["const"].dump());
    if (s.contains("enum")) {
      const ordered &list = s["enum"];
      if (!list.is_array() || list.empty()) {
        fail(path + "/enum", "enum must be a non-empty list");
        return -1;
      }
      JsonGrammar::Node n;
      n.kind = Kind::AnyOf;
      for (const ordered &value : list)
        n.alts.push_back(literal(value.dump()));
      return add(std::move(n));
    }
    if (!s.contains("type")) {
      if (s.contains("properties"))
        return typed(s, "object", path);
      if (s.contains("items"))
        return typed(s, "array", path);
      return anyNode();
    }
    const ordered &type = s["type"];
    if (type.is_string())
      return typed(s, type.get<std::string>(), path);
    if (!type.is_array() || type.empty()) {
      fail(path + "/type", "type must be a type name or a list of them");
      return -1;
    }
    JsonGrammar::Node n;
    n.kind = Kind::AnyOf;
    for (const ordered &name : type) {
      if (!name.is_string()) {
        fail(path + "/type", "type must be a type name or a list of them");
        return -1;
      }
      int alt = typed(s, name.get<std::string>(), path);
      if (alt < 0)
        return -1;
      n.alts.push_back(alt);
    }
    return add(std::move(n));
  }

  int typed(const ordered &s, const std::string &type,
            const std::string &path) {
    JsonGrammar::Node n;
    if (type == "string") {
      n.kind = Kind::String;
    } else if (type == "number") {
      n.kind = Kind::Number;
    } else if (type == "integer") {
      n.kind = Kind::Integer;
    } else if (type == "null") {
      return literal("null");
    } else if (type == "boolean") {
      n.kind = Kind::AnyOf;
      n.alts = {literal("true"), literal("false")};
    } else if (type == "array") {
      n.kind = Kind::Array;
      n.items = anyNode();
      if (s.contains("items")) {
        n.items = node(s["items"], path + "/items");
        if (n.items < 0)
          return -1;
      }
      for (const char *bound : {"minItems", "maxItems"}) {
        if (!s.contains(bound))
          continue;
        const ordered &v = s[bound];
        if (!v.is_number_integer() || v.get<int64_t>() < 0) {
          fail(path + "/" + bound, fmt::format("{} must be a non-negative "
                                               "integer",
                                               bound));
          return -1;
        }
        (std::string(bound) == "minItems" ? n.minItems : n.maxItems) =
            v.get<int64_t>();
      }
      if (n.maxItems >= 0 && n.maxItems < n.minItems) {
        fail(path, "maxItems is less than minItems");
        return -1;
      }
    } else if (type == "object") {
      bool closed = false;
      if (s.contains("additionalProperties")) {
        const ordered &extra = s["additionalProperties"];
        if (!extra.is_boolean()) {
          fail(path + "/additionalProperties",
               "only true or false is supported");
          return -1;
        }
        closed = !extra.get<bool>();
      }
      if (!s.contains("properties")) {
        if (closed)
          return literal("{}");
        n.kind = Kind::AnyObject;
        n.items = anyNode();
        return add(std::move(n));
      }
      const ordered &props = s["properties"];
      if (!props.is_object()) {
        fail(path + "/properties", "properties must be an object");
        return -1;
      }
      std::set<std::string> required;
      if (s.contains("required")) {
        const ordered &list = s["required"];
        if (!list.is_array()) {
          fail(path + "/required", "required must be a list of names");
          return -1;
        }
        for (const ordered &name : list) {
          if (!name.is_string() || !props.contains(name.get<std::string>())) {
            fail(path + "/required",
                 fmt::format("{} is not a property", name.dump()));
            return -1;
          }
          required.insert(name.get<std::string>());
        }
      }
      n.kind = Kind::Object;
      for (const auto &[name, schema] : props.items()) {
        int child = node(schema, path + "/properties/" + name);
        if (child < 0)
          return -1;
        n.props.push_back({ordered(name).dump(), child,
                           required.count(name) > 0});
      }
    } else {
      fail(path + "/type", fmt::format("unknown type {}", ordered(type).dump()));
      return -1;
    }
    return add(std::move(n));
  }

  int ref(const ordered &target, const std::string &path) {
    if (!target.is_string()) {
      fail(path, "$ref must be a string");
      return -1;
    }
    const std::string name = target.get<std::string>();
    auto known = refs.find(name);
    if (known != refs.end())
      return known->second;
    for (const char *section : {"$defs", "definitions"}) {
      const std::string prefix = std::string("#/") + section + "/";
      if (name.compare(0, prefix.size(), prefix) != 0)
        continue;
      const std::string key = name.substr(prefix.size());
      if (!root.contains(section) || !root[section].is_object() ||
          !root[section].contains(key))
        break;
      // A placeholder first, so that a recursive reference finds it.
      int placeholder = add(JsonGrammar::Node());
      g->nodes_[placeholder].kind = Kind::AnyOf;
      refs[name] = placeholder;
      int body = node(root[section][key], "/" + std::string(section) + "/" + key);
      if (body < 0)
        return -1;
      g->nodes_[placeholder].alts = {body};
      return placeholder;
    }
    fail(path, fmt::format("{} is not a definition of this schema (only "
                           "#/$defs/NAME and #/definitions/NAME are)",
                           ordered(name).dump()));
    return -1;
  }

  const ordered &root;
  const std::string where;
  std::string &error;
  JsonGrammar *g = nullptr;
  int any = -1;
  std::map<std::string, int> refs;
};

std::shared_ptr<const JsonGrammar> JsonGrammar::anyObject() {
  std::string error;
  ordered none;
  return SchemaCompiler(none, "", error).anyObjectGrammar();
}

std::shared_ptr<const JsonGrammar>
JsonGrammar::compile(const nlohmann::ordered_json &schema,
                     const std::string &where, std::string &error) {
  return SchemaCompiler(schema, where, error).compile();
}

std::shared_ptr<const JsonGrammar>
JsonGrammar::framed(const JsonGrammar &inner, const std::string &prefix,
                    const std::string &suffix) {
  auto grammar = std::make_shared<JsonGrammar>(inner);
  std::vector<int> parts;
  for (const std::string *text : {&prefix, &suffix}) {
    if (text == &suffix)
      parts.push_back(inner.root_);
    if (text->empty())
      continue;
    Node literal;
    literal.kind = Kind::Literal;
    literal.text = *text;
    grammar->nodes_.push_back(literal);
    parts.push_back(static_cast<int>(grammar->nodes_.size()) - 1);
  }
  Node sequence;
  sequence.kind = Kind::Sequence;
  sequence.alts = parts;
  grammar->nodes_.push_back(sequence);
  grammar->root_ = static_cast<int>(grammar->nodes_.size()) - 1;
  return grammar;
}

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonGrammar> grammar)
    : grammar(std::move(grammar)) {
  threads.push_back({frame(Frame::Value, this->grammar->root())});
}

bool JsonMatcher::accept(uint8_t byte) {
  std::vector<Thread> next;
  for (const Thread &thread : threads)
    step(thread, byte, next);
  if (next.empty())
    return false;
  // Drop duplicates (alternatives that became the same).
  std::vector<Thread> unique;
  for (Thread &t : next)
    if (std::find(unique.begin(), unique.end(), t) == unique.end())
      unique.push_back(std::move(t));
  threads = std::move(unique);
  return true;
}

bool JsonMatcher::accept(const std::string &bytes) {
  JsonMatcher copy = *this;
  for (char c : bytes)
    if (!copy.accept(static_cast<uint8_t>(c)))
      return false;
  *this = std::move(copy);
  return true;
}

bool JsonMatcher::complete() const {
  for (const Thread &t : threads)
    if (t.empty() ||
        (t.size() == 1 && t[0].kind == Frame::Number && isFinal(t[0].phase)) ||
        (t.size() == 1 && t[0].kind == Frame::Sequence &&
         t[0].index ==
             static_cast<int32_t>(grammar->nodes()[t[0].node].alts.size())))
      return true;
  return false;
}

bool JsonMatcher::inPlainString() const {
  for (const Thread &t : threads)
    if (t.empty() || t.back().kind != Frame::String || t.back().phase != 0)
      return false;
  return true;
}

void JsonMatcher::step(Thread t, uint8_t b, std::vector<Thread> &out) const {
  if (t.empty())
    return; // a whole value: nothing may follow
  const std::vector<JsonGrammar::Node> &nodes = grammar->nodes();
  Frame &f = t.back();
  const JsonGrammar::Node &n = nodes[f.node];
  const bool space = isSpace(b);
  // Whitespace where a frame waits for its next token.
  auto takeSpace = [&] {
    if (f.spaces >= kMaxSpaces)
      return;
    ++f.spaces;
    out.push_back(std::move(t));
  };
  switch (f.kind) {
  case Frame::Value:
    if (space)
      return takeSpace();
    switch (n.kind) {
    case Kind::AnyOf:
      for (int alt : n.alts) {
        Thread copy = t;
        copy.back() = frame(Frame::Value, alt, f.spaces);
        step(std::move(copy), b, out);
      }
      return;
    case Kind::Object:
    case Kind::AnyObject:
      if (b != '{')
        return;
      f = frame(Frame::Object, f.node);
      out.push_back(std::move(t));
      return;
    case Kind::Array:
      if (b != '[')
        return;
      f = frame(Frame::Array, f.node);
      out.push_back(std::move(t));
      return;
    case Kind::String:
      if (b != '"')
        return;
      f = frame(Frame::String, f.node);
      out.push_back(std::move(t));
      return;
    case Kind::Number:
    case Kind::Integer:
      f = frame(Frame::Number, f.node);
      f.phase = Start;
      return step(std::move(t), b, out);
    case Kind::Sequence:
      f = frame(Frame::Sequence, f.node);
      return step(std::move(t), b, out);
    case Kind::Literal:
      if (n.text.empty() || static_cast<uint8_t>(n.text[0]) != b)
        return;
      if (n.text.size() == 1)
        t.pop_back();
      else {
        f = frame(Frame::Literal, f.node);
        f.count = 1;
      }
      out.push_back(std::move(t));
      return;
    }
    return;
  case Frame::Sequence:
    // The last part started has ended: the next one takes the byte.
    if (f.index == static_cast<int32_t>(n.alts.size())) {
      t.pop_back();
      return step(std::move(t), b, out);
    }
    t.push_back(frame(Frame::Value, n.alts[f.index++]));
    return step(std::move(t), b, out);
  case Frame::Literal:
    if (static_cast<uint8_t>(n.text[f.count]) != b)
      return;
    if (++f.count == static_cast<int64_t>(n.text.size()))
      t.pop_back();
    out.push_back(std::move(t));
    return;
  case Frame::String:
    if (f.phase == 0) {
      if (b == '"')
        t.pop_back();
      else if (b == '\\')
        f.phase = 1;
      else if (b < 0x20)
        return;
    } else if (f.phase == 1) {
      if (b == 'u')
        f.phase = 2;
      else if (std::string_view("\"\\/bfnrt").find(static_cast<char>(b)) !=
               std::string_view::npos)
        f.phase = 0;
      else
        return;
    } else if (f.phase == 2 && (b == 'd' || b == 'D')) {
      f.phase = 6; // \uD...: a surrogate unless the next digit is 0-7
    } else if (f.phase == 6) {
      if (b < '0' || b > '7')
        return;
      f.phase = 4;
    } else {
      if (!isHex(b))
        return;
      f.phase = f.phase == 5 ? 0 : f.phase + 1;
    }
    out.push_back(std::move(t));
    return;
  case Frame::Number: {
    const uint8_t next = numberNext(f.phase, b, n.kind == Kind::Integer);
    // `index` counts the exponent's digits: at most 3 (parsers refuse
    // what overflows a double, e.g. 7e6395).
    const bool exponentDigit = next == Exponent;
    if (next != Dead && f.count < kMaxNumberBytes &&
        (!exponentDigit || f.index < 3)) {
      f.index += exponentDigit;
      f.phase = next;
      ++f.count;
      out.push_back(std::move(t));
      return;
    }
    // The byte ends the number: its parent takes it.
    if (!isFinal(f.phase))
      return;
    t.pop_back();
    return step(std::move(t), b, out);
  }
  case Frame::Key: {
    // Candidates: the parent's next property on, up to its first required
    // one; `index` is the first whose key matches the bytes so far.
    const Frame &object = t[t.size() - 2];
    const JsonGrammar::Node &o = nodes[object.node];
    const std::string &sofar = o.props[f.index].key;
    for (std::size_t j = object.index; j < o.props.size(); ++j) {
      const std::string &key = o.props[j].key;
      if (static_cast<int64_t>(key.size()) > f.count &&
          key.compare(0, f.count, sofar, 0, f.count) == 0 &&
          static_cast<uint8_t>(key[f.count]) == b) {
        if (static_cast<int64_t>(key.size()) == f.count + 1) {
          t.pop_back();
          t.back().count = static_cast<int64_t>(j);
          t.back().index = static_cast<int32_t>(j) + 1;
        } else {
          f.index = static_cast<int32_t>(j);
          ++f.count;
        }
        out.push_back(std::move(t));
        return;
      }
      if (o.props[j].required)
        break;
    }
    return;
  }
  case Frame::Object: {
    const bool any = n.kind == Kind::AnyObject;
    // No required property left from `index` on.
    auto closable = [&] {
      for (std::size_t j = f.index; j < n.props.size(); ++j)
        if (n.props[j].required)
          return false;
      return true;
    };
    if (space)
      return takeSpace();
    f.spaces = 0;
    switch (f.phase) {
    case 0: // after {
    case 4: // after ,
      if (b == '"') {
        f.phase = 1;
        if (any) {
          t.push_back(frame(Frame::String, f.node));
        } else {
          if (f.index >= static_cast<int32_t>(n.props.size()))
            return;
          Frame key = frame(Frame::Key, f.node);
          key.index = f.index;
          key.count = 1;
          t.push_back(key);
        }
        out.push_back(std::move(t));
        return;
      }
      if (b == '}' && f.phase == 0 && (any || closable())) {
        t.pop_back();
        out.push_back(std::move(t));
      }
      return;
    case 1: // after the key
      if (b != ':')
        return;
      f.phase = 3;
      t.push_back(frame(Frame::Value,
                        any ? n.items : n.props[f.count].node));
      out.push_back(std::move(t));
      return;
    case 3: // after the value
      if (b == ',' && (any || f.index < static_cast<int32_t>(n.props.size()))) {
        f.phase = 4;
        out.push_back(std::move(t));
      } else if (b == '}' && (any || closable())) {
        t.pop_back();
        out.push_back(std::move(t));
      }
      return;
    }
    return;
  }
  case Frame::Array:
    if (space)
      return takeSpace();
    f.spaces = 0;
    if (b == ']') {
      if (f.phase != 2 && f.count >= n.minItems) {
        t.pop_back();
        out.push_back(std::move(t));
      }
      return;
    }
    if (f.phase == 1) {
      if (b == ',' && (n.maxItems < 0 || f.count < n.maxItems)) {
        f.phase = 2;
        out.push_back(std::move(t));
      }
      return;
    }
    if (n.maxItems >= 0 && f.count >= n.maxItems)
      return;
    f.phase = 1;
    ++f.count;
    t.push_back(frame(Frame::Value, n.items));
    return step(std::move(t), b, out);
  }
}

TokenIndex::TokenIndex(std::vector<std::string> bytes, std::vector<int64_t> eos)
    : bytes_(std::move(bytes)), eos_(std::move(eos)),
      plain_(bytes_.size(), 0) {
  for (std::size_t id = 0; id < bytes_.size(); ++id) {
    const std::string &b = bytes_[id];
    if (b.empty() || isEos(static_cast<int64_t>(id)))
      continue;
    byFirst_[static_cast<uint8_t>(b[0])].push_back(static_cast<int64_t>(id));
    plain_[id] = std::none_of(b.begin(), b.end(), [](char c) {
      auto u = static_cast<uint8_t>(c);
      return u == '"' || u == '\\' || u < 0x20;
    });
  }
}

bool TokenIndex::isEos(int64_t id) const {
  return std::find(eos_.begin(), eos_.end(), id) != eos_.end();
}

void TokenIndex::allowed(const JsonMatcher &matcher,
                         std::vector<uint8_t> &allowed) const {
  allowed.assign(bytes_.size(), 0);
  const bool plainString = matcher.inPlainString();
  for (int first = 0; first < 256; ++first) {
    const std::vector<int64_t> &group = byFirst_[first];
    if (group.empty())
      continue;
    JsonMatcher afterFirst = matcher;
    if (!afterFirst.accept(static_cast<uint8_t>(first)))
      continue;
    // Whether each second byte is taken after this first one (-1: not
    // tried yet): most of a group fails on its second byte.
    int8_t second[256];
    std::fill(std::begin(second), std::end(second), int8_t(-1));
    for (int64_t id : group) {
      if (plainString && plain_[id]) {
        allowed[id] = 1;
        continue;
      }
      const std::string &b = bytes_[id];
      if (b.size() == 1) {
        allowed[id] = 1;
        continue;
      }
      auto c = static_cast<uint8_t>(b[1]);
      if (second[c] < 0) {
        JsonMatcher probe = afterFirst;
        second[c] = probe.accept(c) ? 1 : 0;
      }
      if (second[c] == 0)
        continue;
      // A copy fed byte by byte (accept(string) would copy it again).
      JsonMatcher rest = afterFirst;
      bool whole = true;
      for (std::size_t k = 1; k < b.size() && whole; ++k)
        whole = rest.accept(static_cast<uint8_t>(b[k]));
      allowed[id] = whole;
    }
  }
  if (matcher.complete())
    for (int64_t id : eos_)
      if (id >= 0 && id < static_cast<int64_t>(allowed.size()))
        allowed[id] = 1;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonGrammar> grammar,
                               std::shared_ptr<const TokenIndex> index)
    : matcher(std::move(grammar)), index(std::move(index)) {}

void JsonConstraint::allowed(std::vector<uint8_t> &allowed) {
  index->allowed(matcher, allowed);
}

void JsonConstraint::accept(int64_t token) {
  if (!index->isEos(token))
    matcher.accept(index->bytes(token));
}

std::shared_ptr<const JsonGrammar>
JsonGrammarCache::get(const nlohmann::ordered_json &schema,
                      const std::string &where,
                      std::string &error) {
  const std::string key = schema.dump();
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = grammars.find(key);
    if (found != grammars.end())
      return found->second;
  }
  std::shared_ptr<const JsonGrammar> grammar =
      JsonGrammar::compile(schema, where, error);
  if (!grammar)
    return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (grammars.emplace(key, grammar).second) {
    order.push_back(key);
    if (order.size() > kCapacity) {
      grammars.erase(order.front());
      order.erase(order.begin());
    }
  }
  return grammar;
}

} // namespace tfmc::runtime::serve
