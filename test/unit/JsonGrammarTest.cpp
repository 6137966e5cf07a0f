//===- JsonGrammarTest.cpp - Token masks that keep output JSON of a schema
//-===//
//
// runtime/serve/JsonGrammar.h: the matcher byte by byte on each construct
// (where a wrong output is refused, not only that it is), each refused
// keyword's message, masks over a hand vocabulary derived by hand and over
// random ones against feeding every token, random generations that must
// parse and match their schema (checked by a validator written here), a
// state's copies, the cache, and the time a mask takes on 50,000 tokens.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/JsonGrammar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace tfmc::runtime::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::shared_ptr<const JsonSchemaGrammar> compiled(const char *schema,
                                                  unsigned maxWhitespace = 2) {
  std::string error;
  JsonGrammarOptions options;
  options.maxWhitespace = maxWhitespace;
  auto grammar = compileJsonSchema(ojson::parse(schema), error, options);
  EXPECT_TRUE(grammar) << error;
  return grammar;
}

/// How many leading bytes of `text` the grammar takes (text.size() when
/// all), and whether it is then complete.
std::size_t taken(const std::shared_ptr<const JsonSchemaGrammar> &grammar,
                  const std::string &text, bool *complete = nullptr) {
  JsonGrammarState state(grammar);
  std::size_t n = 0;
  while (n < text.size() && state.accept(static_cast<uint8_t>(text[n])))
    ++n;
  if (complete)
    *complete = state.complete();
  return n;
}

/// The whole of `text` is taken and is a complete value.
::testing::AssertionResult
matches(const std::shared_ptr<const JsonSchemaGrammar> &grammar,
        const std::string &text) {
  bool complete = false;
  const std::size_t n = taken(grammar, text, &complete);
  if (n != text.size())
    return ::testing::AssertionFailure()
           << "refused at byte " << n << " of " << text;
  if (!complete)
    return ::testing::AssertionFailure() << "incomplete: " << text;
  return ::testing::AssertionSuccess();
}

/// `text` is taken up to `at` (its first refused byte), or whole but
/// incomplete when at == text.size().
::testing::AssertionResult
refusedAt(const std::shared_ptr<const JsonSchemaGrammar> &grammar,
          const std::string &text, std::size_t at) {
  bool complete = false;
  const std::size_t n = taken(grammar, text, &complete);
  if (n != at)
    return ::testing::AssertionFailure()
           << "took " << n << " bytes of " << text << ", expected " << at;
  if (at == text.size() && complete)
    return ::testing::AssertionFailure() << "complete: " << text;
  return ::testing::AssertionSuccess();
}

/// The position of `marker`'s first byte in `text`: where a refusal is.
std::size_t at(const std::string &text, const std::string &marker) {
  const std::size_t position = text.find(marker);
  EXPECT_NE(position, std::string::npos) << marker << " in " << text;
  return position;
}

//===----------------------------------------------------------------------===//
// The matcher, construct by construct
//===----------------------------------------------------------------------===//

const char *kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "nick": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["name", "tags"],
  "additionalProperties": false
})";

TEST(JsonGrammar, ObjectPropertiesInOrderRequiredAndOptional) {
  auto g = compiled(kPerson);
  EXPECT_TRUE(matches(g, R"({"name":"Ann","tags":[]})"));
  EXPECT_TRUE(matches(g, R"({"name":"Ann","age":7,"tags":["x"]})"));
  EXPECT_TRUE(matches(g, R"({"name":"Ann","nick":"A","tags":[]})"));
  EXPECT_TRUE(matches(g, R"({"name":"Ann","age":7,"nick":"A","tags":[]})"));
  // A required property missing: the first one...
  std::string text = R"({"age":7,"name":"Ann","tags":[]})";
  EXPECT_TRUE(refusedAt(g, text, at(text, "age")));
  // ...or the last: the object cannot close before it.
  text = R"({"name":"Ann","age":7})";
  EXPECT_TRUE(refusedAt(g, text, text.size() - 1));
  // Out of the schema's order, twice, unknown, a trailing comma.
  text = R"({"name":"Ann","tags":[],"age":7})";
  EXPECT_TRUE(refusedAt(g, text, at(text, ",\"age")));
  text = R"({"name":"Ann","name":"Bo","tags":[]})"; // "n" may be "nick"
  EXPECT_TRUE(refusedAt(g, text, at(text, "name\":\"Bo") + 1));
  text = R"({"name":"Ann","colour":"red","tags":[]})";
  EXPECT_TRUE(refusedAt(g, text, at(text, "colour")));
  text = R"({"name":"Ann","tags":[],})";
  EXPECT_TRUE(refusedAt(g, text, text.size() - 2));
  // A key that is a prefix of a candidate: "na" is not "name".
  text = R"({"na":"Ann"})";
  EXPECT_TRUE(refusedAt(g, text, at(text, "\":")));
  // Values keep their types.
  text = R"({"name":7})";
  EXPECT_TRUE(refusedAt(g, text, at(text, "7")));
  text = R"({"name":"Ann","age":"7"})";
  EXPECT_TRUE(refusedAt(g, text, at(text, "\"7")));
  // Not an object at all.
  EXPECT_TRUE(refusedAt(g, "[]", 0));

  // Keys that share prefixes, all optional: any subset, in order.
  auto prefixes = compiled(R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "ab": {"type": "integer"},
      "abc": {"type": "integer"}}})");
  EXPECT_TRUE(matches(prefixes, "{}"));
  EXPECT_TRUE(matches(prefixes, R"({"abc":3})"));
  EXPECT_TRUE(matches(prefixes, R"({"a":1,"abc":3})"));
  EXPECT_TRUE(matches(prefixes, R"({"ab":2,"abc":3})"));
  EXPECT_TRUE(matches(prefixes, R"({"a":1,"ab":2,"abc":3})"));
  text = R"({"ab":2,"a":1})"; // "a" may begin "abc", not end there
  EXPECT_TRUE(refusedAt(prefixes, text, at(text, "a\":1") + 1));
  text = R"({"abcd":1})";
  EXPECT_TRUE(refusedAt(prefixes, text, at(text, "d")));

  // Every property required (strict mode), and keys needing escapes.
  auto strict = compiled(R"({"type": "object", "properties": {
      "x\"y": {"type": "boolean"}, "z": {"type": "null"}},
      "required": ["x\"y", "z"], "additionalProperties": false})");
  EXPECT_TRUE(matches(strict, R"({"x\"y":true,"z":null})"));
  text = R"({"x\"y":true})";
  EXPECT_TRUE(refusedAt(strict, text, text.size() - 1));
  // Closed with no properties: {} only.
  auto empty = compiled(R"({"type": "object", "additionalProperties": false})");
  EXPECT_TRUE(matches(empty, "{}"));
  EXPECT_TRUE(refusedAt(empty, "{\"", 1));
}

