//===- TemplateMethods.cpp - Attributes, methods and global functions -----===//
//
// `x.name` and `x[key]` as Jinja2's sandbox resolves them: a dict's keys
// (and its get/items/keys/values methods), a str's and a list's methods,
// a namespace's attributes; names starting with "_" and methods that would
// change a value (list.append, dict.update, ...) are Undefined, calling one
// fails, as in transformers' ImmutableSandboxedEnvironment. And the global
// functions: range (at most 100000 items, the sandbox's bound), namespace,
// dict, transformers' raise_exception.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/TemplateEval.h"
#include "runtime/serve/TemplateText.h"

#include "support/Text.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tfmc::runtime::jinja {
namespace {

bool isOneOf(std::string_view name, std::initializer_list<const char *> names) {
  return std::any_of(names.begin(), names.end(), [&](const char *n) { return name == n; });
}

/// Arguments of a method: positional, at most `max`, at least `min`.
const ValueList &methodArgs(const char *method, CallArgs &args, std::size_t min, std::size_t max) {
  if (!args.keywords.empty())
    fail(std::string(method) + "() takes no keyword arguments here");
  if (args.positional.size() < min || args.positional.size() > max)
    fail(std::string(method) + "() takes " +
         (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)) +
         " argument(s), " + std::to_string(args.positional.size()) + " given");
  return args.positional;
}

const std::string &stringArg(const Value &v, const char *method) {
  if (!v.isString())
    fail(std::string(method) + "() needs a string argument, not " + v.typeName());
  return v.asString();
}

/// startswith / endswith: a string or a tuple of strings.
bool affixMatches(const std::string &s, const Value &affix, bool prefix, const char *method) {
  auto matches = [&](const Value &a) {
    const std::string &t = stringArg(a, method);
    return t.size() <= s.size() && (prefix ? s.compare(0, t.size(), t) == 0
                                           : s.compare(s.size() - t.size(), t.size(), t) == 0);
  };
  if (affix.is(Value::Kind::Tuple))
    return std::any_of(affix.items().begin(), affix.items().end(), matches);
  return matches(affix);
}

/// The code point index of byte offset `at` in `s`.
int64_t codePointIndex(const std::string &s, std::size_t at) {
  return static_cast<int64_t>(codePointCount(std::string_view(s).substr(0, at)));
}

