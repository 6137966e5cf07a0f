//===- TemplateEval.h - Rendering a parsed chat template --------*- C++ -*-===//
//
// The Interpreter walks a Program with Jinja2's semantics: scopes as Jinja2
// makes them (a for loop's body is a new scope at each iteration, started
// from the enclosing one, so `set` inside a loop does not survive it; if
// makes none; a macro sees its parameters and the template's top level),
// Python's operators and truth, and Jinja2's Undefined (printing it gives
// nothing, iterating it nothing, testing it false; anything else done to it
// is an error). Every rendering is bounded (RenderLimits): the bytes of
// output and of strings and lists built on the way, the loop iterations and
// the depth of evaluation.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TEMPLATEEVAL_H
#define TFMC_RUNTIME_SERVE_TEMPLATEEVAL_H

#include "runtime/serve/TemplateAst.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfmc::runtime::jinja {

struct RenderLimits {
  std::size_t maxOutputBytes;
  std::size_t maxWorkBytes;
  std::size_t maxIterations;
  int maxDepth;
};

class Scope {
public:
  explicit Scope(const Scope *parent) : parent_(parent) {}
  /// The innermost binding of `name`, or null.
  const Value *find(std::string_view name) const;
  void set(std::string name, Value value);

private:
  const Scope *parent_;
  std::vector<std::pair<std::string, Value>> variables_;
};

class Interpreter {
public:
  Interpreter(const RenderLimits &limits) : limits_(limits) {}

  /// Renders `program` with `globals` (the caller's variables and the
  /// built-in functions) below its top-level scope.
  std::string render(const Program &program, const Scope &globals);

  // --- For the builtins ---------------------------------------------------

  /// The largest string a value may hold (the output's bound).
  std::size_t valueLimit() const { return limits_.maxOutputBytes; }
  /// Counts `bytes` of strings or lists built against the work bound.
  void charge(std::size_t bytes);
  /// Counts `steps` loop iterations (or items a filter walks).
  void step(std::size_t steps = 1);
  /// A string value, its size counted against the bounds.
  Value makeString(std::string s);
  /// A list or tuple, its size counted.
  Value makeSequence(Value::Kind kind, ValueList items);

  Value call(const Value &callee, CallArgs &args);
  /// Jinja2's getattr (`x.name`) and getitem (`x[key]`), as its sandbox
  /// gives them (a method that would change a value is Undefined).
  Value getAttribute(const Value &object, const std::string &name);
  Value getItem(const Value &object, const Value &key);
  /// The template's top level, which macros see.
  const Scope *topLevel() const { return topLevel_; }

  /// Renders a macro's body (the Macro node) with `scope` bound.
  std::string renderBody(const std::vector<std::unique_ptr<Node>> &body, Scope &scope);

private:
  enum class Flow { Normal, Break, Continue };

  Flow execute(const std::vector<std::unique_ptr<Node>> &body, Scope &scope, std::string &out);
  Flow executeNode(const Node &node, Scope &scope, std::string &out);
  Flow executeStatement(const Node &node, Scope &scope, std::string &out);
  void executeFor(const Node &node, Scope &scope, std::string &out);
  void assign(const Target &target, const Value &value, Scope &scope);
  void defineMacro(const Node &node, Scope &scope);
  void append(std::string &out, std::string_view text);

  Value evaluate(const Expr &expr, const Scope &scope);
  Value evaluateInner(const Expr &expr, const Scope &scope);
  Value evaluateBinary(const Expr &expr, const Value &left, const Value &right);
  bool evaluateCompare(CompareOp op, const Value &left, const Value &right);
  Value evaluateSlice(const Expr &expr, const Scope &scope);
  CallArgs evaluateArguments(const Expr &expr, const Scope &scope, std::size_t firstArgument);

  struct DepthGuard {
    DepthGuard(Interpreter &in);
    ~DepthGuard() { --in.depth_; }
    Interpreter &in;
  };

  RenderLimits limits_;
  std::size_t work_ = 0;
  std::size_t iterations_ = 0;
  int depth_ = 0;
  const Scope *topLevel_ = nullptr;
};

/// Python's (and Jinja2's) binary arithmetic, for the builtins too.
Value arithmetic(Interpreter &in, BinaryOp op, const Value &left, const Value &right);
/// Python's <, <=, >, >=: numbers, strings, lists and tuples.
bool orderCompare(CompareOp op, const Value &left, const Value &right);

/// The built-in functions a template may call: range, namespace, dict,
/// raise_exception (transformers'), joined into `globals`.
void addBuiltinGlobals(Scope &globals);

/// Python's str(v) as a new string value, counted.
Value strValue(Interpreter &in, const Value &v);

} // namespace tfmc::runtime::jinja

#endif // TFMC_RUNTIME_SERVE_TEMPLATEEVAL_H
