//===- FrontendParserTest.cpp - Tests of the .tfm lexer and parser --------===//

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Lexer.h"
#include "compiler/frontend/ModelFile.h"
#include "compiler/frontend/Settings.h"
#include "support/Text.h"
#include "support/FileIO.h"
#include "support/Utf8.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

using namespace tfmc::frontend;

namespace {

// docs/language.md's example description.
const char *const kTransformerBase = R"(# The original encoder-decoder Transformer.
model transformer_tiny {
  vocab = 1000              # one vocabulary for source and target
  d_model = 64
  heads = 4
  d_ff = 256
  max_len = 128
  norm = post               # post: x = LN(x + sublayer(x)); pre: x = x + sublayer(LN(x))
  activation = relu         # relu | gelu | gelu_tanh
  positions = sinusoidal    # sinusoidal | learned
  embed_scale = sqrt_d_model  # sqrt_d_model | 1
  layer_norm_eps = 1e-5
  final_norm = true         # a LayerNorm after the last layer of each stack

  encoder(layers = 2) {
    self_attention(mask = padding)
    feed_forward
  }
  decoder(layers = 2) {
    self_attention(mask = causal + padding)
    cross_attention(mask = padding)
    feed_forward
  }
  output = linear           # linear | tied | none
}
)";

// The smallest valid model; tests add one line to it.
std::string minimal(const std::string &extra = "") {
  return "model m {\n"
         "  vocab = 10\n"
         "  d_model = 8\n"
         "  heads = 2\n"
         "  max_len = 16\n" +
         extra +
         "  decoder(layers = 1) {\n"
         "    self_attention(mask = causal)\n"
         "  }\n"
         "}\n";
}

/// `source` with the first `from` replaced by `to`.
std::string replaced(std::string source, const std::string &from,
                     const std::string &to) {
  size_t at = source.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? source
                                 : source.replace(at, from.size(), to);
}

Model parseOk(const std::string &source) {
  ParseResult result = parseModel(source, "test.tfm");
  EXPECT_TRUE(result) << (result.error ? result.error->str() : "");
  EXPECT_FALSE(result.error);
  return result.model ? *result.model : Model();
}

Diagnostic parseError(const std::string &source) {
  ParseResult result = parseModel(source, "test.tfm");
  EXPECT_FALSE(result) << "parsed, but expected an error";
  EXPECT_TRUE(result.error);
  return result.error ? *result.error : Diagnostic();
}

// Checks the first error's position and that its message contains `message`.
#define EXPECT_PARSE_ERROR(source_, line_, col_, substring_)                       \
  do {                                                                         \
    Diagnostic diag = parseError(source_);                                      \
    EXPECT_EQ(diag.loc.file, "test.tfm");                                      \
    EXPECT_EQ(diag.loc.line, static_cast<unsigned>(line_)) << diag.str();     \
    EXPECT_EQ(diag.loc.col, static_cast<unsigned>(col_)) << diag.str();       \
    EXPECT_NE(diag.message.find(substring_), std::string::npos)                   \
        << "message: " << diag.message << "\nwanted:  " << (substring_);          \
  } while (false)

//===----------------------------------------------------------------------===//
// Valid models
//===----------------------------------------------------------------------===//

TEST(FrontendParser, DesignExampleEveryField) {
  Model model = parseOk(kTransformerBase);
  EXPECT_EQ(model.name, "transformer_tiny");
  EXPECT_EQ(model.loc.file, "test.tfm");
  EXPECT_EQ(model.loc.line, 2u);
  EXPECT_EQ(model.loc.col, 1u);
  EXPECT_EQ(model.vocab, 1000);
  EXPECT_EQ(model.dModel, 64);
  EXPECT_EQ(model.heads, 4);
  EXPECT_EQ(model.dFF, 256);
  EXPECT_EQ(model.maxLen, 128);
  EXPECT_EQ(model.norm, NormPlacement::Post);
  EXPECT_EQ(model.activation, Activation::Relu);
  EXPECT_EQ(model.positions, PositionKind::Sinusoidal);
  EXPECT_EQ(model.embedScale, EmbedScale::SqrtDModel);
  EXPECT_DOUBLE_EQ(model.layerNormEps, 1e-5);
  EXPECT_TRUE(model.finalNorm);
  EXPECT_EQ(model.output, OutputKind::Linear);
  EXPECT_EQ(model.dHead(), 16);
  EXPECT_TRUE(model.isEncoderDecoder());

  ASSERT_TRUE(model.encoder);
  const Stack &encoder = *model.encoder;
  EXPECT_EQ(encoder.kind, StackKind::Encoder);
  EXPECT_EQ(encoder.layers, 2);
  EXPECT_EQ(encoder.loc.line, 15u);
  EXPECT_EQ(encoder.loc.col, 3u);
  ASSERT_EQ(encoder.sublayers.size(), 2u);
  EXPECT_EQ(encoder.sublayers[0].kind, SublayerKind::SelfAttention);
  EXPECT_TRUE(encoder.sublayers[0].mask.padding);
  EXPECT_FALSE(encoder.sublayers[0].mask.causal);
  EXPECT_EQ(encoder.sublayers[0].mask.window, 0);
  EXPECT_EQ(encoder.sublayers[0].loc.line, 16u);
  EXPECT_EQ(encoder.sublayers[0].loc.col, 5u);
  EXPECT_EQ(encoder.sublayers[1].kind, SublayerKind::FeedForward);

  ASSERT_TRUE(model.decoder);
  const Stack &decoder = *model.decoder;
  EXPECT_EQ(decoder.kind, StackKind::Decoder);
  EXPECT_EQ(decoder.layers, 2);
  EXPECT_EQ(decoder.loc.line, 19u);
  ASSERT_EQ(decoder.sublayers.size(), 3u);
  EXPECT_EQ(decoder.sublayers[0].kind, SublayerKind::SelfAttention);
  EXPECT_TRUE(decoder.sublayers[0].mask.causal);
  EXPECT_TRUE(decoder.sublayers[0].mask.padding);
  EXPECT_EQ(decoder.sublayers[1].kind, SublayerKind::CrossAttention);
  EXPECT_FALSE(decoder.sublayers[1].mask.causal);
  EXPECT_TRUE(decoder.sublayers[1].mask.padding);
  EXPECT_EQ(decoder.sublayers[2].kind, SublayerKind::FeedForward);

  // Every written setting has its location, in source order.
  ASSERT_EQ(model.settingLocs.size(), 12u);
  EXPECT_EQ(model.settingLocs[0].first, "vocab");
  EXPECT_EQ(model.settingLocs[11].first, "output");
  EXPECT_EQ(model.locOf("heads").line, 5u);
  EXPECT_EQ(model.locOf("heads").col, 3u);
  EXPECT_EQ(model.locOf("output").line, 24u);
}

