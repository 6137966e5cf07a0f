//===- TemplateValue.cpp - Values of the chat template engine -------------===//

#include "runtime/serve/TemplateValue.h"

#include "runtime/serve/TemplateText.h"
#include "support/Utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tfmc::runtime::jinja {

void fail(std::string reason) { throw TemplateFailure{TemplateFailure::Kind::Render, {}, std::move(reason)}; }

void failAt(Location location, std::string reason) {
  throw TemplateFailure{TemplateFailure::Kind::Render, location, std::move(reason)};
}

void failLimit(std::string reason) { throw TemplateFailure{TemplateFailure::Kind::Limit, {}, std::move(reason)}; }

const Value *Dict::find(std::string_view key) const {
  for (const auto &[k, v] : entries)
    if (k == key)
      return &v;
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto &[k, v] : entries)
    if (k == key) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(std::move(key), std::move(value));
}

Value *Object::find(std::string_view name) {
  for (auto &[k, v] : attributes)
    if (k == name)
      return &v;
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.data_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.data_ = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.data_ = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.data_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

namespace {

int depthOf(const ValueList &items) {
  int depth = 0;
  for (const Value &item : items)
    depth = std::max(depth, item.depth());
  if (depth + 1 > kMaxValueDepth)
    failLimit("a list or dict nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  return depth + 1;
}

} // namespace

Value Value::sequence(Kind kind, ValueList items) {
  Value v;
  v.kind_ = kind;
  v.depth_ = static_cast<uint8_t>(depthOf(items));
  v.data_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::dict(Dict d) {
  int depth = 0;
  for (const auto &entry : d.entries)
    depth = std::max(depth, entry.second.depth());
  if (depth + 1 > kMaxValueDepth)
    failLimit("a list or dict nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  Value v;
  v.kind_ = Kind::Dict;
  v.depth_ = static_cast<uint8_t>(depth + 1);
  v.data_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::object(Kind kind, Object o) {
  Value v;
  v.kind_ = kind;
  v.data_ = std::make_shared<Object>(std::move(o));
  return v;
}

Value Value::function(std::string name, std::function<Value(Interpreter &, CallArgs &)> call) {
  Value v;
  v.kind_ = Kind::Function;
  v.data_ = std::make_shared<const Function>(Function{std::move(name), std::move(call)});
  return v;
}

Value Value::iterator(ValueList items) {
  Value v;
  v.kind_ = Kind::Iterator;
  v.data_ = std::make_shared<IteratorState>(IteratorState{std::move(items), 0});
  return v;
}

const std::string &Value::undefinedHint() const {
  static const std::string unnamed = "a value is undefined";
  auto *hint = std::get_if<std::shared_ptr<const std::string>>(&data_);
  return hint && *hint ? **hint : unnamed;
}

const void *Value::identity() const {
  switch (kind_) {
  case Kind::Namespace:
  case Kind::Loop:
    return std::get<std::shared_ptr<Object>>(data_).get();
  case Kind::Function:
    return std::get<std::shared_ptr<const Function>>(data_).get();
  case Kind::Iterator:
    return std::get<std::shared_ptr<IteratorState>>(data_).get();
  default:
    return nullptr;
  }
}

const char *Value::typeName() const {
  switch (kind_) {
  case Kind::Undefined: return "Undefined";
  case Kind::None: return "NoneType";
  case Kind::Bool: return "bool";
  case Kind::Int: return "int";
  case Kind::Float: return "float";
  case Kind::String: return "str";
  case Kind::List: return "list";
  case Kind::Tuple: return "tuple";
  case Kind::Range: return "range";
  case Kind::View: return "dict view";
  case Kind::Iterator: return "iterator";
  case Kind::Dict: return "dict";
  case Kind::Namespace: return "Namespace";
  case Kind::Loop: return "LoopContext";
  case Kind::Function: return "function";
  }
  return "value";
}

bool truthy(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return false;
  case Value::Kind::Bool:
    return v.asBool();
  case Value::Kind::Int:
    return v.asInt() != 0;
  case Value::Kind::Float:
    return v.asFloat() != 0.0;
  case Value::Kind::String:
    return !v.asString().empty();
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Range:
  case Value::Kind::View:
    return !v.items().empty();
  case Value::Kind::Dict:
    return !v.asDict().entries.empty();
  default:
    return true; // objects, functions and iterators, as in Python
  }
}

namespace {

/// Python's exact comparison of an int and a float: -1, 0, 1, or 2 when the
/// float is NaN (unordered).
int compareIntFloat(int64_t i, double f) {
  if (std::isnan(f))
    return 2;
  long double a = static_cast<long double>(i), b = static_cast<long double>(f);
  return a < b ? -1 : a > b ? 1 : 0;
}

bool numericEquals(const Value &a, const Value &b) {
  if (a.isIntegral() && b.isIntegral())
    return a.asInt() == b.asInt();
  if (a.isIntegral())
    return compareIntFloat(a.asInt(), b.asFloat()) == 0;
  if (b.isIntegral())
    return compareIntFloat(b.asInt(), a.asFloat()) == 0;
  return a.asFloat() == b.asFloat();
}

bool numericLess(const Value &a, const Value &b) {
  if (a.isIntegral() && b.isIntegral())
    return a.asInt() < b.asInt();
  if (a.isIntegral())
    return compareIntFloat(a.asInt(), b.asFloat()) == -1;
  if (b.isIntegral())
    return compareIntFloat(b.asInt(), a.asFloat()) == 1;
  return a.asFloat() < b.asFloat();
}

} // namespace

bool equals(const Value &a, const Value &b) {
  if (a.isNumeric() && b.isNumeric())
    return numericEquals(a, b);
  if (a.is(Value::Kind::View) || b.is(Value::Kind::View))
    fail("comparing a dict view is not supported");
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return true;
  case Value::Kind::String:
    return a.asString() == b.asString();
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Range: {
    const ValueList &x = a.items(), &y = b.items();
    if (x.size() != y.size())
      return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!equals(x[i], y[i]))
        return false;
    return true;
  }
  case Value::Kind::Dict: {
    const Dict &x = a.asDict(), &y = b.asDict();
    if (x.entries.size() != y.entries.size())
      return false;
    for (const auto &[key, value] : x.entries) {
      const Value *other = y.find(key);
      if (!other || !equals(value, *other))
        return false;
    }
    return true;
  }
  default:
    return a.identity() == b.identity();
  }
}

bool lessThan(const Value &a, const Value &b) {
  if (a.isUndefined() || b.isUndefined())
    fail((a.isUndefined() ? a : b).undefinedHint());
  if (a.isNumeric() && b.isNumeric())
    return numericLess(a, b);
  if (a.isString() && b.isString())
    return a.asString() < b.asString(); // UTF-8 order is code point order
  if (a.kind() == b.kind() && (a.is(Value::Kind::List) || a.is(Value::Kind::Tuple))) {
    const ValueList &x = a.items(), &y = b.items();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i]))
        return lessThan(x[i], y[i]);
    return x.size() < y.size();
  }
  fail(std::string("'<' not supported between instances of '") + a.typeName() + "' and '" + b.typeName() +
       "'");
}