const char *const kStrMethods[] = {
    "capitalize", "count", "endswith", "find", "index", "isalnum", "isalpha", "isdigit", "islower", "isspace",
    "isupper", "join", "lower", "lstrip", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
    "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "title", "upper"};

/// Python's other str attributes: refused rather than taken for Undefined.
const char *const kStrUnsupported[] = {
    "casefold", "center", "encode", "expandtabs", "format", "format_map", "isascii", "isdecimal",
    "isidentifier", "isnumeric", "isprintable", "istitle", "ljust", "maketrans", "partition", "rjust",
    "rpartition", "swapcase", "translate", "zfill"};

Value callStrMethod(Interpreter &in, const std::string &s, const std::string &method, CallArgs &args) {
  const char *m = method.c_str();
  auto caseMapped = [&](CaseMapping mapping) {
    methodArgs(m, args, 0, 0);
    std::optional<std::string> out = asciiCase(s, mapping);
    if (!out)
      fail("str." + method + "() of text outside ASCII is not supported");
    return in.makeString(std::move(*out));
  };
  if (method == "upper")
    return caseMapped(CaseMapping::Upper);
  if (method == "lower")
    return caseMapped(CaseMapping::Lower);
  if (method == "capitalize")
    return caseMapped(CaseMapping::Capitalize);
  if (method == "title")
    return caseMapped(CaseMapping::Title);
  if (method == "strip" || method == "lstrip" || method == "rstrip") {
    const ValueList &a = methodArgs(m, args, 0, 1);
    const std::string *chars = a.empty() || a[0].isNone() ? nullptr : &stringArg(a[0], m);
    return in.makeString(pythonStrip(s, chars, method != "rstrip", method != "lstrip"));
  }
  if (method == "split" || method == "rsplit") {
    if (args.positional.size() > 2)
      fail(method + "() takes at most 2 arguments");
    const Value *sep = args.positional.size() > 0 ? &args.positional[0] : nullptr;
    const Value *maxSplit = args.positional.size() > 1 ? &args.positional[1] : nullptr;
    for (auto &[key, value] : args.keywords) {
      if (key == "sep" && !sep)
        sep = &value;
      else if (key == "maxsplit" && !maxSplit)
        maxSplit = &value;
      else
        fail(method + "() got an unexpected or repeated keyword argument " + support::quote(key));
    }
    const std::string *separator = !sep || sep->isNone() ? nullptr : &stringArg(*sep, m);
    if (separator && separator->empty())
      fail("empty separator");
    if (maxSplit && !maxSplit->isIntegral())
      fail("maxsplit must be an integer");
    ValueList parts;
    for (std::string &part : pythonSplit(s, separator, maxSplit ? maxSplit->asInt() : -1, method == "rsplit"))
      parts.push_back(in.makeString(std::move(part)));
    return in.makeSequence(Value::Kind::List, std::move(parts));
  }
  if (method == "splitlines") {
    const ValueList &a = methodArgs(m, args, 0, 1);
    ValueList lines;
    for (std::string &line : pythonSplitLines(s, !a.empty() && truthy(a[0])))
      lines.push_back(in.makeString(std::move(line)));
    return in.makeSequence(Value::Kind::List, std::move(lines));
  }
  if (method == "startswith" || method == "endswith") {
    const ValueList &a = methodArgs(m, args, 1, 1);
    return Value::boolean(affixMatches(s, a[0], method == "startswith", m));
  }
  if (method == "replace") {
    const ValueList &a = methodArgs(m, args, 2, 3);
    if (a.size() == 3 && !a[2].isIntegral())
      fail("count must be an integer");
    long long count = a.size() == 3 ? a[2].asInt() : -1;
    return in.makeString(pythonReplace(s, stringArg(a[0], m), stringArg(a[1], m), count));
  }
  if (method == "find" || method == "rfind" || method == "index" || method == "rindex") {
    const std::string &sub = stringArg(methodArgs(m, args, 1, 1)[0], m);
    std::size_t at = method[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (method.find("index") != std::string::npos)
        fail("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(codePointIndex(s, at));
  }
  if (method == "count") {
    const std::string &sub = stringArg(methodArgs(m, args, 1, 1)[0], m);
    if (sub.empty())
      return Value::integer(static_cast<int64_t>(codePointCount(s)) + 1);
    int64_t count = 0;
    for (std::size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size()))
      ++count;
    return Value::integer(count);
  }
  if (method == "join") {
    ValueList items = iterate(methodArgs(m, args, 1, 1)[0]);
    in.step(items.size());
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isString())
        fail("sequence item " + std::to_string(i) + ": expected str instance, " + items[i].typeName() + " found");
      if (i)
        out += s;
      out += items[i].asString();
      if (out.size() > in.valueLimit())
        failLimit("a string longer than " + std::to_string(in.valueLimit()) + " bytes");
    }
    return in.makeString(std::move(out));
  }
  if (method == "removeprefix" || method == "removesuffix") {
    const std::string &affix = stringArg(methodArgs(m, args, 1, 1)[0], m);
    bool prefix = method == "removeprefix";
    if (!affixMatches(s, Value::string(affix), prefix, m))
      return Value::string(s);
    return in.makeString(prefix ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()));
  }
  // The is* predicates.
  methodArgs(m, args, 0, 0);
  if (method == "isspace") {
    bool all = !s.empty();
    for (std::size_t pos = 0; pos < s.size() && all;)
      all = isPythonSpace(nextCodePoint(s, pos));
    return Value::boolean(all);
  }
  if (method == "islower" || method == "isupper") {
    std::optional<bool> result = method == "islower" ? asciiIsLower(s) : asciiIsUpper(s);
    if (!result)
      fail("str." + method + "() of text outside ASCII is not supported");
    return Value::boolean(*result);
  }
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
    fail("str." + method + "() of text outside ASCII is not supported");
  auto all = [&](auto predicate) { return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), predicate)); };
  if (method == "isdigit")
    return all([](char c) { return c >= '0' && c <= '9'; });
  if (method == "isalpha")
    return all([](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
  return all([](char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); });
}

Value view(Interpreter &in, const Dict &d, const std::string &which) {
  ValueList items;
  for (const auto &[key, value] : d.entries) {
    if (which == "keys")
      items.push_back(Value::string(key));
    else if (which == "values")
      items.push_back(value);
    else
      items.push_back(in.makeSequence(Value::Kind::Tuple, {Value::string(key), value}));
  }
  return in.makeSequence(Value::Kind::View, std::move(items));
}

