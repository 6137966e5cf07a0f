//===- TemplateBuiltins.cpp - Filters, tests, methods and globals ---------===//
//
// What a chat template may call, each as Jinja2 3.1 defines it (its filters
// and tests, the str/dict/list methods Python gives, transformers' tojson
// and raise_exception), with the sandbox transformers renders in: methods
// that would change a list or dict are Undefined, range() is capped at
// 100000 items. Where Jinja2 returns a generator (map, select, reject,
// selectattr, rejectattr, unique, items, reverse), so does this engine: an
// iterator that `list`, `join`, `first` or a for loop consumes and that has
// no length, as in Python.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/TemplateEval.h"
#include "runtime/serve/TemplateText.h"

#include "support/Text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tfmc::runtime::jinja {
namespace {

// --- Arguments -------------------------------------------------------------

/// Binds a call's arguments to named parameters, as Python does: too many
/// positional arguments, an unknown keyword or one given twice fail.
class Params {
public:
  Params(const char *function, CallArgs &args, std::initializer_list<const char *> names)
      : names_(names), values_(names.size()) {
    if (args.positional.size() > names_.size())
      fail(std::string(function) + "() takes at most " + std::to_string(names_.size()) + " argument(s)");
    for (std::size_t i = 0; i < args.positional.size(); ++i)
      values_[i] = &args.positional[i];
    for (auto &[key, value] : args.keywords) {
      std::size_t i = 0;
      while (i < names_.size() && key != names_[i])
        ++i;
      if (i == names_.size())
        fail(std::string(function) + "() got an unexpected keyword argument " + support::quote(key));
      if (values_[i])
        fail(std::string(function) + "() got multiple values for argument " + support::quote(key));
      values_[i] = &value;
    }
  }
  const Value *operator[](std::size_t i) const { return values_[i]; }
  bool flag(std::size_t i, bool fallback) const { return values_[i] ? truthy(*values_[i]) : fallback; }
  const std::string *text(std::size_t i, const char *what) const {
    if (!values_[i] || values_[i]->isNone())
      return nullptr;
    if (!values_[i]->isString())
      fail(std::string(what) + " must be a string, not " + values_[i]->typeName());
    return &values_[i]->asString();
  }
  int64_t integer(std::size_t i, int64_t fallback, const char *what) const {
    if (!values_[i] || values_[i]->isNone())
      return fallback;
    if (!values_[i]->isIntegral())
      fail(std::string(what) + " must be an integer, not " + values_[i]->typeName());
    return values_[i]->asInt();
  }

private:
  std::vector<const char *> names_;
  std::vector<const Value *> values_;
};

void noArguments(const char *function, CallArgs &args) { Params(function, args, {}); }

/// str(v) for the filters that take any value as text (Jinja2's soft_str).
std::string text(Interpreter &in, const Value &v) { return str(v, in.valueLimit()); }

std::string caseMapped(const std::string &s, CaseMapping mapping, const char *what) {
  std::optional<std::string> out = asciiCase(s, mapping);
  if (!out)
    fail(std::string(what) + " of text outside ASCII is not supported");
  return *out;
}

/// Python's len(); fails for what has none (ints, iterators).
std::size_t length(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return codePointCount(v.asString());
  case Value::Kind::Dict:
    return v.asDict().entries.size();
  default:
    if (v.isSequence())
      return v.items().size();
    fail(std::string("object of type '") + v.typeName() + "' has no len()");
  }
}

/// Jinja2's attribute getter for `attribute=` arguments: dotted parts,
/// each looked up as `x[part]` (an integer part as an index).
Value attributeOf(Interpreter &in, Value item, const std::string &path) {
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    item = in.getItem(item, digits ? Value::integer(std::strtoll(part.c_str(), nullptr, 10)) : Value::string(part));
    if (dot == std::string::npos)
      return item;
    start = dot + 1;
  }
}

// --- Filters -----------------------------------------------------------------

Value filterAbs(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("abs", args);
  if (v.isIntegral()) {
    if (v.asInt() == INT64_MIN)
      failLimit("an integer beyond 64 bits");
    return Value::integer(std::llabs(v.asInt()));
  }
  if (v.is(Value::Kind::Float))
    return Value::number(std::fabs(v.asFloat()));
  fail(std::string("bad operand type for abs(): '") + v.typeName() + "'");
}