bool contains(const Value &container, const Value &item) {
  switch (container.kind()) {
  case Value::Kind::Undefined:
    return false;
  case Value::Kind::String:
    if (!item.isString())
      fail(std::string("'in <string>' requires string as left operand, not ") + item.typeName());
    return container.asString().find(item.asString()) != std::string::npos;
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Range:
  case Value::Kind::View:
    for (const Value &x : container.items())
      if (equals(x, item))
        return true;
    return false;
  case Value::Kind::Dict:
    if (item.isString())
      return container.asDict().find(item.asString()) != nullptr;
    if (item.is(Value::Kind::List) || item.is(Value::Kind::Dict) || item.isUndefined())
      fail(std::string("unhashable type: '") + item.typeName() + "'");
    return false; // keys are strings: no other hashable value is one
  case Value::Kind::Iterator:
    fail("'in' on an iterator is not supported");
  default:
    fail(std::string("argument of type '") + container.typeName() + "' is not iterable");
  }
}

std::string floatRepr(double f) {
  if (std::isnan(f))
    return "nan";
  if (std::isinf(f))
    return f < 0 ? "-inf" : "inf";
  if (f == 0.0)
    return std::signbit(f) ? "-0.0" : "0.0";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, f, std::chars_format::scientific);
  std::string text(buffer, result.ptr);
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  std::size_t e = text.find('e');
  std::string digits = text.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exponent = std::stoi(text.substr(e + 1));
  // Python's repr: fixed notation when -4 < decpt <= 16, where the value is
  // 0.DIGITS x 10^decpt; exponent notation otherwise.
  int decpt = exponent + 1;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0)
      return sign + "0." + std::string(-decpt, '0') + digits;
    if (decpt >= static_cast<int>(digits.size()))
      return sign + digits + std::string(decpt - digits.size(), '0') + ".0";
    return sign + digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  std::string mantissa = digits.substr(0, 1);
  if (digits.size() > 1)
    mantissa += "." + digits.substr(1);
  char exponentText[16];
  std::snprintf(exponentText, sizeof exponentText, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + mantissa + exponentText;
}