TEST(FrontendParser, Defaults) {
  Model model = parseOk(minimal());
  EXPECT_EQ(model.dFF, 0);
  EXPECT_EQ(model.norm, NormPlacement::Post);
  EXPECT_EQ(model.activation, Activation::Relu);
  EXPECT_EQ(model.positions, PositionKind::Sinusoidal);
  EXPECT_EQ(model.embedScale, EmbedScale::One);
  EXPECT_DOUBLE_EQ(model.layerNormEps, 1e-5);
  EXPECT_FALSE(model.finalNorm);
  EXPECT_EQ(model.output, OutputKind::Linear);
  EXPECT_TRUE(model.isDecoderOnly());
  EXPECT_FALSE(model.encoder);
  // A default has no location of its own: locOf falls back to the model.
  EXPECT_EQ(model.locOf("norm").line, model.loc.line);
  EXPECT_EQ(model.settingLocs.size(), 4u);
}

TEST(FrontendParser, EveryChoice) {
  Model model = parseOk(minimal("  norm = pre\n"
                                "  activation = gelu_tanh\n"
                                "  positions = learned\n"
                                "  embed_scale = 1\n"
                                "  final_norm = false\n"
                                "  output = tied\n"));
  EXPECT_EQ(model.norm, NormPlacement::Pre);
  EXPECT_EQ(model.activation, Activation::GeluTanh);
  EXPECT_EQ(model.positions, PositionKind::Learned);
  EXPECT_EQ(model.embedScale, EmbedScale::One);
  EXPECT_FALSE(model.finalNorm);
  EXPECT_EQ(model.output, OutputKind::Tied);

  EXPECT_EQ(parseOk(minimal("  activation = gelu\n")).activation,
            Activation::Gelu);
  EXPECT_EQ(parseOk(minimal("  output = none\n")).output, OutputKind::None);
  EXPECT_EQ(parseOk(minimal("  output = linear\n")).output,
            OutputKind::Linear);
}

// The Llama family's settings, and the defaults validation resolves.
TEST(FrontendParser, LlamaSettings) {
  Model plain = parseOk(minimal());
  EXPECT_EQ(plain.normType, NormType::LayerNorm);
  EXPECT_EQ(plain.kvHeads, 2);
  EXPECT_EQ(plain.headDim, 4);
  EXPECT_TRUE(plain.bias);
  EXPECT_TRUE(plain.attentionBias);
  EXPECT_EQ(plain.weightNaming, kNnTransformerNaming); // packed Q/K/V

  Model model = parseOk(minimal("  norm_type = rms_norm\n"
                                "  activation = silu\n"
                                "  positions = rope\n"
                                "  rope_theta = 500000.0\n"
                                "  kv_heads = 1\n"
                                "  head_dim = 6\n"
                                "  bias = false\n"));
  EXPECT_EQ(model.normType, NormType::RmsNorm);
  EXPECT_EQ(model.activation, Activation::Silu);
  EXPECT_EQ(model.positions, PositionKind::Rope);
  EXPECT_DOUBLE_EQ(model.ropeTheta, 500000.0);
  EXPECT_EQ(model.kvHeads, 1);
  EXPECT_EQ(model.headDim, 6);
  EXPECT_EQ(model.queryWidth(), 12);
  EXPECT_EQ(model.kvWidth(), 6);
  EXPECT_FALSE(model.bias);
  EXPECT_FALSE(model.attentionBias); // follows bias
  Model qwen = parseOk(minimal("  bias = false\n  attention_bias = true\n"));
  EXPECT_FALSE(qwen.bias);
  EXPECT_TRUE(qwen.attentionBias);
  // head_dim frees d_model from being a multiple of heads.
  EXPECT_EQ(parseOk(replaced(minimal("  head_dim = 4\n"), "d_model = 8",
                             "d_model = 9"))
                .headDim,
            4);
  // feed_forward(gated)
  Model gated = parseOk(replaced(minimal("  d_ff = 12\n"),
                                 "self_attention(mask = causal)\n",
                                 "self_attention(mask = causal)\n"
                                 "    feed_forward(gated)\n"));
  ASSERT_EQ(gated.decoder->sublayers.size(), 2u);
  EXPECT_TRUE(gated.decoder->sublayers[1].gated);
}

TEST(FrontendParserErrors, LlamaSettings) {
  EXPECT_PARSE_ERROR(minimal("  kv_heads = 3\n"), 6, 3,
                     "heads = 2 is not a multiple of kv_heads = 3");
  EXPECT_PARSE_ERROR(minimal("  positions = rope\n  head_dim = 5\n"), 6, 3,
                     "rope rotates pairs of features, but the head width 5 "
                     "is odd");
  EXPECT_PARSE_ERROR(minimal("  kv_heads = 0\n"), 6, 14,
                     "setting 'kv_heads' must be positive");
  EXPECT_PARSE_ERROR(minimal("  norm_type = batch_norm\n"), 6, 15,
                     "unknown value 'batch_norm' for setting 'norm_type'; "
                     "expected 'layer_norm' or 'rms_norm'");
  EXPECT_PARSE_ERROR(minimal("  rope_theta = 0\n"), 6, 16,
                     "setting 'rope_theta' must be positive");
}

