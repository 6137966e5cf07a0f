//===- TemplateAst.h - Parsed chat templates --------------------*- C++ -*-===//
//
// What TemplateParser builds from a template and the Interpreter walks:
// statements (Node) holding expressions (Expr). Filters and tests are
// resolved while parsing (an unknown one is a syntax error, as in Jinja2),
// so each node holds its function. A parsed template is never modified:
// one template may be rendered by many threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SERVE_TEMPLATEAST_H
#define TFMC_RUNTIME_SERVE_TEMPLATEAST_H

#include "runtime/serve/TemplateValue.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::runtime::jinja {

/// A filter: `operand | name(args)`.
using FilterFn = Value (*)(Interpreter &, const Value &operand, CallArgs &args);
/// A test: `operand is name(args)`.
using TestFn = bool (*)(Interpreter &, const Value &operand, CallArgs &args);

enum class ExprKind : uint8_t {
  Literal,     // constant
  Name,        // name
  List,        // children: items
  Tuple,       // children: items
  Dict,        // children: key, value, key, value, ...
  Attribute,   // children[0].name
  Item,        // children[0][children[1]]
  Slice,       // children[0][children[1]:children[2]:children[3]] (parts may be null)
  Call,        // children[0](children[1..], keywords)
  Filter,      // children[0] | name(children[1..], keywords)
  Test,        // children[0] is [not] name(children[1..], keywords)
  Not,         // not children[0]
  Negate,      // -children[0]
  Plus,        // +children[0]
  Binary,      // children[0] op children[1]
  Compare,     // children[0] op[0] children[1] op[1] children[2] ...
  And,         // children[0] and children[1]
  Or,          // children[0] or children[1]
  Conditional, // children[1] if children[0] else children[2] (null: Undefined)
};

enum class BinaryOp : uint8_t { Add, Subtract, Multiply, Divide, FloorDivide, Modulo, Power, Concat };
enum class CompareOp : uint8_t { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, In, NotIn };

struct Expr {
  ExprKind kind = ExprKind::Literal;
  BinaryOp binaryOp = BinaryOp::Add;
  bool negated = false; // Test: `is not`
  int depth = 1;        // levels of expressions below and including this one
  Location location;
  std::string name;     // Name, Attribute, Filter, Test
  Value constant;       // Literal
  std::vector<std::unique_ptr<Expr>> children;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> keywords;
  std::vector<CompareOp> compareOps;
  FilterFn filter = nullptr;
  TestFn test = nullptr;
};

/// What `for` and `set` assign to.
struct Target {
  enum class Kind : uint8_t { Name, Tuple, Attribute };
  Kind kind = Kind::Name;
  std::vector<std::string> names; // Name: one; Tuple: each; Attribute: the namespace
  std::string attribute;          // Attribute: ns.ATTRIBUTE
};

enum class NodeKind : uint8_t {
  Text,       // text
  Output,     // {{ expr }}
  If,         // if expr: body else orelse (an elif is an If alone in orelse)
  For,        // for target in expr [if condition]: body, else orelse
  Set,        // set target = expr
  SetBlock,   // set target: body rendered
  Macro,      // macro name(parameters): body
  Break,
  Continue,
  Generation, // transformers' {% generation %}: body as is
};

struct Node {
  NodeKind kind = NodeKind::Text;
  Location location;
  std::string text;
  std::unique_ptr<Expr> expr;
  std::unique_ptr<Expr> condition;
  Target target;
  std::vector<std::unique_ptr<Node>> body;
  std::vector<std::unique_ptr<Node>> orelse;
  std::string name;
  /// Macro parameters, each with its default (null: none).
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> parameters;
};

struct Program {
  std::vector<std::unique_ptr<Node>> body;
};

/// Bounds on what the parser accepts (ChatTemplateLimits carries them).
struct ParseLimits {
  std::size_t maxTemplateBytes;
  int maxNesting;
};

/// Parses a template the way Jinja2 does with trim_blocks and lstrip_blocks
/// (as transformers sets them); throws TemplateFailure (Kind::Syntax) at the
/// first error.
Program parseTemplate(std::string_view source, const ParseLimits &limits);

/// The filter or test of that name, or null (TemplateBuiltins.cpp).
FilterFn findFilter(std::string_view name);
TestFn findTest(std::string_view name);

} // namespace tfmc::runtime::jinja

#endif // TFMC_RUNTIME_SERVE_TEMPLATEAST_H