TEST(JsonGrammar, NestedArraysAndItemCounts) {
  auto g = compiled(R"({"type": "array", "minItems": 1, "items":
      {"type": "array", "items": {"type": "integer"}, "maxItems": 2}})");
  EXPECT_TRUE(matches(g, "[[]]"));
  EXPECT_TRUE(matches(g, "[[1,2],[],[3]]"));
  EXPECT_TRUE(matches(g, "[ [ 1 , 2 ] ]"));
  EXPECT_TRUE(refusedAt(g, "[]", 1));        // minItems 1
  EXPECT_TRUE(refusedAt(g, "[[1,2,3]]", 5)); // maxItems 2: no third
  EXPECT_TRUE(refusedAt(g, "[[1],]", 5));    // a trailing comma
  EXPECT_TRUE(refusedAt(g, "[[1.5]]", 3));   // integers
  EXPECT_TRUE(refusedAt(g, "[[1]", 4));      // unclosed: incomplete
  EXPECT_TRUE(refusedAt(g, "[1]", 1));

  auto exact = compiled(R"({"type": "array", "minItems": 2, "maxItems": 2,
      "items": {"type": "boolean"}})");
  EXPECT_TRUE(matches(exact, "[true,false]"));
  EXPECT_TRUE(refusedAt(exact, "[true]", 5));
  EXPECT_TRUE(refusedAt(exact, "[true,true,", 10));
  auto none = compiled(R"({"type": "array", "maxItems": 0})");
  EXPECT_TRUE(matches(none, "[]"));
  EXPECT_TRUE(refusedAt(none, "[1", 1));
  // Items of any value when `items` is absent.
  auto any = compiled(R"({"type": "array"})");
  EXPECT_TRUE(matches(any, R"([1,"a",{"k":[null,true]},[],-2.5e3])"));
}

TEST(JsonGrammar, EnumAndConst) {
  auto g = compiled(R"({"enum": ["red", "green", 1, 12, 1.5, null, true,
      {"k": [1]}]})");
  for (const char *value : {"\"red\"", "\"green\"", "1", "12", "1.5", "null",
                            "true", "{\"k\":[1]}"})
    EXPECT_TRUE(matches(g, value)) << value;
  EXPECT_TRUE(refusedAt(g, "\"re\"", 3));
  EXPECT_TRUE(refusedAt(g, "\"redd\"", 4));
  EXPECT_TRUE(refusedAt(g, "123", 2));
  EXPECT_TRUE(refusedAt(g, "2", 0));
  EXPECT_TRUE(refusedAt(g, "false", 0));
  EXPECT_TRUE(refusedAt(g, "\"blue\"", 1));
  // 1 and 12: after "1" the value may be whole or go on.
  bool complete = false;
  EXPECT_EQ(taken(g, "1", &complete), 1u);
  EXPECT_TRUE(complete);
  // In an array, a literal number ends at the comma.
  auto list = compiled(R"({"type": "array", "items": {"enum": [1, 12]}})");
  EXPECT_TRUE(matches(list, "[1,12,1]"));
  EXPECT_TRUE(refusedAt(list, "[13]", 2));
  // `type` beside `enum` keeps the values of that type.
  auto strings = compiled(R"({"type": "string", "enum": ["a", 1]})");
  EXPECT_TRUE(matches(strings, "\"a\""));
  EXPECT_TRUE(refusedAt(strings, "1", 0));
  auto constant = compiled(R"({"const": "fixed"})");
  EXPECT_TRUE(matches(constant, "\"fixed\""));
  EXPECT_TRUE(refusedAt(constant, "\"fixes\"", 5));
  auto boolean = compiled(R"({"type": "boolean"})");
  EXPECT_TRUE(matches(boolean, "false"));
  EXPECT_TRUE(refusedAt(boolean, "null", 0));
}