TEST(FrontendParser, Numbers) {
  EXPECT_DOUBLE_EQ(parseOk(minimal("  layer_norm_eps = 1e-5\n")).layerNormEps,
                   1e-5);
  EXPECT_DOUBLE_EQ(
      parseOk(minimal("  layer_norm_eps = 0.00001\n")).layerNormEps, 1e-5);
  EXPECT_DOUBLE_EQ(parseOk(minimal("  layer_norm_eps = 0.5\n")).layerNormEps,
                   0.5);
  EXPECT_DOUBLE_EQ(parseOk(minimal("  layer_norm_eps = 3\n")).layerNormEps,
                   3.0);
  EXPECT_DOUBLE_EQ(parseOk(minimal("  layer_norm_eps = 1E-12\n")).layerNormEps,
                   1e-12);
  EXPECT_DOUBLE_EQ(parseOk(minimal("  layer_norm_eps = 2.5e+1\n")).layerNormEps,
                   25.0);
  // The lexer takes any int32; each size has its own maximum (Limits).
  EXPECT_EQ(parseOk(minimal("  d_ff = 1048576\n")).dFF, 1048576);
  EXPECT_EQ(parseOk(minimal("  d_ff = 007\n")).dFF, 7);
}

// docs/user-guide.md, "Limits": each size has a stated maximum, and no weight tensor may
// hold more than 2^31 - 1 elements; the error is at the setting to change.
TEST(FrontendParser, Limits) {
  EXPECT_EQ(parseOk(minimal("  d_ff = 1048576\n")).dFF, 1048576);
  EXPECT_PARSE_ERROR(minimal("  d_ff = 1048577\n"), 6, 10,
                     "setting 'd_ff' = 1048577 is too large (maximum "
                     "1048576)");
  // The issue's example: vocab = d_model = 2^31 - 1 gave negative weight
  // bytes; now the first is refused where it is written.
  EXPECT_PARSE_ERROR("model m {\n  vocab = 2147483647, d_model = 2147483647\n"
                     "  heads = 1, max_len = 4\n  decoder(layers = 1) "
                     "{ self_attention }\n}\n",
                     2, 11,
                     "setting 'vocab' = 2147483647 is too large (maximum "
                     "16777216)");
  EXPECT_PARSE_ERROR(replaced(minimal(), "max_len = 16", "max_len = 1048577"),
                     5, 13,
                     "setting 'max_len' = 1048577 is too large (maximum "
                     "1048576)");
  EXPECT_EQ(parseOk(replaced(minimal(), "layers = 1", "layers = 1024"))
                .decoder->layers,
            1024);
  EXPECT_PARSE_ERROR(replaced(minimal(), "layers = 1", "layers = 100000"), 6,
                     20, "layers = 100000 is too large (maximum 1024)");
  EXPECT_PARSE_ERROR(
      replaced(minimal(), "mask = causal", "mask = window(1048577)"), 7, 34,
      "window size 1048577 is too large (maximum 1048576)");

  // in_proj is [3 * d_model, d_model]: 3 * 26754^2 = 2,147,329,548 elements
  // fit, 3 * 26756^2 = 2,147,650,608 do not (heads = 2 needs an even
  // d_model).
  EXPECT_EQ(
      parseOk(replaced(minimal(), "d_model = 8", "d_model = 26754")).dModel,
      26754);
  EXPECT_PARSE_ERROR(replaced(minimal(), "d_model = 8", "d_model = 26756"), 3, 3,
                     "the packed attention projection (in_proj) weight "
                     "[(heads + 2 * kv_heads) * head_dim, d_model] = [80268, 26756] would hold "
                     "2147650608 elements; tfmc's kernels index at most "
                     "2147483647 per tensor");
  // The embedding [vocab, d_model]: 16777216 * 256 = 2^32 elements, blamed
  // on vocab.
  EXPECT_PARSE_ERROR(replaced(replaced(minimal(), "vocab = 10",
                                     "vocab = 16777216"),
                            "d_model = 8", "d_model = 256"),
                     2, 3,
                     "the embedding weight [vocab, d_model] = [16777216, 256] "
                     "would hold 4294967296 elements");
}

TEST(FrontendParser, MaskExpressions) {
  auto maskOf = [](const std::string &expr) {
    std::string source = "model m {\n vocab = 1, d_model = 4, heads = 1, "
                         "max_len = 4\n decoder(layers = 1) {\n "
                         "self_attention" +
                         expr + "\n }\n}\n";
    Model model = parseOk(source);
    return model.decoder ? model.decoder->sublayers.at(0).mask : MaskSpec();
  };
  EXPECT_TRUE(maskOf("").isNone());
  EXPECT_TRUE(maskOf("(mask = none)").isNone());
  MaskSpec causal = maskOf("(mask = causal)");
  EXPECT_TRUE(causal.causal);
  EXPECT_FALSE(causal.padding);
  EXPECT_EQ(toString(causal), "causal");
  MaskSpec both = maskOf("(mask = padding + causal)");
  EXPECT_TRUE(both.causal && both.padding);
  EXPECT_EQ(toString(both), "causal + padding");
  MaskSpec window = maskOf("(mask = window(8))");
  EXPECT_EQ(window.window, 8);
  EXPECT_FALSE(window.causal);
  EXPECT_EQ(toString(window), "window(8)");
  MaskSpec all = maskOf("(mask = window(3) + padding + causal)");
  EXPECT_TRUE(all.causal && all.padding);
  EXPECT_EQ(all.window, 3);
  EXPECT_EQ(toString(all), "causal + padding + window(3)");
  EXPECT_EQ(toString(MaskSpec()), "none");
  // full_every = 2: layers 1, 3, ... attend without the window (Gemma 2).
  MaskSpec alternating = maskOf("(mask = causal + window(6, full_every = 2))");
  EXPECT_EQ(alternating.fullEvery, 2);
  EXPECT_EQ(toString(alternating), "causal + window(6, full_every = 2)");
  EXPECT_EQ(alternating.windowAt(0), 6);
  EXPECT_EQ(alternating.windowAt(1), 0);
  EXPECT_EQ(alternating.windowAt(2), 6);
  EXPECT_EQ(maskOf("(mask = window(6, full_every = 3))").windowAt(2), 0);
  EXPECT_EQ(window.windowAt(1), 8);
  // Newlines inside parentheses continue the line.
  MaskSpec multiLine = maskOf("(\n  mask = causal +\n    padding\n )");
  EXPECT_TRUE(multiLine.causal && multiLine.padding);
}