namespace {

void checkSize(const std::string &out, std::size_t limit) {
  if (out.size() > limit)
    failLimit("a string longer than " + std::to_string(limit) + " bytes");
}

void appendHex(std::string &out, const char *format, unsigned value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, format, value);
  out += buffer;
}

void appendStringRepr(std::string &out, const std::string &s) {
  char quote = '\'';
  if (s.find('\'') != std::string::npos && s.find('"') == std::string::npos)
    quote = '"';
  out += quote;
  for (char c : s) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80)
      // Python leaves printable characters and escapes the others, by
      // Unicode's categories, which this engine does not carry.
      fail("printing a list, tuple or dict that holds non-ASCII text is not supported");
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      appendHex(out, "\\x%02x", byte);
    } else {
      out += c;
    }
  }
  out += quote;
}

void appendItems(std::string &out, const ValueList &items, std::size_t limit) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i)
      out += ", ";
    appendRepr(out, items[i], limit);
  }
}

void appendContainer(std::string &out, const Value &v, std::size_t limit) {
  switch (v.kind()) {
  case Value::Kind::List:
    out += '[';
    appendItems(out, v.items(), limit);
    out += ']';
    break;
  case Value::Kind::Tuple:
    out += '(';
    appendItems(out, v.items(), limit);
    if (v.items().size() == 1)
      out += ',';
    out += ')';
    break;
  case Value::Kind::Dict: {
    out += '{';
    bool first = true;
    for (const auto &[key, value] : v.asDict().entries) {
      if (!first)
        out += ", ";
      first = false;
      appendStringRepr(out, key);
      out += ": ";
      appendRepr(out, value, limit);
      checkSize(out, limit);
    }
    out += '}';
    break;
  }
  default:
    // Python shows these by type and address (or, for range and dict
    // views, by a form this engine does not keep): nothing to match.
    fail(std::string("printing a ") + v.typeName() + " is not supported");
  }
  checkSize(out, limit);
}

} // namespace

void appendStr(std::string &out, const Value &v, std::size_t limit) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return;
  case Value::Kind::None:
    out += "None";
    break;
  case Value::Kind::Bool:
    out += v.asBool() ? "True" : "False";
    break;
  case Value::Kind::Int:
    out += std::to_string(v.asInt());
    break;
  case Value::Kind::Float:
    out += floatRepr(v.asFloat());
    break;
  case Value::Kind::String:
    out += v.asString();
    break;
  default:
    appendContainer(out, v, limit);
    return;
  }
  checkSize(out, limit);
}

void appendRepr(std::string &out, const Value &v, std::size_t limit) {
  if (v.isString()) {
    appendStringRepr(out, v.asString());
    checkSize(out, limit);
  } else if (v.isUndefined()) {
    out += "Undefined";
  } else {
    appendStr(out, v, limit);
  }
}

std::string str(const Value &v, std::size_t limit) {
  if (v.isString())
    return v.asString();
  std::string out;
  appendStr(out, v, limit);
  return out;
}

namespace {

void appendJsonString(std::string &out, const std::string &s, bool ensureAscii) {
  out += '"';
  for (std::size_t pos = 0; pos < s.size();) {
    auto byte = static_cast<unsigned char>(s[pos]);
    if (byte < 0x80) {
      ++pos;
      switch (byte) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        // json.dumps escapes DEL only when ensure_ascii is on.
        if (byte < 0x20 || (ensureAscii && byte == 0x7f))
          appendHex(out, "\\u%04x", byte);
        else
          out += static_cast<char>(byte);
      }
      continue;
    }
    std::size_t start = pos;
    uint32_t cp = nextCodePoint(s, pos);
    if (!ensureAscii) {
      out.append(s, start, pos - start);
    } else if (cp < 0x10000) {
      appendHex(out, "\\u%04x", cp);
    } else {
      cp -= 0x10000;
      appendHex(out, "\\u%04x", 0xD800 + (cp >> 10));
      appendHex(out, "\\u%04x", 0xDC00 + (cp & 0x3FF));
    }
  }
  out += '"';
}

void appendJsonNewline(std::string &out, const JsonOptions &options, int depth) {
  if (options.indent < 0 && !options.indentText)
    return;
  out += '\n';
  for (int i = 0; i < depth; ++i) {
    if (options.indentText)
      out += *options.indentText;
    else
      out.append(static_cast<std::size_t>(options.indent), ' ');
  }
}

} // namespace

