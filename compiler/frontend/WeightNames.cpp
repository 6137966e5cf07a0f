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

/// The layer index and parameter of `{stack}.layers.{i}.{parameter}`.
std::optional<std::pair<std::string_view, std::string_view>>
splitLayerName(std::string_view canonical,
               std::string_view stack = "decoder") {
  std::string_view rest = canonical;
  if (!consumePrefix(rest, stack) || !consumePrefix(rest, ".layers."))
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

/// BertModel's name (without the `bert.` the task models add) of an
/// nn.Transformer name.
std::optional<std::string> bertName(std::string_view canonical) {
  struct Entry {
    std::string_view ours, theirs;
  };
  static constexpr Entry kModelParameters[] = {
      {"src_embed.weight", "embeddings.word_embeddings.weight"},
      {"src_pos.weight", "embeddings.position_embeddings.weight"},
      {"src_type.weight", "embeddings.token_type_embeddings.weight"},
      {"src_embed_norm.weight", "embeddings.LayerNorm.weight"},
      {"src_embed_norm.bias", "embeddings.LayerNorm.bias"},
      {"pooler.weight", "pooler.dense.weight"},
      {"pooler.bias", "pooler.dense.bias"},
  };
  for (const Entry &entry : kModelParameters)
    if (canonical == entry.ours)
      return std::string(entry.theirs);
  auto layerName = splitLayerName(canonical, "encoder");
  if (!layerName)
    return std::nullopt;
  auto [layer, parameter] = *layerName;
  static constexpr Entry kLayerParameters[] = {
      {"self_attn.q_proj.", "attention.self.query."},
      {"self_attn.k_proj.", "attention.self.key."},
      {"self_attn.v_proj.", "attention.self.value."},
      {"self_attn.out_proj.", "attention.output.dense."},
      {"norm1.", "attention.output.LayerNorm."},
      {"linear1.", "intermediate.dense."},
      {"linear2.", "output.dense."},
      {"norm2.", "output.LayerNorm."},
  };
  for (const Entry &entry : kLayerParameters) {
    std::string_view rest = parameter;
    if (consumePrefix(rest, entry.ours) && (rest == "weight" || rest == "bias"))
      return "encoder.layer." + std::string(layer) + "." +
             std::string(entry.theirs) + std::string(rest);
  }
  return std::nullopt;
}

/// MarianModel's name (without the `model.` MarianMTModel adds) of an
/// nn.Transformer name; `final_logits_bias` is outside MarianModel, so it
/// comes back with `outsideModel` set.
std::optional<std::string> marianName(std::string_view canonical,
                                      bool &outsideModel) {
  outsideModel = false;
  // One table (`shared`) embeds both stacks and gives the tied logits.
  if (canonical == "src_embed.weight" || canonical == "tgt_embed.weight")
    return std::string("shared.weight");
  if (canonical == "generator.bias") {
    outsideModel = true;
    return std::string("final_logits_bias");
  }
  for (std::string_view stack : {"encoder", "decoder"}) {
    auto layerName = splitLayerName(canonical, stack);
    if (!layerName)
      continue;
    auto [layer, parameter] = *layerName;
    struct Entry {
      std::string_view ours, theirs;
    };
    // Sublayer norms in sublayer order: the encoder's norm2 follows its
    // feed-forward, the decoder's norm2 its cross-attention.
    static constexpr Entry kEncoderParameters[] = {
        {"self_attn.", "self_attn."},
        {"norm1.", "self_attn_layer_norm."},
        {"linear1.", "fc1."},
        {"linear2.", "fc2."},
        {"norm2.", "final_layer_norm."},
    };
    static constexpr Entry kDecoderParameters[] = {
        {"self_attn.", "self_attn."},
        {"norm1.", "self_attn_layer_norm."},
        {"multihead_attn.", "encoder_attn."},
        {"norm2.", "encoder_attn_layer_norm."},
        {"linear1.", "fc1."},
        {"linear2.", "fc2."},
        {"norm3.", "final_layer_norm."},
    };
    auto find = [&](const auto &table) -> std::optional<std::string> {
      for (const Entry &entry : table) {
        std::string_view rest = parameter;
        if (consumePrefix(rest, entry.ours))
          return std::string(stack) + ".layers." + std::string(layer) + "." +
                 std::string(entry.theirs) + std::string(rest);
      }
      return std::nullopt;
    };
    return stack == "encoder" ? find(kEncoderParameters)
                              : find(kDecoderParameters);
  }
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
  case WeightNaming::HfBert: {
    auto bert = bertName(canonical);
    if (!bert)
      return std::nullopt;
    // BertModel's state dict has no prefix; the task models' (BertForMaskedLM,
    // BertForSequenceClassification, ...) put the same tensors under
    // `bert.`. Checkpoints converted from the original TensorFlow code name
    // LayerNorm's parameters gamma and beta.
    WeightBinding binding{*bert, {"bert." + *bert}, false};
    std::string_view name = *bert;
    for (auto [ours, theirs] : {std::pair<std::string_view, std::string_view>{
                                    "LayerNorm.weight", "LayerNorm.gamma"},
                                {"LayerNorm.bias", "LayerNorm.beta"}})
      if (name.size() >= ours.size() &&
          name.substr(name.size() - ours.size()) == ours) {
        std::string old =
            std::string(name.substr(0, name.size() - ours.size())) +
            std::string(theirs);
        binding.altNames.push_back(old);
        binding.altNames.push_back("bert." + old);
      }
    return binding;
  }
  case WeightNaming::HfMarian: {
    bool outsideModel = false;
    auto marian = marianName(canonical, outsideModel);
    if (!marian)
      return std::nullopt;
    if (outsideModel)
      return WeightBinding{*marian, {}, false};
    // MarianMTModel's state dict (every opus-mt checkpoint) puts
    // MarianModel's tensors under `model.`; a bare MarianModel's has none.
    // The shared table is tied to each stack's embed_tokens (and lm_head),
    // and a file may keep it under any of those names.
    WeightBinding binding{"model." + *marian, {*marian}, false};
    if (*marian == "shared.weight")
      for (const char *tied :
           {"model.encoder.embed_tokens.weight", "encoder.embed_tokens.weight",
            "model.decoder.embed_tokens.weight", "decoder.embed_tokens.weight",
            "lm_head.weight"})
        binding.altNames.push_back(tied);
    return binding;
  }
  }
  return std::nullopt;
}

} // namespace tfmc::frontend