TEST(FrontendParser, CommasAsSeparators) {
  Model model = parseOk(
      "model m { vocab = 10, d_model = 8, heads = 2, max_len = 16, d_ff = 32,"
      " encoder(layers = 3) { self_attention(mask = padding), feed_forward },"
      " }");
  EXPECT_EQ(model.vocab, 10);
  EXPECT_EQ(model.dFF, 32);
  ASSERT_TRUE(model.encoder);
  EXPECT_EQ(model.encoder->layers, 3);
  EXPECT_EQ(model.encoder->sublayers.size(), 2u);
  EXPECT_TRUE(model.isEncoderOnly());
}

TEST(FrontendParser, CommentsEverywhere) {
  Model model = parseOk("# header\n"
                        "# more\n"
                        "model m # after the name\n"
                        "{ # after the brace\n"
                        "  vocab = 10 # after a value\n"
                        "  # a whole line\n"
                        "  d_model = 8, heads = 2 # two on a line\n"
                        "  max_len = 16\n"
                        "  decoder(layers = 1) # before the brace\n"
                        "  { # after it\n"
                        "    self_attention( # inside parentheses\n"
                        "      mask = causal # é, UTF-8 is fine here\n"
                        "    ) # after\n"
                        "  } # end of stack\n"
                        "} # end of model\n"
                        "# trailing comment");
  EXPECT_EQ(model.vocab, 10);
  EXPECT_EQ(model.heads, 2);
  ASSERT_TRUE(model.decoder);
  EXPECT_TRUE(model.decoder->sublayers[0].mask.causal);
}

TEST(FrontendParser, CrlfLineEndings) {
  std::string source = kTransformerBase;
  std::string crlf;
  for (char c : source) {
    if (c == '\n')
      crlf += '\r';
    crlf += c;
  }
  Model model = parseOk(crlf);
  EXPECT_EQ(model.vocab, 1000);
  ASSERT_TRUE(model.decoder);
  EXPECT_EQ(model.decoder->loc.line, 19u);
  EXPECT_EQ(model.decoder->loc.col, 3u);

  // Locations in errors are the same as with "\n".
  EXPECT_PARSE_ERROR("model m {\r\n  vocab = 10\r\n  colour = 3\r\n}\r\n", 3, 3,
                     "unknown setting 'colour'");
}

TEST(FrontendParser, AnyOrderAndNoTrailingNewline) {
  Model model = parseOk("model m {\n"
                        "  decoder(layers = 2) {\n"
                        "    self_attention(mask = causal)\n"
                        "    cross_attention\n"
                        "    feed_forward\n"
                        "  }\n"
                        "  d_ff = 16\n"
                        "  encoder(layers = 1) {\n"
                        "    self_attention\n"
                        "  }\n"
                        "  vocab = 10, d_model = 8, heads = 2, max_len = 16\n"
                        "}");
  EXPECT_TRUE(model.isEncoderDecoder());
  EXPECT_EQ(model.decoder->sublayers[1].kind, SublayerKind::CrossAttention);
  EXPECT_TRUE(model.decoder->sublayers[1].mask.isNone());
}

TEST(FrontendParser, UnusedDFFIsAccepted) {
  EXPECT_EQ(parseOk(minimal("  d_ff = 64\n")).dFF, 64);
}

TEST(FrontendParser, TiedOutputWithoutDecoderIsFine) {
  Model model = parseOk("model m {\n vocab = 1, d_model = 4, heads = 1, "
                        "max_len = 4, output = tied\n encoder(layers = 1) { "
                        "self_attention }\n}\n");
  EXPECT_EQ(model.output, OutputKind::Tied);
}

TEST(FrontendParser, Dump) {
  Model model = parseOk(kTransformerBase);
  EXPECT_EQ(dumpModel(model), "model transformer_tiny  @test.tfm:2:1\n"
                              "  vocab = 1000\n"
                              "  d_model = 64\n"
                              "  heads = 4\n"
                              "  d_ff = 256\n"
                              "  max_len = 128\n"
                              "  norm = post\n"
                              "  activation = relu\n"
                              "  positions = sinusoidal\n"
                              "  embed_scale = sqrt_d_model\n"
                              "  layer_norm_eps = 1e-05\n"
                              "  final_norm = true\n"
                              "  output = linear\n"
                              "  encoder layers = 2\n"
                              "    self_attention mask = padding\n"
                              "    feed_forward\n"
                              "  decoder layers = 2\n"
                              "    self_attention mask = causal + padding\n"
                              "    cross_attention mask = padding\n"
                              "    feed_forward\n");
  std::string defaults = dumpModel(parseOk(minimal()));
  EXPECT_NE(defaults.find("  d_ff = unset\n"), std::string::npos);
  EXPECT_NE(defaults.find("  embed_scale = 1\n"), std::string::npos);
  EXPECT_NE(defaults.find("  decoder layers = 1\n    self_attention mask = "
                          "causal\n"),
            std::string::npos);
}