TEST(JsonGrammar, AnyOfAndTypeLists) {
  auto g = compiled(R"({"anyOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}},
       "required": ["a"], "additionalProperties": false},
      {"type": "object", "properties": {"b": {"type": "string"}},
       "required": ["b"], "additionalProperties": false},
      {"type": "null"}]})");
  EXPECT_TRUE(matches(g, R"({"a":1})"));
  EXPECT_TRUE(matches(g, R"({"b":"x"})"));
  EXPECT_TRUE(matches(g, "null"));
  EXPECT_TRUE(refusedAt(g, R"({"a":"x"})", 5));
  EXPECT_TRUE(refusedAt(g, R"({"c":1})", 2));
  // Both objects stay possible until the key decides.
  JsonGrammarState state(g);
  EXPECT_EQ(state.threadCount(), 1u);
  ASSERT_TRUE(state.accept("{\""));
  EXPECT_EQ(state.threadCount(), 2u);
  ASSERT_TRUE(state.accept("b"));
  EXPECT_EQ(state.threadCount(), 1u);

  auto list = compiled(R"({"type": ["string", "integer", "null"]})");
  EXPECT_TRUE(matches(list, "\"s\""));
  EXPECT_TRUE(matches(list, "-3"));
  EXPECT_TRUE(matches(list, "null"));
  EXPECT_TRUE(refusedAt(list, "true", 0));
  EXPECT_TRUE(refusedAt(list, "1.5", 1));
  // Branches that end alike merge into one thread: "a" as the const and
  // as a string, both back in the array.
  auto alike = compiled(R"({"type": "array", "items": {"anyOf": [
      {"const": "a"}, {"type": "string"}]}})");
  JsonGrammarState merged(alike);
  ASSERT_TRUE(merged.accept("[\"a"));
  EXPECT_EQ(merged.threadCount(), 2u);
  ASSERT_TRUE(merged.accept("\""));
  EXPECT_EQ(merged.threadCount(), 1u);
}

TEST(JsonGrammar, RecursiveReferences) {
  const char *tree = R"({
    "$defs": {"node": {"type": "object", "properties": {
      "value": {"type": "integer"},
      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["value", "children"], "additionalProperties": false}},
    "$ref": "#/$defs/node"})";
  auto g = compiled(tree);
  EXPECT_TRUE(matches(g, R"({"value":1,"children":[]})"));
  EXPECT_TRUE(matches(g, R"({"value":1,"children":[{"value":2,"children":)"
                         R"([{"value":3,"children":[]}]},{"value":4,)"
                         R"("children":[]}]})"));
  std::string text = R"({"value":1,"children":[{"value":2}]})";
  EXPECT_TRUE(refusedAt(g, text, text.size() - 3));
  text = R"({"value":1,"children":[{"children":[]}]})";
  EXPECT_TRUE(refusedAt(g, text, at(text, "children\":[]}")));

  // `definitions`, and "#": the root itself (a linked list).
  auto list = compiled(R"({"type": "object", "properties": {
      "head": {"$ref": "#/definitions/item"},
      "tail": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
      "required": ["head", "tail"],
      "definitions": {"item": {"type": "string"}}})");
  EXPECT_TRUE(matches(list, R"({"head":"a","tail":{"head":"b","tail":null}})"));
  EXPECT_TRUE(refusedAt(list, R"({"head":1)", 8));
  // A property that must contain itself has no finite value.
  std::string error;
  EXPECT_FALSE(compileJsonSchema(ojson::parse(R"({"$defs": {"a": {"type":
      "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "required":
      ["a"]}}, "$ref": "#/$defs/a"})"),
                                 error));
  EXPECT_EQ(error, "response_format.json_schema.schema: the schema has no "
                   "finite value (a required property or item contains "
                   "itself)");
  // Optional, it is left out: the only object is {}.
  auto optional = compiled(R"({"$defs": {"a": {"type": "object", "properties":
      {"a": {"$ref": "#/$defs/a"}, "b": {"$ref": "#/$defs/loop"}},
      "additionalProperties": false},
      "loop": {"type": "array", "minItems": 1, "items": {"$ref":
      "#/$defs/loop"}}}, "$ref": "#/$defs/a"})");
  EXPECT_TRUE(matches(optional, R"({"a":{"a":{}}})"));
  EXPECT_TRUE(refusedAt(optional, R"({"b")", 2));
}

TEST(JsonGrammar, NumbersAndIntegers) {
  auto number = compiled(R"({"type": "number"})");
  for (const char *text :
       {"0", "-0", "12", "-0.5e+3", "1E5", "3.25", "0e0", "1e-7", "-12.0"})
    EXPECT_TRUE(matches(number, text)) << text;
  EXPECT_TRUE(refusedAt(number, "01", 1));
  EXPECT_TRUE(refusedAt(number, "+1", 0));
  EXPECT_TRUE(refusedAt(number, ".5", 0));
  EXPECT_TRUE(refusedAt(number, "1.e3", 2));
  EXPECT_TRUE(refusedAt(number, "1e+-3", 3));
  EXPECT_TRUE(refusedAt(number, "--1", 1));
  for (const char *text : {"-", "1.", "1e", "1e+"})
    EXPECT_TRUE(refusedAt(number, text, std::string(text).size())) << text;
  // Parts' digits are bounded: 20, 20, 2.
  const std::string twenty(20, '7');
  EXPECT_TRUE(matches(number, "-" + twenty + "." + twenty + "e-99"));
  EXPECT_TRUE(refusedAt(number, twenty + "7", 20));
  EXPECT_TRUE(refusedAt(number, "0." + twenty + "7", 22));
  EXPECT_TRUE(refusedAt(number, "1e+123", 5));
  auto integer = compiled(R"({"type": "integer"})");
  EXPECT_TRUE(matches(integer, "-42"));
  EXPECT_TRUE(matches(integer, "0"));
  EXPECT_TRUE(refusedAt(integer, "1.0", 1));
  EXPECT_TRUE(refusedAt(integer, "1e3", 1));
  EXPECT_TRUE(refusedAt(integer, "00", 1));
  // A number ends at its container's byte.
  auto list = compiled(R"({"type": "array", "items": {"type": "number"}})");
  EXPECT_TRUE(matches(list, "[1,-2.5 ,3e2]"));
}

