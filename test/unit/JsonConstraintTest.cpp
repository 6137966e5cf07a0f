// JsonConstraint.h: the schema compiler, the byte matcher and the token
// masks, against hand-derived cases and brute force.

#include "runtime/serve/JsonConstraint.h"

#include <gtest/gtest.h>

#include <random>

using namespace tfmc::runtime::serve;
using ordered = nlohmann::ordered_json;

namespace {

std::shared_ptr<const JsonGrammar> compile(const std::string &schema) {
  std::string error;
  auto grammar = JsonGrammar::compile(ordered::parse(schema), "s", error);
  EXPECT_TRUE(grammar) << error;
  return grammar;
}

/// Whether the grammar takes `text` whole and ends a value there.
bool matches(const std::shared_ptr<const JsonGrammar> &grammar,
             const std::string &text) {
  JsonMatcher m(grammar);
  return m.accept(text) && m.complete();
}

/// Whether it takes `text` as a beginning.
bool takes(const std::shared_ptr<const JsonGrammar> &grammar,
           const std::string &text) {
  JsonMatcher m(grammar);
  return m.accept(text);
}

const char *kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    "ok": {"type": ["boolean", "null"]}
  },
  "required": ["name", "age"],
  "additionalProperties": false
})";

} // namespace

TEST(JsonConstraint, ObjectsInTheSchemasOrder) {
  auto g = compile(kPerson);
  EXPECT_TRUE(matches(g, R"({"name": "x", "age": 3})"));
  EXPECT_TRUE(matches(g, R"({"name":"x","age":-12,"tags":["a","b"],"ok":null})"));
  EXPECT_TRUE(matches(g, R"({"name":"x","age":0,"ok":true})"));
  EXPECT_TRUE(matches(g, "{\n  \"name\": \"\\u00e9\\n\",\n  \"age\": 1\n}"));
  // A required property missing, out of order, unknown, or a wrong type.
  EXPECT_FALSE(takes(g, R"({"age")"));
  EXPECT_FALSE(takes(g, R"({"name":"x"})"));
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1,"extra")"));
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1.5)"));
  EXPECT_FALSE(takes(g, R"({"name":"x","age":01)"));
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1,"ok":"yes")"));
  // Arrays: enum items, at most 2, no trailing comma.
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1,"tags":["c")"));
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1,"tags":["a","b",)"));
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1,"tags":["a",])"));
  // Strings: no raw control bytes, only JSON's escapes.
  EXPECT_FALSE(takes(g, "{\"name\":\"a\nb"));
  EXPECT_FALSE(takes(g, R"({"name":"\x)"));
  EXPECT_FALSE(takes(g, R"({"name":"\u12g)"));
  EXPECT_FALSE(takes(g, R"({"name":"\udc68)"));
  EXPECT_FALSE(takes(g, R"({"name":"\uD83D)"));
  EXPECT_TRUE(takes(g, R"({"name":"\ud7ff\u00e9)"));
  // Nothing after the value.
  EXPECT_FALSE(takes(g, R"({"name":"x","age":1} )"));
  EXPECT_FALSE(matches(g, R"({"name":"x","age":1)"));
}

TEST(JsonConstraint, NumbersAndTopLevelScalars) {
  auto number = compile(R"({"type": "number"})");
  for (const char *ok : {"0", "-0", "12", "1.5", "-0.25e+10", "3E2"})
    EXPECT_TRUE(matches(number, ok)) << ok;
  for (const char *bad : {"01", "1.", "-", ".5", "1e", "+1", "7e6395"})
    EXPECT_FALSE(matches(number, bad)) << bad;
  auto integer = compile(R"({"type": "integer"})");
  EXPECT_TRUE(matches(integer, "-42"));
  EXPECT_FALSE(takes(integer, "4.2"));
  EXPECT_FALSE(takes(integer, "4e2"));
  auto constant = compile(R"({"const": {"k": [1, "x"]}})");
  EXPECT_TRUE(matches(constant, R"({"k":[1,"x"]})"));
  EXPECT_FALSE(takes(constant, R"({"k": )"));
}

TEST(JsonConstraint, RecursiveReferencesAndAnyOf) {
  auto tree = compile(R"({
    "$defs": {"node": {"type": "object", "properties": {
      "v": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v", "kids"]}},
    "$ref": "#/$defs/node"})");
  EXPECT_TRUE(matches(tree, R"({"v":1,"kids":[{"v":"a","kids":[]},{"v":2,"kids":[{"v":3,"kids":[]}]}]})"));
  EXPECT_FALSE(takes(tree, R"({"v":1,"kids":[{"v":true)"));
  EXPECT_FALSE(takes(tree, R"({"v":1,"kids":[{"kids")"));
}

TEST(JsonConstraint, AnyObjectAndWhitespaceRuns) {
  auto any = JsonGrammar::anyObject();
  EXPECT_TRUE(matches(any, R"({"a": [1, {"b": null}, "c", true, -2.5e3], "d": {}})"));
  EXPECT_TRUE(matches(any, "{}"));
  EXPECT_FALSE(takes(any, "["));
  EXPECT_FALSE(takes(any, "\"x\""));
  EXPECT_FALSE(takes(any, R"({"a":1,})"));
  // At most 16 whitespace bytes in a row.
  EXPECT_TRUE(takes(any, "{" + std::string(16, ' ') + "}"));
  EXPECT_FALSE(takes(any, "{" + std::string(17, ' ')));
  EXPECT_FALSE(takes(any, std::string(17, '\n')));
}

TEST(JsonConstraint, UnsupportedKeywordsAreNamedWithTheirPlace) {
  const std::pair<const char *, const char *> cases[] = {
      {R"({"type":"object","properties":{"age":{"type":"integer","minimum":0}}})",
       "s/properties/age: 'minimum' is not supported"},
      {R"({"type":"string","pattern":"a+"})",
       "s: 'pattern' is not supported"},
      {R"({"oneOf":[{"type":"string"}]})", "s: 'oneOf' is not supported"},
      {R"({"type":"array","items":{"type":"string","format":"date"}})",
       "s/items: 'format' is not supported"},
      {R"({"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"}})",
       "s/additionalProperties: only true or false is supported"},
      {R"({"$ref":"#/$defs/missing"})",
       "s/$ref: \"#/$defs/missing\" is not a definition of this schema "
       "(only #/$defs/NAME and #/definitions/NAME are)"},
      {R"({"type":"object","properties":{"a":{}},"required":["b"]})",
       "s/required: \"b\" is not a property"},
      {R"({"type":"date"})", "s/type: unknown type \"date\""},
  };
  for (const auto &[schema, message] : cases) {
    std::string error;
    EXPECT_FALSE(JsonGrammar::compile(ordered::parse(schema), "s", error));
    EXPECT_EQ(error, message);
  }
}

TEST(JsonConstraint, MaskOfAHandMadeVocabulary) {
  // Ids: 0 "{", 1 "\"", 2 "name", 3 "\":", 4 " \"", 5 "x\"", 6 "}",
  // 7 "\"name\":", 8 "1", 9 ",", 10 " ", 11 "<eos>" (eos), 12 "ab\"c".
  std::vector<std::string> bytes = {"{",  "\"", "name", "\":", " \"", "x\"",
                                    "}",  "\"name\":", "1", ",", " ", "",
                                    "ab\"c"};
  auto index = std::make_shared<TokenIndex>(bytes, std::vector<int64_t>{11});
  auto g = compile(R"({"type":"object","properties":{"name":{"type":"string"}},
                       "required":["name"]})");
  JsonConstraint c(g, index);
  std::vector<uint8_t> mask;
  auto allowedIds = [&] {
    c.allowed(mask);
    std::vector<int> ids;
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (mask[i])
        ids.push_back(static_cast<int>(i));
    return ids;
  };
  EXPECT_EQ(allowedIds(), (std::vector<int>{0, 10}));        // { or a space
  c.accept(0);
  EXPECT_EQ(allowedIds(), (std::vector<int>{1, 4, 7, 10}));  // a key starts
  c.accept(7);                                               // "name":
  // The value: a string opens ("\":" opens one holding ":").
  EXPECT_EQ(allowedIds(), (std::vector<int>{1, 3, 4, 10}));
  c.accept(4);                                               //  "
  // Inside the string: plain tokens, and those that close it where ,
  // or } may follow (" closes, " \"" is a space then the close); not
  // "\":", "\"name\":", "ab\"c".
  EXPECT_EQ(allowedIds(), (std::vector<int>{0, 1, 2, 4, 5, 6, 8, 9, 10}));
  c.accept(5);                                               // x"
  EXPECT_EQ(allowedIds(), (std::vector<int>{6, 10}));        // } (no more keys)
  c.accept(6);
  EXPECT_EQ(allowedIds(), (std::vector<int>{11}));           // eos only
}

TEST(JsonConstraint, RandomWalksGiveValidJsonAndMasksEqualBruteForce) {
  std::mt19937 random(11);
  // A vocabulary: JSON punctuation and fragments, and random pieces.
  std::vector<std::string> bytes = {
      "{", "}", "[", "]", ",", ":", "\"", " ", "\n", "  ", "{\"", "\":",
      "\",", "\"}", "true", "false", "null", "0", "1", "-", ".", "e", "5",
      "12", "\\", "\\n", "\\u00", "e9", "\"name\"", "\"age\":", "\"tags\":[",
      "\"a\"", "\"b\"", "]}", "\"ok\":", "nul", "l", "tr", "ue"};
  // Every printable byte is a token too, as in byte-level vocabularies:
  // whatever the grammar allows can be written.
  for (char c = ' '; c <= '~'; ++c)
    bytes.push_back(std::string(1, c));
  const std::string alphabet = "abxyz \"{}[],:0123456789.-e\\nlu";
  for (int i = 0; i < 200; ++i) {
    std::string piece;
    for (int n = 1 + random() % 4; n > 0; --n)
      piece += alphabet[random() % alphabet.size()];
    bytes.push_back(piece);
  }
  const int64_t eos = static_cast<int64_t>(bytes.size());
  bytes.push_back("");
  auto index = std::make_shared<TokenIndex>(bytes, std::vector<int64_t>{eos});
  auto g = compile(kPerson);
  int finished = 0;
  for (int walk = 0; walk < 300; ++walk) {
    JsonConstraint c(g, index);
    JsonMatcher shadow(g);
    std::string text;
    std::vector<uint8_t> mask;
    bool ended = false;
    for (int step = 0; step < 200 && !ended; ++step) {
      c.allowed(mask);
      // Brute force: every token fed to a copy of the state.
      for (std::size_t id = 0; id < bytes.size(); ++id) {
        bool ok;
        if (static_cast<int64_t>(id) == eos) {
          ok = shadow.complete();
        } else {
          JsonMatcher copy = shadow;
          ok = !bytes[id].empty() && copy.accept(bytes[id]);
        }
        ASSERT_EQ(mask[id], ok ? 1 : 0)
            << "token " << id << " '" << bytes[id] << "' after '" << text << "'";
      }
      std::vector<int64_t> ids;
      for (std::size_t id = 0; id < mask.size(); ++id)
        if (mask[id])
          ids.push_back(static_cast<int64_t>(id));
      ASSERT_FALSE(ids.empty()) << "nothing allowed after '" << text << "'";
      // Prefer eos half the time once allowed, so that walks end.
      int64_t token = ids[random() % ids.size()];
      if (mask[eos] && random() % 2)
        token = eos;
      c.accept(token);
      if (token == eos) {
        ended = true;
      } else {
        ASSERT_TRUE(shadow.accept(bytes[token]));
        text += bytes[token];
      }
    }
    if (!ended)
      continue;
    ++finished;
    ordered value = ordered::parse(text);
    ASSERT_TRUE(value.is_object()) << text;
    ASSERT_TRUE(value["name"].is_string()) << text;
    ASSERT_TRUE(value["age"].is_number_integer()) << text;
    for (const auto &[key, v] : value.items())
      ASSERT_TRUE(key == "name" || key == "age" || key == "tags" || key == "ok")
          << text;
    if (value.contains("tags")) {
      ASSERT_LE(value["tags"].size(), 2u) << text;
      for (const ordered &tag : value["tags"])
        ASSERT_TRUE(tag == "a" || tag == "b") << text;
    }
    if (value.contains("ok"))
      ASSERT_TRUE(value["ok"].is_boolean() || value["ok"].is_null()) << text;
  }
  EXPECT_GT(finished, 50);
}

TEST(JsonConstraint, FramedBetweenTwoTexts) {
  auto inner = compile(R"({"type":"object","properties":{"n":{"type":"integer"}},
                           "required":["n"]})");
  auto g = JsonGrammar::framed(*inner, "<tool_call>", "</tool_call>");
  EXPECT_TRUE(matches(g, "<tool_call>\n{\"n\": 12}\n</tool_call>"));
  EXPECT_TRUE(matches(g, "<tool_call>{\"n\":1}</tool_call>"));
  EXPECT_FALSE(matches(g, "<tool_call>{\"n\":1}"));
  EXPECT_FALSE(takes(g, "{\"n\""));
  EXPECT_FALSE(takes(g, "<tool_call>{\"n\":1}</tool_call>x"));
  auto bare = JsonGrammar::framed(*inner, "[TOOL_CALLS]", "");
  EXPECT_TRUE(matches(bare, "[TOOL_CALLS] {\"n\": -3}"));
}