// The settings' table (Settings.h): one row a name, each row's member set,
// each choice's spellings round-trip through its member, and the parser
// sets what the dump then prints.
TEST(FrontendSettings, EveryRowIsWhole) {
  std::set<std::string> names;
  for (const Setting &setting : modelSettings()) {
    SCOPED_TRACE(setting.name);
    EXPECT_TRUE(names.insert(setting.name).second);
    EXPECT_EQ(findSetting(setting.name), &setting);
    switch (setting.kind) {
    case Setting::Kind::PositiveInt:
      EXPECT_NE(setting.integer, nullptr);
      break;
    case Setting::Kind::PositiveNumber:
      EXPECT_NE(setting.number, nullptr);
      break;
    case Setting::Kind::Choice: {
      ASSERT_FALSE(setting.spellings.empty());
      Model model;
      for (size_t i = 0; i < setting.spellings.size(); ++i) {
        setting.choose(model, i);
        EXPECT_EQ(setting.chosen(model), i);
        EXPECT_EQ(settingValue(setting, model), setting.spellings[i]);
      }
      break;
    }
    }
  }
  EXPECT_EQ(findSetting("colour"), nullptr);
  Model model = parseOk("model m {\n  vocab = 10\n  d_model = 8\n  heads = 2\n"
                        "  d_ff = 16\n  max_len = 4\n  norm = pre\n  bias = false\n"
                        "  layer_norm_eps = 0.25\n  decoder(layers = 1) {\n"
                        "    self_attention(mask = causal)\n    feed_forward\n"
                        "  }\n}\n");
  std::string dump = dumpModel(model);
  EXPECT_NE(dump.find("  norm = pre\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("  bias = false\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("  layer_norm_eps = 0.25\n"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("norm_type"), std::string::npos) << dump;
}

TEST(FrontendParser, ToStrings) {
  EXPECT_STREQ(toString(NormPlacement::Pre), "pre");
  EXPECT_STREQ(toString(Activation::GeluTanh), "gelu_tanh");
  EXPECT_STREQ(toString(PositionKind::Learned), "learned");
  EXPECT_STREQ(toString(EmbedScale::SqrtDModel), "sqrt_d_model");
  EXPECT_STREQ(toString(EmbedScale::One), "1");
  EXPECT_STREQ(toString(OutputKind::None), "none");
  EXPECT_STREQ(toString(StackKind::Decoder), "decoder");
  EXPECT_STREQ(toString(SublayerKind::CrossAttention), "cross_attention");
}

TEST(FrontendParser, DiagnosticStr) {
  EXPECT_EQ((Diagnostic{SourceLoc{"a.tfm", 3, 7}, "oops"}.str()),
            "a.tfm:3:7: error: oops");
  EXPECT_EQ((Diagnostic{SourceLoc{"a.tfm", 0, 0}, "oops"}.str()),
            "a.tfm: error: oops");
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(FrontendParserErrors, UnknownSetting) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 10\n  colour = 3\n}\n", 3, 3,
                     "unknown setting 'colour'; known settings are vocab, "
                     "d_model, heads, d_ff, max_len, norm, activation, "
                     "positions, embed_scale, layer_norm_eps, final_norm, "
                     "output");
  EXPECT_PARSE_ERROR("model m {\n  feed_forward\n}\n", 2, 3,
                     "sublayer 'feed_forward' must be inside an 'encoder' or "
                     "'decoder' block");
}

TEST(FrontendParserErrors, DuplicateSetting) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 10\n  d_model = 8\n  vocab = 20\n}",
                     4, 3,
                     "duplicate setting 'vocab' (first set at line 2, column "
                     "3)");
}

TEST(FrontendParserErrors, MissingRequiredSetting) {
  EXPECT_PARSE_ERROR("\nmodel m {\n  vocab = 10, d_model = 8, max_len = 4\n"
                     "  decoder(layers = 1) { self_attention }\n}\n",
                     2, 1, "missing required setting 'heads' in model 'm'");
  EXPECT_PARSE_ERROR("model m {\n  vocab = 10, d_model = 8\n"
                     "  decoder(layers = 1) { self_attention }\n}\n",
                     1, 1,
                     "missing required settings 'heads' and 'max_len' in "
                     "model 'm'");
}

TEST(FrontendParserErrors, BadValueType) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 10\n  heads = relu\n}\n", 3, 11,
                     "expected a positive integer for setting 'heads', found "
                     "'relu'");
  EXPECT_PARSE_ERROR(minimal("  d_ff = 1.5\n"), 6, 10,
                     "expected a positive integer for setting 'd_ff', found "
                     "'1.5'");
  EXPECT_PARSE_ERROR(minimal("  norm = 3\n"), 6, 10,
                     "expected 'post', 'pre' or 'sandwich' for setting "
                     "'norm', found '3'");
  EXPECT_PARSE_ERROR(minimal("  final_norm = 1\n"), 6, 16,
                     "expected 'true' or 'false' for setting 'final_norm', "
                     "found '1'");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = small\n"), 6, 20,
                     "expected a positive number for setting "
                     "'layer_norm_eps', found 'small'");
  EXPECT_PARSE_ERROR(minimal("  d_ff =\n"), 6, 9,
                     "expected a positive integer for setting 'd_ff', found "
                     "end of line");
}

TEST(FrontendParserErrors, UnknownValue) {
  EXPECT_PARSE_ERROR(minimal("  norm = middle\n"), 6, 10,
                     "unknown value 'middle' for setting 'norm'; expected "
                     "'post', 'pre' or 'sandwich'");
  EXPECT_PARSE_ERROR(minimal("  activation = swish\n"), 6, 16,
                     "unknown value 'swish' for setting 'activation'; "
                     "expected 'relu', 'gelu', 'gelu_tanh' or 'silu'");
  EXPECT_PARSE_ERROR(minimal("  embed_scale = 2\n"), 6, 17,
                     "unknown value '2' for setting 'embed_scale'; expected "
                     "'sqrt_d_model' or '1'");
  EXPECT_PARSE_ERROR(minimal("  output = softmax\n"), 6, 12,
                     "unknown value 'softmax' for setting 'output'; expected "
                     "'linear', 'tied' or 'none'");
  EXPECT_PARSE_ERROR(minimal("  positions = rotary\n"), 6, 15,
                     "expected 'sinusoidal', 'sinusoidal_halves', 'learned' or 'rope'");
}

TEST(FrontendParserErrors, NonPositiveSizes) {
  EXPECT_PARSE_ERROR("model m {\n  d_model = 0\n}", 2, 13,
                     "setting 'd_model' must be positive, found 0");
  EXPECT_PARSE_ERROR("model m {\n  heads = -4\n}", 2, 11,
                     "setting 'heads' must be positive, found -4");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 0.0\n"), 6, 20,
                     "setting 'layer_norm_eps' must be positive, found 0.0");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = -1e-5\n"), 6, 20,
                     "setting 'layer_norm_eps' must be positive, found -1e-5");
  // The kernels compute in f32: a value that becomes inf or 0 there.
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1e300\n"), 6, 20,
                     "setting 'layer_norm_eps' = 1e300 does not survive the "
                     "conversion to f32 (it becomes inf); expected a positive "
                     "number between 1.4e-45 and 3.4e38");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1e-60\n"), 6, 20,
                     "setting 'layer_norm_eps' = 1e-60 does not survive the "
                     "conversion to f32 (it becomes 0); expected a positive "
                     "number between 1.4e-45 and 3.4e38");
}

TEST(FrontendParserErrors, NotDivisible) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 10\n  d_model = 64\n  heads = 5\n"
                     "  max_len = 4\n  decoder(layers = 1) { self_attention "
                     "}\n}\n",
                     4, 3, "d_model = 64 is not divisible by heads = 5");
}