Value filterCapitalize(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("capitalize", args);
  return in.makeString(caseMapped(text(in, v), CaseMapping::Capitalize, "capitalize"));
}

Value filterDefault(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("default", args, {"default_value", "boolean"});
  bool useDefault = v.isUndefined() || (p.flag(1, false) && !truthy(v));
  if (!useDefault)
    return v;
  return p[0] ? *p[0] : Value::string("");
}

Value filterFirst(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("first", args);
  if (v.is(Value::Kind::Iterator)) {
    IteratorState &state = v.asIterator();
    if (state.next < state.items.size())
      return state.items[state.next++];
    return Value::undefined("No first item, sequence was empty.");
  }
  ValueList items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value filterLast(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("last", args);
  if (v.is(Value::Kind::Iterator))
    fail("'generator' object is not reversible");
  ValueList items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

/// Python's int() of a string: whitespace around, a sign, digits with
/// single underscores between them.
std::optional<int64_t> parseInt(const std::string &s) {
  std::string t = pythonStrip(s, nullptr, true, true);
  std::size_t i = 0;
  bool negative = false;
  if (i < t.size() && (t[i] == '+' || t[i] == '-'))
    negative = t[i++] == '-';
  std::string digits;
  for (; i < t.size(); ++i) {
    if (t[i] >= '0' && t[i] <= '9')
      digits += t[i];
    else if (t[i] == '_' && !digits.empty() && i + 1 < t.size() && t[i + 1] >= '0' && t[i + 1] <= '9')
      continue;
    else
      return std::nullopt;
  }
  if (digits.empty())
    return std::nullopt;
  errno = 0;
  unsigned long long value = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno == ERANGE || value > (negative ? 9223372036854775808ULL : 9223372036854775807ULL))
    failLimit("an integer beyond 64 bits");
  return negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
}

/// Python's float() of a string: decimal forms, inf, infinity, nan.
std::optional<double> parseFloat(const std::string &s) {
  std::string t = pythonStrip(s, nullptr, true, true);
  std::string clean;
  for (std::size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    bool digitAround = i > 0 && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i - 1])) &&
                       std::isdigit(static_cast<unsigned char>(t[i + 1]));
    if (c == '_' && digitAround)
      continue;
    if (!(std::isdigit(static_cast<unsigned char>(c)) || std::strchr("+-.eEinfatyINFATY", c)))
      return std::nullopt;
    clean += c;
  }
  if (clean.empty())
    return std::nullopt;
  std::string lower = caseMapped(clean, CaseMapping::Lower, "float()");
  std::string body = lower[0] == '+' || lower[0] == '-' ? lower.substr(1) : lower;
  double sign = lower[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity")
    return sign * HUGE_VAL;
  if (body == "nan")
    return std::nan("");
  char *end = nullptr;
  double value = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size() || body.find_first_of("ainfty") != std::string::npos)
    return std::nullopt;
  return value;
}

Value filterInt(Interpreter &, const Value &v, CallArgs &args) {
  Params p("int", args, {"default", "base"});
  if (p.integer(1, 10, "base") != 10)
    fail("int with a base other than 10 is not supported");
  Value fallback = p[0] ? *p[0] : Value::integer(0);
  if (v.isIntegral())
    return Value::integer(v.asInt());
  if (v.is(Value::Kind::Float)) {
    double f = v.asFloat();
    if (!std::isfinite(f))
      return fallback;
    if (std::fabs(f) >= 9.2e18)
      failLimit("an integer beyond 64 bits");
    return Value::integer(static_cast<int64_t>(f));
  }
  if (v.isString()) {
    if (auto i = parseInt(v.asString()))
      return Value::integer(*i);
    if (auto f = parseFloat(v.asString())) {
      if (!std::isfinite(*f))
        return fallback;
      if (std::fabs(*f) >= 9.2e18)
        failLimit("an integer beyond 64 bits");
      return Value::integer(static_cast<int64_t>(*f));
    }
  }
  return fallback;
}

Value filterFloat(Interpreter &, const Value &v, CallArgs &args) {
  Params p("float", args, {"default"});
  Value fallback = p[0] ? *p[0] : Value::number(0.0);
  if (v.isNumeric())
    return Value::number(v.asFloat());
  if (v.isString())
    if (auto f = parseFloat(v.asString()))
      return Value::number(*f);
  return fallback;
}

