//===- TemplateEval.cpp - Rendering a parsed chat template ----------------===//

#include "runtime/serve/TemplateEval.h"

#include "runtime/serve/TemplateText.h"
#include "support/Text.h"

#include <cmath>
#include <limits>

namespace tfmc::runtime::jinja {

const Value *Scope::find(std::string_view name) const {
  for (const Scope *scope = this; scope; scope = scope->parent_)
    for (auto it = scope->variables_.rbegin(); it != scope->variables_.rend(); ++it)
      if (it->first == name)
        return &it->second;
  return nullptr;
}

void Scope::set(std::string name, Value value) {
  for (auto &[key, existing] : variables_)
    if (key == name) {
      existing = std::move(value);
      return;
    }
  variables_.emplace_back(std::move(name), std::move(value));
}

Interpreter::DepthGuard::DepthGuard(Interpreter &in) : in(in) {
  if (++in.depth_ > in.limits_.maxDepth) {
    --in.depth_;
    failLimit("evaluation nested deeper than " + std::to_string(in.limits_.maxDepth) +
              " levels (a macro calling itself?)");
  }
}

void Interpreter::charge(std::size_t bytes) {
  work_ += bytes;
  if (work_ > limits_.maxWorkBytes)
    failLimit("the template built more than " + std::to_string(limits_.maxWorkBytes) +
              " bytes of strings and lists");
}

void Interpreter::step(std::size_t steps) {
  iterations_ += steps;
  if (iterations_ > limits_.maxIterations)
    failLimit("the template ran more than " + std::to_string(limits_.maxIterations) + " loop iterations");
}

Value Interpreter::makeString(std::string s) {
  if (s.size() > limits_.maxOutputBytes)
    failLimit("a string longer than " + std::to_string(limits_.maxOutputBytes) + " bytes");
  charge(s.size());
  return Value::string(std::move(s));
}

Value Interpreter::makeSequence(Value::Kind kind, ValueList items) {
  charge(items.size() * sizeof(Value));
  return Value::sequence(kind, std::move(items));
}

Value strValue(Interpreter &in, const Value &v) {
  if (v.isString())
    return v;
  return in.makeString(str(v, in.valueLimit()));
}

void Interpreter::append(std::string &out, std::string_view text) {
  if (out.size() + text.size() > limits_.maxOutputBytes)
    failLimit("the output is longer than " + std::to_string(limits_.maxOutputBytes) + " bytes");
  charge(text.size());
  out.append(text);
}

std::string Interpreter::render(const Program &program, const Scope &globals) {
  Scope top(&globals);
  topLevel_ = &top;
  std::string out;
  execute(program.body, top, out);
  topLevel_ = nullptr;
  return out;
}

std::string Interpreter::renderBody(const std::vector<std::unique_ptr<Node>> &body, Scope &scope) {
  std::string out;
  execute(body, scope, out);
  return out;
}

Interpreter::Flow Interpreter::execute(const std::vector<std::unique_ptr<Node>> &body, Scope &scope,
                                       std::string &out) {
  for (const auto &node : body) {
    Flow flow = executeNode(*node, scope, out);
    if (flow != Flow::Normal)
      return flow;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::executeNode(const Node &node, Scope &scope, std::string &out) {
  DepthGuard guard(*this);
  try {
    return executeStatement(node, scope, out);
  } catch (TemplateFailure &failure) {
    // What failed outside an expression (the output's bound reached by
    // text, a bad unpacking) is placed at its statement.
    if (failure.location.line == 0)
      failure.location = node.location;
    throw;
  }
}

Interpreter::Flow Interpreter::executeStatement(const Node &node, Scope &scope, std::string &out) {
  switch (node.kind) {
  case NodeKind::Text:
    append(out, node.text);
    return Flow::Normal;
  case NodeKind::Output: {
    Value value = evaluate(*node.expr, scope);
    try {
      if (value.isString()) {
        append(out, value.asString());
      } else {
        std::string text;
        appendStr(text, value, limits_.maxOutputBytes);
        append(out, text);
      }
    } catch (TemplateFailure &failure) {
      if (failure.location.line == 0)
        failure.location = node.expr->location;
      throw;
    }
    return Flow::Normal;
  }
  case NodeKind::If:
    return execute(truthy(evaluate(*node.expr, scope)) ? node.body : node.orelse, scope, out);
  case NodeKind::For:
    executeFor(node, scope, out);
    return Flow::Normal;
  case NodeKind::Set:
    assign(node.target, evaluate(*node.expr, scope), scope);
    return Flow::Normal;
  case NodeKind::SetBlock: {
    Scope inner(&scope);
    std::string text;
    execute(node.body, inner, text);
    assign(node.target, makeString(std::move(text)), scope);
    return Flow::Normal;
  }
  case NodeKind::Generation: {
    Scope inner(&scope);
    execute(node.body, inner, out);
    return Flow::Normal;
  }
  case NodeKind::Macro:
    defineMacro(node, scope);
    return Flow::Normal;
  case NodeKind::Break:
    return Flow::Break;
  case NodeKind::Continue:
    return Flow::Continue;
  }
  return Flow::Normal;
}

void Interpreter::assign(const Target &target, const Value &value, Scope &scope) {
  switch (target.kind) {
  case Target::Kind::Name:
    scope.set(target.names[0], value);
    return;
  case Target::Kind::Tuple: {
    if (value.isUndefined())
      fail(value.undefinedHint());
    ValueList items = iterate(value);
    if (items.size() != target.names.size())
      fail(std::string(items.size() < target.names.size() ? "not enough" : "too many") +
           " values to unpack (expected " + std::to_string(target.names.size()) + ", got " +
           std::to_string(items.size()) + ")");
    for (std::size_t i = 0; i < items.size(); ++i)
      scope.set(target.names[i], items[i]);
    return;
  }
  case Target::Kind::Attribute: {
    const Value *object = scope.find(target.names[0]);
    if (!object || !object->is(Value::Kind::Namespace))
      fail("cannot assign attribute on non-namespace object " + support::quote(target.names[0]));
    Object &attributes = object->asObject();
    if (Value *existing = attributes.find(target.attribute))
      *existing = value;
    else
      attributes.attributes.emplace_back(target.attribute, value);
    return;
  }
  }
}

namespace {

/// The `loop` of iteration `i` over `items`. Apart (and not inlined) so that
/// executeFor's frame, on the stack at every loop nesting, stays small.
__attribute__((noinline)) Value loopObject(const ValueList &items, std::size_t i) {
  const std::size_t length = items.size();
  auto integer = [](std::size_t n) { return Value::integer(static_cast<int64_t>(n)); };
  Object loop;
  loop.attributes = {
      {"index", integer(i + 1)},
      {"index0", integer(i)},
      {"revindex", integer(length - i)},
      {"revindex0", integer(length - i - 1)},
      {"first", Value::boolean(i == 0)},
      {"last", Value::boolean(i + 1 == length)},
      {"length", integer(length)},
      {"depth", integer(1)},
      {"depth0", integer(0)},
      {"previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
      {"nextitem", i + 1 < length ? items[i + 1] : Value::undefined("there is no next item")},
      {"cycle", Value::function("loop.cycle",
                                [i](Interpreter &, CallArgs &args) {
                                  if (!args.keywords.empty() || args.positional.empty())
                                    fail("loop.cycle() takes one or more positional arguments");
                                  return args.positional[i % args.positional.size()];
                                })},
  };
  return Value::object(Value::Kind::Loop, std::move(loop));
}

} // namespace

void Interpreter::executeFor(const Node &node, Scope &scope, std::string &out) {
  Value iterable = evaluate(*node.expr, scope);
  ValueList items;
  try {
    items = iterate(iterable);
  } catch (TemplateFailure &failure) {
    if (failure.location.line == 0)
      failure.location = node.expr->location;
    throw;
  }
  charge(items.size() * sizeof(Value));
  if (node.condition) {
    // `for x in xs if cond`: the condition sees the loop variable, not
    // `loop`; loop.index and loop.length count what passes.
    ValueList kept;
    for (const Value &item : items) {
      step();
      Scope filter(&scope);
      assign(node.target, item, filter);
      if (truthy(evaluate(*node.condition, filter)))
        kept.push_back(item);
    }
    items = std::move(kept);
  }
  const std::size_t length = items.size();
  for (std::size_t i = 0; i < length; ++i) {
    step();
    Scope iteration(&scope);
    iteration.set("loop", loopObject(items, i));
    assign(node.target, items[i], iteration);
    if (execute(node.body, iteration, out) == Flow::Break)
      break;
  }
  if (length == 0 && !node.orelse.empty()) {
    Scope inner(&scope);
    execute(node.orelse, inner, out);
  }
}

void Interpreter::defineMacro(const Node &node, Scope &scope) {
  const Node *macro = &node;
  scope.set(node.name, Value::function(node.name, [macro](Interpreter &in, CallArgs &args) {
              const auto &parameters = macro->parameters;
              if (args.positional.size() > parameters.size())
                fail("macro " + support::quote(macro->name) + " takes not more than " +
                     std::to_string(parameters.size()) + " argument(s)");
              Scope scope(in.topLevel());
              std::vector<bool> bound(parameters.size(), false);
              for (std::size_t i = 0; i < args.positional.size(); ++i) {
                scope.set(parameters[i].first, args.positional[i]);
                bound[i] = true;
              }
              for (auto &[key, value] : args.keywords) {
                std::size_t i = 0;
                while (i < parameters.size() && parameters[i].first != key)
                  ++i;
                if (i == parameters.size() || bound[i])
                  fail("macro " + support::quote(macro->name) + " takes no keyword argument " +
                       support::quote(key));
                scope.set(key, value);
                bound[i] = true;
              }
              // A parameter without a value is Undefined, or its default,
              // evaluated in the macro's scope in order.
              for (std::size_t i = 0; i < parameters.size(); ++i) {
                if (bound[i])
                  continue;
                const Expr *fallback = parameters[i].second.get();
                scope.set(parameters[i].first,
                          fallback ? in.evaluate(*fallback, scope)
                                   : Value::undefined("'" + parameters[i].first + "' is undefined"));
              }
              return in.makeString(in.renderBody(macro->body, scope));
            }));
}

Value Interpreter::call(const Value &callee, CallArgs &args) {
  if (callee.isUndefined())
    fail(callee.undefinedHint());
  if (!callee.is(Value::Kind::Function))
    fail(std::string("'") + callee.typeName() + "' object is not callable");
  DepthGuard guard(*this);
  return callee.asFunction().call(*this, args);
}

CallArgs Interpreter::evaluateArguments(const Expr &expr, const Scope &scope, std::size_t firstArgument) {
  CallArgs args;
  for (std::size_t i = firstArgument; i < expr.children.size(); ++i)
    args.positional.push_back(evaluate(*expr.children[i], scope));
  for (const auto &[key, value] : expr.keywords)
    args.keywords.emplace_back(key, evaluate(*value, scope));
  return args;
}

Value Interpreter::evaluate(const Expr &expr, const Scope &scope) {
  DepthGuard guard(*this);
  try {
    return evaluateInner(expr, scope);
  } catch (TemplateFailure &failure) {
    if (failure.location.line == 0)
      failure.location = expr.location;
    throw;
  }
}

Value Interpreter::evaluateInner(const Expr &expr, const Scope &scope) {
  switch (expr.kind) {
  case ExprKind::Literal:
    return expr.constant;
  case ExprKind::Name: {
    const Value *value = scope.find(expr.name);
    return value ? *value : Value::undefined("'" + expr.name + "' is undefined");
  }
  case ExprKind::List:
  case ExprKind::Tuple: {
    ValueList items;
    for (const auto &child : expr.children)
      items.push_back(evaluate(*child, scope));
    return makeSequence(expr.kind == ExprKind::List ? Value::Kind::List : Value::Kind::Tuple, std::move(items));
  }
  case ExprKind::Dict: {
    Dict d;
    for (std::size_t i = 0; i + 1 < expr.children.size(); i += 2) {
      Value key = evaluate(*expr.children[i], scope);
      if (!key.isString())
        failAt(expr.children[i]->location, "dict keys other than strings are not supported");
      d.set(key.asString(), evaluate(*expr.children[i + 1], scope));
    }
    charge(d.entries.size() * sizeof(Value));
    return Value::dict(std::move(d));
  }
  case ExprKind::Attribute:
    return getAttribute(evaluate(*expr.children[0], scope), expr.name);
  case ExprKind::Item: {
    Value object = evaluate(*expr.children[0], scope);
    return getItem(object, evaluate(*expr.children[1], scope));
  }
  case ExprKind::Slice:
    return evaluateSlice(expr, scope);
  case ExprKind::Call: {
    Value callee = evaluate(*expr.children[0], scope);
    CallArgs args = evaluateArguments(expr, scope, 1);
    return call(callee, args);
  }
  case ExprKind::Filter: {
    Value operand = evaluate(*expr.children[0], scope);
    CallArgs args = evaluateArguments(expr, scope, 1);
    return expr.filter(*this, operand, args);
  }
  case ExprKind::Test: {
    Value operand = evaluate(*expr.children[0], scope);
    CallArgs args = evaluateArguments(expr, scope, 1);
    return Value::boolean(expr.test(*this, operand, args) != expr.negated);
  }
  case ExprKind::Not:
    return Value::boolean(!truthy(evaluate(*expr.children[0], scope)));
  case ExprKind::Negate:
  case ExprKind::Plus: {
    Value operand = evaluate(*expr.children[0], scope);
    if (operand.isUndefined())
      fail(operand.undefinedHint());
    bool negate = expr.kind == ExprKind::Negate;
    if (operand.isIntegral()) {
      int64_t i = operand.asInt();
      if (negate && i == std::numeric_limits<int64_t>::min())
        failLimit("an integer beyond 64 bits");
      return Value::integer(negate ? -i : i);
    }
    if (operand.is(Value::Kind::Float))
      return Value::number(negate ? -operand.asFloat() : operand.asFloat());
    fail(std::string("bad operand type for unary ") + (negate ? "-" : "+") + ": '" + operand.typeName() + "'");
  }
  case ExprKind::Binary: {
    Value left = evaluate(*expr.children[0], scope);
    Value right = evaluate(*expr.children[1], scope);
    return evaluateBinary(expr, left, right);
  }
  case ExprKind::Compare: {
    Value left = evaluate(*expr.children[0], scope);
    for (std::size_t i = 0; i < expr.compareOps.size(); ++i) {
      Value right = evaluate(*expr.children[i + 1], scope);
      if (!evaluateCompare(expr.compareOps[i], left, right))
        return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }
  case ExprKind::And: {
    Value left = evaluate(*expr.children[0], scope);
    return truthy(left) ? evaluate(*expr.children[1], scope) : left;
  }
  case ExprKind::Or: {
    Value left = evaluate(*expr.children[0], scope);
    return truthy(left) ? left : evaluate(*expr.children[1], scope);
  }
  case ExprKind::Conditional:
    if (truthy(evaluate(*expr.children[0], scope)))
      return evaluate(*expr.children[1], scope);
    if (expr.children[2])
      return evaluate(*expr.children[2], scope);
    return Value::undefined("the conditional expression had no else part");
  }
  fail("unknown expression");
}

Value Interpreter::evaluateSlice(const Expr &expr, const Scope &scope) {
  Value object = evaluate(*expr.children[0], scope);
  std::optional<long long> bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (!expr.children[i + 1])
      continue;
    Value part = evaluate(*expr.children[i + 1], scope);
    if (part.isNone())
      continue;
    if (!part.isIntegral())
      fail("slice indices must be integers or None");
    bounds[i] = part.asInt();
  }
  long long step = bounds[2].value_or(1);
  if (step == 0)
    fail("slice step cannot be zero");
  if (object.isUndefined())
    fail(object.undefinedHint());
  if (object.isString()) {
    const std::string &s = object.asString();
    std::vector<std::size_t> offsets = codePointOffsets(s);
    std::string out;
    for (std::size_t i : sliceIndices(offsets.size() - 1, bounds[0], bounds[1], step))
      out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
    return makeString(std::move(out));
  }
  if (object.is(Value::Kind::List) || object.is(Value::Kind::Tuple) || object.is(Value::Kind::Range)) {
    const ValueList &items = object.items();
    ValueList out;
    for (std::size_t i : sliceIndices(items.size(), bounds[0], bounds[1], step))
      out.push_back(items[i]);
    return makeSequence(object.kind(), std::move(out));
  }
  if (object.is(Value::Kind::Dict))
    fail("unhashable type: 'slice'");
  fail(std::string("'") + object.typeName() + "' object is not subscriptable");
}

Value Interpreter::evaluateBinary(const Expr &expr, const Value &left, const Value &right) {
  if (expr.binaryOp == BinaryOp::Concat) {
    std::string text = str(left, limits_.maxOutputBytes);
    appendStr(text, right, limits_.maxOutputBytes);
    return makeString(std::move(text));
  }
  return arithmetic(*this, expr.binaryOp, left, right);
}

bool Interpreter::evaluateCompare(CompareOp op, const Value &left, const Value &right) {
  switch (op) {
  case CompareOp::Equal:
    return equals(left, right);
  case CompareOp::NotEqual:
    return !equals(left, right);
  case CompareOp::In:
    return contains(right, left);
  case CompareOp::NotIn:
    return !contains(right, left);
  default:
    return orderCompare(op, left, right);
  }
}

namespace {

/// Python's divmod of floats (floatobject.c), for // and %.
std::pair<double, double> floatDivmod(double x, double y) {
  if (y == 0.0)
    fail("float division by zero");
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floorDiv;
  if (div != 0.0) {
    floorDiv = std::floor(div);
    if (div - floorDiv > 0.5)
      floorDiv += 1.0;
  } else {
    floorDiv = std::copysign(0.0, x / y);
  }
  return {floorDiv, mod};
}

[[noreturn]] void overflow() { failLimit("an integer beyond 64 bits (Python's would grow)"); }

int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    overflow();
  return r;
}
int64_t checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    overflow();
  return r;
}
int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    overflow();
  return r;
}

/// `sequence * count` for str, list and tuple.
Value repeat(Interpreter &in, const Value &sequence, int64_t count) {
  if (count < 0)
    count = 0;
  if (sequence.isString()) {
    const std::string &s = sequence.asString();
    if (!s.empty() && static_cast<uint64_t>(count) > in.valueLimit() / s.size())
      failLimit("a string longer than " + std::to_string(in.valueLimit()) + " bytes");
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      out += s;
    return in.makeString(std::move(out));
  }
  const ValueList &items = sequence.items();
  if (!items.empty() && static_cast<uint64_t>(count) > in.valueLimit() / items.size())
    failLimit("a list longer than " + std::to_string(in.valueLimit()) + " items");
  in.charge(items.size() * static_cast<std::size_t>(count) * sizeof(Value));
  ValueList out;
  for (int64_t i = 0; i < count; ++i)
    out.insert(out.end(), items.begin(), items.end());
  return in.makeSequence(sequence.kind(), std::move(out));
}

[[noreturn]] void unsupportedOperands(const char *op, const Value &left, const Value &right) {
  fail(std::string("unsupported operand type(s) for ") + op + ": '" + left.typeName() + "' and '" +
       right.typeName() + "'");
}

} // namespace

Value arithmetic(Interpreter &in, BinaryOp op, const Value &left, const Value &right) {
  if (left.isUndefined())
    fail(left.undefinedHint());
  if (right.isUndefined())
    fail(right.undefinedHint());
  bool integers = left.isIntegral() && right.isIntegral();
  bool numbers = left.isNumeric() && right.isNumeric();
  switch (op) {
  case BinaryOp::Add:
    if (integers)
      return Value::integer(checkedAdd(left.asInt(), right.asInt()));
    if (numbers)
      return Value::number(left.asFloat() + right.asFloat());
    if (left.isString() && right.isString()) {
      if (left.asString().size() + right.asString().size() > in.valueLimit())
        failLimit("a string longer than " + std::to_string(in.valueLimit()) + " bytes");
      return in.makeString(left.asString() + right.asString());
    }
    if ((left.is(Value::Kind::List) || left.is(Value::Kind::Tuple)) && left.kind() == right.kind()) {
      ValueList items = left.items();
      items.insert(items.end(), right.items().begin(), right.items().end());
      return in.makeSequence(left.kind(), std::move(items));
    }
    if (left.isString())
      fail(std::string("can only concatenate str (not \"") + right.typeName() + "\") to str");
    unsupportedOperands("+", left, right);
  case BinaryOp::Subtract:
    if (integers)
      return Value::integer(checkedSub(left.asInt(), right.asInt()));
    if (numbers)
      return Value::number(left.asFloat() - right.asFloat());
    unsupportedOperands("-", left, right);
  case BinaryOp::Multiply:
    if (integers)
      return Value::integer(checkedMul(left.asInt(), right.asInt()));
    if (numbers)
      return Value::number(left.asFloat() * right.asFloat());
    if ((left.isString() || left.is(Value::Kind::List) || left.is(Value::Kind::Tuple)) && right.isIntegral())
      return repeat(in, left, right.asInt());
    if ((right.isString() || right.is(Value::Kind::List) || right.is(Value::Kind::Tuple)) && left.isIntegral())
      return repeat(in, right, left.asInt());
    unsupportedOperands("*", left, right);
  case BinaryOp::Divide:
    if (numbers) {
      if (right.asFloat() == 0.0)
        fail("division by zero");
      return Value::number(left.asFloat() / right.asFloat());
    }
    unsupportedOperands("/", left, right);
  case BinaryOp::FloorDivide:
  case BinaryOp::Modulo: {
    bool floor = op == BinaryOp::FloorDivide;
    if (integers) {
      int64_t a = left.asInt(), b = right.asInt();
      if (b == 0)
        fail(floor ? "integer division or modulo by zero" : "integer modulo by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        if (floor)
          overflow();
        return Value::integer(0);
      }
      int64_t q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) {
        q -= 1;
        r += b;
      }
      return Value::integer(floor ? q : r);
    }
    if (numbers) {
      auto [div, mod] = floatDivmod(left.asFloat(), right.asFloat());
      return Value::number(floor ? div : mod);
    }
    if (!floor && left.isString())
      fail("string formatting with '%' is not supported");
    unsupportedOperands(floor ? "//" : "%", left, right);
  }
  case BinaryOp::Power:
    if (integers && right.asInt() >= 0) {
      int64_t base = left.asInt(), exponent = right.asInt(), result = 1;
      while (exponent > 0) {
        if (exponent & 1)
          result = checkedMul(result, base);
        exponent >>= 1;
        if (exponent > 0)
          base = checkedMul(base, base);
      }
      return Value::integer(result);
    }
    if (numbers) {
      double a = left.asFloat(), b = right.asFloat();
      if (a == 0.0 && b < 0)
        fail("0.0 cannot be raised to a negative power");
      if (a < 0 && b != std::floor(b))
        fail("a negative number to a fractional power (a complex number) is not supported");
      double result = std::pow(a, b);
      if (std::isinf(result) && std::isfinite(a) && std::isfinite(b))
        fail("numerical result out of range");
      return Value::number(result);
    }
    unsupportedOperands("** or pow()", left, right);
  case BinaryOp::Concat:
    break;
  }
  fail("unsupported operator");
}

bool orderCompare(CompareOp op, const Value &left, const Value &right) {
  // Python's list comparison: the first items that differ decide with the
  // same operator; equal prefixes compare by length.
  if (left.kind() == right.kind() && (left.is(Value::Kind::List) || left.is(Value::Kind::Tuple))) {
    const ValueList &x = left.items(), &y = right.items();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i]))
        return orderCompare(op, x[i], y[i]);
    Value a = Value::integer(static_cast<int64_t>(x.size())), b = Value::integer(static_cast<int64_t>(y.size()));
    return orderCompare(op, a, b);
  }
  if (left.is(Value::Kind::Float) || right.is(Value::Kind::Float)) {
    if (left.isNumeric() && right.isNumeric() && (std::isnan(left.asFloat()) || std::isnan(right.asFloat())))
      return false;
  }
  switch (op) {
  case CompareOp::Less:
    return lessThan(left, right);
  case CompareOp::Greater:
    return lessThan(right, left);
  case CompareOp::LessEqual:
    return !lessThan(right, left);
  case CompareOp::GreaterEqual:
    return !lessThan(left, right);
  default:
    fail("not an ordering comparison");
  }
}

} // namespace tfmc::runtime::jinja