TEST(FrontendParserErrors, CrossAttention) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1, d_model = 4, heads = 1, "
                     "max_len = 4\n  decoder(layers = 1) {\n"
                     "    self_attention(mask = causal)\n"
                     "    cross_attention(mask = padding)\n  }\n}\n",
                     5, 5,
                     "'cross_attention' needs an encoder, but model 'm' has "
                     "no 'encoder' block");
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1, d_model = 4, heads = 1, "
                     "max_len = 4\n  encoder(layers = 1) {\n"
                     "    self_attention\n    cross_attention\n  }\n}\n",
                     5, 5, "'cross_attention' is not allowed in an encoder");
}

TEST(FrontendParserErrors, Masks) {
  auto withMask = [](const std::string &args) {
    return "model m {\n vocab = 1, d_model = 4, heads = 1, max_len = 4\n"
           " decoder(layers = 1) {\n  self_attention" +
           args + "\n }\n}\n";
  };
  EXPECT_PARSE_ERROR(withMask("(mask = future)"), 4, 25,
                     "unknown mask kind 'future'; expected 'none', 'causal', "
                     "'padding' or 'window(N)'");
  EXPECT_PARSE_ERROR(withMask("(mask = causal + causal)"), 4, 34,
                     "duplicate mask term 'causal'");
  EXPECT_PARSE_ERROR(withMask("(mask = window(2) + window(4))"), 4, 37,
                     "duplicate mask term 'window'");
  EXPECT_PARSE_ERROR(withMask("(mask = none + padding)"), 4, 32,
                     "'none' cannot be combined with other mask terms");
  EXPECT_PARSE_ERROR(withMask("(mask = padding + none)"), 4, 35,
                     "'none' cannot be combined with other mask terms");
  EXPECT_PARSE_ERROR(withMask("(mask = window(0))"), 4, 32,
                     "window size must be at least 1, found 0");
  EXPECT_PARSE_ERROR(withMask("(mask = window)"), 4, 31,
                     "expected '(' after 'window', found ')'");
  EXPECT_PARSE_ERROR(withMask("(mask = causal padding)"), 4, 32,
                     "expected '+' or ')' after mask term 'causal', found "
                     "'padding'");
  EXPECT_PARSE_ERROR(withMask("(masks = causal)"), 4, 18,
                     "unknown argument 'masks' for 'self_attention'; expected "
                     "'mask'");
  EXPECT_PARSE_ERROR(withMask("()"), 4, 18,
                     "expected 'mask' after 'self_attention(', found ')'");
  EXPECT_PARSE_ERROR(withMask("(mask = )"), 4, 25,
                     "expected a mask term ('none', 'causal', 'padding' or "
                     "'window(N)'), found ')'");
  // Inside parentheses a line break continues the line, so the error is at
  // the next token.
  EXPECT_PARSE_ERROR(withMask("(mask = causal"), 5, 2,
                     "expected '+' or ')' after mask term 'causal', found "
                     "'}'");
}

TEST(FrontendParserErrors, Stacks) {
  const std::string head =
      "model m {\n vocab = 1, d_model = 4, heads = 1, max_len = 4\n";
  EXPECT_PARSE_ERROR(head + " decoder(layers = 0) { self_attention }\n}\n", 3,
                     19, "layers must be at least 1, found 0");
  EXPECT_PARSE_ERROR(head + " decoder(layers = -2) { self_attention }\n}\n",
                     3, 19, "layers must be at least 1, found -2");
  EXPECT_PARSE_ERROR(head + " decoder { self_attention }\n}\n", 3, 10,
                     "expected '(layers = N)' after 'decoder', found '{'");
  EXPECT_PARSE_ERROR(head + " decoder(depth = 2) { self_attention }\n}\n", 3,
                     10, "unknown argument 'depth' for 'decoder'; expected "
                         "'layers'");
  EXPECT_PARSE_ERROR(head + " encoder(layers = 1) { self_attention }\n"
                            " encoder(layers = 1) { self_attention }\n}\n",
                     4, 2,
                     "duplicate 'encoder' block (first at line 3, column 2)");
  EXPECT_PARSE_ERROR(head + " decoder(layers = 1) {\n  attention\n }\n}\n", 4,
                     3,
                     "unknown sublayer 'attention'; expected "
                     "'self_attention', 'cross_attention' or 'feed_forward'");
  EXPECT_PARSE_ERROR(head + " decoder(layers = 1) {\n  heads = 2\n }\n}\n", 4,
                     3,
                     "setting 'heads' belongs in the model body, not in the "
                     "'decoder' block");
  EXPECT_PARSE_ERROR(head + " decoder(layers = 1) {\n  self_attention\n"
                            "  feed_forward(d_ff = 4)\n }\n}\n",
                     5, 16,
                     "expected 'gated' in 'feed_forward(...)', found 'd_ff'");
  EXPECT_PARSE_ERROR(head + " decoder(layers = 1) {\n  self_attention\n"
                            "  feed_forward(gated\n }\n}\n",
                     6, 2,
                     "expected ')' after 'feed_forward(gated', found");
  EXPECT_PARSE_ERROR(head + " decoder(layers = 1) {\n }\n}\n", 3, 2,
                     "'decoder' block has no sublayers");
  EXPECT_PARSE_ERROR(head + "}\n", 1, 1,
                     "model 'm' has no 'encoder' or 'decoder' block");
  EXPECT_PARSE_ERROR(head + " decoder(layers = 1) {\n  self_attention "
                            "feed_forward\n }\n}\n",
                     4, 18,
                     "expected ',', a new line or '}' after sublayer "
                     "'self_attention', found 'feed_forward'");
}

TEST(FrontendParserErrors, MissingDFF) {
  EXPECT_PARSE_ERROR("model m {\n vocab = 1, d_model = 4, heads = 1, max_len "
                     "= 4\n decoder(layers = 1) {\n  self_attention\n"
                     "  feed_forward\n }\n encoder(layers = 1) {\n"
                     "  feed_forward\n }\n}\n",
                     5, 3, "missing setting 'd_ff', which 'feed_forward' needs");
}