TEST(JsonGrammar, StringsEscapesAndUtf8) {
  auto g = compiled(R"({"type": "string"})");
  EXPECT_TRUE(matches(g, R"("a\"b\\c\/\b\f\n\r\t\u00e9\u00E9")"));
  EXPECT_TRUE(matches(g, "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\""));
  EXPECT_TRUE(matches(g, R"("\ud83d\ude00")")); // a surrogate pair
  EXPECT_TRUE(matches(g, "\"\x7F\""));          // DEL is not a control
  EXPECT_TRUE(refusedAt(g, R"("\x")", 2));
  EXPECT_TRUE(refusedAt(g, R"("\u12G4")", 5));
  EXPECT_TRUE(refusedAt(g, "\"a\nb\"", 2)); // control bytes raw
  EXPECT_TRUE(refusedAt(g, "\"\x01\"", 1));
  EXPECT_TRUE(refusedAt(g, R"("\ude00")", 4));   // a low half alone
  EXPECT_TRUE(refusedAt(g, R"("\ud83d x")", 7)); // a high half alone
  EXPECT_TRUE(refusedAt(g, R"("\ud83d\u0041")", 10));
  EXPECT_TRUE(refusedAt(g, "\"\xC3\"", 2));             // a character cut short
  EXPECT_TRUE(refusedAt(g, "\"\xC0\xAF\"", 1));         // overlong
  EXPECT_TRUE(refusedAt(g, "\"\xED\xA0\x80\"", 2));     // a surrogate in UTF-8
  EXPECT_TRUE(refusedAt(g, "\"\xF4\x90\x80\x80\"", 2)); // above U+10FFFF
  EXPECT_TRUE(refusedAt(g, "\"\x80\"", 1));
  EXPECT_TRUE(refusedAt(g, "\"abc", 4));
  EXPECT_TRUE(refusedAt(g, "'a'", 0));
}

TEST(JsonGrammar, WhitespaceRunsAreBounded) {
  auto g = compiled(kPerson);
  EXPECT_TRUE(
      matches(g, "  {  \"name\"  :  \"A\" ,\n \"tags\" : [ \"x\"\n ]\n}\n "));
  std::string text = "{   \"name\":\"A\",\"tags\":[]}";
  EXPECT_TRUE(refusedAt(g, text, 3));
  text = "{\"name\":\"A\",\"tags\":[]   }";
  EXPECT_TRUE(refusedAt(g, text, text.size() - 2));
  text = "{\"name\"\t\r\n:\"A\",\"tags\":[]}";
  EXPECT_TRUE(refusedAt(g, text, 9));
  text = "{\"name\":\"A\",\"tags\":[1]}";
  // After the value: at most two more, and still complete.
  JsonGrammarState state(g);
  ASSERT_TRUE(state.accept("{\"name\":\"A\",\"tags\":[]}"));
  EXPECT_TRUE(state.accept(" \n"));
  EXPECT_TRUE(state.complete());
  EXPECT_FALSE(state.accept(uint8_t(' ')));
  // Spaces inside strings and keys are characters, not whitespace.
  auto spaced = compiled(R"({"type": "object", "properties": {"a  b":
      {"type": "string"}}, "required": ["a  b"]})");
  EXPECT_TRUE(matches(spaced, "{\"a  b\":\"     \"}"));
  // maxWhitespace 0: compact JSON only.
  auto compact = compiled(kPerson, 0);
  EXPECT_TRUE(matches(compact, "{\"name\":\"A\",\"tags\":[]}"));
  EXPECT_TRUE(refusedAt(compact, "{ ", 1));
}

TEST(JsonGrammar, AnyObject) {
  auto g = anyJsonObjectGrammar();
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_TRUE(
      matches(g, R"({"a":[1,{"b":null},"c",true,false,-1.5e2],"a":{}})"));
  EXPECT_TRUE(refusedAt(g, "[]", 0));
  EXPECT_TRUE(refusedAt(g, "\"a\"", 0));
  EXPECT_TRUE(refusedAt(g, "{1:2}", 1));
  EXPECT_TRUE(refusedAt(g, R"({"a":tru})", 8));
  EXPECT_TRUE(refusedAt(g, R"({"a"})", 4));
  EXPECT_TRUE(refusedAt(g, R"({"a":1,})", 7));
  EXPECT_TRUE(refusedAt(g, R"({"a":[1,]})", 8));
  // An object schema with no properties and not closed is the same.
  auto open = compiled(R"({"type": "object"})");
  EXPECT_TRUE(matches(open, R"({"x":{"y":[]}})"));
  // As is the empty schema, for any value.
  auto anything = compiled("{}");
  EXPECT_TRUE(matches(anything, "[1,\"a\"]"));
  EXPECT_TRUE(matches(anything, "false"));
}

//===----------------------------------------------------------------------===//
// Refusals
//===----------------------------------------------------------------------===//