Value filterIndent(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("indent", args, {"width", "first", "blank"});
  std::string indentation;
  if (p[0] && p[0]->isString())
    indentation = p[0]->asString();
  else
    indentation.assign(static_cast<std::size_t>(std::max<int64_t>(0, p.integer(0, 4, "width"))), ' ');
  bool first = p.flag(1, false), blank = p.flag(2, false);
  std::vector<std::string> lines = pythonSplitLines(text(in, v) + "\n", false);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i)
      out += '\n';
    bool indent = i == 0 ? first : blank || !lines[i].empty();
    if (indent)
      out += indentation;
    out += lines[i];
    if (out.size() > in.valueLimit())
      failLimit("a string longer than " + std::to_string(in.valueLimit()) + " bytes");
  }
  return in.makeString(std::move(out));
}

Value filterItems(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("items", args);
  if (v.isUndefined())
    return Value::iterator({});
  if (!v.is(Value::Kind::Dict))
    fail("Can only get item pairs from a mapping.");
  ValueList pairs;
  for (const auto &[key, value] : v.asDict().entries)
    pairs.push_back(in.makeSequence(Value::Kind::Tuple, {Value::string(key), value}));
  return Value::iterator(std::move(pairs));
}

Value filterJoin(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("join", args, {"d", "attribute"});
  const std::string *separator = p.text(0, "the separator");
  const std::string *attribute = p.text(1, "attribute");
  ValueList items = iterate(v);
  in.step(items.size());
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i && separator)
      out += *separator;
    appendStr(out, attribute ? attributeOf(in, items[i], *attribute) : items[i], in.valueLimit());
  }
  return in.makeString(std::move(out));
}

Value filterLength(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("length", args);
  return Value::integer(static_cast<int64_t>(length(v)));
}

Value filterList(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("list", args);
  return in.makeSequence(Value::Kind::List, iterate(v));
}

Value filterLower(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("lower", args);
  return in.makeString(caseMapped(text(in, v), CaseMapping::Lower, "lower"));
}

Value filterUpper(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("upper", args);
  return in.makeString(caseMapped(text(in, v), CaseMapping::Upper, "upper"));
}

Value filterTitle(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("title", args);
  return in.makeString(caseMapped(text(in, v), CaseMapping::JinjaTitle, "title"));
}

Value filterReplace(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("replace", args, {"old", "new", "count"});
  if (!p[0] || !p[1])
    fail("replace() takes at least 2 arguments");
  std::string result = pythonReplace(text(in, v), text(in, *p[0]), text(in, *p[1]), p.integer(2, -1, "count"));
  return in.makeString(std::move(result));
}

Value filterReverse(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("reverse", args);
  if (v.isString()) {
    std::vector<std::size_t> offsets = codePointOffsets(v.asString());
    std::string out;
    for (std::size_t i = offsets.size() - 1; i > 0; --i)
      out.append(v.asString(), offsets[i - 1], offsets[i] - offsets[i - 1]);
    return in.makeString(std::move(out));
  }
  if (v.is(Value::Kind::Iterator))
    fail("'generator' object is not reversible");
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::iterator(std::move(items));
}

Value filterSafe(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("safe", args);
  return v;
}

Value filterString(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("string", args);
  return strValue(in, v);
}

Value filterTrim(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("trim", args, {"chars"});
  return in.makeString(pythonStrip(text(in, v), p.text(0, "chars"), true, true));
}

/// The key `sort` and `unique` compare by: the attribute's value, strings
/// lowered unless case-sensitive.
Value sortKey(Interpreter &in, const Value &item, const std::string *attribute, bool caseSensitive) {
  Value key = attribute ? attributeOf(in, item, *attribute) : item;
  if (!caseSensitive && key.isString())
    return Value::string(caseMapped(key.asString(), CaseMapping::Lower, "case-insensitive sorting"));
  return key;
}

Value filterSort(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool reverse = p.flag(0, false), caseSensitive = p.flag(1, false);
  const std::string *attribute = p.text(2, "attribute");
  ValueList items = iterate(v);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value &item : items)
    keyed.emplace_back(sortKey(in, item, attribute, caseSensitive), item);
  std::size_t n = keyed.size();
  in.step(n * (1 + static_cast<std::size_t>(std::log2(n + 1))));
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto &a, const auto &b) {
    return reverse ? lessThan(b.first, a.first) : lessThan(a.first, b.first);
  });
  ValueList out;
  for (auto &entry : keyed)
    out.push_back(std::move(entry.second));
  return in.makeSequence(Value::Kind::List, std::move(out));
}