TEST(FrontendParserErrors, Unterminated) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1\n  decoder(layers = 1) {\n"
                     "    self_attention\n",
                     5, 1,
                     "unterminated 'decoder' block opened at line 3, column "
                     "23: expected '}', found end of file");
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1\n", 3, 1,
                     "unterminated 'model m' block opened at line 1, column "
                     "9: expected '}', found end of file");
}

TEST(FrontendParserErrors, StrayTokens) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1\n  )\n}\n", 3, 3,
                     "expected a setting, a stack or '}', found ')'");
  EXPECT_PARSE_ERROR("model m {\n  vocab {\n}\n", 2, 9,
                     "expected '=' after setting 'vocab', found '{'");
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1 d_model = 2\n}\n", 2, 13,
                     "expected ',', a new line or '}' after setting 'vocab', "
                     "found 'd_model'");
  EXPECT_PARSE_ERROR(minimal() + "model n {\n}\n", 10, 1,
                     "expected end of file after model 'm', found 'model'");
  EXPECT_PARSE_ERROR("model {\n}\n", 1, 7,
                     "expected a model name after 'model', found '{'");
  EXPECT_PARSE_ERROR("model m\n  vocab = 1\n", 2, 3,
                     "expected '{' after 'model m', found 'vocab'");
  EXPECT_PARSE_ERROR("transformer m {\n}\n", 1, 1,
                     "expected 'model', found 'transformer'");
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1 - 2\n}\n", 2, 13,
                     "unexpected character '-'");
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1;\n}\n", 2, 12,
                     "unexpected character ';'");
}

TEST(FrontendParserErrors, EmptyFile) {
  EXPECT_PARSE_ERROR("", 1, 1, "expected 'model', found end of file");
  EXPECT_PARSE_ERROR("  \n\n\t\n", 4, 1, "expected 'model', found end of file");
  EXPECT_PARSE_ERROR("# only\n# comments", 2, 11,
                     "expected 'model', found end of file");
}

TEST(FrontendParserErrors, Encoding) {
  EXPECT_PARSE_ERROR("model m {\n  vocab = 1\xff\n}\n", 2, 12,
                     "invalid UTF-8 byte 0xff");
  // In a comment too: the file is likely in another encoding.
  EXPECT_PARSE_ERROR("# caf\xe9\nmodel m {}\n", 1, 6, "invalid UTF-8 byte 0xe9");
  // A truncated sequence is reported at its first byte.
  EXPECT_PARSE_ERROR("# \xe2\x82\nmodel m {}\n", 1, 3,
                     "invalid UTF-8 byte 0xe2");
  // Overlong encodings and surrogates are not UTF-8.
  EXPECT_PARSE_ERROR("# \xc0\xaf\n", 1, 3, "invalid UTF-8 byte 0xc0");
  EXPECT_PARSE_ERROR("# \xed\xa0\x80\n", 1, 3, "invalid UTF-8 byte 0xed");
  // Valid UTF-8 outside a comment is just an unexpected character; columns
  // count bytes, so the comment's two-byte 'é' moves nothing on line 2.
  EXPECT_PARSE_ERROR("# caf\xc3\xa9\nmodel m {\n  vocab = 1 \xc3\xa9\n}\n", 3,
                     13, "unexpected character '\xc3\xa9' (U+00E9)");
  EXPECT_PARSE_ERROR("model m { # \xc3\xa9\xc3\xa9 x\n vocab = 1 # ok\n"
                     " \x01\n}\n",
                     3, 2, "unexpected character 0x01");
  // Characters that would break the one-line diagnostic are named by code
  // point only.
  EXPECT_PARSE_ERROR("model m {\n  \xe2\x80\xa8\n}\n", 2, 3,
                     "unexpected character U+2028");
  EXPECT_PARSE_ERROR("model m {\n  \xc2\x85\n}\n", 2, 3,
                     "unexpected character U+0085");
  // Column after a multi-byte character counts its bytes.
  EXPECT_PARSE_ERROR("model m { # \xe2\x82\xac \xff\n}\n", 1, 17,
                     "invalid UTF-8 byte 0xff");
}

TEST(FrontendParserErrors, LargeNumbers) {
  EXPECT_PARSE_ERROR(minimal("  d_ff = 99999999999\n"), 6, 10,
                     "number 99999999999 is too large (maximum 2147483647)");
  EXPECT_PARSE_ERROR(minimal("  d_ff = 2147483648\n"), 6, 10,
                     "number 2147483648 is too large (maximum 2147483647)");
  std::string forty(40, '9');
  EXPECT_PARSE_ERROR(minimal("  d_ff = " + forty + "\n"), 6, 10,
                     "number " + forty + " is too large (maximum 2147483647)");
  EXPECT_PARSE_ERROR(minimal("  d_ff = -99999999999\n"), 6, 10,
                     "number -99999999999 is too small (minimum -2147483648)");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1e999\n"), 6, 20,
                     "number 1e999 is too large");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1e-999\n"), 6, 20,
                     "number 1e-999 is too small to represent");
  // An int32-sized negative number is a valid token, so the error is about
  // its sign, not its size.
  EXPECT_PARSE_ERROR(minimal("  d_ff = -2147483648\n"), 6, 10,
                     "setting 'd_ff' must be positive, found -2147483648");
}

TEST(FrontendParserErrors, MalformedNumbers) {
  EXPECT_PARSE_ERROR(minimal("  d_ff = 12abc\n"), 6, 10,
                     "invalid number '12abc'");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1.\n"), 6, 20,
                     "invalid number '1.'");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1e\n"), 6, 20,
                     "invalid number '1e'");
  EXPECT_PARSE_ERROR(minimal("  layer_norm_eps = 1.2.3\n"), 6, 20,
                     "invalid number '1.2.3'");
}

TEST(FrontendParserErrors, FirstErrorWins) {
  // A later lexical error does not hide an earlier one, and vice versa.
  EXPECT_PARSE_ERROR("model m {\n  colour = 1\n  vocab = \xff\n}\n", 2, 3,
                     "unknown setting 'colour'");
  EXPECT_PARSE_ERROR("model m {\n  vocab = \xff\n  colour = 1\n}\n", 2, 11,
                     "invalid UTF-8 byte 0xff");
  // Syntax errors anywhere come before whole-model checks.
  EXPECT_PARSE_ERROR("model m {\n  heads = 3\n  d_model = 8\n  norm = x\n}\n",
                     4, 10, "unknown value 'x'");
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST(FrontendParserFiles, MissingFile) {
  ParseResult result = parseModelFile("nope-does-not-exist.tfm");
  ASSERT_FALSE(result);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->loc.line, 0u);
  EXPECT_EQ(result.error->str(), "nope-does-not-exist.tfm: error: cannot read: "
                                 "No such file or directory");
}

