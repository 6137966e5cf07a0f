//===- Parser.cpp - Recursive-descent parser for .tfm descriptions --------===//
//
// Parses one `model NAME { ... }` and validates it. Every failure stops the
// parse and becomes the single Diagnostic of the result: the language is small
// enough that the first error is almost always the one to fix, and recovery
// would mostly produce follow-on noise.
//
// Errors are reported in source order while parsing (syntax, value types and
// ranges, duplicates); checks that need the whole model (required settings,
// d_model % heads, cross-attention without an encoder, d_ff) run afterwards.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Lexer.h"
#include "compiler/frontend/Limits.h"
#include "compiler/frontend/Settings.h"
#include "support/Text.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace tfmc::frontend {

namespace {

constexpr const char *kRequiredSettings[] = {"vocab", "d_model", "heads",
                                             "max_len"};

bool isSettingName(std::string_view name) {
  return findSetting(name) != nullptr;
}

bool isSublayerName(std::string_view name) {
  return name == "self_attention" || name == "cross_attention" ||
         name == "feed_forward";
}

std::string knownSettingsList() {
  std::string list;
  for (const Setting &setting : modelSettings()) {
    if (!list.empty())
      list += ", ";
    list += setting.name;
  }
  return list;
}

/// `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'` (or "and" for `conjunction`).
std::string alternatives(const std::vector<std::string> &choices,
                         const char *conjunction = "or") {
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0)
      text += i + 1 == choices.size() ? fmt::format(" {} ", conjunction)
                                      : std::string(", ");
    text += fmt::format("'{}'", choices[i]);
  }
  return text;
}

std::string position(const SourceLoc &loc) {
  return fmt::format("line {}, column {}", loc.line, loc.col);
}

bool before(const SourceLoc &a, const SourceLoc &b) {
  return a.line < b.line || (a.line == b.line && a.col < b.col);
}

class Parser {
public:
  Parser(std::string_view source, std::string fileName)
      : lexer(source), file(std::move(fileName)) {
    tok = lexer.next();
  }

  ParseResult run() {
    ParseResult result;
    Model model;
    if (parseFile(model) && validate(model))
      result.model = std::move(model);
    else
      result.error = std::move(diag);
    return result;
  }

private:
  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  void advance() { tok = lexer.next(); }

  void skipNewlines() {
    while (tok.is(TokenKind::Newline))
      advance();
  }

  SourceLoc locOf(const Token &token) const {
    return SourceLoc{file, token.line, token.col};
  }

  /// Reports `message` at `token`. A lexical error wins over whatever the
  /// parser expected there: "invalid UTF-8 byte 0xff" says more than
  /// "expected '=', found an invalid token".
  bool failAt(const Token &token, const std::string &message) {
    diag = Diagnostic{locOf(token),
                      token.is(TokenKind::Error) ? token.text : message};
    return false;
  }
  bool failAt(const SourceLoc &loc, const std::string &message) {
    diag = Diagnostic{loc, message};
    return false;
  }
  bool fail(const std::string &message) { return failAt(tok, message); }

  /// Items in a body are separated by a comma or a line break; the closing
  /// brace (or the end of file, reported by the caller) also ends one.
  bool expectSeparator(const std::string &after) {
    if (tok.is(TokenKind::Comma)) {
      advance();
      return true;
    }
    if (tok.is(TokenKind::Newline) || tok.is(TokenKind::RBrace) ||
        tok.is(TokenKind::EndOfFile))
      return true;
    return fail(fmt::format("expected ',', a new line or '}}' after {}, "
                            "found {}",
                            after, describe(tok)));
  }

  bool failUnterminated(const std::string &block, const Token &open) {
    return fail(fmt::format("unterminated {} block opened at {}: expected "
                            "'}}', found {}",
                            block, position(locOf(open)), describe(tok)));
  }

  //===--------------------------------------------------------------------===//
  // Model
  //===--------------------------------------------------------------------===//

