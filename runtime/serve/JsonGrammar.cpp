//===- JsonGrammar.cpp - Token masks that keep output JSON of a schema ----===//

#include "runtime/serve/JsonGrammar.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace tfmc::runtime::serve {

using json = nlohmann::ordered_json;
using Frame = JsonGrammarState::Frame;
using Stacks = JsonGrammarState::Stacks;

namespace {

struct SchemaError {
  std::string message;
};

bool isSpace(uint8_t c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

int hexValue(uint8_t c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// A string's UTF-8 state: the continuation bytes still owed (low 2 bits)
// and the range the next one must fall in (above them), which is narrower
// than 80..BF right after a lead byte that could otherwise start an
// overlong form, a surrogate, or a code point above U+10FFFF.
constexpr uint8_t kContinuationLow[5] = {0x80, 0xA0, 0x80, 0x90, 0x80};
constexpr uint8_t kContinuationHigh[5] = {0xBF, 0xBF, 0x9F, 0xBF, 0x8F};

int utf8Lead(uint8_t c) {
  if (c >= 0xC2 && c <= 0xDF)
    return 1;
  if (c == 0xE0)
    return 2 | 1 << 2;
  if (c == 0xED)
    return 2 | 2 << 2;
  if (c >= 0xE1 && c <= 0xEF)
    return 2;
  if (c == 0xF0)
    return 3 | 3 << 2;
  if (c == 0xF4)
    return 3 | 4 << 2;
  if (c >= 0xF1 && c <= 0xF3)
    return 3;
  return -1; // a continuation byte, C0, C1, F5..FF
}

int utf8Continue(uint32_t state, uint8_t c) {
  const uint32_t range = state >> 2;
  if (c < kContinuationLow[range] || c > kContinuationHigh[range])
    return -1;
  return static_cast<int>((state & 3) - 1);
}

// The number automaton: JSON's grammar, one state per position in it.
enum NumberState : uint8_t {
  Minus,   // after '-'
  Zero,    // a leading 0 (no digit may follow)
  Int,     // integer digits
  Dot,     // after '.'
  Frac,    // fraction digits
  Exp,     // after 'e'
  ExpSign, // after 'e+' / 'e-'
  ExpDigit
};

// Digits a number's parts may have. JSON sets no bound, but parsers read
// numbers as doubles and some refuse one that overflows (nlohmann's
// parser refuses 1e400): with at most 20 integer digits and a 2-digit
// exponent every number is a finite double (below 1e120). The bounds
// also stop a model writing digits for ever.
constexpr uint32_t kMaxIntegerDigits = 20;
constexpr uint32_t kMaxFractionDigits = 20;
constexpr uint32_t kMaxExponentDigits = 2;

bool numberFinal(uint8_t state) {
  return state == Zero || state == Int || state == Frac || state == ExpDigit;
}

/// A number frame's next byte: phase is the automaton's state, a is 1 for
/// an integer, b counts the current part's digits. False (unchanged) when
/// `c` cannot continue the number.
bool numberByte(Frame &n, uint8_t c) {
  const bool digit = c >= '0' && c <= '9';
  const bool integer = n.a != 0;
  auto to = [&](NumberState state, uint32_t digits) {
    n.phase = state;
    n.b = digits;
    return true;
  };
  switch (n.phase) {
  case Minus:
    return c == '0' ? to(Zero, 1) : digit ? to(Int, 1) : false;
  case Zero:
  case Int:
    if (digit)
      return n.phase == Int && n.b < kMaxIntegerDigits && to(Int, n.b + 1);
    if (integer)
      return false;
    return c == '.' ? to(Dot, 0) : (c == 'e' || c == 'E') ? to(Exp, 0) : false;
  case Dot:
    return digit && to(Frac, 1);
  case Frac:
    if (digit)
      return n.b < kMaxFractionDigits && to(Frac, n.b + 1);
    return (c == 'e' || c == 'E') && to(Exp, 0);
  case Exp:
    return (c == '+' || c == '-') ? to(ExpSign, 0) : digit && to(ExpDigit, 1);
  case ExpSign:
  case ExpDigit:
    return digit && n.b < kMaxExponentDigits && to(ExpDigit, n.b + 1);
  }
  return false;
}

/// A string's next byte: 0 refused, 1 taken, 2 the closing quote. Phase:
/// 0 text, 1 after '\', 2..5 \u's digits (a: their value), 6 and 7 the
/// `\u` of a high surrogate's low half, 8..11 its digits; b: the UTF-8
/// state (utf8Lead). It depends on the frame alone: TokenTrie runs it on
/// tokens ahead of time.
int stringByte(Frame &s, uint8_t c) {
  switch (s.phase) {
  case 0: {
    if (s.b) {
      const int next = utf8Continue(s.b, c);
      if (next < 0)
        return 0;
      s.b = static_cast<uint32_t>(next);
      return 1;
    }
    if (c == '"')
      return 2;
    if (c == '\\') {
      s.phase = 1;
      return 1;
    }
    if (c < 0x20)
      return 0;
    if (c < 0x80)
      return 1;
    const int next = utf8Lead(c);
    if (next < 0)
      return 0;
    s.b = static_cast<uint32_t>(next);
    return 1;
  }
  case 1:
    switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
      s.phase = 0;
      return 1;
    case 'u':
      s.phase = 2;
      s.a = 0;
      return 1;
    default:
      return 0;
    }
  case 6:
    if (c != '\\')
      return 0;
    s.phase = 7;
    return 1;
  case 7:
    if (c != 'u')
      return 0;
    s.phase = 8;
    s.a = 0;
    return 1;
  default: {
    const int digit = hexValue(c);
    if (digit < 0)
      return 0;
    s.a = s.a * 16 + static_cast<uint32_t>(digit);
    ++s.phase;
    // Two digits tell a surrogate: a low half may not come first (strict
    // parsers refuse a lone one), and must come second.
    if (s.phase == 4 && s.a >= 0xDC && s.a <= 0xDF)
      return 0;
    if (s.phase == 10 && (s.a < 0xDC || s.a > 0xDF))
      return 0;
    if (s.phase == 6 && !(s.a >= 0xD800 && s.a <= 0xDBFF))
      s.phase = 0;
    if (s.phase == 12)
      s.phase = 0;
    return 1;
  }
  }
}

// Phases of an object's frame (AnyObject uses all but Key).
enum ObjectPhase : uint8_t { Open, KeyStart, Key, Colon, AfterValue };

Frame frame(Frame::Kind kind, uint32_t node) {
  Frame f;
  f.kind = kind;
  f.node = node;
  return f;
}

bool sameFrames(const Frame *x, const Frame *y, std::size_t n) {
  return std::memcmp(x, y, n * sizeof(Frame)) == 0;
}

static_assert(sizeof(Frame) == 16, "frames are compared as bytes");

/// "/" + KEY with JSON pointer's escapes.
std::string pointer(const std::string &key) {
  std::string out = "/";
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string compact(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

//===----------------------------------------------------------------------===//
// Compiling a schema
//===----------------------------------------------------------------------===//

class JsonSchemaCompiler {
public:
  using Node = JsonSchemaGrammar::Node;

  JsonSchemaCompiler(const json &root, const JsonGrammarOptions &options,
                     JsonSchemaGrammar &grammar)
      : root(root), where(options.where), g(grammar) {
    g.maxWhitespace_ = options.maxWhitespace;
  }

  void compileRoot() {
    // Through the same placeholder as a $ref, so "#" may recurse.
    g.root = add(Node{});
    refs["#"] = g.root;
    const uint32_t body = compile(root, "");
    g.nodes[g.root].alts = {body};
    finish();
  }

  void compileAnyObject() {
    anyValue();
    Node object;
    object.kind = Node::AnyObject;
    g.root = add(std::move(object));
    finish();
  }

private:
  [[noreturn]] void fail(const std::string &path, const std::string &what) {
    throw SchemaError{where + path + ": " + what};
  }

  uint32_t add(Node node) {
    g.nodes.push_back(std::move(node));
    return static_cast<uint32_t>(g.nodes.size() - 1);
  }

  uint32_t simple(Node::Kind kind) {
    uint32_t &slot = simpleNodes[kind];
    if (!slot) {
      Node node;
      node.kind = kind;
      slot = add(std::move(node)) + 1;
    }
    return slot - 1;
  }

  /// One node writing any of `values`' compact texts.
  uint32_t literal(const std::vector<json> &values) {
    Node node;
    node.kind = Node::Literal;
    for (const json &value : values)
      node.texts.push_back(compact(value));
    // Sorted: texts sharing a prefix are neighbours, and a text's
    // extensions follow it (the matcher relies on both).
    std::sort(node.texts.begin(), node.texts.end());
    node.texts.erase(std::unique(node.texts.begin(), node.texts.end()),
                     node.texts.end());
    return add(std::move(node));
  }

  /// Any JSON value (made on first use): any object, any array, string,
  /// number, true / false / null.
  uint32_t anyValue() {
    if (haveAnyValue)
      return g.anyValue;
    haveAnyValue = true;
    g.anyValue = add(Node{});
    Node object;
    object.kind = Node::AnyObject;
    Node array;
    array.kind = Node::Array;
    array.items = g.anyValue;
    std::vector<uint32_t> alts = {add(std::move(object)), add(std::move(array)),
                                  simple(Node::String), simple(Node::Number),
                                  literal({true, false, nullptr})};
    g.nodes[g.anyValue].alts = std::move(alts);
    return g.anyValue;
  }

  static bool isAnnotation(const std::string &key) {
    static const std::set<std::string> keys = {
        "description", "title",      "default",  "examples",
        "$schema",     "$id",        "$comment", "$defs",
        "definitions", "deprecated", "readOnly", "writeOnly"};
    return keys.count(key) != 0;
  }
  static bool isSupported(const std::string &key) {
    static const std::set<std::string> keys = {
        "type",  "properties", "required", "additionalProperties",
        "items", "minItems",   "maxItems", "enum",
        "const", "anyOf",      "$ref"};
    return keys.count(key) != 0;
  }

  /// Refuses any supported keyword of `schema` but `allowed` beside `what`.
  void alone(const json &schema, const std::string &what,
             const std::set<std::string> &allowed, const std::string &path) {
    for (const auto &item : schema.items())
      if (item.key() != what && isSupported(item.key()) &&
          !allowed.count(item.key()))
        fail(path,
             "'" + item.key() + "' beside '" + what + "' is not supported");
  }

  uint32_t compile(const json &schema, const std::string &path) {
    if (schema.is_boolean()) {
      if (schema.get<bool>())
        return anyValue();
      fail(path, "the schema false (no value) is not supported");
    }
    if (!schema.is_object())
      fail(path, "a schema must be an object");
    for (const auto &item : schema.items())
      if (!isAnnotation(item.key()) && !isSupported(item.key()))
        fail(path, "'" + item.key() + "' is not supported");

    if (schema.contains("$ref")) {
      alone(schema, "$ref", {}, path);
      return reference(schema["$ref"], path);
    }
    if (schema.contains("anyOf")) {
      alone(schema, "anyOf", {}, path);
      const json &alts = schema["anyOf"];
      if (!alts.is_array() || alts.empty())
        fail(path, "'anyOf' must be a non-empty list of schemas");
      Node node;
      for (std::size_t i = 0; i < alts.size(); ++i)
        node.alts.push_back(
            compile(alts[i], path + "/anyOf/" + std::to_string(i)));
      return add(std::move(node));
    }

    std::vector<std::string> types;
    if (schema.contains("type")) {
      const json &type = schema["type"];
      std::vector<json> names = type.is_array() ? type.get<std::vector<json>>()
                                                : std::vector<json>{type};
      static const std::set<std::string> known = {
          "object", "array", "string", "number", "integer", "boolean", "null"};
      if (names.empty())
        fail(path, "'type' must be a type's name or a non-empty list of them");
      for (const json &name : names) {
        if (!name.is_string())
          fail(path,
               "'type' must be a type's name or a non-empty list of them");
        const std::string text = name.get<std::string>();
        if (!known.count(text))
          fail(path, "'type' " + compact(name) + " is not supported");
        if (std::find(types.begin(), types.end(), text) == types.end())
          types.push_back(text);
      }
    }

    if (schema.contains("enum") || schema.contains("const")) {
      const bool isEnum = schema.contains("enum");
      alone(schema, isEnum ? "enum" : "const", {"type"}, path);
      std::vector<json> values;
      if (isEnum) {
        if (!schema["enum"].is_array() || schema["enum"].empty())
          fail(path, "'enum' must be a non-empty list");
        values = schema["enum"].get<std::vector<json>>();
      } else {
        values = {schema["const"]};
      }
      if (!types.empty()) {
        // JSON schema's meaning: a value must satisfy both keywords.
        std::vector<json> kept;
        for (const json &value : values)
          for (const std::string &type : types)
            if (hasType(value, type)) {
              kept.push_back(value);
              break;
            }
        if (kept.empty())
          fail(path, std::string("no '") + (isEnum ? "enum" : "const") +
                         "' value has the 'type'");
        values = std::move(kept);
      }
      return literal(values);
    }

    if (types.empty()) {
      // No type: the keywords say which (JSON schema's keywords apply to
      // their own type only; a schema with none is any value).
      const bool objectish = schema.contains("properties") ||
                             schema.contains("required") ||
                             schema.contains("additionalProperties");
      const bool arrayish = schema.contains("items") ||
                            schema.contains("minItems") ||
                            schema.contains("maxItems");
      if (objectish)
        types.push_back("object");
      if (arrayish)
        types.push_back("array");
      if (types.empty())
        return anyValue();
    }
    std::vector<uint32_t> alts;
    for (const std::string &type : types)
      alts.push_back(typed(type, schema, path));
    if (alts.size() == 1)
      return alts[0];
    Node node;
    node.alts = std::move(alts);
    return add(std::move(node));
  }

  static bool hasType(const json &value, const std::string &type) {
    if (type == "string")
      return value.is_string();
    if (type == "number")
      return value.is_number();
    if (type == "integer")
      return value.is_number_integer() ||
             (value.is_number_float() && std::isfinite(value.get<double>()) &&
              std::floor(value.get<double>()) == value.get<double>());
    if (type == "boolean")
      return value.is_boolean();
    if (type == "null")
      return value.is_null();
    if (type == "object")
      return value.is_object();
    return value.is_array();
  }

  uint32_t count(const json &schema, const char *key, uint32_t otherwise,
                 const std::string &path) {
    if (!schema.contains(key))
      return otherwise;
    const json &value = schema[key];
    if (!value.is_number_unsigned() || value.get<uint64_t>() >= UINT32_MAX)
      fail(path, std::string("'") + key + "' must be a non-negative integer");
    return static_cast<uint32_t>(value.get<uint64_t>());
  }

  uint32_t typed(const std::string &type, const json &schema,
                 const std::string &path) {
    if (type == "string")
      return simple(Node::String);
    if (type == "number")
      return simple(Node::Number);
    if (type == "integer")
      return simple(Node::Integer);
    if (type == "boolean")
      return literal({true, false});
    if (type == "null")
      return literal({nullptr});
    if (type == "array") {
      if (schema.contains("items") && schema["items"].is_array())
        fail(path, "'items' as a list (a tuple) is not supported");
      Node node;
      node.kind = Node::Array;
      node.minItems = count(schema, "minItems", 0, path);
      node.maxItems = count(schema, "maxItems", UINT32_MAX, path);
      if (node.minItems > node.maxItems)
        fail(path, "'minItems' is above 'maxItems'");
      node.items = schema.contains("items")
                       ? compile(schema["items"], path + "/items")
                       : anyValue();
      return add(std::move(node));
    }
    // An object.
    const json empty = json::object();
    const json &properties =
        schema.contains("properties") ? schema["properties"] : empty;
    if (!properties.is_object())
      fail(path, "'properties' must be an object of schemas");
    std::set<std::string> required;
    if (schema.contains("required")) {
      const json &names = schema["required"];
      if (!names.is_array())
        fail(path, "'required' must be a list of property names");
      for (const json &name : names) {
        if (!name.is_string())
          fail(path, "'required' must be a list of property names");
        if (!properties.contains(name.get<std::string>()))
          fail(path, "'required' names " + compact(name) +
                         ", which 'properties' does not list");
        required.insert(name.get<std::string>());
      }
    }
    bool closed = false;
    if (schema.contains("additionalProperties")) {
      if (!schema["additionalProperties"].is_boolean())
        fail(path, "'additionalProperties' other than true or false is not "
                   "supported");
      closed = !schema["additionalProperties"].get<bool>();
    }
    if (!schema.contains("properties") && !closed) {
      anyValue();
      Node node;
      node.kind = Node::AnyObject;
      return add(std::move(node));
    }
    Node node;
    node.kind = Node::Object;
    for (const auto &item : properties.items()) {
      JsonSchemaGrammar::Property property;
      property.key = compact(json(item.key())).substr(1);
      property.required = required.count(item.key()) != 0;
      property.node =
          compile(item.value(), path + "/properties" + pointer(item.key()));
      node.props.push_back(std::move(property));
    }
    return add(std::move(node));
  }

  uint32_t reference(const json &target, const std::string &path) {
    if (!target.is_string())
      fail(path, "'$ref' must be a string");
    const std::string text = target.get<std::string>();
    auto known = refs.find(text);
    if (known != refs.end())
      return known->second;
    std::string section, name;
    for (const char *prefix : {"#/$defs/", "#/definitions/"}) {
      const std::size_t length = std::strlen(prefix);
      if (text.compare(0, length, prefix) == 0) {
        section = std::string(prefix + 2, length - 3);
        name = text.substr(length);
      }
    }
    if (section.empty() || name.empty() || name.find('/') != std::string::npos)
      fail(path, "'$ref' " + compact(target) +
                     " is not supported (only '#', '#/$defs/NAME' and "
                     "'#/definitions/NAME')");
    // NAME is a JSON pointer's token: ~1 is '/', ~0 is '~'.
    std::string key;
    for (std::size_t i = 0; i < name.size(); ++i) {
      if (name[i] == '~' && i + 1 < name.size() &&
          (name[i + 1] == '0' || name[i + 1] == '1')) {
        key += name[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        key += name[i];
      }
    }
    if (!root.is_object() || !root.contains(section) ||
        !root[section].is_object() || !root[section].contains(key))
      fail(path, "'$ref' " + compact(target) + " names no definition");
    // The placeholder is in the map before the body compiles, so the body
    // may refer to itself.
    const uint32_t slot = add(Node{});
    refs[text] = slot;
    const uint32_t body =
        compile(root[section][key], "/" + section + pointer(key));
    g.nodes[slot].alts = {body};
    return slot;
  }

  /// After every node: anyOf flattened, nodes with no finite value pruned,
  /// the bytes each value may begin with, objects' nextRequired.
  void finish() {
    std::vector<Node> &nodes = g.nodes;
    const std::size_t n = nodes.size();
    // Every anyOf's alternatives as non-anyOf nodes (a $ref is an anyOf
    // of one), so that a value splits a thread once. A cycle of anyOf /
    // $ref that never reaches a value contributes nothing.
    std::vector<std::vector<uint32_t>> flat(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (nodes[i].kind != Node::AnyOf)
        continue;
      std::vector<char> seen(n, 0);
      // Depth first, alternatives in their order.
      std::vector<std::pair<uint32_t, std::size_t>> walk = {{uint32_t(i), 0}};
      seen[i] = 1;
      while (!walk.empty()) {
        auto &[node, next] = walk.back();
        if (next == nodes[node].alts.size()) {
          walk.pop_back();
          continue;
        }
        const uint32_t alt = nodes[node].alts[next++];
        if (seen[alt])
          continue;
        seen[alt] = 1;
        if (nodes[alt].kind == Node::AnyOf)
          walk.push_back({alt, 0});
        else
          flat[i].push_back(alt);
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (nodes[i].kind == Node::AnyOf)
        nodes[i].alts = std::move(flat[i]);

    // Which nodes have a finite value: a least fixed point.
    std::vector<char> finite(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (finite[i])
          continue;
        const Node &node = nodes[i];
        bool value = true;
        if (node.kind == Node::AnyOf) {
          value = std::any_of(node.alts.begin(), node.alts.end(),
                              [&](uint32_t alt) { return finite[alt]; });
        } else if (node.kind == Node::Array) {
          value = node.minItems == 0 || finite[node.items];
        } else if (node.kind == Node::Object) {
          for (const auto &property : node.props)
            value = value && (!property.required || finite[property.node]);
        }
        if (value) {
          finite[i] = 1;
          changed = true;
        }
      }
    }
    if (!finite[g.root])
      fail("", "the schema has no finite value (a required property or item "
               "contains itself)");
    // Prune what cannot finish, so that every live thread can.
    for (Node &node : nodes) {
      if (node.kind == Node::AnyOf) {
        node.alts.erase(
            std::remove_if(node.alts.begin(), node.alts.end(),
                           [&](uint32_t alt) { return !finite[alt]; }),
            node.alts.end());
      } else if (node.kind == Node::Array) {
        if (!finite[node.items])
          node.maxItems = 0;
      } else if (node.kind == Node::Object) {
        node.props.erase(
            std::remove_if(node.props.begin(), node.props.end(),
                           [&](const JsonSchemaGrammar::Property &property) {
                             return !property.required &&
                                    !finite[property.node];
                           }),
            node.props.end());
      }
    }

    for (Node &node : nodes) {
      switch (node.kind) {
      case Node::AnyOf:
        break;
      case Node::Object:
      case Node::AnyObject:
        node.first.set('{');
        break;
      case Node::Array:
        node.first.set('[');
        break;
      case Node::String:
        node.first.set('"');
        break;
      case Node::Number:
      case Node::Integer:
        node.first.set('-');
        for (char c = '0'; c <= '9'; ++c)
          node.first.set(static_cast<uint8_t>(c));
        break;
      case Node::Literal:
        for (const std::string &text : node.texts)
          node.first.set(static_cast<uint8_t>(text[0]));
        break;
      }
      if (node.kind == Node::Object) {
        const uint32_t size = static_cast<uint32_t>(node.props.size());
        node.nextRequired.assign(size + 1, size);
        for (uint32_t i = size; i-- > 0;)
          node.nextRequired[i] =
              node.props[i].required ? i : node.nextRequired[i + 1];
      }
    }
    for (Node &node : nodes)
      if (node.kind == Node::AnyOf)
        for (uint32_t alt : node.alts)
          node.first |= nodes[alt].first;
  }

  const json &root;
  std::string where;
  JsonSchemaGrammar &g;
  std::unordered_map<std::string, uint32_t> refs;
  uint32_t simpleNodes[8] = {}; ///< by kind: index + 1
  bool haveAnyValue = false;
};

std::shared_ptr<const JsonSchemaGrammar>
compileJsonSchema(const json &schema, std::string &error,
                  const JsonGrammarOptions &options) {
  auto grammar = std::make_shared<JsonSchemaGrammar>();
  try {
    JsonSchemaCompiler(schema, options, *grammar).compileRoot();
  } catch (const SchemaError &refusal) {
    error = refusal.message;
    return nullptr;
  }
  return grammar;
}

std::shared_ptr<const JsonSchemaGrammar>
compileJsonSchema(const nlohmann::json &schema, std::string &error,
                  const JsonGrammarOptions &options) {
  return compileJsonSchema(json(schema), error, options);
}

std::shared_ptr<const JsonSchemaGrammar>
anyJsonObjectGrammar(const JsonGrammarOptions &options) {
  auto grammar = std::make_shared<JsonSchemaGrammar>();
  const json none;
  JsonSchemaCompiler(none, options, *grammar).compileAnyObject();
  return grammar;
}

//===----------------------------------------------------------------------===//
// The matcher
//===----------------------------------------------------------------------===//

/// Steps every thread of a state by one byte. Its scratch (branches an
/// anyOf split off, waiting for the byte) is thread_local.
class JsonGrammarStepper {
public:
  using Node = JsonSchemaGrammar::Node;

  explicit JsonGrammarStepper(const JsonSchemaGrammar &grammar)
      : nodes(grammar.nodes), anyValue(grammar.anyValue),
        maxSpaces(grammar.maxWhitespace()) {}

  /// out = in after `c`; false (out empty) when no thread takes it.
  bool step(const Stacks &in, uint8_t c, Stacks &out) {
    out.frames.clear();
    out.ends.clear();
    std::size_t begin = 0;
    for (uint32_t end : in.ends) {
      const std::size_t start = out.frames.size();
      out.frames.insert(out.frames.end(), in.frames.begin() + begin,
                        in.frames.begin() + end);
      finishThread(out, start, feed(out.frames, start, c));
      while (!pendingEnds.empty()) {
        const std::size_t pendingBegin =
            pendingEnds.size() > 1 ? pendingEnds[pendingEnds.size() - 2] : 0;
        const std::size_t threadStart = out.frames.size();
        out.frames.insert(out.frames.end(), pending.begin() + pendingBegin,
                          pending.end());
        pending.resize(pendingBegin);
        pendingEnds.pop_back();
        finishThread(out, threadStart, feed(out.frames, threadStart, c));
      }
      begin = end;
    }
    if (out.ends.size() > 1)
      merge(out);
    out.plainString = !out.ends.empty();
    for (uint32_t end : out.ends) {
      const Frame &top = out.frames[end - 1];
      out.plainString = out.plainString && top.kind == Frame::String &&
                        top.phase == 0 && top.b == 0;
    }
    return !out.ends.empty();
  }

private:
  void finishThread(Stacks &out, std::size_t start, bool alive) {
    if (alive)
      out.ends.push_back(static_cast<uint32_t>(out.frames.size()));
    else
      out.frames.resize(start);
  }

  /// Drops duplicate threads (two anyOf branches that met again) and
  /// those past kMaxThreads.
  static void merge(Stacks &out) {
    std::size_t kept = 0, write = 0, begin = 0;
    for (std::size_t t = 0; t < out.ends.size(); ++t) {
      const std::size_t end = out.ends[t], size = end - begin;
      bool duplicate = kept == JsonSchemaGrammar::kMaxThreads;
      for (std::size_t u = 0, ubegin = 0; u < kept && !duplicate; ++u) {
        const std::size_t uend = out.ends[u];
        duplicate = uend - ubegin == size &&
                    sameFrames(&out.frames[ubegin], &out.frames[begin], size);
        ubegin = uend;
      }
      if (!duplicate) {
        if (write != begin)
          std::memmove(&out.frames[write], &out.frames[begin],
                       size * sizeof(Frame));
        write += size;
        out.ends[kept++] = static_cast<uint32_t>(write);
      }
      begin = end;
    }
    out.frames.resize(write);
    out.ends.resize(kept);
  }

  bool space(Frame &top) {
    if (top.spaces >= maxSpaces)
      return false;
    ++top.spaces;
    return true;
  }

  /// Feeds `c` to the thread f[begin..]: false when it cannot take it.
  /// An anyOf's other branches go to `pending`, to be fed the same byte.
  bool feed(std::vector<Frame> &f, std::size_t begin, uint8_t c) {
    const bool ws = isSpace(c);
    for (;;) {
      Frame &top = f.back();
      switch (top.kind) {
      case Frame::Root:
        return ws && space(top);

      case Frame::Value: {
        if (ws)
          return space(top);
        const Node &node = nodes[top.node];
        if (!node.first.test(c))
          return false;
        if (node.kind == Node::AnyOf) {
          std::vector<uint32_t> &viable = viableScratch;
          viable.clear();
          for (uint32_t alt : node.alts)
            if (nodes[alt].first.test(c))
              viable.push_back(alt);
          // Last pushed is first fed: push the later branches backwards.
          for (std::size_t k = viable.size(); k-- > 1;) {
            pending.insert(pending.end(), f.begin() + begin, f.end());
            pending.back().node = viable[k];
            pendingEnds.push_back(static_cast<uint32_t>(pending.size()));
          }
          top.node = viable[0];
          continue;
        }
        const uint32_t id = top.node;
        switch (node.kind) {
        case Node::String:
          top = frame(Frame::String, id);
          return true;
        case Node::Number:
        case Node::Integer:
          top = frame(Frame::Number, id);
          top.a = node.kind == Node::Integer;
          top.phase = c == '-' ? Minus : c == '0' ? Zero : Int;
          top.b = c != '-';
          return true;
        case Node::Literal:
          top = frame(Frame::Literal, id);
          continue; // its frame matches c
        case Node::Object:
          top = frame(Frame::Object, id);
          return true;
        case Node::AnyObject:
          top = frame(Frame::AnyObject, id);
          return true;
        case Node::Array:
          top = frame(Frame::Array, id);
          return true;
        case Node::AnyOf:
          break;
        }
        return false;
      }

      case Frame::String:
        switch (stringByte(top, c)) {
        case 0:
          return false;
        case 2:
          f.pop_back();
          return true;
        default:
          return true;
        }

      case Frame::Number: {
        if (numberByte(top, c))
          return true;
        // A number ends at the first byte that cannot continue it, which
        // is its container's.
        if (!numberFinal(top.phase))
          return false;
        f.pop_back();
        continue;
      }

      case Frame::Literal: {
        // a: the first text consistent with what is written, b: bytes
        // written. Texts are sorted, so those sharing a prefix are
        // neighbours.
        const std::vector<std::string> &texts = nodes[top.node].texts;
        const std::string &current = texts[top.a];
        const uint32_t pos = top.b;
        for (std::size_t k = top.a; k < texts.size(); ++k) {
          const std::string &text = texts[k];
          if (k != top.a && text.compare(0, pos, current, 0, pos) != 0)
            break;
          if (text.size() > pos && static_cast<uint8_t>(text[pos]) == c) {
            top.a = static_cast<uint32_t>(k);
            top.b = pos + 1;
            // Done, unless a longer text goes on (the numbers 1 and 12).
            if (top.b == text.size() &&
                !(k + 1 < texts.size() &&
                  texts[k + 1].compare(0, text.size(), text) == 0))
              f.pop_back();
            return true;
          }
        }
        if (current.size() != pos)
          return false;
        f.pop_back(); // a whole text: c is its container's
        continue;
      }

      case Frame::Object: {
        const Node &node = nodes[top.node];
        const uint32_t size = static_cast<uint32_t>(node.props.size());
        if (ws && top.phase != Key)
          return space(top);
        top.spaces = 0;
        switch (top.phase) {
        case Open:
        case KeyStart:
          if (c == '"' && top.a < size) {
            top.phase = Key;
            top.b = 0;
            return true;
          }
          if (c == '}' && top.phase == Open &&
              node.nextRequired[top.a] == size) {
            f.pop_back();
            return true;
          }
          return false;
        case Key: {
          // Candidates: this property up to the first required one; the
          // first whose key goes on with c.
          const uint32_t last = std::min(node.nextRequired[top.a], size - 1);
          const std::string &current = node.props[top.a].key;
          const uint32_t pos = top.b;
          for (uint32_t k = top.a; k <= last; ++k) {
            const std::string &key = node.props[k].key;
            if (key.size() > pos && static_cast<uint8_t>(key[pos]) == c &&
                (k == top.a || key.compare(0, pos, current, 0, pos) == 0)) {
              top.a = k;
              top.b = pos + 1;
              if (top.b == key.size())
                top.phase = Colon;
              return true;
            }
          }
          return false;
        }
        case Colon: {
          if (c != ':')
            return false;
          top.phase = AfterValue;
          const uint32_t child = node.props[top.a].node;
          f.push_back(frame(Frame::Value, child));
          return true;
        }
        default: // AfterValue: top.a is the property just written
          if (c == ',' && top.a + 1 < size) {
            top.phase = KeyStart;
            ++top.a;
            return true;
          }
          if (c == '}' && node.nextRequired[top.a + 1] == size) {
            f.pop_back();
            return true;
          }
          return false;
        }
      }

      case Frame::AnyObject: {
        if (ws)
          return space(top);
        top.spaces = 0;
        switch (top.phase) {
        case Open:
        case KeyStart:
          if (c == '"') {
            top.phase = Colon;
            f.push_back(frame(Frame::String, 0));
            return true;
          }
          if (c == '}' && top.phase == Open) {
            f.pop_back();
            return true;
          }
          return false;
        case Colon:
          if (c != ':')
            return false;
          top.phase = AfterValue;
          f.push_back(frame(Frame::Value, anyValue));
          return true;
        default:
          if (c == ',') {
            top.phase = KeyStart;
            return true;
          }
          if (c == '}') {
            f.pop_back();
            return true;
          }
          return false;
        }
      }

      case Frame::Array: {
        const Node &node = nodes[top.node];
        if (ws)
          return space(top);
        top.spaces = 0;
        if (top.phase == Open) {
          if (c == ']') {
            if (node.minItems != 0)
              return false;
            f.pop_back();
            return true;
          }
          if (node.maxItems == 0)
            return false;
          top.phase = AfterValue;
          top.a = 1;
          f.push_back(frame(Frame::Value, node.items));
          continue; // c begins the first item
        }
        if (c == ',' && top.a < node.maxItems) {
          ++top.a;
          f.push_back(frame(Frame::Value, node.items));
          return true;
        }
        if (c == ']' && top.a >= node.minItems) {
          f.pop_back();
          return true;
        }
        return false;
      }
      }
      return false;
    }
  }

  const std::vector<Node> &nodes;
  const uint32_t anyValue;
  const unsigned maxSpaces;
  static thread_local std::vector<Frame> pending;
  static thread_local std::vector<uint32_t> pendingEnds;
  static thread_local std::vector<uint32_t> viableScratch;
};

thread_local std::vector<Frame> JsonGrammarStepper::pending;
thread_local std::vector<uint32_t> JsonGrammarStepper::pendingEnds;
thread_local std::vector<uint32_t> JsonGrammarStepper::viableScratch;

JsonGrammarState::JsonGrammarState(
    std::shared_ptr<const JsonSchemaGrammar> grammar)
    : grammar_(std::move(grammar)) {
  stacks.frames = {frame(Frame::Root, 0), frame(Frame::Value, grammar_->root)};
  stacks.ends = {2};
}

bool JsonGrammarState::accept(uint8_t byte) {
  static thread_local Stacks next;
  if (!JsonGrammarStepper(*grammar_).step(stacks, byte, next))
    return false;
  std::swap(stacks, next);
  return true;
}

bool JsonGrammarState::accept(std::string_view bytes) {
  Stacks saved = stacks;
  for (char c : bytes)
    if (!accept(static_cast<uint8_t>(c))) {
      stacks = std::move(saved);
      return false;
    }
  return true;
}

bool JsonGrammarState::complete() const {
  std::size_t begin = 0;
  for (uint32_t end : stacks.ends) {
    const Frame &top = stacks.frames[end - 1];
    if (end - begin == 1)
      return true; // the root alone: the value is written
    // A number, or a literal that a longer one extends (12 after 1), ends
    // at the output's end as at any byte that cannot continue it.
    if (end - begin == 2 &&
        ((top.kind == Frame::Number && numberFinal(top.phase)) ||
         (top.kind == Frame::Literal &&
          top.b == grammar_->nodes[top.node].texts[top.a].size())))
      return true;
    begin = end;
  }
  return false;
}

bool JsonGrammarState::operator==(const JsonGrammarState &other) const {
  return grammar_ == other.grammar_ && stacks.ends == other.stacks.ends &&
         sameFrames(stacks.frames.data(), other.stacks.frames.data(),
                    stacks.frames.size());
}

//===----------------------------------------------------------------------===//
// The vocabulary's trie and masks
//===----------------------------------------------------------------------===//

TokenTrie::TokenTrie(const std::vector<std::string> &bytes,
                     const std::vector<int64_t> &eos)
    : bytes_(bytes), eos_(eos) {
  const std::size_t vocab = bytes_.size();
  std::vector<char> isEos(vocab, 0);
  for (int64_t id : eos_)
    if (id >= 0 && static_cast<std::size_t>(id) < vocab)
      isEos[id] = 1;
  std::vector<int32_t> order;
  for (std::size_t id = 0; id < vocab; ++id)
    if (!bytes_[id].empty() && bytes_[id].size() <= 65535 && !isEos[id])
      order.push_back(static_cast<int32_t>(id));
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t x, int32_t y) { return bytes_[x] < bytes_[y]; });

  // Sorted strings are the trie's depth-first order: each token shares
  // its longest common prefix with the one before, then adds nodes.
  byte_ = {0};
  depth_ = {0};
  subtreeEnd_ = {0};
  std::vector<uint32_t> path = {0}; // path[d]: the node at depth d
  std::vector<uint32_t> tokensAt = {0};
  const std::string *previous = nullptr;
  for (int32_t id : order) {
    const std::string &text = bytes_[id];
    std::size_t common = 0;
    if (previous)
      while (common < previous->size() && common < text.size() &&
             (*previous)[common] == text[common])
        ++common;
    while (path.size() - 1 > common) {
      subtreeEnd_[path.back()] = static_cast<uint32_t>(byte_.size());
      path.pop_back();
    }
    for (std::size_t d = common; d < text.size(); ++d) {
      path.push_back(static_cast<uint32_t>(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(text[d]));
      depth_.push_back(static_cast<uint16_t>(d + 1));
      subtreeEnd_.push_back(0);
      tokensAt.push_back(0);
    }
    ++tokensAt[path.back()];
    ids_.push_back(id);
    previous = &text;
  }
  for (uint32_t node : path)
    subtreeEnd_[node] = static_cast<uint32_t>(byte_.size());
  const std::size_t nodes = byte_.size();
  tokenStart_.assign(nodes + 1, 0);
  for (std::size_t i = 0; i < nodes; ++i)
    tokenStart_[i + 1] = tokenStart_[i] + tokensAt[i];
  for (uint16_t d : depth_)
    maxDepth_ = std::max<std::size_t>(maxDepth_, d);

  // Each token read from inside a string, at a character boundary: the
  // same for every grammar and state.
  contentMask_.assign(vocab, 0);
  for (int32_t id : order) {
    Frame string = frame(Frame::String, 0);
    const std::string &text = bytes_[id];
    std::size_t k = 0;
    int taken = 1;
    for (; k < text.size(); ++k) {
      taken = stringByte(string, static_cast<uint8_t>(text[k]));
      if (taken != 1)
        break;
    }
    if (taken == 1)
      contentMask_[id] = 1;
    else if (taken == 2)
      closers_.push_back({id, static_cast<uint32_t>(k + 1)});
  }
}

void TokenTrie::allowedTokens(const JsonGrammarState &state,
                              std::vector<uint8_t> &mask) const {
  static thread_local std::vector<Stacks> buffers;
  static thread_local std::vector<const Stacks *> states;
  if (buffers.size() < std::max<std::size_t>(maxDepth_ + 1, 3))
    buffers.resize(std::max<std::size_t>(maxDepth_ + 1, 3));
  if (states.size() < maxDepth_ + 1)
    states.resize(maxDepth_ + 1);
  const Stacks &root = state.stacks;
  JsonGrammarStepper stepper(state.grammar());

  if (root.plainString) {
    // Inside a string: the tokens that stay in it, precomputed; those
    // that close it, from the state after the quote.
    mask = contentMask_;
    Stacks &closed = buffers[0];
    if (!closers_.empty() && stepper.step(root, '"', closed)) {
      int8_t firstByte[256]; // after the quote: -1 unknown, 0 no, 1 yes
      std::fill(std::begin(firstByte), std::end(firstByte), -1);
      for (const Closer &closer : closers_) {
        const std::string &text = bytes_[closer.id];
        const Stacks *at = &closed;
        bool taken = true;
        for (std::size_t k = closer.after, flip = 1; k < text.size() && taken;
             ++k, flip = 3 - flip) {
          const uint8_t c = static_cast<uint8_t>(text[k]);
          if (k == closer.after && firstByte[c] == 0) {
            taken = false;
            break;
          }
          taken = stepper.step(*at, c, buffers[flip]);
          if (k == closer.after)
            firstByte[c] = taken;
          at = &buffers[flip];
        }
        mask[closer.id] = taken;
      }
    }
  } else {
    // Depth first. states[d]: the state after the path's d bytes; a
    // child whose byte changes nothing (printable ASCII inside a string,
    // after an escape or a character ended) shares its parent's.
    mask.assign(bytes_.size(), 0);
    states[0] = &root;
    const std::size_t nodes = byte_.size();
    for (std::size_t i = 1; i < nodes;) {
      const uint16_t d = depth_[i];
      const Stacks *parent = states[d - 1];
      const uint8_t c = byte_[i];
      if (parent->plainString && c >= 0x20 && c < 0x80 && c != '"' &&
          c != '\\') {
        states[d] = parent;
      } else if (stepper.step(*parent, c, buffers[d])) {
        states[d] = &buffers[d];
      } else {
        i = subtreeEnd_[i]; // no token below can be taken
        continue;
      }
      for (uint32_t k = tokenStart_[i]; k < tokenStart_[i + 1]; ++k)
        mask[ids_[k]] = 1;
      ++i;
    }
  }
  const bool complete = state.complete();
  for (int64_t id : eos_)
    if (id >= 0 && static_cast<std::size_t>(id) < mask.size())
      mask[id] = complete;
}

//===----------------------------------------------------------------------===//
// The cache
//===----------------------------------------------------------------------===//

std::shared_ptr<const JsonSchemaGrammar>
JsonSchemaCache::find(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = index.find(key);
  if (found == index.end())
    return nullptr;
  entries.splice(entries.begin(), entries, found->second);
  return found->second->second;
}

void JsonSchemaCache::insert(const std::string &key,
                             std::shared_ptr<const JsonSchemaGrammar> grammar) {
  std::lock_guard<std::mutex> lock(mutex);
  if (index.count(key) || capacity == 0)
    return; // another thread compiled it meanwhile
  entries.emplace_front(key, std::move(grammar));
  index[key] = entries.begin();
  while (entries.size() > capacity) {
    index.erase(entries.back().first);
    entries.pop_back();
  }
}

std::shared_ptr<const JsonSchemaGrammar>
JsonSchemaCache::get(const json &schema, std::string &error,
                     const JsonGrammarOptions &options) {
  const std::string key =
      std::to_string(options.maxWhitespace) + " " + compact(schema);
  if (auto grammar = find(key))
    return grammar;
  // Compiled outside the lock: a big schema does not hold up the others.
  auto grammar = compileJsonSchema(schema, error, options);
  if (grammar)
    insert(key, grammar);
  return grammar;
}

std::shared_ptr<const JsonSchemaGrammar>
JsonSchemaCache::anyObject(const JsonGrammarOptions &options) {
  // "json_object" is no schema's compact text.
  const std::string key =
      std::to_string(options.maxWhitespace) + " json_object";
  if (auto grammar = find(key))
    return grammar;
  auto grammar = anyJsonObjectGrammar(options);
  insert(key, grammar);
  return grammar;
}

std::size_t JsonSchemaCache::size() const {
  std::lock_guard<std::mutex> lock(mutex);
  return entries.size();
}

} // namespace tfmc::runtime::serve