TEST(FrontendParserFiles, Directory) {
  // A directory is a Hugging Face model directory: its config.json is read.
  ParseResult result = parseModelFile("/");
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->str(),
            "/config.json: error: cannot read: No such file or "
            "directory; a Hugging Face model directory holds config.json");
}

TEST(FrontendParserFiles, ReadsAFile) {
  std::string path = ::testing::TempDir() + "tfmc-parser-test-" +
                     std::to_string(::getpid()) + ".tfm";
  {
    std::ofstream out(path, std::ios::binary);
    out << kTransformerBase;
  }
  ParseResult result = parseModelFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(result) << result.error->str();
  EXPECT_EQ(result.model->loc.file, path);
  EXPECT_EQ(result.model->name, "transformer_tiny");
}

TEST(FrontendParserFiles, ReadRegularFileLimits) {
  // Model files are read through support/FileIO's bounded reader.
  std::string path = ::testing::TempDir() + "tfmc-read-test-" +
                     std::to_string(::getpid()) + ".tfm";
  {
    std::ofstream out(path, std::ios::binary);
    out << "0123456789";
  }
  std::string text;
  tfmc::support::ReadFailure failure;
  ASSERT_TRUE(tfmc::support::readRegularFile(path, text, failure, 10)) << failure.reason;
  EXPECT_EQ(text, "0123456789");
  EXPECT_FALSE(tfmc::support::readRegularFile(path, text, failure, 9));
  EXPECT_EQ(failure.reason, "cannot read: 10 bytes is more than the limit of 9");
  EXPECT_EQ(failure.systemError, 0);
  std::remove(path.c_str());
  EXPECT_FALSE(tfmc::support::readRegularFile(path, text, failure, 9));
  EXPECT_EQ(failure.reason, "cannot read: No such file or directory");
  EXPECT_EQ(failure.systemError, ENOENT);

  // /proc files are regular but report size 0: they are read to their end,
  // and still only up to the limit.
  ASSERT_TRUE(tfmc::support::readRegularFile("/proc/self/status", text, failure,
                                       1 << 20))
      << failure.reason;
  EXPECT_NE(text.find("Name:"), std::string::npos);
  EXPECT_FALSE(tfmc::support::readRegularFile("/proc/self/status", text, failure, 16));
  EXPECT_EQ(failure.reason, "cannot read: more than the limit of 16 bytes");

  EXPECT_FALSE(tfmc::support::readRegularFile("/dev/null", text, failure, 16));
  EXPECT_EQ(failure.reason, "cannot read: a character device, not a regular file");
  EXPECT_FALSE(tfmc::support::readRegularFile("/", text, failure, 16));
  EXPECT_EQ(failure.reason, "cannot read: a directory, not a regular file");
}

//===----------------------------------------------------------------------===//
// Quoting user text in messages
//===----------------------------------------------------------------------===//

TEST(FrontendQuote, DiagnosticsAreBounded) {
  Diagnostic diag{SourceLoc{"a\nb.tfm", 1, 2}, std::string(5000, 'm')};
  std::string line = diag.str();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line, "a\\nb.tfm:1:2: error: " +
                      std::string(tfmc::support::kMaxMessageBytes, 'm') + "...");
}

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

TEST(FrontendLexer, Tokens) {
  Lexer lexer("model m { x = -3, y=1.5e3 + (\n z\n ) }\n");
  std::vector<TokenKind> kinds;
  std::vector<std::string> texts;
  for (Token token = lexer.next(); !token.is(TokenKind::EndOfFile);
       token = lexer.next()) {
    kinds.push_back(token.kind);
    texts.push_back(token.text);
  }
  std::vector<TokenKind> expected = {
      TokenKind::Identifier, TokenKind::Identifier, TokenKind::LBrace,
      TokenKind::Identifier, TokenKind::Equal,      TokenKind::Integer,
      TokenKind::Comma,      TokenKind::Identifier, TokenKind::Equal,
      TokenKind::Float,      TokenKind::Plus,       TokenKind::LParen,
      TokenKind::Identifier, TokenKind::RParen,     TokenKind::RBrace,
      TokenKind::Newline};
  EXPECT_EQ(kinds, expected);
  EXPECT_EQ(texts[5], "-3");
  EXPECT_EQ(texts[9], "1.5e3");

  Lexer numbers("-3 1.5e3");
  Token minusThree = numbers.next();
  EXPECT_EQ(minusThree.intValue, -3);
  EXPECT_DOUBLE_EQ(numbers.next().floatValue, 1500.0);
}

TEST(FrontendLexer, ErrorIsSticky) {
  Lexer lexer("a \xff b");
  EXPECT_TRUE(lexer.next().is(TokenKind::Identifier));
  Token error = lexer.next();
  EXPECT_TRUE(error.is(TokenKind::Error));
  EXPECT_EQ(error.col, 3u);
  EXPECT_TRUE(lexer.next().is(TokenKind::Error));
}

TEST(FrontendLexer, Utf8Lengths) {
  EXPECT_EQ(tfmc::support::utf8Length("a", 0), 1u);
  EXPECT_EQ(tfmc::support::utf8Length("\xc3\xa9", 0), 2u);
  EXPECT_EQ(tfmc::support::utf8Length("\xe2\x82\xac", 0), 3u);
  EXPECT_EQ(tfmc::support::utf8Length("\xf0\x9f\x98\x80", 0), 4u);
  EXPECT_EQ(tfmc::support::utf8Length("\xf4\x90\x80\x80", 0), 0u); // > U+10FFFF
  EXPECT_EQ(tfmc::support::utf8Length("\xe0\x80\x80", 0), 0u);     // overlong
  EXPECT_EQ(tfmc::support::utf8Length("\x80", 0), 0u);
  EXPECT_EQ(tfmc::support::utf8Length("\xc3", 0), 0u);
}

} // namespace
