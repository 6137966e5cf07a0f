//===- WeightNames.h - Where a parameter is in a weights file ---*- C++ -*-===//
//
// The builder names every parameter as PyTorch's nn.Transformer does
// (docs/language.md's weight names: `decoder.layers.3.self_attn.in_proj_weight`).
// A model imported from another framework reads the same parameters under
// that framework's names and layouts; this maps one to the other, so the
// builder, the plan and the runtime agree on what the file holds.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_WEIGHTNAMES_H
#define TFMC_FRONTEND_WEIGHTNAMES_H

#include "compiler/frontend/AST.h"

#include <optional>
#include <string>
#include <vector>

namespace tfmc::frontend {

/// A parameter as a weights file holds it.
struct WeightBinding {
  std::string name;                  ///< the name looked up first
  std::vector<std::string> altNames; ///< tried in order when `name` is absent
  /// The file stores the transpose of the [out, in] matrix the builder uses
  /// (Hugging Face's Conv1D keeps [in, out]).
  bool transposed = false;
};

/// Where the builder's parameter `canonical` is in a file named by `naming`.
/// nn.Transformer naming is the identity. Hugging Face GPT-2 maps a
/// decoder-only, pre-norm, learned-positions, final-norm model:
///   tgt_embed.weight                          -> wte.weight
///   tgt_pos.weight                            -> wpe.weight
///   decoder.layers.i.self_attn.in_proj_*      -> h.i.attn.c_attn.* (weight transposed)
///   decoder.layers.i.self_attn.out_proj.*     -> h.i.attn.c_proj.* (weight transposed)
///   decoder.layers.i.linear1.*, linear2.*     -> h.i.mlp.c_fc.*, h.i.mlp.c_proj.* (weights transposed)
///   decoder.layers.i.norm1.*, norm2.*         -> h.i.ln_1.*, h.i.ln_2.*
///   decoder.norm.*                            -> ln_f.*
/// each also under `transformer.` (GPT2LMHeadModel's state dict) as the
/// alternative. Hugging Face Llama (Mistral, Qwen2: LlamaForCausalLM's
/// names) has separate Q/K/V projections and the gated MLP, nothing
/// transposed:
///   tgt_embed.weight                          -> model.embed_tokens.weight
///   decoder.layers.i.self_attn.{q,k,v}_proj.* -> model.layers.i.self_attn.{q,k,v}_proj.*
///   decoder.layers.i.self_attn.out_proj.weight-> model.layers.i.self_attn.o_proj.weight
///   decoder.layers.i.gate/linear1/linear2.weight -> model.layers.i.mlp.gate_proj/up_proj/down_proj.weight
///   decoder.layers.i.norm1.weight, norm2.weight -> model.layers.i.input_layernorm.weight,
///                                                post_attention_layernorm.weight
///   decoder.norm.weight                       -> model.norm.weight
///   generator.weight                          -> lm_head.weight
/// each but lm_head also without `model.` (a bare LlamaModel's state dict)
/// as the alternative. BERT (BertModel's names, with `bert.` as the
/// alternative; gamma/beta for old LayerNorm names) has separate Q/K/V:
///   src_embed/src_pos/src_type.weight -> embeddings.{word,position,token_type}_embeddings.weight
///   src_embed_norm.*                  -> embeddings.LayerNorm.*
///   encoder.layers.i.self_attn.{q,k,v}_proj.* -> encoder.layer.i.attention.self.{query,key,value}.*
///   encoder.layers.i.self_attn.out_proj.*     -> encoder.layer.i.attention.output.dense.*
///   encoder.layers.i.norm1.*, linear1.*, linear2.*, norm2.* ->
///     attention.output.LayerNorm.*, intermediate.dense.*, output.dense.*, output.LayerNorm.*
///   pooler.*                          -> pooler.dense.*
/// Marian (MarianModel's names under `model.`, bare as the alternative):
///   src_embed.weight, tgt_embed.weight -> model.shared.weight (or a tied copy)
///   {encoder,decoder}.layers.i.self_attn.*     -> the same names
///   decoder.layers.i.multihead_attn.*          -> decoder.layers.i.encoder_attn.*
///   norm1 / norm2 / norm3, linear1 / linear2   -> self_attn_layer_norm /
///     (encoder) final_layer_norm, (decoder) encoder_attn_layer_norm /
///     final_layer_norm, fc1 / fc2
///   generator.bias                    -> final_logits_bias
/// Returns nullopt for a parameter the naming has no
/// name for (an encoder's, a GPT-2 generator's, a Llama bias other than
/// q/k/v_proj's).
std::optional<WeightBinding> bindWeight(WeightNaming naming,
                                        const std::string &canonical);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_WEIGHTNAMES_H