TEST(JsonGrammar, RefusedKeywordsNameThemAndTheirPath) {
  const std::string root = "response_format.json_schema.schema";
  struct Case {
    const char *schema;
    std::string error;
  } cases[] = {
      {R"({"type": "object", "properties": {"age": {"type": "integer",
          "minimum": 0}}})",
       root + "/properties/age: 'minimum' is not supported"},
      {R"({"type": "string", "pattern": "^a"})",
       root + ": 'pattern' is not supported"},
      {R"({"type": "array", "items": {"type": "string", "format": "date"}})",
       root + "/items: 'format' is not supported"},
      {R"({"type": "string", "minLength": 1})",
       root + ": 'minLength' is not supported"},
      {R"({"type": "object", "patternProperties": {}})",
       root + ": 'patternProperties' is not supported"},
      {R"({"oneOf": [{"type": "string"}]})",
       root + ": 'oneOf' is not supported"},
      {R"({"allOf": [{"type": "string"}]})",
       root + ": 'allOf' is not supported"},
      {R"({"anyOf": [{"type": "string"}, {"not": {"type": "null"}}]})",
       root + "/anyOf/1: 'not' is not supported"},
      {R"({"if": {}, "then": {}})", root + ": 'if' is not supported"},
      {R"({"$defs": {"x/y": {"type": "object", "properties": {"a~b":
          {"maxLength": 3}}}}, "$ref": "#/$defs/x~1y"})",
       root + "/$defs/x~1y/properties/a~0b: 'maxLength' is not supported"},
      {R"({"type": "number", "maximum": 3})",
       root + ": 'maximum' is not supported"},
      {R"({"type": "array", "uniqueItems": true})",
       root + ": 'uniqueItems' is not supported"},
      // The supported keywords' shapes.
      {R"({"type": "date"})", root + ": 'type' \"date\" is not supported"},
      {R"({"type": "array", "items": [{"type": "string"}]})",
       root + ": 'items' as a list (a tuple) is not supported"},
      {R"({"type": "object", "additionalProperties": {"type": "string"}})",
       root + ": 'additionalProperties' other than true or false is not "
              "supported"},
      {R"({"type": "object", "properties": {}, "required": ["a"]})",
       root + ": 'required' names \"a\", which 'properties' does not list"},
      {R"({"$ref": "#/$defs/missing"})",
       root + ": '$ref' \"#/$defs/missing\" names no definition"},
      {R"({"$ref": "other.json#/x"})",
       root + ": '$ref' \"other.json#/x\" is not supported (only '#', "
              "'#/$defs/NAME' and '#/definitions/NAME')"},
      {R"({"$ref": "#", "type": "string"})",
       root + ": 'type' beside '$ref' is not supported"},
      {R"({"anyOf": [], "type": "string"})",
       root + ": 'type' beside 'anyOf' is not supported"},
      {R"({"anyOf": []})",
       root + ": 'anyOf' must be a non-empty list of schemas"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})",
       root + ": 'minItems' is above 'maxItems'"},
      {R"({"type": "array", "minItems": -1})",
       root + ": 'minItems' must be a non-negative integer"},
      {R"({"type": "object", "properties": {"a": false}})",
       root + "/properties/a: the schema false (no value) is not supported"},
      {R"({"type": "integer", "enum": ["a"]})",
       root + ": no 'enum' value has the 'type'"},
      {R"({"enum": [1], "items": {}})",
       root + ": 'items' beside 'enum' is not supported"},
      {R"([1])", root + ": a schema must be an object"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_FALSE(compileJsonSchema(ojson::parse(c.schema), error)) << c.schema;
    EXPECT_EQ(error, c.error) << c.schema;
  }
  // Annotations are ignored; `where` names the root.
  std::string error;
  JsonGrammarOptions options;
  options.where = "tools[0].function.parameters";
  EXPECT_TRUE(compileJsonSchema(
      ojson::parse(R"({"type": "string", "description": "d", "title": "t",
          "$schema": "x", "default": "a", "examples": ["b"]})"),
      error, options));
  EXPECT_FALSE(
      compileJsonSchema(ojson::parse(R"({"minimum": 1})"), error, options));
  EXPECT_EQ(error, "tools[0].function.parameters: 'minimum' is not supported");
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

std::vector<int> allowedIds(const TokenTrie &trie,
                            const JsonGrammarState &state) {
  std::vector<uint8_t> mask;
  trie.allowedTokens(state, mask);
  EXPECT_EQ(mask.size(), trie.vocabSize());
  std::vector<int> ids;
  for (std::size_t id = 0; id < mask.size(); ++id)
    if (mask[id])
      ids.push_back(static_cast<int>(id));
  return ids;
}

TEST(JsonGrammar, MaskOverAHandVocabulary) {
  const std::vector<std::string> vocab = {
      "{",      // 0
      "\"",     // 1
      "a",      // 2
      "\"a\":", // 3
      "1",      // 4
      "}",      // 5
      " ",      // 6
      "}\n",    // 7
      "\"b\":", // 8
      ",",      // 9
      "\n\n\n", // 10
      "",       // 11: a special token
      "<eos>",  // 12: eos
      "1}",     // 13
      ":",      // 14
      "\"a\"",  // 15
      "  ",     // 16
      "\"",     // 17: the same bytes as 1
      ".5",     // 18
      "x\"",    // 19
      "\\n",    // 20
  };
  TokenTrie trie(vocab, {12});
  auto g = compiled(R"({"type": "object", "properties": {"a": {"type":
      "integer"}, "b": {"type": "string"}}, "required": ["a"],
      "additionalProperties": false})");
  auto after = [&](const std::string &text) {
    JsonGrammarState state(g);
    EXPECT_TRUE(state.accept(text)) << text;
    return allowedIds(trie, state);
  };
  using Ids = std::vector<int>;
  // Before the value: `{`, or up to two spaces.
  EXPECT_EQ(after(""), (Ids{0, 6, 16}));
  // After `{`: a key (the required "a" first: not "b"), or spaces; the
  // object cannot close before "a".
  EXPECT_EQ(after("{"), (Ids{1, 3, 6, 15, 16, 17}));
  // An integer's first digit, or spaces.
  EXPECT_EQ(after("{\"a\":"), (Ids{4, 6, 13, 16}));
  // Inside the integer: more digits, its end (`}`, `,` for "b",
  // whitespace); not a fraction.
  EXPECT_EQ(after("{\"a\":1"), (Ids{4, 5, 6, 7, 9, 13, 16}));
  // After `,`: "b"'s key only.
  EXPECT_EQ(after("{\"a\":1,"), (Ids{1, 6, 8, 16, 17}));
  // Inside "b"'s string: any token without a raw control byte, a quote
  // only where what follows it fits after the value (`"a":` does not).
  EXPECT_EQ(after("{\"a\":1,\"b\":\""),
            (Ids{0, 1, 2, 4, 5, 6, 9, 13, 14, 16, 17, 18, 19, 20}));
  // After the value: eos or whitespace; after two spaces, eos only.
  EXPECT_EQ(after("{\"a\":1}"), (Ids{6, 12, 16}));
  EXPECT_EQ(after("{\"a\":1}  "), (Ids{12}));
}