  bool parseFile(Model &model) {
    skipNewlines();
    if (!tok.isIdentifier("model"))
      return fail(fmt::format("expected 'model', found {}", describe(tok)));
    model.loc = locOf(tok);
    advance();

    if (!tok.is(TokenKind::Identifier))
      return fail(fmt::format("expected a model name after 'model', found {}",
                              describe(tok)));
    model.name = tok.text;
    advance();
    skipNewlines();

    if (!tok.is(TokenKind::LBrace))
      return fail(fmt::format("expected '{{' after 'model {}', found {}",
                              support::escapeText(model.name), describe(tok)));
    Token open = tok;
    advance();

    while (true) {
      skipNewlines();
      if (tok.is(TokenKind::RBrace))
        break;
      if (tok.is(TokenKind::EndOfFile))
        return failUnterminated(fmt::format("'model {}'", support::escapeText(model.name)), open);
      if (!tok.is(TokenKind::Identifier))
        return fail(fmt::format("expected a setting, a stack or '}}', found {}",
                                describe(tok)));
      if (tok.text == "encoder" || tok.text == "decoder") {
        std::string keyword = tok.text;
        if (!parseStack(model))
          return false;
        if (!expectSeparator(fmt::format("the '{}' block", keyword)))
          return false;
        continue;
      }
      std::string name = tok.text;
      if (!parseSetting(model))
        return false;
      if (!expectSeparator(fmt::format("setting '{}'", name)))
        return false;
    }
    advance();

    // One model per file: a second one (or anything else) is more likely a
    // mistake than something to ignore.
    skipNewlines();
    if (!tok.is(TokenKind::EndOfFile))
      return fail(fmt::format("expected end of file after model '{}', found {}",
                              support::escapeText(model.name), describe(tok)));
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Settings
  //===--------------------------------------------------------------------===//

  bool parseSetting(Model &model) {
    Token nameTok = tok;
    const std::string &name = nameTok.text;
    const Setting *setting = findSetting(name);
    if (!setting) {
      if (isSublayerName(name))
        return fail(fmt::format("sublayer '{}' must be inside an 'encoder' or "
                                "'decoder' block",
                                name));
      return fail(fmt::format("unknown setting '{}'; known settings are {}",
                              support::escapeText(name), knownSettingsList()));
    }
    for (const auto &[key, loc] : model.settingLocs)
      if (key == name)
        return fail(fmt::format("duplicate setting '{}' (first set at {})",
                                name, position(loc)));
    model.settingLocs.emplace_back(name, locOf(nameTok));
    advance();

    if (!tok.is(TokenKind::Equal))
      return fail(fmt::format("expected '=' after setting '{}', found {}",
                              name, describe(tok)));
    advance();

    switch (setting->kind) {
    case Setting::Kind::PositiveInt:
      return parsePositiveInt(name, model.*setting->integer);
    case Setting::Kind::PositiveNumber:
      return parsePositiveNumber(name, model.*setting->number);
    case Setting::Kind::PositiveNumbers:
      return parsePositiveNumbers(name, model.*setting->numbers);
    case Setting::Kind::Choice:
      return parseChoice(*setting, model);
    }
    return fail(fmt::format("setting '{}' has no parser", name));
  }

  bool parsePositiveInt(const std::string &name, int64_t &out) {
    if (!tok.is(TokenKind::Integer))
      return fail(fmt::format("expected a positive integer for setting '{}', "
                              "found {}",
                              name, describe(tok)));
    if (tok.intValue <= 0)
      return fail(fmt::format("setting '{}' must be positive, found {}", name,
                              support::escapeText(tok.text)));
    if (tok.intValue > maxOfSetting(name))
      return fail(fmt::format("setting '{}' = {} is too large (maximum {})",
                              name, support::escapeText(tok.text), maxOfSetting(name)));
    out = tok.intValue;
    advance();
    return true;
  }

  bool parsePositiveNumber(const std::string &name, double &out) {
    if (!tok.is(TokenKind::Integer) && !tok.is(TokenKind::Float))
      return fail(fmt::format("expected a positive number for setting '{}', "
                              "found {}",
                              name, describe(tok)));
    if (!(tok.floatValue > 0.0))
      return fail(fmt::format("setting '{}' must be positive, found {}", name,
                              support::escapeText(tok.text)));
    // The kernels compute in f32: the value must stay positive and finite
    // there.
    float single = static_cast<float>(tok.floatValue);
    if (!std::isfinite(single) || !(single > 0.0f))
      return fail(fmt::format("setting '{}' = {} does not survive the "
                              "conversion to f32 (it becomes {}); expected a "
                              "positive number between 1.4e-45 and 3.4e38",
                              name, support::escapeText(tok.text), single));
    out = tok.floatValue;
    advance();
    return true;
  }

  /// `(n1, n2, ...)`: one or more positive numbers, each as
  /// parsePositiveNumber reads it.
  bool parsePositiveNumbers(const std::string &name, std::vector<double> &out) {
    if (!tok.is(TokenKind::LParen))
      return fail(fmt::format("expected '(' and a list of positive numbers "
                              "for setting '{}', found {}",
                              name, describe(tok)));
    advance();
    out.clear();
    while (true) {
      double value = 0;
      if (!parsePositiveNumber(name, value))
        return false;
      out.push_back(value);
      if (tok.is(TokenKind::RParen))
        break;
      if (!tok.is(TokenKind::Comma))
        return fail(fmt::format("expected ',' or ')' in the list of setting "
                                "'{}', found {}",
                                name, describe(tok)));
      advance();
    }
    advance();
    return true;
  }

  /// A value from a fixed set of spellings. A word that is not one of them
  /// is an "unknown value"; a token of the wrong kind (`norm = 3`) is a type
  /// mismatch. `embed_scale` accepts the number `1`, so for it numbers are
  /// words too.
  bool parseChoice(const Setting &setting, Model &model) {
    const std::string name = setting.name;
    const std::vector<std::string> &spellings = setting.spellings;
    bool numbersAllowed = false;
    for (const std::string &spelling : spellings)
      numbersAllowed |= spelling[0] >= '0' && spelling[0] <= '9';
    bool isWord = tok.is(TokenKind::Identifier) ||
                  (numbersAllowed && (tok.is(TokenKind::Integer) ||
                                      tok.is(TokenKind::Float)));
    if (!isWord)
      return fail(fmt::format("expected {} for setting '{}', found {}",
                              alternatives(spellings), name, describe(tok)));
    for (size_t i = 0; i < spellings.size(); ++i) {
      if (tok.text == spellings[i]) {
        setting.choose(model, i);
        advance();
        return true;
      }
    }
    return fail(fmt::format("unknown value '{}' for setting '{}'; expected {}",
                            support::escapeText(tok.text), name, alternatives(spellings)));
  }

  //===--------------------------------------------------------------------===//
  // Stacks and sublayers
  //===--------------------------------------------------------------------===//

  bool parseStack(Model &model) {
    Token keywordTok = tok;
    const std::string keyword = tok.text;
    bool isEncoder = keyword == "encoder";
    std::optional<Stack> &slot = isEncoder ? model.encoder : model.decoder;
    if (slot)
      return fail(fmt::format("duplicate '{}' block (first at {})", keyword,
                              position(slot->loc)));
    Stack stack;
    stack.kind = isEncoder ? StackKind::Encoder : StackKind::Decoder;
    stack.loc = locOf(keywordTok);
    advance();

    if (!tok.is(TokenKind::LParen))
      return fail(fmt::format("expected '(layers = N)' after '{}', found {}",
                              keyword, describe(tok)));
    advance();
    if (!tok.is(TokenKind::Identifier))
      return fail(fmt::format("expected 'layers' after '{}(', found {}",
                              keyword, describe(tok)));
    if (tok.text != "layers")
      return fail(fmt::format("unknown argument '{}' for '{}'; expected "
                              "'layers'",
                              support::escapeText(tok.text), keyword));
    advance();
    if (!tok.is(TokenKind::Equal))
      return fail(fmt::format("expected '=' after 'layers', found {}",
                              describe(tok)));
    advance();
    if (!tok.is(TokenKind::Integer))
      return fail(fmt::format("expected a positive integer for 'layers', "
                              "found {}",
                              describe(tok)));
    if (tok.intValue < 1)
      return fail(fmt::format("layers must be at least 1, found {}", support::escapeText(tok.text)));
    if (tok.intValue > kMaxLayers)
      return fail(fmt::format("layers = {} is too large (maximum {})", support::escapeText(tok.text),
                              kMaxLayers));
    stack.layers = tok.intValue;
    advance();
    if (!tok.is(TokenKind::RParen))
      return fail(fmt::format("expected ')' after 'layers = {}', found {}",
                              stack.layers, describe(tok)));
    advance();
    skipNewlines();

    if (!tok.is(TokenKind::LBrace))
      return fail(fmt::format("expected '{{' to open the '{}' block, found {}",
                              keyword, describe(tok)));
    Token open = tok;
    advance();

    while (true) {
      skipNewlines();
      if (tok.is(TokenKind::RBrace))
        break;
      if (tok.is(TokenKind::EndOfFile))
        return failUnterminated(fmt::format("'{}'", keyword), open);
      if (!tok.is(TokenKind::Identifier))
        return fail(fmt::format("expected a sublayer or '}}', found {}",
                                describe(tok)));
      std::string name = tok.text;
      if (!parseSublayer(stack, keyword))
        return false;
      if (!expectSeparator(fmt::format("sublayer '{}'", name)))
        return false;
    }
    // A stack with no sublayers would be an identity the user surely did not
    // mean; say so instead of compiling it.
    if (stack.sublayers.empty())
      return failAt(keywordTok,
                    fmt::format("'{}' block has no sublayers; expected "
                                "'self_attention', 'cross_attention' or "
                                "'feed_forward'",
                                keyword));
    advance();
    slot = std::move(stack);
    return true;
  }

  // Weight names follow nn.Transformer, which has one slot per sublayer kind
  // in a layer (self_attn, multihead_attn, linear1/linear2), so a second
  // sublayer of a kind would silently share the first one's weights.
  bool addSublayer(Stack &stack, const Sublayer &sublayer,
                   const Token &keywordTok, const std::string &stackKeyword) {
    for (const Sublayer &existing : stack.sublayers)
      if (existing.kind == sublayer.kind)
        return failAt(keywordTok,
                      fmt::format("duplicate sublayer '{}' in the '{}' block "
                                  "(first at line {}, column {}); each kind "
                                  "may appear once per layer",
                                  keywordTok.text, stackKeyword,
                                  existing.loc.line, existing.loc.col));
    stack.sublayers.push_back(sublayer);
    return true;
  }

  bool parseSublayer(Stack &stack, const std::string &stackKeyword) {
    Token keywordTok = tok;
    const std::string name = tok.text;
    Sublayer sublayer;
    sublayer.loc = locOf(keywordTok);

    if (name == "feed_forward") {
      sublayer.kind = SublayerKind::FeedForward;
      advance();
      if (tok.is(TokenKind::LParen)) {
        advance();
        if (!tok.is(TokenKind::Identifier) || tok.text != "gated")
          return fail(fmt::format("expected 'gated' in 'feed_forward(...)', "
                                  "found {}",
                                  describe(tok)));
        sublayer.gated = true;
        advance();
        if (!tok.is(TokenKind::RParen))
          return fail(fmt::format("expected ')' after 'feed_forward(gated', "
                                  "found {}",
                                  describe(tok)));
        advance();
      }
      return addSublayer(stack, sublayer, keywordTok, stackKeyword);
    }

    if (name == "self_attention" || name == "cross_attention") {
      bool isCross = name == "cross_attention";
      if (isCross && stack.kind == StackKind::Encoder)
        return fail("'cross_attention' is not allowed in an encoder; only a "
                    "decoder attends to the encoder's output");
      sublayer.kind =
          isCross ? SublayerKind::CrossAttention : SublayerKind::SelfAttention;
      advance();
      if (tok.is(TokenKind::LParen) && !parseAttentionArgs(name, sublayer.mask))
        return false;
      return addSublayer(stack, sublayer, keywordTok, stackKeyword);
    }

    if (isSettingName(name))
      return fail(fmt::format("setting '{}' belongs in the model body, not in "
                              "the '{}' block",
                              name, stackKeyword));
    return fail(fmt::format("unknown sublayer '{}'; expected "
                            "'self_attention', 'cross_attention' or "
                            "'feed_forward'",
                            support::escapeText(name)));
  }

  bool parseAttentionArgs(const std::string &sublayer, MaskSpec &mask) {
    advance(); // '('
    if (!tok.is(TokenKind::Identifier))
      return fail(fmt::format("expected 'mask' after '{}(', found {}",
                              sublayer, describe(tok)));
    if (tok.text != "mask")
      return fail(fmt::format("unknown argument '{}' for '{}'; expected "
                              "'mask'",
                              support::escapeText(tok.text), sublayer));
    advance();
    if (!tok.is(TokenKind::Equal))
      return fail(
          fmt::format("expected '=' after 'mask', found {}", describe(tok)));
    advance();

    std::vector<std::string> seen;
    while (true) {
      std::string term;
      if (!parseMaskTerm(mask, seen, term))
        return false;
      if (tok.is(TokenKind::Plus)) {
        advance();
        continue;
      }
      if (tok.is(TokenKind::RParen)) {
        advance();
        return true;
      }
      return fail(fmt::format("expected '+' or ')' after mask term '{}', "
                              "found {}",
                              term, describe(tok)));
    }
  }

  bool parseMaskTerm(MaskSpec &mask, std::vector<std::string> &seen,
                     std::string &term) {
    static const char *const kTerms =
        "'none', 'causal', 'padding' or 'window(N)'";
    if (!tok.is(TokenKind::Identifier))
      return fail(fmt::format("expected a mask term ({}), found {}", kTerms,
                              describe(tok)));
    term = tok.text;
    if (term != "none" && term != "causal" && term != "padding" &&
        term != "window")
      return fail(fmt::format("unknown mask kind '{}'; expected {}",
                              support::escapeText(term),
                              kTerms));
    if (std::find(seen.begin(), seen.end(), term) != seen.end())
      return fail(fmt::format("duplicate mask term '{}'", term));
    bool hadNone = std::find(seen.begin(), seen.end(), "none") != seen.end();
    if ((term == "none" && !seen.empty()) || hadNone)
      return fail("'none' cannot be combined with other mask terms");
    seen.push_back(term);
    advance();

    if (term == "causal") {
      mask.causal = true;
    } else if (term == "padding") {
      mask.padding = true;
    } else if (term == "window") {
      if (!tok.is(TokenKind::LParen))
        return fail(fmt::format("expected '(' after 'window', found {}",
                                describe(tok)));
      advance();
      if (!tok.is(TokenKind::Integer))
        return fail(fmt::format("expected a positive window size in "
                                "'window(N)', found {}",
                                describe(tok)));
      if (tok.intValue < 1)
        return fail(fmt::format("window size must be at least 1, found {}",
                                support::escapeText(tok.text)));
      if (tok.intValue > maxOfSetting("window"))
        return fail(fmt::format("window size {} is too large (maximum {})",
                                support::escapeText(tok.text), maxOfSetting("window")));
      mask.window = tok.intValue;
      advance();
      // `window(N, full_every = K)`: every K-th layer attends fully.
      if (tok.is(TokenKind::Comma)) {
        advance();
        if (!tok.is(TokenKind::Identifier) || tok.text != "full_every")
          return fail(fmt::format("expected 'full_every' after 'window({},', "
                                  "found {}",
                                  mask.window, describe(tok)));
        advance();
        if (!tok.is(TokenKind::Equal))
          return fail(fmt::format("expected '=' after 'full_every', found {}",
                                  describe(tok)));
        advance();
        if (!tok.is(TokenKind::Integer))
          return fail(fmt::format("expected a layer count in 'full_every = "
                                  "K', found {}",
                                  describe(tok)));
        if (tok.intValue < 2 || tok.intValue > maxOfSetting("layers"))
          return fail(fmt::format(
              "full_every must be from 2 (every other layer without the "
              "window) to {}, found {}",
              maxOfSetting("layers"), support::escapeText(tok.text)));
        mask.fullEvery = tok.intValue;
        advance();
      }
      if (!tok.is(TokenKind::RParen))
        return fail(fmt::format(
            "expected ')' after 'window({}{}', found {}", mask.window,
            mask.fullEvery ? fmt::format(", full_every = {}", mask.fullEvery)
                           : std::string(),
            describe(tok)));
      advance();
      term = fmt::format("window({})", mask.window);
    }
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Whole-model checks
  //===--------------------------------------------------------------------===//

  bool validate(Model &model) {
    std::vector<std::string> missing;
    for (const char *name : kRequiredSettings)
      if (!model.given(name))
        missing.emplace_back(name);
    if (!missing.empty())
      return failAt(model.loc,
                    fmt::format("missing required setting{} {} in model '{}'",
                                missing.size() > 1 ? "s" : "",
                                alternatives(missing, "and"), support::escapeText(model.name)));

    // head_dim, when written, sets the heads' width; otherwise the heads
    // share d_model.
    bool headDimGiven = model.headDim != 0;
    if (!headDimGiven && model.dModel % model.heads != 0)
      return failAt(model.locOf("heads"),
                    fmt::format("d_model = {} is not divisible by heads = {}",
                                model.dModel, model.heads));
    if (!headDimGiven)
      model.headDim = model.dModel / model.heads;
    if (model.kvHeads == 0)
      model.kvHeads = model.heads;
    if (model.heads % model.kvHeads != 0)
      return failAt(model.locOf("kv_heads"),
                    fmt::format("heads = {} is not a multiple of kv_heads = "
                                "{}: each K/V head serves heads / kv_heads "
                                "query heads",
                                model.heads, model.kvHeads));
    // BERT's embedding pieces: an encoder-only model's.
    for (const char *setting : {"token_types", "embed_norm", "pooler"}) {
      if (model.given(setting) && (!model.encoder || model.decoder))
        return failAt(model.locOf(setting),
                      fmt::format("{} is for encoder-only models (BERT's{}): "
                                  "model '{}' has a decoder",
                                  setting,
                                  std::string_view(setting) == "pooler"
                                      ? ""
                                      : " embeddings",
                                  support::escapeText(model.name)));
    }
    if (model.outputBias && model.output != OutputKind::Tied)
      return failAt(model.locOf("output_bias"),
                    "output_bias is a bias on tied logits (Marian's "
                    "final_logits_bias): it needs output = tied (output = "
                    "linear has its own bias)");
    if (model.pooler && model.output != OutputKind::None)
      return failAt(model.locOf("pooler"),
                    "pooler needs output = none: the model's outputs are then "
                    "last_hidden_state and pooler_output, as BERT's");
    if (model.positions == PositionKind::Rope && model.headDim % 2 != 0)
      return failAt(model.locOf("positions"),
                    fmt::format("rope rotates pairs of features, but the "
                                "head width {} is odd",
                                model.headDim));
    if (model.ropeScaling != RopeScaling::None &&
        model.positions != PositionKind::Rope)
      return failAt(model.locOf("rope_scaling"),
                    "rope_scaling scales rope's frequencies: it needs "
                    "positions = rope");
    // Each scaling's own settings, and the scalings that take them.
    const std::pair<const char *, std::vector<RopeScaling>> takenBy[] = {
        {"rope_factor", {RopeScaling::Linear, RopeScaling::Llama3}},
        {"rope_low_freq_factor", {RopeScaling::Llama3}},
        {"rope_high_freq_factor", {RopeScaling::Llama3}},
        {"rope_original_max_len", {RopeScaling::Llama3, RopeScaling::LongRope}},
        {"rope_short_factors", {RopeScaling::LongRope}},
        {"rope_long_factors", {RopeScaling::LongRope}},
        {"rope_attention_factor", {RopeScaling::LongRope}}};
    for (const auto &[name, scalings] : takenBy)
      if (model.given(name) &&
          std::find(scalings.begin(), scalings.end(), model.ropeScaling) ==
              scalings.end())
        return failAt(model.locOf(name),
                      fmt::format("{} needs rope_scaling = {}", name,
                                  scalings.size() == 1
                                      ? toString(scalings[0])
                                      : fmt::format("{} or {}",
                                                    toString(scalings[0]),
                                                    toString(scalings[1]))));
    if (model.ropeScaling == RopeScaling::LongRope) {
      for (const char *name : {"rope_original_max_len", "rope_short_factors",
                               "rope_long_factors"})
        if (!model.given(name))
          return failAt(model.locOf("rope_scaling"),
                        fmt::format("rope_scaling = longrope needs {}", name));
      for (const char *name : {"rope_short_factors", "rope_long_factors"}) {
        const std::vector<double> &factors =
            std::string_view(name) == "rope_short_factors"
                ? model.ropeShortFactors
                : model.ropeLongFactors;
        if (int64_t(factors.size()) * 2 != model.headDim)
          return failAt(model.locOf(name),
                        fmt::format("{} has {} factors; a head of {} features "
                                    "turns {} pairs, one factor each",
                                    name, factors.size(), model.headDim,
                                    model.headDim / 2));
      }
    }
    if (model.ropeScaling == RopeScaling::Llama3) {
      if (!model.given("rope_original_max_len"))
        return failAt(model.locOf("rope_scaling"),
                      "rope_scaling = llama3 needs rope_original_max_len (the "
                      "context the model was trained at)");
      if (model.ropeHighFreqFactor <= model.ropeLowFreqFactor)
        return failAt(model.locOf("rope_high_freq_factor"),
                      fmt::format("rope_high_freq_factor {:g} must be larger "
                                  "than rope_low_freq_factor {:g}",
                                  model.ropeHighFreqFactor,
                                  model.ropeLowFreqFactor));
    }
    if (model.normGainOffset && model.normType != NormType::RmsNorm)
      return failAt(model.locOf("norm_gain"),
                    "norm_gain = one_plus_weight needs norm_type = rms_norm");
    if (model.given("final_logit_softcap") && model.output == OutputKind::None)
      return failAt(model.locOf("final_logit_softcap"),
                    "final_logit_softcap caps the logits: it needs output = "
                    "linear or tied");
    // attention_bias defaults to bias.
    if (!model.given("attention_bias"))
      model.attentionBias = model.bias;

    if (std::optional<LimitProblem> problem = checkWeightSizes(model))
      return failAt(model.locOf(problem->setting), problem->message);

    if (!model.encoder && !model.decoder)
      return failAt(model.loc,
                    fmt::format("model '{}' has no 'encoder' or 'decoder' "
                                "block; a model needs at least one",
                                support::escapeText(model.name)));

    if (model.decoder && !model.encoder)
      for (const Sublayer &sublayer : model.decoder->sublayers)
        if (sublayer.kind == SublayerKind::CrossAttention)
          return failAt(sublayer.loc,
                        fmt::format("'cross_attention' needs an encoder, but "
                                    "model '{}' has no 'encoder' block",
                                    support::escapeText(model.name)));

    if (model.dFF == 0) {
      const Sublayer *first = nullptr;
      for (const auto *stack : {&model.encoder, &model.decoder}) {
        if (!*stack)
          continue;
        for (const Sublayer &sublayer : (*stack)->sublayers)
          if (sublayer.kind == SublayerKind::FeedForward &&
              (!first || before(sublayer.loc, first->loc)))
            first = &sublayer;
      }
      if (first)
        return failAt(first->loc, "missing setting 'd_ff', which "
                                  "'feed_forward' needs");
    }
    return true;
  }

  Lexer lexer;
  std::string file;
  Token tok;
  std::optional<Diagnostic> diag;
};

} // namespace

ParseResult parseModel(const std::string &source, const std::string &fileName) {
  return Parser(source, fileName).run();
}

} // namespace tfmc::frontend
