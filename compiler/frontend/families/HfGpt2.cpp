//===- HfGpt2.cpp - Hugging Face GPT-2 ------------------------------------===//
//
// GPT-2 (transformers' GPT2Config, GPT2LMHeadModel) as tfmc sees it: a
// decoder-only stack of n_layer pre-norm layers (ln_1 -> causal
// self-attention -> residual, ln_2 -> MLP -> residual), learned positions
// (wpe) added to the unscaled token embedding (wte), a final ln_f, and logits
// from the tied embedding. Attention masks causal + padding (the
// attention_mask input), as GPT2Model does.
//
// Weights (hf-gpt2), each also under `transformer.` (GPT2LMHeadModel's
// state dict) as the alternative:
//   tgt_embed.weight                          -> wte.weight
//   tgt_pos.weight                            -> wpe.weight
//   decoder.layers.i.self_attn.in_proj_*      -> h.i.attn.c_attn.* (weight transposed)
//   decoder.layers.i.self_attn.out_proj.*     -> h.i.attn.c_proj.* (weight transposed)
//   decoder.layers.i.linear1.*, linear2.*     -> h.i.mlp.c_fc.*, h.i.mlp.c_proj.* (weights transposed)
//   decoder.layers.i.norm1.*, norm2.*         -> h.i.ln_1.*, h.i.ln_2.*
//   decoder.norm.*                            -> ln_f.*
// Conv1D keeps [in, out], hence the transposes; Q, K and V are one packed
// c_attn.
//
// GGUF (GgufFamily.h): llama.cpp's "gpt2" architecture reads as a gpt2
// config; its tensors bound through hf-gpt2's names, nothing transposed
// (llama.cpp's convert_hf_to_gguf.py transposes the Conv1D weights to
// [out, in]):
//   wte, wpe                   -> token_embd, position_embd
//   h.i.ln_1, h.i.ln_2         -> blk.i.attn_norm, blk.i.ffn_norm
//   h.i.attn.c_attn, c_proj    -> blk.i.attn_qkv, blk.i.attn_output
//   h.i.mlp.c_fc, c_proj       -> blk.i.ffn_up, blk.i.ffn_down
//   ln_f                       -> output_norm
//
// Tokens: GPT-2's checkpoints ship vocab.json and merges.txt (or
// tokenizer.json), and a prompt gets no BOS; the config's token ids are
// accepted as they are (generation reads eos_token_id from the directory
// at run time).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/GgufFamily.h"
#include "compiler/frontend/HfFamily.h"
#include "compiler/frontend/Limits.h"

#include <fmt/format.h>