/// Random byte strings weighted towards JSON's bytes, every single byte,
/// and JSON's punctuation and words.
std::vector<std::string> randomVocabulary(std::mt19937 &rng, std::size_t count,
                                          std::size_t maxLength) {
  std::vector<std::string> vocab;
  for (int c = 0; c < 256; ++c)
    vocab.push_back(std::string(1, static_cast<char>(c)));
  for (const char *token : {"{",    "}",         "[",          "]",
                            ",",    ":",         "\"",         " ",
                            "\n",   "  ",        "true",       "false",
                            "null", "\":",       "\",",        "\"}",
                            "{\"",  "\\u",       "\\n",        "00e9",
                            "d83d", "\\ude00",   "-1",         "0.",
                            "e+",   "\"name\":", "\"value\":", "\"children\":",
                            "[]",   "{}",        "\xC3\xA9",   "\xE2\x82",
                            "\xAC"})
    vocab.push_back(token);
  const std::string common = "{}[],:\" \n\\abcdefnrtu0123456789-.eE+/";
  std::uniform_int_distribution<int> kind(0, 9), any(0, 255);
  std::uniform_int_distribution<std::size_t> length(1, maxLength),
      pick(0, common.size() - 1);
  while (vocab.size() < count) {
    std::string token;
    for (std::size_t n = length(rng); n > 0; --n) {
      const int k = kind(rng);
      token += k < 6   ? common[pick(rng)]
               : k < 9 ? static_cast<char>(0x20 + any(rng) % 95)
                       : static_cast<char>(any(rng));
    }
    vocab.push_back(token);
  }
  return vocab;
}

const char *kTree = R"({
  "$defs": {"node": {"type": "object", "properties": {
    "value": {"type": "integer"},
    "children": {"type": "array", "maxItems": 3,
                 "items": {"$ref": "#/$defs/node"}}},
    "required": ["value", "children"], "additionalProperties": false}},
  "$ref": "#/$defs/node"})";

const char *kMixed = R"({"type": "object", "properties": {
    "id": {"type": "integer"},
    "name": {"type": "string"},
    "score": {"type": ["number", "null"]},
    "kind": {"enum": ["a", "ab", "b", 1, 12, true, null]},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1,
             "maxItems": 3},
    "extra": {"anyOf": [{"type": "boolean"}, {"type": "object", "properties":
        {"x": {"type": "string"}, "y": {"type": "integer"}}, "required":
        ["y"], "additionalProperties": false}]},
    "meta": {"type": "object"}},
  "required": ["id", "kind", "tags"], "additionalProperties": false})";

// Two threads inside one string: "x" of either branch, until the key
// after it decides.
const char *kTwins = R"({"anyOf": [
    {"type": "object", "properties": {"x": {"type": "string"},
     "y": {"type": "integer"}}, "required": ["x", "y"],
     "additionalProperties": false},
    {"type": "object", "properties": {"x": {"type": "string"},
     "z": {"type": "boolean"}}, "required": ["x", "z"],
     "additionalProperties": false}]})";

std::vector<std::shared_ptr<const JsonSchemaGrammar>> testGrammars() {
  return {compiled(kPerson),      compiled(kTree),
          compiled(kMixed),       compiled(kTwins),
          anyJsonObjectGrammar(), compiled(R"({"type": "string"})")};
}

TEST(JsonGrammar, MaskEqualsFeedingEveryToken) {
  std::mt19937 rng(1234);
  std::vector<std::string> vocab = randomVocabulary(rng, 700, 6);
  vocab.push_back("");     // special
  vocab.push_back("</s>"); // eos
  const int64_t eos = static_cast<int64_t>(vocab.size() - 1);
  TokenTrie trie(vocab, {eos});
  std::size_t checked = 0;
  for (const auto &g : testGrammars()) {
    for (int walk = 0; walk < 12; ++walk) {
      JsonGrammarState state(g);
      for (int step = 0; step < 60; ++step) {
        std::vector<uint8_t> mask;
        trie.allowedTokens(state, mask);
        std::vector<int> allowed;
        for (std::size_t id = 0; id < vocab.size(); ++id) {
          bool expected;
          if (static_cast<int64_t>(id) == eos) {
            expected = state.complete();
          } else {
            JsonGrammarState copy = state;
            expected = !vocab[id].empty() && copy.accept(vocab[id]);
          }
          ASSERT_EQ(mask[id] != 0, expected)
              << "token " << id << " '" << vocab[id] << "' walk " << walk
              << " step " << step;
          if (expected && static_cast<int64_t>(id) != eos)
            allowed.push_back(static_cast<int>(id));
        }
        ++checked;
        if (allowed.empty())
          break;
        ASSERT_TRUE(state.accept(vocab[allowed[rng() % allowed.size()]]));
      }
    }
  }
  EXPECT_GT(checked, 2000u);
}

//===----------------------------------------------------------------------===//
// Random generations against a validator written here
//===----------------------------------------------------------------------===//

