//===- WeightNames.cpp - Where a parameter is in a weights file -----------===//

#include "compiler/frontend/WeightNames.h"

#include <cctype>
#include <string_view>

namespace tfmc::frontend {
namespace {

bool consumePrefix(std::string_view &text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

/// The GPT-2 name (without `transformer.`) of an nn.Transformer name, and
/// whether Conv1D stores it transposed.
std::optional<std::pair<std::string, bool>>
gpt2Name(std::string_view canonical) {
  struct Entry {
    std::string_view ours, theirs;
    bool transposed;
  };
  if (canonical == "tgt_embed.weight")
    return std::make_pair(std::string("wte.weight"), false);
  if (canonical == "tgt_pos.weight")
    return std::make_pair(std::string("wpe.weight"), false);
  if (canonical == "decoder.norm.weight")
    return std::make_pair(std::string("ln_f.weight"), false);
  if (canonical == "decoder.norm.bias")
    return std::make_pair(std::string("ln_f.bias"), false);

  std::string_view rest = canonical;
  if (!consumePrefix(rest, "decoder.layers."))
    return std::nullopt;
  std::size_t digits = 0;
  while (digits < rest.size() &&
         std::isdigit(static_cast<unsigned char>(rest[digits])))
    ++digits;
  if (digits == 0 || digits >= rest.size() || rest[digits] != '.')
    return std::nullopt;
  std::string_view layer = rest.substr(0, digits);
  std::string_view parameter = rest.substr(digits + 1);
  static constexpr Entry kLayerParameters[] = {
      {"self_attn.in_proj_weight", "attn.c_attn.weight", true},
      {"self_attn.in_proj_bias", "attn.c_attn.bias", false},
      {"self_attn.out_proj.weight", "attn.c_proj.weight", true},
      {"self_attn.out_proj.bias", "attn.c_proj.bias", false},
      {"linear1.weight", "mlp.c_fc.weight", true},
      {"linear1.bias", "mlp.c_fc.bias", false},
      {"linear2.weight", "mlp.c_proj.weight", true},
      {"linear2.bias", "mlp.c_proj.bias", false},
      {"norm1.weight", "ln_1.weight", false},
      {"norm1.bias", "ln_1.bias", false},
      {"norm2.weight", "ln_2.weight", false},
      {"norm2.bias", "ln_2.bias", false},
  };
  for (const Entry &entry : kLayerParameters)
    if (parameter == entry.ours)
      return std::make_pair("h." + std::string(layer) + "." +
                                std::string(entry.theirs),
                            entry.transposed);
  return std::nullopt;
}

} // namespace

std::optional<WeightBinding> bindWeight(WeightNaming naming,
                                        const std::string &canonical) {
  switch (naming) {
  case WeightNaming::NnTransformer:
    return WeightBinding{canonical, {}, false};
  case WeightNaming::HfGpt2: {
    auto gpt2 = gpt2Name(canonical);
    if (!gpt2)
      return std::nullopt;
    // GPT2Model's state dict has no prefix (the hub's `gpt2` checkpoints);
    // GPT2LMHeadModel's puts the same tensors under `transformer.`.
    return WeightBinding{gpt2->first, {"transformer." + gpt2->first},
                         gpt2->second};
  }
  }
  return std::nullopt;
}

} // namespace tfmc::frontend