void appendJson(std::string &out, const Value &v, const JsonOptions &options, std::size_t limit, int depth) {
  bool pretty = options.indent >= 0 || options.indentText;
  std::string itemSeparator = options.itemSeparator ? *options.itemSeparator : pretty ? "," : ", ";
  std::string keySeparator = options.keySeparator ? *options.keySeparator : ": ";
  switch (v.kind()) {
  case Value::Kind::None:
    out += "null";
    break;
  case Value::Kind::Bool:
    out += v.asBool() ? "true" : "false";
    break;
  case Value::Kind::Int:
    out += std::to_string(v.asInt());
    break;
  case Value::Kind::Float: {
    double f = v.asFloat();
    out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f < 0 ? "-Infinity" : "Infinity") : floatRepr(f);
    break;
  }
  case Value::Kind::String:
    appendJsonString(out, v.asString(), options.ensureAscii);
    break;
  case Value::Kind::List:
  case Value::Kind::Tuple: {
    const ValueList &items = v.items();
    if (items.empty()) {
      out += "[]";
      break;
    }
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += itemSeparator;
      appendJsonNewline(out, options, depth + 1);
      appendJson(out, items[i], options, limit, depth + 1);
    }
    appendJsonNewline(out, options, depth);
    out += ']';
    break;
  }
  case Value::Kind::Dict: {
    std::vector<const std::pair<std::string, Value> *> entries;
    for (const auto &entry : v.asDict().entries)
      entries.push_back(&entry);
    if (options.sortKeys)
      std::stable_sort(entries.begin(), entries.end(), [](auto *a, auto *b) { return a->first < b->first; });
    if (entries.empty()) {
      out += "{}";
      break;
    }
    out += '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i)
        out += itemSeparator;
      appendJsonNewline(out, options, depth + 1);
      appendJsonString(out, entries[i]->first, options.ensureAscii);
      out += keySeparator;
      appendJson(out, entries[i]->second, options, limit, depth + 1);
    }
    appendJsonNewline(out, options, depth);
    out += '}';
    break;
  }
  default:
    fail(std::string("Object of type ") + v.typeName() + " is not JSON serializable");
  }
  checkSize(out, limit);
}

Value fromJson(const nlohmann::ordered_json &json) {
  struct Converter {
    static Value convert(const nlohmann::ordered_json &json, int depth) {
      if (depth > kMaxValueDepth)
        failLimit("a JSON value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
      switch (json.type()) {
      case nlohmann::ordered_json::value_t::null:
        return Value::none();
      case nlohmann::ordered_json::value_t::boolean:
        return Value::boolean(json.get<bool>());
      case nlohmann::ordered_json::value_t::number_integer:
        return Value::integer(json.get<int64_t>());
      case nlohmann::ordered_json::value_t::number_unsigned: {
        auto u = json.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          fail("an integer beyond 64 bits: " + std::to_string(u));
        return Value::integer(static_cast<int64_t>(u));
      }
      case nlohmann::ordered_json::value_t::number_float:
        return Value::number(json.get<double>());
      case nlohmann::ordered_json::value_t::string: {
        const auto &s = json.get_ref<const std::string &>();
        if (!support::isValidUtf8(s))
          fail("a string that is not UTF-8");
        return Value::string(s);
      }
      case nlohmann::ordered_json::value_t::array: {
        ValueList items;
        items.reserve(json.size());
        for (const auto &item : json)
          items.push_back(convert(item, depth + 1));
        return Value::list(std::move(items));
      }
      case nlohmann::ordered_json::value_t::object: {
        Dict d;
        d.entries.reserve(json.size());
        for (const auto &[key, item] : json.items()) {
          if (!support::isValidUtf8(key))
            fail("a key that is not UTF-8");
          d.entries.emplace_back(key, convert(item, depth + 1));
        }
        return Value::dict(std::move(d));
      }
      default:
        fail("a JSON value of an unsupported type (binary)");
      }
    }
  };
  return Converter::convert(json, 0);
}

ValueList iterate(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Range:
  case Value::Kind::View:
    return v.items();
  case Value::Kind::Dict: {
    ValueList keys;
    for (const auto &entry : v.asDict().entries)
      keys.push_back(Value::string(entry.first));
    return keys;
  }
  case Value::Kind::String: {
    ValueList chars;
    const std::string &s = v.asString();
    for (std::size_t pos = 0; pos < s.size();) {
      std::size_t start = pos;
      nextCodePoint(s, pos);
      chars.push_back(Value::string(s.substr(start, pos - start)));
    }
    return chars;
  }
  case Value::Kind::Iterator: {
    IteratorState &state = v.asIterator();
    ValueList rest(state.items.begin() + static_cast<std::ptrdiff_t>(state.next), state.items.end());
    state.next = state.items.size();
    return rest;
  }
  default:
    fail(std::string("'") + v.typeName() + "' object is not iterable");
  }
}

} // namespace tfmc::runtime::jinja