/// JSON schema's meaning of the subset, independent of the engine.
bool valid(const ojson &value, const ojson &schema, const ojson &root) {
  if (schema.is_boolean())
    return schema.get<bool>();
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    if (ref == "#")
      return valid(value, root, root);
    const std::size_t slash = ref.rfind('/');
    const std::string section = ref.substr(2, slash - 2);
    return valid(value, root[section][ref.substr(slash + 1)], root);
  }
  if (schema.contains("anyOf")) {
    for (const ojson &alt : schema["anyOf"])
      if (valid(value, alt, root))
        return true;
    return false;
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const ojson &option : schema["enum"])
      found = found || option == value;
    if (!found)
      return false;
  }
  if (schema.contains("const") && schema["const"] != value)
    return false;
  if (schema.contains("type")) {
    std::vector<std::string> types;
    if (schema["type"].is_string())
      types.push_back(schema["type"]);
    else
      for (const ojson &type : schema["type"])
        types.push_back(type);
    bool typed = false;
    for (const std::string &type : types)
      typed = typed || (type == "object" && value.is_object()) ||
              (type == "array" && value.is_array()) ||
              (type == "string" && value.is_string()) ||
              (type == "number" && value.is_number()) ||
              (type == "integer" &&
               (value.is_number_integer() ||
                (value.is_number_float() &&
                 std::floor(value.get<double>()) == value.get<double>()))) ||
              (type == "boolean" && value.is_boolean()) ||
              (type == "null" && value.is_null());
    if (!typed)
      return false;
  }
  if (value.is_object()) {
    const ojson none = ojson::object();
    const ojson &properties =
        schema.contains("properties") ? schema["properties"] : none;
    if (schema.contains("required"))
      for (const ojson &name : schema["required"])
        if (!value.contains(name.get<std::string>()))
          return false;
    for (const auto &item : value.items()) {
      if (properties.contains(item.key())) {
        if (!valid(item.value(), properties[item.key()], root))
          return false;
      } else if (schema.value("additionalProperties", true) == false) {
        return false;
      }
    }
  }
  if (value.is_array()) {
    if (value.size() < schema.value("minItems", 0u) ||
        value.size() > schema.value("maxItems", 1u << 30))
      return false;
    if (schema.contains("items"))
      for (const ojson &item : value)
        if (!valid(item, schema["items"], root))
          return false;
  }
  return true;
}

TEST(JsonGrammar, RandomGenerationsParseAndMatch) {
  std::mt19937 rng(42);
  std::vector<std::string> vocab = randomVocabulary(rng, 600, 5);
  vocab.push_back("<eos>");
  const int eos = static_cast<int>(vocab.size() - 1);
  TokenTrie trie(vocab, {eos});
  const std::vector<const char *> schemas = {
      kPerson, kTree, kMixed, kTwins, "", R"({"type": "string"})"};
  for (const char *text : schemas) {
    const bool anyObject = *text == 0;
    const ojson schema = anyObject ? ojson::object() : ojson::parse(text);
    auto g = anyObject ? anyJsonObjectGrammar() : compiled(text);
    int finished = 0;
    const int runs = 60;
    for (int run = 0; run < runs; ++run) {
      JsonGrammarState state(g);
      std::string output;
      std::vector<uint8_t> mask;
      for (int step = 0; step < 1500; ++step) {
        trie.allowedTokens(state, mask);
        std::vector<int> allowed, punctuation;
        for (int id = 0; id < static_cast<int>(vocab.size()); ++id)
          if (mask[id]) {
            allowed.push_back(id);
            if (id != eos && vocab[id].size() == 1 &&
                std::string("{}[],:\"").find(vocab[id][0]) != std::string::npos)
              punctuation.push_back(id);
          }
        ASSERT_FALSE(allowed.empty()) << output;
        // Half the time a punctuation token, so that values close; eos
        // as soon as it may come, a third of the time.
        int id;
        if (mask[eos] && rng() % 3 == 0)
          id = eos;
        else if (!punctuation.empty() && rng() % 2)
          id = punctuation[rng() % punctuation.size()];
        else
          id = allowed[rng() % allowed.size()];
        if (id == eos)
          break;
        ASSERT_TRUE(state.accept(vocab[id]));
        output += vocab[id];
      }
      if (!state.complete())
        continue; // ran out of steps
      ++finished;
      ojson value;
      ASSERT_NO_THROW(value = ojson::parse(output)) << output;
      EXPECT_TRUE(valid(value, schema, schema)) << output;
      if (anyObject) {
        EXPECT_TRUE(value.is_object()) << output;
      }
    }
    // Most runs end well within the steps.
    EXPECT_GE(finished, runs / 2) << text;
    std::printf("%d of %d runs finished: %.40s\n", finished, runs, text);
  }
}

//===----------------------------------------------------------------------===//
// States, the cache
//===----------------------------------------------------------------------===//

TEST(JsonGrammar, StatesCopyAndRollBack) {
  auto g = compiled(kMixed);
  JsonGrammarState state(g);
  ASSERT_TRUE(state.accept("{\"id\":1,\"kind\":\"a"));
  const JsonGrammarState checkpoint = state;
  EXPECT_EQ(state, checkpoint);
  // The copy goes on alone.
  JsonGrammarState copy = state;
  ASSERT_TRUE(copy.accept("b\",\"tags\":[\"t\"]}"));
  EXPECT_TRUE(copy.complete());
  EXPECT_FALSE(state.complete());
  EXPECT_EQ(state, checkpoint);
  EXPECT_NE(copy, checkpoint);
  // A refused byte or string changes nothing, even after part of it.
  EXPECT_FALSE(state.accept(uint8_t('x')));
  EXPECT_EQ(state, checkpoint);
  EXPECT_FALSE(state.accept(std::string("\",\"tags\":[1")));
  EXPECT_EQ(state, checkpoint);
  // Rolling back by assignment.
  ASSERT_TRUE(state.accept("\",\"tags\":[\"u\"]"));
  state = checkpoint;
  EXPECT_EQ(state, checkpoint);
  ASSERT_TRUE(state.accept("b\",\"tags\":[\"t\"]}"));
  EXPECT_EQ(state, copy);
  // Byte by byte and whole strings reach the same state.
  JsonGrammarState bytes(g), whole(g);
  const std::string text = "{\"id\":12,\"kind\":12,\"tags\":[\"\\u00e9\"]";
  for (char c : text)
    ASSERT_TRUE(bytes.accept(static_cast<uint8_t>(c)));
  ASSERT_TRUE(whole.accept(text));
  EXPECT_EQ(bytes, whole);
  // A different grammar's state is never equal.
  EXPECT_NE(JsonGrammarState(compiled(kMixed)), JsonGrammarState(g));
}

