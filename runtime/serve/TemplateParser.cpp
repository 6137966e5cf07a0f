//===- TemplateParser.cpp - Chat templates to their AST -------------------===//
//
// Jinja2's parser (jinja2/parser.py) restated for the subset ChatTemplate.h
// lists, over TemplateLexer's tokens. The grammar's precedence, loosest
// first: `x if c else y`, or, and, not, comparisons and `in` (chained),
// + -, ~, * / // %, **, unary + -, then primaries with `.name`, `[key]`,
// `[a:b:c]`, calls, `| filter` and `is test` (those bind tighter than any
// operator).
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/TemplateAst.h"

#include "runtime/serve/TemplateLexer.h"
#include "support/Text.h"

#include <algorithm>

namespace tfmc::runtime::jinja {
namespace {

using ExprPtr = std::unique_ptr<Expr>;
using NodePtr = std::unique_ptr<Node>;

class Parser {
public:
  Parser(std::vector<Token> tokens, const ParseLimits &limits) : tokens_(std::move(tokens)), limits_(limits) {}

  Program parseProgram() {
    Program program;
    program.body = subparse({}, nullptr);
    return program;
  }

private:
  // --- Token stream ---------------------------------------------------------

  const Token &current() const { return tokens_[pos_]; }
  const Token &peek(std::size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void advance() {
    if (pos_ + 1 < tokens_.size())
      ++pos_;
  }
  bool isOperator(const char *op) const {
    return current().kind == TokenKind::Operator && current().text == op;
  }
  bool isName(const char *name) const { return current().kind == TokenKind::Name && current().text == name; }
  bool skipOperator(const char *op) {
    if (!isOperator(op))
      return false;
    advance();
    return true;
  }
  bool skipName(const char *name) {
    if (!isName(name))
      return false;
    advance();
    return true;
  }

  static std::string describe(const Token &token) {
    switch (token.kind) {
    case TokenKind::Text: return "text";
    case TokenKind::VariableBegin: return "'{{'";
    case TokenKind::VariableEnd: return "'}}'";
    case TokenKind::BlockBegin: return "'{%'";
    case TokenKind::BlockEnd: return "'%}'";
    case TokenKind::Name: return support::quote(token.text);
    case TokenKind::String: return "a string";
    case TokenKind::Integer: return "an integer";
    case TokenKind::Float: return "a number";
    case TokenKind::Operator: return "'" + token.text + "'";
    case TokenKind::End: return "the end of the template";
    }
    return "a token";
  }

  [[noreturn]] void expected(const std::string &what) const {
    syntaxError(current().location, "expected " + what + ", found " + describe(current()));
  }

  void expectOperator(const char *op) {
    if (!skipOperator(op))
      expected(std::string("'") + op + "'");
  }

  std::string expectName(const char *what) {
    if (current().kind != TokenKind::Name)
      expected(what);
    std::string name = current().text;
    advance();
    return name;
  }

  void expectBlockEnd(const char *after) {
    if (current().kind != TokenKind::BlockEnd)
      expected(std::string("'%}' after ") + after);
    advance();
  }

  // --- Nesting bound --------------------------------------------------------

  struct Nest {
    Nest(Parser &parser, Location location) : parser(parser) {
      if (++parser.nesting_ > parser.limits_.maxNesting)
        syntaxError(location, "nested deeper than " + std::to_string(parser.limits_.maxNesting) + " levels");
    }
    ~Nest() { --parser.nesting_; }
    Parser &parser;
  };

  ExprPtr make(ExprKind kind, Location location) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->location = location;
    return expr;
  }

  /// Adds a child, keeping the expression's depth bounded: operator chains
  /// (a + b + c ...) nest without recursing in the parser.
  void addChild(Expr &parent, ExprPtr child) {
    if (child) {
      parent.depth = std::max(parent.depth, child->depth + 1);
      if (parent.depth > limits_.maxNesting)
        syntaxError(parent.location,
                    "expression nested deeper than " + std::to_string(limits_.maxNesting) + " levels");
    }
    parent.children.push_back(std::move(child));
  }