Value filterUnique(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("unique", args, {"case_sensitive", "attribute"});
  bool caseSensitive = p.flag(0, false);
  const std::string *attribute = p.text(1, "attribute");
  ValueList seen, out;
  for (const Value &item : iterate(v)) {
    Value key = sortKey(in, item, attribute, caseSensitive);
    in.step(seen.size() + 1);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value &s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::iterator(std::move(out));
}

Value filterSum(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("sum", args, {"attribute", "start"});
  const std::string *attribute = p.text(0, "attribute");
  Value total = p[1] ? *p[1] : Value::integer(0);
  for (const Value &item : iterate(v)) {
    in.step();
    total = arithmetic(in, BinaryOp::Add, total, attribute ? attributeOf(in, item, *attribute) : item);
  }
  return total;
}

Value filterTojson(Interpreter &in, const Value &v, CallArgs &args) {
  // transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None,
  // separators=None, sort_keys=False).
  Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions options;
  options.ensureAscii = p.flag(0, false);
  options.sortKeys = p.flag(3, false);
  std::string indentText;
  if (p[1] && p[1]->isString()) {
    indentText = p[1]->asString();
    options.indentText = &indentText;
  } else if (p[1] && !p[1]->isNone()) {
    int64_t indent = p.integer(1, -1, "indent");
    if (indent < 0)
      options.indentText = &indentText; // Python: a negative indent is ""
    else
      options.indent = static_cast<long>(std::min<int64_t>(indent, 1 << 20));
  }
  std::string itemSeparator, keySeparator;
  if (p[2] && !p[2]->isNone()) {
    const Value &s = *p[2];
    if (!(s.is(Value::Kind::List) || s.is(Value::Kind::Tuple)) || s.items().size() != 2 ||
        !s.items()[0].isString() || !s.items()[1].isString())
      fail("separators must be a pair of strings");
    itemSeparator = s.items()[0].asString();
    keySeparator = s.items()[1].asString();
    options.itemSeparator = &itemSeparator;
    options.keySeparator = &keySeparator;
  }
  std::string out;
  appendJson(out, v, options, in.valueLimit());
  return in.makeString(std::move(out));
}

/// `map`: an attribute of each item (`attribute=`, `default=`), or a
/// filter applied to each.
Value filterMap(Interpreter &in, const Value &v, CallArgs &args) {
  ValueList items = iterate(v);
  in.step(items.size());
  ValueList out;
  if (args.positional.empty()) {
    Params p("map", args, {"attribute", "default"});
    const std::string *attribute = p.text(0, "attribute");
    if (!attribute)
      fail("map() needs a filter name or attribute=");
    for (const Value &item : items) {
      Value mapped = attributeOf(in, item, *attribute);
      out.push_back(mapped.isUndefined() && p[1] ? *p[1] : mapped);
    }
    return Value::iterator(std::move(out));
  }
  if (!args.positional[0].isString())
    fail("map()'s filter name must be a string");
  std::string name = args.positional[0].asString();
  FilterFn filter = findFilter(name);
  if (!filter)
    fail("no filter named " + support::quote(name));
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value &item : items) {
    CallArgs each = rest;
    out.push_back(filter(in, item, each));
  }
  return Value::iterator(std::move(out));
}

