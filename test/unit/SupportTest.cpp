//===- SupportTest.cpp - Tests of support/ --------------------------------===//
//
// The one depth-bounded JSON reader (support/Json.h) against hand-derived
// depths, places and messages; the one quoting of untrusted text in
// messages (support/Text.h).
//
//===----------------------------------------------------------------------===//

#include "support/Json.h"
#include "support/Text.h"
#include "support/Utf8.h"

#include <gtest/gtest.h>

#include <string>

using tfmc::support::JsonError;
using tfmc::support::kMaxJsonDepth;
using tfmc::support::parseJson;
using namespace tfmc::support;

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

TEST(SupportText, EscapesControlsAndBytesThatAreNotUtf8) {
  EXPECT_EQ(quote("a\nb\tc\x01"), "'a\\nb\\tc\\x01'");
  // "é" and "😀" stay; a lone continuation byte, a truncated sequence, an
  // overlong "/" and a surrogate are escaped byte by byte.
  EXPECT_EQ(escapeText("\xc3\xa9\xf0\x9f\x98\x80"), "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(escapeText("\x80x\xe2\x82"), "\\x80x\\xe2\\x82");
  EXPECT_EQ(escapeText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(escapeText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_TRUE(isValidUtf8(escapeText("\xff\xfe name \xc3")));
  EXPECT_FALSE(isValidUtf8("\xff"));
  // C1 controls (U+0085 NEL) and the line and paragraph separators end a
  // line in some terminals: escaped by code point.
  EXPECT_EQ(escapeText("a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xa9"),
            "a\\u0085b\\u2028c\\u2029");
  // A backslash is doubled, so "\n" in a message is always an escape.
  EXPECT_EQ(quote("C:\\n"), "'C:\\\\n'");
  // Tokens as JSON writes them: the double quote escaped too.
  EXPECT_EQ(quoteJson("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
}

TEST(SupportText, LongValuesAndLinesAreCut) {
  std::string token(1'000'000, 'x');
  EXPECT_EQ(quote(token), "'" + std::string(kMaxQuotedChars, 'x') + "...'");
  // Characters, not bytes, and never inside a UTF-8 sequence: 63 ASCII
  // characters, then "é" (2 bytes) is the 64th.
  std::string text = std::string(63, 'a') + "\xc3\xa9" + "tail";
  EXPECT_EQ(escapeText(text), std::string(63, 'a') + "\xc3\xa9...");
  EXPECT_EQ(escapeText(std::string(64, 'a')), std::string(64, 'a'));
  // A line: breaks become spaces, tabs and the message's own escapes stay,
  // and it is cut after kMaxMessageBytes bytes.
  EXPECT_EQ(oneLine("a\nb\r\tc 'x\\ny'"), "a b \tc 'x\\ny'");
  std::string line = oneLine("error:\n" + token);
  EXPECT_EQ(line.size(), kMaxMessageBytes + 3);
  EXPECT_EQ(line.rfind("error: xxx", 0), 0u);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(SupportText, EscapesWhatWouldBreakTheLineAsTheFrontendQuotes) {
  EXPECT_EQ(quote("plain"), "'plain'");
  EXPECT_EQ(escapeText("a\nb\tc\x1b\x7f"), "a\\nb\\tc\\x1b\\x7f");
  EXPECT_EQ(escapeText("back\\slash"), "back\\\\slash");
  // Valid UTF-8 stays; a stray byte, a C1 control (U+0085) and the line
  // separator (U+2028) do not.
  EXPECT_EQ(escapeText("caf\xc3\xa9 \xff \xc2\x85 \xe2\x80\xa8"),
            "caf\xc3\xa9 \\xff \\u0085 \\u2028");
  // A truncated sequence is escaped byte by byte.
  EXPECT_EQ(escapeText("\xe2\x82"), "\\xe2\\x82");
}

TEST(SupportText, CutsAfterMaxCharacters) {
  EXPECT_EQ(escapeText(std::string(64, 'a')), std::string(64, 'a'));
  EXPECT_EQ(escapeText(std::string(65, 'a')), std::string(64, 'a') + "...");
  EXPECT_EQ(escapeText(std::string(1000000, 'a')).size(), 67u);
  // Characters, not bytes: the cut never splits a UTF-8 sequence.
  std::string euros;
  for (int i = 0; i < 5; ++i)
    euros += "\xe2\x82\xac";
  EXPECT_EQ(escapeText(euros, 2), "\xe2\x82\xac\xe2\x82\xac...");
  EXPECT_EQ(quote("abcdef", 3), "'abc...'");
}

} // namespace