namespace tfmc::frontend::hf {
namespace {

bool readGpt2(ConfigReader &config, Model &model) {
  int64_t layers = 0;
  if (!config.requiredSizes(
          {{"n_embd", &model.dModel}, {"n_head", &model.heads},
           {"n_layer", &layers}, {"n_positions", &model.maxLen},
           {"vocab_size", &model.vocab}}) ||
      !config.dividedHeads(model, "n_embd", "n_head"))
    return false;

  // n_inner: null (or absent) means 4 * n_embd, as in GPT2MLP.
  model.dFF = 4 * model.dModel;
  if (!config.size("n_inner", model.dFF, /*nullAllowed=*/true))
    return false;
  if (model.dFF > kMaxDFF)
    return config.failKey("n_inner",
                          fmt::format("null means 4 * n_embd = {}, which is "
                                      "too large (maximum {})",
                                      model.dFF, kMaxDFF));

  // GPT2Config's default activation: gelu_new.
  model.activation = Activation::GeluTanh;
  model.layerNormEps = 1e-5;
  if (!config.activation("activation_function",
                         {"gelu_new", "gelu_pytorch_tanh", "gelu", "relu"},
                         model.activation) ||
      !config.positiveNumber("layer_norm_epsilon", model.layerNormEps))
    return false;

  int64_t context = model.maxLen;
  if (!config.size("n_ctx", context) ||
      !config.agrees("n_ctx", context, "n_positions", model.maxLen,
                     "tfmc needs one context length"))
    return false;

  // Boolean switches: the value that matches tfmc's GPT-2 is accepted, the
  // other is an error (it would change the model).
  struct Switch {
    const char *key;
    bool supported;
    const char *why;
  } switches[] = {
      {"tie_word_embeddings", true,
       "tfmc's GPT-2 computes logits from wte (a tied output)"},
      {"scale_attn_weights", true,
       "tfmc's attention always scales scores by 1/sqrt(head size)"},
      {"scale_attn_by_inverse_layer_idx", false,
       "tfmc does not scale attention by 1/(layer + 1)"},
      {"reorder_and_upcast_attn", false,
       "tfmc has no reordered, upcast attention"},
      {"add_cross_attention", false,
       "tfmc's GPT-2 is decoder-only, without cross-attention"},
  };
  for (const Switch &flag : switches)
    if (!config.onlySupported(flag.key, flag.supported, flag.why))
      return false;

  model.norm = NormPlacement::Pre;
  model.positions = PositionKind::Learned;
  model.embedScale = EmbedScale::One;
  model.finalNorm = true;
  model.output = OutputKind::Tied;

  MaskSpec causalPadding;
  causalPadding.causal = causalPadding.padding = true;
  model.decoder = importedStack(model, StackKind::Decoder, layers,
                                {{SublayerKind::SelfAttention, causalPadding},
                                 {SublayerKind::FeedForward}});
  return true;
}

/// GPT2Model's name of an nn.Transformer name: GPT-2 keeps the tensors
/// bare (the hub's `gpt2` checkpoints), GPT2LMHeadModel's state dict under
/// `transformer.`.
std::optional<WeightBinding> bindGpt2Weight(std::string_view canonical) {
  std::optional<std::string> name;
  bool conv1d = false;
  if (auto layerName = splitLayerName(canonical)) {
    auto [layer, parameter] = *layerName;
    name = renamed(parameter,
                   {{"self_attn.in_proj_", "attn.c_attn."},
                    {"self_attn.out_proj.", "attn.c_proj."},
                    {"linear1.", "mlp.c_fc."}, {"linear2.", "mlp.c_proj."}},
                   {"weight", "bias"});
    conv1d = name.has_value();
    if (!conv1d)
      name = renamed(parameter, {{"norm1.", "ln_1."}, {"norm2.", "ln_2."}},
                     {"weight", "bias"});
    if (name)
      name = "h." + std::string(layer) + "." + *name;
  } else {
    name = renamed(canonical, {{"tgt_embed.", "wte."}, {"tgt_pos.", "wpe."}},
                   {"weight"});
    if (!name)
      name = renamed(canonical, {{"decoder.norm.", "ln_f."}},
                     {"weight", "bias"});
  }
  if (!name)
    return std::nullopt;
  WeightBinding binding =
      bareOrPrefixed(*name, "transformer.", /*prefixedFirst=*/false);
  // Conv1D keeps its weights [in, out].
  std::string_view weight = ".weight";
  binding.transposed = conv1d && name->size() > weight.size() &&
                       name->compare(name->size() - weight.size(),
                                     weight.size(), weight) == 0;
  return binding;
}

HfFamily gpt2() {
  HfFamily family({{"gpt2", "GPT-2"}}, readGpt2,
                  {"hf-gpt2", /*packedProjections=*/true, bindGpt2Weight});
  family.tokens.keys = pretrainedTokenKeys();
  // n_ctx after n_positions, which is blamed for max_len.
  family.sizeKeys = {{"n_embd", "d_model"},      {"n_head", "heads"},
                     {"n_layer", "layers"},      {"n_positions", "max_len"},
                     {"n_ctx", "max_len"},       {"vocab_size", "vocab"},
                     {"n_inner", "d_ff"}};
  family.honouredKeys = {
      "model_type", "n_embd", "n_head", "n_layer", "n_positions",
      "vocab_size", "n_inner", "activation_function", "layer_norm_epsilon",
      "n_ctx", "tie_word_embeddings", "scale_attn_weights",
      "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
      "add_cross_attention"};
  // Dropout (inference has none), the heads of other tasks
  // (GPT2DoubleHeadsModel's summary, sequence classification), caching,
  // training and bookkeeping.
  family.ignoredKeys = {
      "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_first_dropout",
      "summary_type", "summary_use_proj", "summary_activation",
      "summary_proj_to_labels", "task_specific_params", "id2label",
      "label2id", "_num_labels", "problem_type", "use_cache", "output_past",
      "initializer_range", "gradient_checkpointing", "architectures",
      "_name_or_path", "transformers_version", "torch_dtype"};
  return family;
}

const HfFamilyRegistration registration(gpt2());

// GGUF.

std::optional<WeightBinding> bindGgufGpt2(std::string_view canonical) {
  std::optional<WeightBinding> hf =
      bindWeight("hf-gpt2", std::string(canonical));
  if (!hf)
    return std::nullopt;
  std::string_view name = hf->name;
  if (consumePrefix(name, "h."))
    return ggufBlockBinding(
        name, {{"ln_1.", "attn_norm."}, {"ln_2.", "ffn_norm."},
               {"attn.c_attn.", "attn_qkv."}, {"attn.c_proj.", "attn_output."},
               {"mlp.c_fc.", "ffn_up."}, {"mlp.c_proj.", "ffn_down."}});
  return ggufBinding(renamed(name,
                             {{"wte.", "token_embd."},
                              {"wpe.", "position_embd."},
                              {"ln_f.", "output_norm."}},
                             {"weight", "bias"}));
}

const WeightNamingRegistration ggufGpt2Naming(
    {"gguf-gpt2", /*packedProjections=*/true, bindGgufGpt2});

const GgufArchitectureRegistration ggufGpt2(
    {"gpt2",
     "gpt2",
     {{"context_length", "n_positions", GgufExpect::Count},
      {"embedding_length", "n_embd", GgufExpect::Count},
      {"feed_forward_length", "n_inner", GgufExpect::Count},
      {"block_count", "n_layer", GgufExpect::Count},
      {"attention.head_count", "n_head", GgufExpect::Count},
      {"attention.layer_norm_epsilon", "layer_norm_epsilon", GgufExpect::Float},
      {"vocab_size", "vocab_size", GgufExpect::Count}},
     {},
     "gguf-gpt2"});

} // namespace
} // namespace tfmc::frontend::hf
