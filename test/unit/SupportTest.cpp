//===- SupportTest.cpp - Tests of support/ --------------------------------===//
//
// The one depth-bounded JSON reader (support/Json.h) against hand-derived
// depths, places and messages.
//
//===----------------------------------------------------------------------===//

#include "support/Json.h"

#include <gtest/gtest.h>

#include <string>

using tfmc::support::JsonError;
using tfmc::support::kMaxJsonDepth;
using tfmc::support::parseJson;

namespace {

std::string nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']');
}

TEST(SupportJson, ParsesValues) {
  JsonError error;
  auto value = parseJson(R"({"a": [1, 2.5, "x"], "b": {"c": null}})", error);
  ASSERT_TRUE(value) << error.reason;
  EXPECT_EQ((*value)["a"][1].get<double>(), 2.5);
  EXPECT_TRUE((*value)["b"]["c"].is_null());
}

TEST(SupportJson, NestingIsBoundedWhileParsing) {
  JsonError error;
  // The root is depth 1: kMaxJsonDepth containers parse, one more does not.
  EXPECT_TRUE(parseJson(nested(kMaxJsonDepth), error)) << error.reason;
  EXPECT_FALSE(parseJson(nested(kMaxJsonDepth + 1), error));
  EXPECT_EQ(error.message("f.json"),
            "f.json: invalid JSON: nested deeper than 64 levels");
  // Far deeper input stops at the bound, not at the stack's end.
  EXPECT_FALSE(parseJson(std::string(1000000, '['), error));
  EXPECT_EQ(error.reason, "nested deeper than 64 levels");
  // A caller's own bound, objects counting as arrays do.
  EXPECT_TRUE(parseJson(R"({"a": {"b": 1}})", error, 2)) << error.reason;
  EXPECT_FALSE(parseJson(R"({"a": {"b": [1]}})", error, 2));
  EXPECT_EQ(error.describe(), "invalid JSON: nested deeper than 2 levels");
}

TEST(SupportJson, KeysAreUniqueInEveryObject) {
  JsonError error;
  EXPECT_FALSE(parseJson(R"({"a": 1, "b": 2, "a": 3})", error));
  EXPECT_EQ(error.reason, "duplicate key \"a\"");
  EXPECT_EQ(error.duplicateKey, "a");
  EXPECT_EQ(error.duplicateParent, "");
  EXPECT_EQ(error.line, 0u);

  EXPECT_FALSE(parseJson(R"({"w": {"t": 1, "u": 2, "t": 3}})", error));
  EXPECT_EQ(error.reason, "duplicate key \"t\" in \"w\"");
  EXPECT_EQ(error.duplicateParent, "w");

  // The same key in different objects is fine, at any depth.
  EXPECT_TRUE(parseJson(R"({"x": {"a": 1}, "y": {"a": 2}, "a": 0})", error))
      << error.reason;
  EXPECT_TRUE(parseJson(R"([{"a": 1}, {"a": 2}])", error)) << error.reason;
  // In an array's object, the parent is the key that holds the array.
  EXPECT_FALSE(parseJson(R"({"list": [{"a": 1}, {"a": 1, "a": 2}]})", error));
  EXPECT_EQ(error.reason, "duplicate key \"a\" in \"list\"");
  // A key that ends one object does not leak into the next one's parent.
  EXPECT_FALSE(parseJson(R"({"p": {"q": 1}, "r": [{"s": 1, "s": 2}]})", error));
  EXPECT_EQ(error.duplicateParent, "r");
}

TEST(SupportJson, SyntaxErrorsNameTheirPlace) {
  JsonError error;
  // Line 2 is `  "a": ,`: parsing stops at the comma, column 8.
  EXPECT_FALSE(parseJson("{\n  \"a\": ,\n}", error));
  EXPECT_EQ(error.line, 2u);
  EXPECT_EQ(error.column, 8u);
  EXPECT_EQ(error.message("c.json"),
            "c.json:2:8: invalid JSON: syntax error while parsing value - "
            "unexpected ','; expected '[', '{', or a literal");
  EXPECT_EQ(error.describe(),
            "invalid JSON at line 2, column 8: syntax error while parsing "
            "value - unexpected ','; expected '[', '{', or a literal");
  // Empty input: line 1, column 1.
  EXPECT_FALSE(parseJson("", error));
  EXPECT_EQ(error.line, 1u);
  EXPECT_EQ(error.column, 1u);
  // Trailing text after the value.
  EXPECT_FALSE(parseJson("{} x", error));
  EXPECT_EQ(error.line, 1u);
  EXPECT_EQ(error.column, 4u);
}

} // namespace
