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

/// The layer index and parameter of `decoder.layers.{i}.{parameter}`.
std::optional<std::pair<std::string_view, std::string_view>>
splitLayerName(std::string_view canonical) {
  std::string_view rest = canonical;
  if (!consumePrefix(rest, "decoder.layers."))
    return std::nullopt;
  std::size_t digits = 0;
  while (digits < rest.size() &&
         std::isdigit(static_cast<unsigned char>(rest[digits])))
    ++digits;
  if (digits == 0 || digits >= rest.size() || rest[digits] != '.')
    return std::nullopt;
  return std::make_pair(rest.substr(0, digits), rest.substr(digits + 1));
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

  auto layerName = splitLayerName(canonical);
  if (!layerName)
    return std::nullopt;
  auto [layer, parameter] = *layerName;
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

/// LlamaModel's name (without the `model.` LlamaForCausalLM adds) of an
/// nn.Transformer name; `lm_head.weight` is outside LlamaModel, so it
/// comes back with `outsideModel` set.
std::optional<std::string> llamaName(std::string_view canonical,
                                     bool &outsideModel) {
  outsideModel = false;
  if (canonical == "tgt_embed.weight")
    return std::string("embed_tokens.weight");
  if (canonical == "decoder.norm.weight")
    return std::string("norm.weight");
  if (canonical == "generator.weight") {
    outsideModel = true;
    return std::string("lm_head.weight");
  }
  auto layerName = splitLayerName(canonical);
  if (!layerName)
    return std::nullopt;
  auto [layer, parameter] = *layerName;
  struct Entry {
    std::string_view ours, theirs;
  };
  static constexpr Entry kLayerParameters[] = {
      {"self_attn.q_proj.weight", "self_attn.q_proj.weight"},
      {"self_attn.q_proj.bias", "self_attn.q_proj.bias"},
      {"self_attn.k_proj.weight", "self_attn.k_proj.weight"},
      {"self_attn.k_proj.bias", "self_attn.k_proj.bias"},
      {"self_attn.v_proj.weight", "self_attn.v_proj.weight"},
      {"self_attn.v_proj.bias", "self_attn.v_proj.bias"},
      {"self_attn.out_proj.weight", "self_attn.o_proj.weight"},
      {"gate.weight", "mlp.gate_proj.weight"},
      {"linear1.weight", "mlp.up_proj.weight"},
      {"linear2.weight", "mlp.down_proj.weight"},
      {"norm1.weight", "input_layernorm.weight"},
      {"norm2.weight", "post_attention_layernorm.weight"},
  };
  for (const Entry &entry : kLayerParameters)
    if (parameter == entry.ours)
      return "layers." + std::string(layer) + "." + std::string(entry.theirs);
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
  case WeightNaming::HfLlama: {
    bool outsideModel = false;
    auto llama = llamaName(canonical, outsideModel);
    if (!llama)
      return std::nullopt;
    if (outsideModel)
      return WeightBinding{*llama, {}, false};
    // LlamaForCausalLM's state dict (every hub checkpoint) puts LlamaModel's
    // tensors under `model.`; a bare LlamaModel's has no prefix.
    return WeightBinding{"model." + *llama, {*llama}, false};
  }
  }
  return std::nullopt;
}

} // namespace tfmc::frontend