TEST(JsonGrammar, CacheByCanonicalText) {
  JsonSchemaCache cache(2);
  std::string error;
  auto a = cache.get(ojson::parse(R"({"type": "string"})"), error);
  auto again = cache.get(ojson::parse("{ \"type\" :\n\"string\" }"), error);
  EXPECT_EQ(a, again); // the same compact text
  auto b = cache.get(ojson::parse(R"({"type": "object", "properties":
      {"x": {}, "y": {}}})"),
                     error);
  // Another order of properties is another grammar.
  auto c = cache.get(ojson::parse(R"({"type": "object", "properties":
      {"y": {}, "x": {}}})"),
                     error);
  EXPECT_NE(b, c);
  EXPECT_TRUE(matches(b, R"({"x":1,"y":2})"));
  EXPECT_TRUE(matches(c, R"({"y":1,"x":2})"));
  EXPECT_EQ(cache.size(), 2u);
  // Capacity 2: "string" was used least recently and went.
  EXPECT_NE(cache.get(ojson::parse(R"({"type": "string"})"), error), a);
  // The whitespace option is part of the key; refusals are not kept.
  JsonGrammarOptions compact;
  compact.maxWhitespace = 0;
  EXPECT_NE(cache.get(ojson::parse(R"({"type": "string"})"), error, compact),
            cache.get(ojson::parse(R"({"type": "string"})"), error));
  EXPECT_FALSE(cache.get(ojson::parse(R"({"pattern": "x"})"), error));
  EXPECT_EQ(error, "response_format.json_schema.schema: 'pattern' is not "
                   "supported");
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.anyObject(), cache.anyObject());
  // nlohmann::json sorts keys: properties then come alphabetically.
  auto sorted = compileJsonSchema(
      nlohmann::json::parse(R"({"properties": {"y": {}, "x": {}}})"), error);
  EXPECT_TRUE(matches(sorted, R"({"x":1,"y":2})"));
}

//===----------------------------------------------------------------------===//
// Time
//===----------------------------------------------------------------------===//

TEST(JsonGrammar, MaskTimeOnFiftyThousandTokens) {
  std::mt19937 rng(7);
  std::vector<std::string> vocab;
  for (const char *token : {"{", "}", "[", "]", ",", ":", "\"", " ", "\n",
                            "\":", "\",", "{\"", "true", "false", "null"})
    vocab.push_back(token);
  // 1-8 bytes: mostly printable ASCII, some of UTF-8's upper half, a few
  // control bytes (a byte-level BPE vocabulary's mix, roughly).
  std::uniform_int_distribution<int> length(1, 8), kind(0, 99), byte(0, 255);
  while (vocab.size() < 50000) {
    std::string token;
    for (int n = length(rng); n > 0; --n) {
      const int k = kind(rng);
      token += k < 85   ? static_cast<char>(0x20 + byte(rng) % 95)
               : k < 97 ? static_cast<char>(0x80 + byte(rng) % 128)
                        : static_cast<char>(byte(rng) % 32);
    }
    vocab.push_back(token);
  }
  vocab.push_back("</s>");
  const auto begin = std::chrono::steady_clock::now();
  TokenTrie trie(vocab, {static_cast<int64_t>(vocab.size() - 1)});
  const double build = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - begin)
                           .count();
  std::printf("trie: %zu tokens, %zu nodes, built in %.1f ms\n", vocab.size(),
              trie.nodeCount(), build);

  auto person = compiled(kPerson);
  auto any = anyJsonObjectGrammar();
  struct Case {
    const char *name;
    std::shared_ptr<const JsonSchemaGrammar> grammar;
    const char *prefix;
  } cases[] = {
      {"inside a string value", person, "{\"name\":\"Ann"},
      {"inside a string (json_object)", any, "{\"k\":[\"a b"},
      // Not at a character boundary: the trie walk.
      {"a string, after a backslash", person, "{\"name\":\"A\\"},
      {"a string, inside a character", person, "{\"name\":\"\xC3"},
      {"after { (a key)", person, "{"},
      {"between keys (after ,)", person, "{\"name\":\"Ann\","},
      {"after a key's quote", person, "{\"name\":\"Ann\",\""},
      {"inside an integer", person, "{\"name\":\"Ann\",\"age\":4"},
      {"json_object, a value", any, "{\"k\":"},
  };
  std::vector<uint8_t> mask;
  for (const Case &c : cases) {
    JsonGrammarState state(c.grammar);
    ASSERT_TRUE(state.accept(c.prefix));
    std::vector<double> times;
    std::size_t allowed = 0;
    for (int run = 0; run < 21; ++run) {
      const auto start = std::chrono::steady_clock::now();
      trie.allowedTokens(state, mask);
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
      allowed = std::count(mask.begin(), mask.end(), 1);
    }
    std::sort(times.begin(), times.end());
    std::printf("mask %-32s median %.3f ms (%zu tokens allowed)\n", c.name,
                times[times.size() / 2], allowed);
  }
}

} // namespace
} // namespace tfmc::runtime::serve