  ExprPtr binary(ExprKind kind, Location location, ExprPtr left, ExprPtr right) {
    ExprPtr expr = make(kind, location);
    addChild(*expr, std::move(left));
    addChild(*expr, std::move(right));
    return expr;
  }

  // --- Statements -----------------------------------------------------------

  /// Nodes until a block tag named in `endTags` (not consumed) or the end.
  std::vector<NodePtr> subparse(const std::vector<const char *> &endTags, const Node *opener) {
    std::vector<NodePtr> body;
    for (;;) {
      const Token &token = current();
      if (token.kind == TokenKind::End) {
        if (endTags.empty())
          return body;
        syntaxError(token.location, "expected " + listTags(endTags) + " to close the '" + openerName(*opener) +
                                        "' at " + place(opener->location) + ", found the end of the template");
      }
      if (token.kind == TokenKind::Text) {
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::Text;
        node->location = token.location;
        node->text = token.text;
        body.push_back(std::move(node));
        advance();
      } else if (token.kind == TokenKind::VariableBegin) {
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::Output;
        node->location = token.location;
        advance();
        node->expr = parseTuple(true, {});
        if (current().kind != TokenKind::VariableEnd)
          expected("'}}'");
        advance();
        body.push_back(std::move(node));
      } else if (token.kind == TokenKind::BlockBegin) {
        const Token &tag = peek();
        if (tag.kind == TokenKind::Name)
          for (const char *end : endTags)
            if (tag.text == end)
              return body;
        advance();
        body.push_back(parseStatement(token.location));
      } else {
        expected("text or a tag");
      }
    }
  }

  static std::string place(Location location) {
    return std::to_string(location.line) + ":" + std::to_string(location.column);
  }

  static std::string openerName(const Node &node) {
    switch (node.kind) {
    case NodeKind::If: return "if";
    case NodeKind::For: return "for";
    case NodeKind::SetBlock: return "set";
    case NodeKind::Macro: return "macro";
    case NodeKind::Generation: return "generation";
    default: return "block";
    }
  }

  static std::string listTags(const std::vector<const char *> &tags) {
    std::string out;
    for (std::size_t i = 0; i < tags.size(); ++i)
      out += (i == 0 ? "'" : i + 1 == tags.size() ? " or '" : ", '") + std::string(tags[i]) + "'";
    return out;
  }

  NodePtr parseStatement(Location start) {
    Nest nest(*this, start);
    if (current().kind != TokenKind::Name)
      expected("a tag name");
    std::string tag = current().text;
    Location tagLocation = current().location;
    advance();
    auto node = std::make_unique<Node>();
    node->location = start;
    if (tag == "if")
      parseIf(*node);
    else if (tag == "for")
      parseFor(*node);
    else if (tag == "set")
      parseSet(*node);
    else if (tag == "macro")
      parseMacro(*node);
    else if (tag == "break" || tag == "continue") {
      if (loopDepth_ == 0)
        syntaxError(tagLocation, "'" + tag + "' outside a for loop");
      node->kind = tag == "break" ? NodeKind::Break : NodeKind::Continue;
      expectBlockEnd(tag.c_str());
    } else if (tag == "generation") {
      node->kind = NodeKind::Generation;
      expectBlockEnd("'generation'");
      node->body = subparse({"endgeneration"}, node.get());
      closeTag("endgeneration");
    } else if (tag == "elif" || tag == "else" || tag.rfind("end", 0) == 0) {
      syntaxError(tagLocation, "unexpected '" + tag + "' with no block open that it closes");
    } else if (tag == "with" || tag == "filter" || tag == "call" || tag == "include" || tag == "import" ||
               tag == "from" || tag == "extends" || tag == "block" || tag == "do" || tag == "autoescape" ||
               tag == "trans") {
      syntaxError(tagLocation, "'" + tag + "' tags are not supported");
    } else {
      syntaxError(tagLocation, "unknown tag " + support::quote(tag));
    }
    return node;
  }

