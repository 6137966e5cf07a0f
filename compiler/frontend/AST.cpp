//===- AST.cpp - Printing the parsed form of a .tfm description -----------===//

#include "compiler/frontend/AST.h"
#include "support/Text.h"

#include <fmt/format.h>

namespace tfmc::frontend {

std::string Diagnostic::str() const {
  // A parse from a string with no name still needs something before the
  // colon, or the line would start with ":3:4:".
  std::string name =
      loc.file.empty() ? std::string("<input>") : support::escapeText(loc.file, 400);
  // Quoted user text is already cut; this bounds the line whatever a
  // message holds (docs/user-guide.md, "Limits").
  std::string text = support::oneLine(message);
  if (loc.line == 0)
    return fmt::format("{}: error: {}", name, text);
  return fmt::format("{}:{}:{}: error: {}", name, loc.line, loc.col, text);
}

const char *toString(NormPlacement value) {
  switch (value) {
  case NormPlacement::Post:
    return "post";
  case NormPlacement::Pre:
    return "pre";
  }
  return "?";
}

const char *toString(NormType value) {
  switch (value) {
  case NormType::LayerNorm:
    return "layer_norm";
  case NormType::RmsNorm:
    return "rms_norm";
  }
  return "?";
}

const char *toString(Activation value) {
  switch (value) {
  case Activation::Relu:
    return "relu";
  case Activation::Gelu:
    return "gelu";
  case Activation::GeluTanh:
    return "gelu_tanh";
  case Activation::Silu:
    return "silu";
  }
  return "?";
}

const char *toString(PositionKind value) {
  switch (value) {
  case PositionKind::Sinusoidal:
    return "sinusoidal";
  case PositionKind::SinusoidalHalves:
    return "sinusoidal_halves";
  case PositionKind::Learned:
    return "learned";
  case PositionKind::Rope:
    return "rope";
  }
  return "?";
}

const char *toString(EmbedScale value) {
  switch (value) {
  case EmbedScale::One:
    return "1";
  case EmbedScale::SqrtDModel:
    return "sqrt_d_model";
  }
  return "?";
}

const char *toString(OutputKind value) {
  switch (value) {
  case OutputKind::Linear:
    return "linear";
  case OutputKind::Tied:
    return "tied";
  case OutputKind::None:
    return "none";
  }
  return "?";
}

const char *toString(StackKind value) {
  switch (value) {
  case StackKind::Encoder:
    return "encoder";
  case StackKind::Decoder:
    return "decoder";
  }
  return "?";
}

const char *toString(SublayerKind value) {
  switch (value) {
  case SublayerKind::SelfAttention:
    return "self_attention";
  case SublayerKind::CrossAttention:
    return "cross_attention";
  case SublayerKind::FeedForward:
    return "feed_forward";
  }
  return "?";
}

std::string toString(const MaskSpec &mask) {
  // A fixed order, whatever order the source used, so that equal masks print
  // equally.
  std::string text;
  auto add = [&](const std::string &term) {
    if (!text.empty())
      text += " + ";
    text += term;
  };
  if (mask.causal)
    add("causal");
  if (mask.padding)
    add("padding");
  if (mask.window != 0)
    add(fmt::format("window({})", mask.window));
  return text.empty() ? "none" : text;
}

std::string dumpModel(const Model &model) {
  std::string out;
  auto line = [&](int indent, const std::string &text) {
    out.append(static_cast<size_t>(indent) * 2, ' ');
    out += text;
    out += '\n';
  };

  std::string where;
  if (model.loc.line != 0)
    where = fmt::format("  @{}:{}:{}", model.loc.file, model.loc.line,
                        model.loc.col);
  line(0, fmt::format("model {}{}", model.name, where));

  // Every setting, defaults included, in the order of docs/language.md's table, so a
  // dump says exactly what will be compiled.
  line(1, fmt::format("vocab = {}", model.vocab));
  line(1, fmt::format("d_model = {}", model.dModel));
  line(1, fmt::format("heads = {}", model.heads));
  line(1, model.dFF != 0 ? fmt::format("d_ff = {}", model.dFF)
                         : std::string("d_ff = unset"));
  line(1, fmt::format("max_len = {}", model.maxLen));
  line(1, fmt::format("norm = {}", toString(model.norm)));
  line(1, fmt::format("activation = {}", toString(model.activation)));
  line(1, fmt::format("positions = {}", toString(model.positions)));
  line(1, fmt::format("embed_scale = {}", toString(model.embedScale)));
  line(1, fmt::format("layer_norm_eps = {:g}", model.layerNormEps));
  line(1, fmt::format("final_norm = {}", model.finalNorm ? "true" : "false"));
  line(1, fmt::format("output = {}", toString(model.output)));
  // The Llama family's settings print when they differ from their defaults,
  // so dumps of models without them stay as they were.
  if (model.normType != NormType::LayerNorm)
    line(1, fmt::format("norm_type = {}", toString(model.normType)));
  if (model.tokenTypes != 0)
    line(1, fmt::format("token_types = {}", model.tokenTypes));
  if (model.embedNorm)
    line(1, "embed_norm = true");
  if (model.pooler)
    line(1, "pooler = true");
  if (model.outputBias)
    line(1, "output_bias = true");
  if (model.positions == PositionKind::Rope)
    line(1, fmt::format("rope_theta = {:g}", model.ropeTheta));
  if (model.kvHeads != model.heads)
    line(1, fmt::format("kv_heads = {}", model.kvHeads));
  if (model.headDim * model.heads != model.dModel)
    line(1, fmt::format("head_dim = {}", model.headDim));
  if (!model.bias)
    line(1, "bias = false");
  if (model.attentionBias != model.bias)
    line(1, fmt::format("attention_bias = {}",
                        model.attentionBias ? "true" : "false"));
  // Only imported models say so: .tfm dumps stay as they were.
  if (model.weightNaming != kNnTransformerNaming)
    line(1, fmt::format("weights = {}", model.weightNaming));

  for (const std::optional<Stack> *stack : {&model.encoder, &model.decoder}) {
    if (!*stack)
      continue;
    line(1, fmt::format("{} layers = {}", toString((*stack)->kind),
                        (*stack)->layers));
    for (const Sublayer &sublayer : (*stack)->sublayers) {
      if (sublayer.kind == SublayerKind::FeedForward)
        line(2, sublayer.gated ? "feed_forward(gated)"
                               : toString(sublayer.kind));
      else
        line(2, fmt::format("{} mask = {}", toString(sublayer.kind),
                            toString(sublayer.mask)));
    }
  }
  return out;
}

} // namespace tfmc::frontend