/// A method of `object` bound to it, for `object.name(...)`.
Value boundMethod(const Value &object, const std::string &name) {
  return Value::function(name, [object, name](Interpreter &in, CallArgs &args) -> Value {
    if (object.isString())
      return callStrMethod(in, object.asString(), name, args);
    if (object.is(Value::Kind::Dict)) {
      const Dict &d = object.asDict();
      if (name == "get") {
        const ValueList &a = methodArgs("get", args, 1, 2);
        const Value *found = a[0].isString() ? d.find(a[0].asString()) : nullptr;
        return found ? *found : a.size() == 2 ? a[1] : Value::none();
      }
      methodArgs(name.c_str(), args, 0, 0);
      return name == "copy" ? object : view(in, d, name);
    }
    // list and tuple: count, index, copy.
    if (name == "copy") {
      methodArgs("copy", args, 0, 0);
      return object;
    }
    const Value &x = methodArgs(name.c_str(), args, 1, 1)[0];
    const ValueList &items = object.items();
    in.step(items.size());
    if (name == "count")
      return Value::integer(std::count_if(items.begin(), items.end(), [&](const Value &v) { return equals(v, x); }));
    for (std::size_t i = 0; i < items.size(); ++i)
      if (equals(items[i], x))
        return Value::integer(static_cast<int64_t>(i));
    fail("the value is not in the list");
  });
}

Value unsafe(const Value &object, const std::string &name) {
  return Value::undefined("access to attribute " + support::quote(name) + " of '" + object.typeName() +
                          "' object is unsafe");
}

Value noAttribute(const Value &object, const std::string &name) {
  return Value::undefined(std::string("'") + object.typeName() + " object' has no attribute " + support::quote(name));
}

} // namespace