  /// Consumes `{% NAME %}` (subparse stopped at its `{%`).
  void closeTag(const char *name) {
    advance(); // {%
    advance(); // the name
    expectBlockEnd((std::string("'") + name + "'").c_str());
  }

  void parseIf(Node &node) {
    node.kind = NodeKind::If;
    node.expr = parseTuple(false, {});
    expectBlockEnd("the 'if' condition");
    node.body = subparse({"elif", "else", "endif"}, &node);
    Node *last = &node;
    for (;;) {
      std::string tag = peek().text;
      Location location = current().location;
      if (tag == "elif") {
        advance();
        advance();
        auto elif = std::make_unique<Node>();
        elif->kind = NodeKind::If;
        elif->location = location;
        elif->expr = parseTuple(false, {});
        expectBlockEnd("the 'elif' condition");
        elif->body = subparse({"elif", "else", "endif"}, &node);
        Node *next = elif.get();
        last->orelse.push_back(std::move(elif));
        last = next;
      } else if (tag == "else") {
        advance();
        advance();
        expectBlockEnd("'else'");
        last->orelse = subparse({"endif"}, &node);
      } else {
        closeTag("endif");
        return;
      }
    }
  }

  /// A `for` or `set` target: a name, names separated by commas (a tuple),
  /// either in parentheses, or (set only) namespace.attribute.
  Target parseTarget(bool withNamespace, const char *what) {
    Target target;
    if (withNamespace && current().kind == TokenKind::Name && peek().kind == TokenKind::Operator &&
        peek().text == ".") {
      target.kind = Target::Kind::Attribute;
      target.names.push_back(current().text);
      advance();
      advance();
      target.attribute = expectName("an attribute name after '.'");
      return target;
    }
    bool parenthesized = skipOperator("(");
    bool tuple = false;
    target.names.push_back(expectName(what));
    while (skipOperator(",")) {
      tuple = true;
      // Jinja2 takes a trailing comma only inside parentheses: `for a, in`
      // reads `in` as a second name.
      if (parenthesized && isOperator(")"))
        break;
      target.names.push_back(expectName(what));
    }
    if (parenthesized)
      expectOperator(")");
    target.kind = tuple ? Target::Kind::Tuple : Target::Kind::Name;
    return target;
  }

  void parseFor(Node &node) {
    node.kind = NodeKind::For;
    node.target = parseTarget(false, "a loop variable");
    if (!skipName("in"))
      expected("'in' after the loop variable");
    node.expr = parseTuple(false, {"recursive"});
    if (skipName("if"))
      node.condition = parseExpression(true);
    if (isName("recursive"))
      syntaxError(current().location, "recursive loops are not supported");
    expectBlockEnd("the 'for' loop");
    ++loopDepth_;
    node.body = subparse({"endfor", "else"}, &node);
    --loopDepth_;
    if (peek().text == "else") {
      advance();
      advance();
      expectBlockEnd("'else'");
      node.orelse = subparse({"endfor"}, &node);
    }
    closeTag("endfor");
  }

  void parseSet(Node &node) {
    node.target = parseTarget(true, "a variable name");
    if (skipOperator("=")) {
      node.kind = NodeKind::Set;
      node.expr = parseTuple(true, {});
      expectBlockEnd("the assigned value");
      return;
    }
    if (node.target.kind == Target::Kind::Attribute)
      expected("'=' after the namespace attribute");
    if (isOperator("|"))
      syntaxError(current().location, "filtered 'set' blocks are not supported");
    node.kind = NodeKind::SetBlock;
    expectBlockEnd("the 'set' target");
    node.body = subparse({"endset"}, &node);
    closeTag("endset");
  }