/// select, reject, selectattr, rejectattr.
Value selectItems(Interpreter &in, const Value &v, CallArgs &args, bool byAttribute, bool keep) {
  std::size_t next = 0;
  std::string attribute;
  if (byAttribute) {
    if (args.positional.empty() || !args.positional[0].isString())
      fail("selectattr() and rejectattr() need an attribute name");
    attribute = args.positional[next++].asString();
  }
  TestFn test = nullptr;
  if (next < args.positional.size()) {
    if (!args.positional[next].isString())
      fail("the test name must be a string");
    test = findTest(args.positional[next].asString());
    if (!test)
      fail("no test named " + support::quote(args.positional[next].asString()));
    ++next;
  }
  CallArgs testArgs;
  testArgs.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
  testArgs.keywords = args.keywords;
  ValueList items = iterate(v), out;
  in.step(items.size());
  for (const Value &item : items) {
    Value subject = byAttribute ? attributeOf(in, item, attribute) : item;
    CallArgs each = testArgs;
    bool passes = test ? test(in, subject, each) : truthy(subject);
    if (passes == keep)
      out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Value filterSelect(Interpreter &in, const Value &v, CallArgs &args) { return selectItems(in, v, args, false, true); }
Value filterReject(Interpreter &in, const Value &v, CallArgs &args) { return selectItems(in, v, args, false, false); }
Value filterSelectAttr(Interpreter &in, const Value &v, CallArgs &args) { return selectItems(in, v, args, true, true); }
Value filterRejectAttr(Interpreter &in, const Value &v, CallArgs &args) { return selectItems(in, v, args, true, false); }

// --- Tests -------------------------------------------------------------------

bool testDefined(Interpreter &, const Value &v, CallArgs &args) { noArguments("defined", args); return !v.isUndefined(); }
bool testUndefined(Interpreter &, const Value &v, CallArgs &args) { noArguments("undefined", args); return v.isUndefined(); }
bool testNone(Interpreter &, const Value &v, CallArgs &args) { noArguments("none", args); return v.isNone(); }
bool testBoolean(Interpreter &, const Value &v, CallArgs &args) { noArguments("boolean", args); return v.is(Value::Kind::Bool); }
bool testTrue(Interpreter &, const Value &v, CallArgs &args) { noArguments("true", args); return v.is(Value::Kind::Bool) && v.asBool(); }
bool testFalse(Interpreter &, const Value &v, CallArgs &args) { noArguments("false", args); return v.is(Value::Kind::Bool) && !v.asBool(); }
bool testInteger(Interpreter &, const Value &v, CallArgs &args) { noArguments("integer", args); return v.is(Value::Kind::Int); }
bool testFloat(Interpreter &, const Value &v, CallArgs &args) { noArguments("float", args); return v.is(Value::Kind::Float); }
bool testNumber(Interpreter &, const Value &v, CallArgs &args) { noArguments("number", args); return v.isNumeric(); }
bool testString(Interpreter &, const Value &v, CallArgs &args) { noArguments("string", args); return v.isString(); }
bool testMapping(Interpreter &, const Value &v, CallArgs &args) { noArguments("mapping", args); return v.is(Value::Kind::Dict); }
bool testCallable(Interpreter &, const Value &v, CallArgs &args) { noArguments("callable", args); return v.is(Value::Kind::Function); }

bool testIterable(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("iterable", args);
  return v.isUndefined() || v.isString() || v.isSequence() || v.is(Value::Kind::Dict) || v.is(Value::Kind::Iterator);
}

bool testSequence(Interpreter &, const Value &v, CallArgs &args) {
  noArguments("sequence", args);
  // len() and __getitem__: not dict views or iterators.
  return v.isUndefined() || v.isString() || v.is(Value::Kind::List) || v.is(Value::Kind::Tuple) ||
         v.is(Value::Kind::Range) || v.is(Value::Kind::Dict);
}

int64_t integerOperand(const Value &v, const char *test) {
  if (!v.isIntegral())
    fail(std::string("the '") + test + "' test needs an integer, not " + v.typeName());
  return v.asInt();
}

bool testOdd(Interpreter &, const Value &v, CallArgs &args) { noArguments("odd", args); return integerOperand(v, "odd") % 2 != 0; }
bool testEven(Interpreter &, const Value &v, CallArgs &args) { noArguments("even", args); return integerOperand(v, "even") % 2 == 0; }

bool testDivisibleBy(Interpreter &in, const Value &v, CallArgs &args) {
  Params p("divisibleby", args, {"num"});
  if (!p[0])
    fail("divisibleby() takes 1 argument");
  return !truthy(arithmetic(in, BinaryOp::Modulo, v, *p[0]));
}

const Value &onlyArgument(CallArgs &args, const char *test) {
  Params p(test, args, {"other"});
  if (!p[0])
    fail(std::string(test) + "() takes 1 argument");
  return *p[0];
}

bool testEqual(Interpreter &, const Value &v, CallArgs &args) { return equals(v, onlyArgument(args, "eq")); }
bool testNotEqual(Interpreter &, const Value &v, CallArgs &args) { return !equals(v, onlyArgument(args, "ne")); }
bool testLess(Interpreter &, const Value &v, CallArgs &args) { return orderCompare(CompareOp::Less, v, onlyArgument(args, "lt")); }
bool testLessEqual(Interpreter &, const Value &v, CallArgs &args) { return orderCompare(CompareOp::LessEqual, v, onlyArgument(args, "le")); }
bool testGreater(Interpreter &, const Value &v, CallArgs &args) { return orderCompare(CompareOp::Greater, v, onlyArgument(args, "gt")); }
bool testGreaterEqual(Interpreter &, const Value &v, CallArgs &args) { return orderCompare(CompareOp::GreaterEqual, v, onlyArgument(args, "ge")); }
bool testIn(Interpreter &, const Value &v, CallArgs &args) { return contains(onlyArgument(args, "in"), v); }

bool testSameAs(Interpreter &, const Value &v, CallArgs &args) {
  const Value &other = onlyArgument(args, "sameas");
  // Python's `is`: singletons and objects; for strings and numbers it
  // depends on the interpreter's caching, which nothing here can match.
  if (v.isNone() || other.isNone() || v.is(Value::Kind::Bool) || other.is(Value::Kind::Bool)) {
    if (v.kind() != other.kind())
      return false;
    return v.isNone() || v.asBool() == other.asBool();
  }
  if (v.identity() && other.identity())
    return v.identity() == other.identity();
  fail("'sameas' of strings, numbers or containers is not supported");
}

bool testLower(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("lower", args);
  std::optional<bool> lower = asciiIsLower(text(in, v));
  if (!lower)
    fail("'lower' of text outside ASCII is not supported");
  return *lower;
}

bool testUpper(Interpreter &in, const Value &v, CallArgs &args) {
  noArguments("upper", args);
  std::optional<bool> upper = asciiIsUpper(text(in, v));
  if (!upper)
    fail("'upper' of text outside ASCII is not supported");
  return *upper;
}

template <typename Fn> struct Entry {
  const char *name;
  Fn fn;
};

const Entry<FilterFn> kFilters[] = {
    {"abs", filterAbs},       {"capitalize", filterCapitalize}, {"count", filterLength},
    {"d", filterDefault},     {"default", filterDefault},       {"first", filterFirst},
    {"float", filterFloat},   {"indent", filterIndent},         {"int", filterInt},
    {"items", filterItems},   {"join", filterJoin},             {"last", filterLast},
    {"length", filterLength}, {"list", filterList},             {"lower", filterLower},
    {"map", filterMap},       {"reject", filterReject},         {"rejectattr", filterRejectAttr},
    {"replace", filterReplace}, {"reverse", filterReverse},     {"safe", filterSafe},
    {"select", filterSelect}, {"selectattr", filterSelectAttr}, {"sort", filterSort},
    {"string", filterString}, {"sum", filterSum},               {"title", filterTitle},
    {"tojson", filterTojson}, {"trim", filterTrim},             {"unique", filterUnique},
    {"upper", filterUpper},
};

const Entry<TestFn> kTests[] = {
    {"defined", testDefined},   {"undefined", testUndefined},     {"none", testNone},
    {"boolean", testBoolean},   {"true", testTrue},               {"false", testFalse},
    {"integer", testInteger},   {"float", testFloat},             {"number", testNumber},
    {"string", testString},     {"mapping", testMapping},         {"iterable", testIterable},
    {"sequence", testSequence}, {"callable", testCallable},       {"odd", testOdd},
    {"even", testEven},         {"divisibleby", testDivisibleBy}, {"eq", testEqual},
    {"equalto", testEqual},     {"==", testEqual},                {"ne", testNotEqual},
    {"!=", testNotEqual},       {"lt", testLess},                 {"lessthan", testLess},
    {"<", testLess},            {"le", testLessEqual},            {"<=", testLessEqual},
    {"gt", testGreater},        {"greaterthan", testGreater},     {">", testGreater},
    {"ge", testGreaterEqual},   {">=", testGreaterEqual},         {"in", testIn},
    {"sameas", testSameAs},     {"lower", testLower},             {"upper", testUpper},
};

} // namespace

FilterFn findFilter(std::string_view name) {
  for (const auto &entry : kFilters)
    if (name == entry.name)
      return entry.fn;
  return nullptr;
}

TestFn findTest(std::string_view name) {
  for (const auto &entry : kTests)
    if (name == entry.name)
      return entry.fn;
  return nullptr;
}

} // namespace tfmc::runtime::jinja
