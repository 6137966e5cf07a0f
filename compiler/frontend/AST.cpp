//===- AST.cpp - Printing the parsed form of a .tfm description -----------===//

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Settings.h"
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

// The settings' enums are spelt by Settings.cpp's table.

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
    add(mask.fullEvery ? fmt::format("window({}, full_every = {})",
                                     mask.window, mask.fullEvery)
                       : fmt::format("window({})", mask.window));
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

  // Every setting in the table's order (Settings.h), defaults included
  // but for the later families' settings, which print where they matter:
  // a dump says exactly what will be compiled.
  for (const Setting &setting : modelSettings())
    if (settingShown(setting, model))
      line(1, fmt::format("{} = {}", setting.name, settingValue(setting, model)));
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