  void parseMacro(Node &node) {
    node.kind = NodeKind::Macro;
    if (macroDepth_ > 0 || loopDepth_ > 0 || nesting_ > 1)
      syntaxError(node.location, "macros are supported at the top level of the template only");
    node.name = expectName("the macro's name");
    expectOperator("(");
    bool defaults = false;
    while (!isOperator(")")) {
      if (!node.parameters.empty())
        expectOperator(",");
      if (isOperator(")"))
        break;
      Location location = current().location;
      std::string name = expectName("a parameter name");
      for (const auto &parameter : node.parameters)
        if (parameter.first == name)
          syntaxError(location, "duplicate parameter " + support::quote(name));
      ExprPtr fallback;
      if (skipOperator("=")) {
        fallback = parseExpression(true);
        defaults = true;
      } else if (defaults) {
        syntaxError(location, "a parameter without a default follows one with a default");
      }
      node.parameters.emplace_back(std::move(name), std::move(fallback));
    }
    advance();
    expectBlockEnd("the macro's parameters");
    ++macroDepth_;
    int loops = loopDepth_;
    loopDepth_ = 0;
    node.body = subparse({"endmacro"}, &node);
    loopDepth_ = loops;
    --macroDepth_;
    closeTag("endmacro");
  }

  // --- Expressions ----------------------------------------------------------

  bool atTupleEnd(const std::vector<const char *> &extraEnd) const {
    const Token &token = current();
    if (token.kind == TokenKind::VariableEnd || token.kind == TokenKind::BlockEnd || token.kind == TokenKind::End)
      return true;
    if (token.kind == TokenKind::Operator && token.text == ")")
      return true;
    if (token.kind == TokenKind::Name)
      for (const char *end : extraEnd)
        if (token.text == end)
          return true;
    return false;
  }

  /// Jinja2's parse_tuple: one expression, or a tuple when commas separate
  /// several (or follow one).
  ExprPtr parseTuple(bool withCondition, const std::vector<const char *> &extraEnd, bool parenthesized = false) {
    Location location = current().location;
    std::vector<ExprPtr> items;
    bool isTuple = false;
    for (;;) {
      if (!items.empty())
        expectOperator(",");
      if (atTupleEnd(extraEnd))
        break;
      items.push_back(parseExpression(withCondition));
      if (isOperator(","))
        isTuple = true;
      else
        break;
    }
    if (!isTuple) {
      if (!items.empty())
        return std::move(items[0]);
      if (!parenthesized)
        expected("an expression");
    }
    ExprPtr tuple = make(ExprKind::Tuple, location);
    for (auto &item : items)
      addChild(*tuple, std::move(item));
    return tuple;
  }

  ExprPtr parseExpression(bool withCondition) {
    Nest nest(*this, current().location);
    return withCondition ? parseConditional() : parseOr();
  }

  ExprPtr parseConditional() {
    ExprPtr expr = parseOr();
    while (isName("if")) {
      Location location = current().location;
      advance();
      ExprPtr condition = parseOr();
      ExprPtr otherwise;
      if (skipName("else")) {
        Nest nest(*this, location);
        otherwise = parseConditional();
      }
      ExprPtr node = make(ExprKind::Conditional, location);
      addChild(*node, std::move(condition));
      addChild(*node, std::move(expr));
      addChild(*node, std::move(otherwise));
      expr = std::move(node);
    }
    return expr;
  }

  ExprPtr parseOr() {
    ExprPtr left = parseAnd();
    while (isName("or")) {
      Location location = current().location;
      advance();
      left = binary(ExprKind::Or, location, std::move(left), parseAnd());
    }
    return left;
  }

  ExprPtr parseAnd() {
    ExprPtr left = parseNot();
    while (isName("and")) {
      Location location = current().location;
      advance();
      left = binary(ExprKind::And, location, std::move(left), parseNot());
    }
    return left;
  }