Value Interpreter::getAttribute(const Value &object, const std::string &name) {
  if (object.isUndefined())
    fail(object.undefinedHint());
  if (!name.empty() && name[0] == '_')
    return unsafe(object, name);
  switch (object.kind()) {
  case Value::Kind::Dict:
    if (isOneOf(name, {"get", "items", "keys", "values", "copy"}))
      return boundMethod(object, name);
    if (isOneOf(name, {"clear", "pop", "popitem", "setdefault", "update"}))
      return unsafe(object, name);
    if (name == "fromkeys")
      fail("dict.fromkeys is not supported");
    if (const Value *value = object.asDict().find(name))
      return *value;
    return noAttribute(object, name);
  case Value::Kind::Namespace:
  case Value::Kind::Loop:
    if (Value *value = object.asObject().find(name))
      return *value;
    return noAttribute(object, name);
  case Value::Kind::String:
    if (std::any_of(std::begin(kStrMethods), std::end(kStrMethods), [&](const char *m) { return name == m; }))
      return boundMethod(object, name);
    if (std::any_of(std::begin(kStrUnsupported), std::end(kStrUnsupported), [&](const char *m) { return name == m; }))
      fail("str." + name + " is not supported");
    return noAttribute(object, name);
  case Value::Kind::List:
  case Value::Kind::Tuple:
    if (isOneOf(name, {"count", "index"}) || (name == "copy" && object.is(Value::Kind::List)))
      return boundMethod(object, name);
    if (object.is(Value::Kind::List) &&
        isOneOf(name, {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"}))
      return unsafe(object, name);
    return noAttribute(object, name);
  case Value::Kind::None:
    return noAttribute(object, name);
  case Value::Kind::Bool:
  case Value::Kind::Int:
  case Value::Kind::Float:
    if (isOneOf(name, {"real", "imag", "numerator", "denominator", "conjugate", "bit_length", "bit_count", "to_bytes",
                       "from_bytes", "as_integer_ratio", "is_integer", "hex", "fromhex"}))
      fail(std::string(object.typeName()) + "." + name + " is not supported");
    return noAttribute(object, name);
  default:
    fail(std::string("attributes of a ") + object.typeName() + " are not supported");
  }
}

Value Interpreter::getItem(const Value &object, const Value &key) {
  if (object.isUndefined())
    fail(object.undefinedHint());
  switch (object.kind()) {
  case Value::Kind::Dict:
    if (key.isString()) {
      if (const Value *value = object.asDict().find(key.asString()))
        return *value;
      return getAttribute(object, key.asString());
    }
    return Value::undefined(std::string("no such key in a dict: a ") + key.typeName());
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Range:
  case Value::Kind::String:
    if (key.isIntegral()) {
      int64_t i = key.asInt();
      if (object.isString()) {
        std::vector<std::size_t> offsets = codePointOffsets(object.asString());
        int64_t n = static_cast<int64_t>(offsets.size()) - 1;
        if (i < 0)
          i += n;
        if (i < 0 || i >= n)
          return Value::undefined("string index out of range");
        return Value::string(object.asString().substr(offsets[i], offsets[i + 1] - offsets[i]));
      }
      const ValueList &items = object.items();
      int64_t n = static_cast<int64_t>(items.size());
      if (i < 0)
        i += n;
      if (i < 0 || i >= n)
        return Value::undefined(std::string(object.typeName()) + " object has no element " +
                                std::to_string(key.asInt()));
      return items[static_cast<std::size_t>(i)];
    }
    if (key.isString() && !object.is(Value::Kind::Range))
      return getAttribute(object, key.asString());
    return Value::undefined(std::string(object.typeName()) + " indices must be integers");
  case Value::Kind::Namespace:
  case Value::Kind::Loop:
  case Value::Kind::None:
  case Value::Kind::Bool:
  case Value::Kind::Int:
  case Value::Kind::Float:
    if (key.isString())
      return getAttribute(object, key.asString());
    return Value::undefined(std::string("'") + object.typeName() + "' object is not subscriptable");
  default:
    if (key.isString())
      return getAttribute(object, key.asString());
    return Value::undefined(std::string("'") + object.typeName() + "' object is not subscriptable");
  }
}

namespace {

Value builtinRange(Interpreter &in, CallArgs &args) {
  const ValueList &a = methodArgs("range", args, 1, 3);
  for (const Value &v : a)
    if (!v.isIntegral())
      fail(std::string("range() needs integers, not ") + v.typeName());
  int64_t start = a.size() == 1 ? 0 : a[0].asInt();
  int64_t stop = a.size() == 1 ? a[0].asInt() : a[1].asInt();
  int64_t step = a.size() == 3 ? a[2].asInt() : 1;
  if (step == 0)
    fail("range() arg 3 must not be zero");
  // The sandbox's safe_range: at most 100000 items.
  long double span = step > 0 ? (long double)stop - start : (long double)start - stop;
  long double count = std::max<long double>(0, std::ceil(span / std::fabs((long double)step)));
  if (count > 100000)
    failLimit("range too big: the sandbox blocks ranges larger than 100000 items");
  ValueList items;
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
    items.push_back(Value::integer(start + k * step));
  return in.makeSequence(Value::Kind::Range, std::move(items));
}

/// dict(mapping_or_pairs, **kwargs), as namespace() and dict() take them.
Dict dictFromArgs(const char *function, CallArgs &args) {
  if (args.positional.size() > 1)
    fail(std::string(function) + "() takes at most 1 positional argument");
  Dict d;
  if (!args.positional.empty()) {
    const Value &source = args.positional[0];
    if (source.is(Value::Kind::Dict)) {
      d = source.asDict();
    } else {
      for (const Value &pair : iterate(source)) {
        ValueList kv = pair.isString() || pair.isSequence() ? iterate(pair) : ValueList{};
        if (kv.size() != 2 || !kv[0].isString())
          fail(std::string(function) + "() needs a mapping or (string, value) pairs");
        d.set(kv[0].asString(), kv[1]);
      }
    }
  }
  for (auto &[key, value] : args.keywords)
    d.set(key, value);
  return d;
}

Value unsupportedGlobal(const char *name) {
  return Value::function(name, [name](Interpreter &, CallArgs &) -> Value {
    fail(std::string(name) + "() is not supported");
  });
}

} // namespace

void addBuiltinGlobals(Scope &globals) {
  globals.set("range", Value::function("range", builtinRange));
  globals.set("namespace", Value::function("namespace", [](Interpreter &, CallArgs &args) {
                Object attributes;
                attributes.attributes = dictFromArgs("namespace", args).entries;
                return Value::object(Value::Kind::Namespace, std::move(attributes));
              }));
  globals.set("dict", Value::function("dict", [](Interpreter &in, CallArgs &args) {
                Dict d = dictFromArgs("dict", args);
                in.charge(d.entries.size() * sizeof(Value));
                return Value::dict(std::move(d));
              }));
  globals.set("raise_exception", Value::function("raise_exception", [](Interpreter &in, CallArgs &args) -> Value {
                const ValueList &a = methodArgs("raise_exception", args, 1, 1);
                throw TemplateFailure{TemplateFailure::Kind::Raised, {}, str(a[0], in.valueLimit())};
              }));
  // Defined where Jinja2 and transformers define them (so `is defined`
  // agrees), refused when called.
  for (const char *name : {"strftime_now", "lipsum", "cycler", "joiner"})
    globals.set(name, unsupportedGlobal(name));
}

} // namespace tfmc::runtime::jinja