  ExprPtr parseNot() {
    if (isName("not")) {
      Location location = current().location;
      advance();
      Nest nest(*this, location);
      ExprPtr node = make(ExprKind::Not, location);
      addChild(*node, parseNot());
      return node;
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    Location location = current().location;
    ExprPtr first = parseMath1();
    ExprPtr compare;
    for (;;) {
      CompareOp op;
      const Token &token = current();
      if (token.kind == TokenKind::Operator && token.text == "==")
        op = CompareOp::Equal;
      else if (token.kind == TokenKind::Operator && token.text == "!=")
        op = CompareOp::NotEqual;
      else if (token.kind == TokenKind::Operator && token.text == "<")
        op = CompareOp::Less;
      else if (token.kind == TokenKind::Operator && token.text == "<=")
        op = CompareOp::LessEqual;
      else if (token.kind == TokenKind::Operator && token.text == ">")
        op = CompareOp::Greater;
      else if (token.kind == TokenKind::Operator && token.text == ">=")
        op = CompareOp::GreaterEqual;
      else if (isName("in"))
        op = CompareOp::In;
      else if (isName("not") && peek().kind == TokenKind::Name && peek().text == "in") {
        advance();
        op = CompareOp::NotIn;
      } else
        break;
      advance();
      if (!compare) {
        compare = make(ExprKind::Compare, location);
        addChild(*compare, std::move(first));
      }
      compare->compareOps.push_back(op);
      addChild(*compare, parseMath1());
    }
    return compare ? std::move(compare) : std::move(first);
  }

  ExprPtr binaryOp(BinaryOp op, Location location, ExprPtr left, ExprPtr right) {
    ExprPtr node = binary(ExprKind::Binary, location, std::move(left), std::move(right));
    node->binaryOp = op;
    return node;
  }

  ExprPtr parseMath1() {
    ExprPtr left = parseConcat();
    for (;;) {
      Location location = current().location;
      if (skipOperator("+"))
        left = binaryOp(BinaryOp::Add, location, std::move(left), parseConcat());
      else if (skipOperator("-"))
        left = binaryOp(BinaryOp::Subtract, location, std::move(left), parseConcat());
      else
        return left;
    }
  }

  ExprPtr parseConcat() {
    ExprPtr left = parseMath2();
    for (;;) {
      Location location = current().location;
      if (!skipOperator("~"))
        return left;
      left = binaryOp(BinaryOp::Concat, location, std::move(left), parseMath2());
    }
  }

  ExprPtr parseMath2() {
    ExprPtr left = parsePower();
    for (;;) {
      Location location = current().location;
      BinaryOp op;
      if (skipOperator("*"))
        op = BinaryOp::Multiply;
      else if (skipOperator("/"))
        op = BinaryOp::Divide;
      else if (skipOperator("//"))
        op = BinaryOp::FloorDivide;
      else if (skipOperator("%"))
        op = BinaryOp::Modulo;
      else
        return left;
      left = binaryOp(op, location, std::move(left), parsePower());
    }
  }

  ExprPtr parsePower() {
    ExprPtr left = parseUnary(true);
    for (;;) {
      Location location = current().location;
      if (!skipOperator("**"))
        return left;
      left = binaryOp(BinaryOp::Power, location, std::move(left), parseUnary(true));
    }
  }

  ExprPtr parseUnary(bool withFilter) {
    Location location = current().location;
    Nest nest(*this, location);
    ExprPtr node;
    if (skipOperator("-")) {
      node = make(ExprKind::Negate, location);
      addChild(*node, parseUnary(false));
    } else if (skipOperator("+")) {
      node = make(ExprKind::Plus, location);
      addChild(*node, parseUnary(false));
    } else {
      node = parsePrimary();
    }
    node = parsePostfix(std::move(node));
    if (withFilter)
      node = parseFilterExpr(std::move(node));
    return node;
  }

  ExprPtr literal(Location location, Value value) {
    ExprPtr node = make(ExprKind::Literal, location);
    node->constant = std::move(value);
    return node;
  }

  ExprPtr parsePrimary() {
    const Token &token = current();
    Location location = token.location;
    switch (token.kind) {
    case TokenKind::Name: {
      std::string name = token.text;
      advance();
      if (name == "true" || name == "True")
        return literal(location, Value::boolean(true));
      if (name == "false" || name == "False")
        return literal(location, Value::boolean(false));
      if (name == "none" || name == "None")
        return literal(location, Value::none());
      if (macroDepth_ > 0 && (name == "varargs" || name == "kwargs" || name == "caller"))
        syntaxError(location, "macros using '" + name + "' are not supported");
      ExprPtr node = make(ExprKind::Name, location);
      node->name = std::move(name);
      return node;
    }
    case TokenKind::String: {
      std::string value;
      while (current().kind == TokenKind::String) {
        value += current().text;
        advance();
      }
      return literal(location, Value::string(std::move(value)));
    }
    case TokenKind::Integer: {
      int64_t value = token.integer;
      advance();
      return literal(location, Value::integer(value));
    }
    case TokenKind::Float: {
      double value = token.number;
      advance();
      return literal(location, Value::number(value));
    }
    case TokenKind::Operator:
      if (skipOperator("(")) {
        ExprPtr inner = parseTuple(true, {}, true);
        expectOperator(")");
        return inner;
      }
      if (skipOperator("["))
        return parseSequence(ExprKind::List, location, "]");
      if (skipOperator("{"))
        return parseSequence(ExprKind::Dict, location, "}");
      break;
    default:
      break;
    }
    expected("an expression");
  }

  ExprPtr parseSequence(ExprKind kind, Location location, const char *close) {
    ExprPtr node = make(kind, location);
    while (!isOperator(close)) {
      if (!node->children.empty())
        expectOperator(",");
      if (isOperator(close))
        break;
      addChild(*node, parseExpression(true));
      if (kind == ExprKind::Dict) {
        expectOperator(":");
        addChild(*node, parseExpression(true));
      }
    }
    advance();
    return node;
  }

  ExprPtr parsePostfix(ExprPtr node) {
    for (;;) {
      Location location = current().location;
      if (skipOperator(".")) {
        if (current().kind == TokenKind::Name) {
          ExprPtr attribute = make(ExprKind::Attribute, location);
          attribute->name = current().text;
          advance();
          addChild(*attribute, std::move(node));
          node = std::move(attribute);
        } else if (current().kind == TokenKind::Integer) {
          ExprPtr item = make(ExprKind::Item, location);
          addChild(*item, std::move(node));
          addChild(*item, literal(location, Value::integer(current().integer)));
          advance();
          node = std::move(item);
        } else {
          expected("an attribute name or an index after '.'");
        }
      } else if (skipOperator("[")) {
        node = parseSubscript(std::move(node), location);
      } else if (isOperator("(")) {
        Location callee = node->location;
        node = parseCall(std::move(node), callee);
      } else {
        return node;
      }
    }
  }

  ExprPtr parseSubscript(ExprPtr object, Location location) {
    std::vector<ExprPtr> parts;
    bool slice = false;
    if (!isOperator(":"))
      parts.push_back(parseExpression(true));
    else
      parts.push_back(nullptr);
    if (skipOperator(":")) {
      slice = true;
      parts.push_back(isOperator(":") || isOperator("]") ? nullptr : parseExpression(true));
      if (skipOperator(":"))
        parts.push_back(isOperator("]") ? nullptr : parseExpression(true));
      else
        parts.push_back(nullptr);
    }
    if (isOperator(","))
      syntaxError(current().location, "tuple subscripts are not supported");
    expectOperator("]");
    ExprPtr node = make(slice ? ExprKind::Slice : ExprKind::Item, location);
    addChild(*node, std::move(object));
    for (auto &part : parts)
      addChild(*node, std::move(part));
    return node;
  }

  /// `(args, name=value)` into `node`'s children (after those it has) and
  /// keywords.
  void parseArguments(Expr &node) {
    expectOperator("(");
    bool first = true;
    while (!isOperator(")")) {
      if (!first)
        expectOperator(",");
      first = false;
      if (isOperator(")"))
        break;
      if (isOperator("*") || isOperator("**"))
        syntaxError(current().location, "argument unpacking (* and **) is not supported");
      if (current().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
        Location location = current().location;
        std::string key = current().text;
        advance();
        advance();
        for (const auto &keyword : node.keywords)
          if (keyword.first == key)
            syntaxError(location, "keyword argument " + support::quote(key) + " repeated");
        ExprPtr value = parseExpression(true);
        node.depth = std::max(node.depth, value->depth + 1);
        node.keywords.emplace_back(std::move(key), std::move(value));
      } else {
        if (!node.keywords.empty())
          syntaxError(current().location, "a positional argument follows a keyword argument");
        addChild(node, parseExpression(true));
      }
    }
    advance();
    if (node.depth > limits_.maxNesting)
      syntaxError(node.location, "expression nested deeper than " + std::to_string(limits_.maxNesting) + " levels");
  }

  ExprPtr parseCall(ExprPtr callee, Location location) {
    ExprPtr node = make(ExprKind::Call, location);
    addChild(*node, std::move(callee));
    parseArguments(*node);
    return node;
  }

  ExprPtr parseFilterExpr(ExprPtr node) {
    for (;;) {
      if (skipOperator("|")) {
        Location nameLocation = current().location;
        std::string name = expectName("a filter name after '|'");
        if (isOperator("."))
          syntaxError(current().location, "dotted filter names are not supported");
        ExprPtr filter = make(ExprKind::Filter, nameLocation);
        filter->name = name;
        filter->filter = findFilter(name);
        if (!filter->filter)
          syntaxError(nameLocation, "no filter named " + support::quote(name));
        addChild(*filter, std::move(node));
        if (isOperator("("))
          parseArguments(*filter);
        node = std::move(filter);
      } else if (isName("is")) {
        advance();
        bool negated = skipName("not");
        Location nameLocation = current().location;
        std::string name = expectName("a test name after 'is'");
        ExprPtr test = make(ExprKind::Test, nameLocation);
        test->name = name;
        test->negated = negated;
        test->test = findTest(name);
        if (!test->test)
          syntaxError(nameLocation, "no test named " + support::quote(name));
        addChild(*test, std::move(node));
        const Token &next = current();
        if (isOperator("(")) {
          parseArguments(*test);
        } else if ((next.kind == TokenKind::Name || next.kind == TokenKind::String ||
                    next.kind == TokenKind::Integer || next.kind == TokenKind::Float ||
                    (next.kind == TokenKind::Operator && (next.text == "[" || next.text == "{"))) &&
                   !isName("else") && !isName("or") && !isName("and")) {
          // `x is divisibleby 3`: one argument without parentheses.
          if (isName("is"))
            syntaxError(next.location, "expected a test argument, found 'is'");
          addChild(*test, parsePostfix(parsePrimary()));
        }
        node = std::move(test);
      } else if (isOperator("(")) {
        Location callee = node->location;
        node = parseCall(std::move(node), callee);
      } else {
        return node;
      }
    }
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  ParseLimits limits_;
  int nesting_ = 0;
  int loopDepth_ = 0;
  int macroDepth_ = 0;
};

} // namespace

Program parseTemplate(std::string_view source, const ParseLimits &limits) {
  Parser parser(lexTemplate(source, limits.maxTemplateBytes), limits);
  return parser.parseProgram();
}

} // namespace tfmc::runtime::jinja
