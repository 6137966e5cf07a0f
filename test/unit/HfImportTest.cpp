//===- HfImportTest.cpp - Hugging Face configs and weight names -----------===//

#include "compiler/frontend/AST.h"
#include "compiler/frontend/HfConfig.h"
#include "compiler/frontend/HfFamily.h"
#include "compiler/frontend/WeightNames.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

using namespace tfmc::frontend;

namespace {

//===----------------------------------------------------------------------===//
// Hugging Face GPT-2 import and its weight names
//===----------------------------------------------------------------------===//

const char *const kGpt2Config = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
  "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12,
  "n_positions": 1024, "vocab_size": 50257, "summary_type": "cls_index",
  "task_specific_params": {"text-generation": {"max_length": 50}}})";

TEST(HfConfig, Gpt2SmallIsTheSameModelAsGptSmallTfm) {
  ParseResult imported = importHfConfigText(kGpt2Config, "hub/gpt2/config.json");
  ASSERT_TRUE(imported) << imported.error->str();
  const Model &model = *imported.model;
  EXPECT_EQ(model.name, "gpt2");
  EXPECT_EQ(model.weightNaming, "hf-gpt2");
  EXPECT_EQ(model.vocab, 50257);
  EXPECT_EQ(model.dModel, 768);
  EXPECT_EQ(model.heads, 12);
  EXPECT_EQ(model.dFF, 3072);
  EXPECT_EQ(model.maxLen, 1024);
  EXPECT_EQ(model.norm, NormPlacement::Pre);
  EXPECT_EQ(model.activation, Activation::GeluTanh);
  EXPECT_EQ(model.positions, PositionKind::Learned);
  EXPECT_EQ(model.embedScale, EmbedScale::One);
  EXPECT_TRUE(model.finalNorm);
  EXPECT_EQ(model.output, OutputKind::Tied);
  ASSERT_TRUE(model.isDecoderOnly());
  EXPECT_EQ(model.decoder->layers, 12);
  ASSERT_EQ(model.decoder->sublayers.size(), 2u);
  EXPECT_EQ(toString(model.decoder->sublayers[0].mask), "causal + padding");
  EXPECT_EQ(model.decoder->sublayers[1].kind, SublayerKind::FeedForward);
}

TEST(HfConfig, ModelNamedAfterItsFolder) {
  ParseResult imported =
      importHfConfigText(kGpt2Config, "/models/gpt2-medium/config.json");
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported.model->name, "gpt2_medium");
}

TEST(HfConfig, ErrorsNameTheKey) {
  ParseResult bad = importHfConfigText(
      R"({"model_type": "gpt2", "n_embd": 48, "n_head": 4, "n_layer": 1,
          "n_positions": 8, "vocab_size": 9, "activation_function": "gelu_fast"})",
      "m/config.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error->str(),
            "m/config.json: error: key 'activation_function': \"gelu_fast\" "
            "is not supported; expected \"gelu_new\", \"gelu_pytorch_tanh\", "
            "\"gelu\" or \"relu\"");
}

/// A tensor outside the base model: under its one name, without a prefix.
void expectOnlyName(const char *naming, const char *ours, const char *theirs) {
  auto binding = bindWeight(naming, ours);
  ASSERT_TRUE(binding) << ours;
  EXPECT_EQ(binding->name, theirs);
  EXPECT_TRUE(binding->altNames.empty()) << ours;
}

/// Parameters `naming` has no tensor for.
void expectNoName(const char *naming,
                  std::initializer_list<const char *> parameters) {
  for (const char *parameter : parameters)
    EXPECT_FALSE(bindWeight(naming, parameter)) << parameter;
}

TEST(WeightNames, NnTransformerIsTheIdentity) {
  auto binding = bindWeight(kNnTransformerNaming,
                            "decoder.layers.3.self_attn.in_proj_weight");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding->name, "decoder.layers.3.self_attn.in_proj_weight");
  EXPECT_TRUE(binding->altNames.empty());
  EXPECT_FALSE(binding->transposed);
}

TEST(WeightNames, Gpt2) {
  struct Case {
    const char *ours, *theirs;
    bool transposed;
  } cases[] = {
      {"tgt_embed.weight", "wte.weight", false},
      {"tgt_pos.weight", "wpe.weight", false},
      {"decoder.layers.3.self_attn.in_proj_weight", "h.3.attn.c_attn.weight", true},
      {"decoder.layers.3.self_attn.in_proj_bias", "h.3.attn.c_attn.bias", false},
      {"decoder.layers.3.self_attn.out_proj.weight", "h.3.attn.c_proj.weight", true},
      {"decoder.layers.3.self_attn.out_proj.bias", "h.3.attn.c_proj.bias", false},
      {"decoder.layers.11.linear1.weight", "h.11.mlp.c_fc.weight", true},
      {"decoder.layers.11.linear1.bias", "h.11.mlp.c_fc.bias", false},
      {"decoder.layers.0.linear2.weight", "h.0.mlp.c_proj.weight", true},
      {"decoder.layers.0.linear2.bias", "h.0.mlp.c_proj.bias", false},
      {"decoder.layers.0.norm1.weight", "h.0.ln_1.weight", false},
      {"decoder.layers.0.norm2.bias", "h.0.ln_2.bias", false},
      {"decoder.norm.weight", "ln_f.weight", false},
      {"decoder.norm.bias", "ln_f.bias", false},
  };
  for (const Case &c : cases) {
    auto binding = bindWeight("hf-gpt2", c.ours);
    ASSERT_TRUE(binding) << c.ours;
    EXPECT_EQ(binding->name, c.theirs);
    ASSERT_EQ(binding->altNames.size(), 1u);
    EXPECT_EQ(binding->altNames[0], std::string("transformer.") + c.theirs);
    EXPECT_EQ(binding->transposed, c.transposed) << c.ours;
  }
  expectNoName("hf-gpt2", {"src_embed.weight", "generator.weight",
                           "decoder.layers.0.norm3.weight",
                           "decoder.layers.0.multihead_attn.in_proj_weight",
                           "encoder.layers.0.linear1.weight",
                           "decoder.layers.x.linear1.weight"});
}

//===----------------------------------------------------------------------===//
// Hugging Face Llama, Mistral, Qwen2
//===----------------------------------------------------------------------===//

/// TinyLlama-1.1B-Chat-v1.0's config.json as the hub has it.
const char *const kTinyLlamaConfig = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
  "max_position_embeddings": 2048, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 22,
  "num_key_value_heads": 4, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 10000.0, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.35.0",
  "use_cache": true, "vocab_size": 32000})";

/// examples/tinyllama.tfm, written from docs/language.md.
const char *const kTinyLlamaTfm = R"(model tinyllama {
  vocab = 32000
  d_model = 2048
  heads = 32
  kv_heads = 4
  d_ff = 5632
  max_len = 2048
  norm = pre
  norm_type = rms_norm
  layer_norm_eps = 1e-5
  activation = silu
  positions = rope
  rope_theta = 10000.0
  bias = false
  final_norm = true
  output = linear
  decoder(layers = 22) {
    self_attention(mask = causal + padding)
    feed_forward(gated)
  }
})";

TEST(HfConfig, TinyLlamaIsTheSameModelAsItsTfm) {
  ParseResult imported =
      importHfConfigText(kTinyLlamaConfig, "hub/tinyllama/config.json");
  ASSERT_TRUE(imported) << imported.error->str();
  ParseResult written = parseModel(kTinyLlamaTfm, "tinyllama.tfm");
  ASSERT_TRUE(written) << written.error->str();
  Model model = *imported.model;
  EXPECT_EQ(model.weightNaming, "hf-llama");
  ASSERT_TRUE(findWeightNaming(model.weightNaming));
  EXPECT_FALSE(findWeightNaming(model.weightNaming)->packedProjections);
  // Only the weights' names (and where the model was written) differ: the
  // same dump otherwise.
  model.weightNaming = kNnTransformerNaming;
  Model expected = *written.model;
  expected.loc = model.loc;
  EXPECT_EQ(dumpModel(model), dumpModel(expected));
}

TEST(HfConfig, Mistral7BHasItsWindow) {
  ParseResult imported = importHfConfigText(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "sliding_window": 4096, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0",
    "use_cache": true, "vocab_size": 32000})",
                                            "hub/Mistral-7B-v0.1/config.json");
  ASSERT_TRUE(imported) << imported.error->str();
  const Model &model = *imported.model;
  EXPECT_EQ(model.name, "Mistral_7B_v0_1");
  EXPECT_EQ(model.kvHeads, 8);
  EXPECT_EQ(model.headDim, 128);
  EXPECT_FALSE(model.attentionBias);
  EXPECT_EQ(model.output, OutputKind::Linear);
  EXPECT_EQ(toString(model.decoder->sublayers[0].mask),
            "causal + padding + window(4096)");
}

TEST(HfConfig, Qwen2HasQkvBiasesOnly) {
  ParseResult imported = importHfConfigText(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
    "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
    "max_position_embeddings": 131072, "max_window_layers": 24,
    "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 131072,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})",
                                            "hub/Qwen2-0.5B/config.json");
  ASSERT_TRUE(imported) << imported.error->str();
  const Model &model = *imported.model;
  EXPECT_FALSE(model.bias);
  EXPECT_TRUE(model.attentionBias);
  EXPECT_EQ(model.headDim, 64);
  EXPECT_EQ(model.ropeTheta, 1000000.0);
  EXPECT_EQ(model.output, OutputKind::Tied);
  EXPECT_EQ(toString(model.decoder->sublayers[0].mask), "causal + padding");
}

TEST(WeightNames, HfLlama) {
  struct Case {
    const char *ours, *theirs;
  } cases[] = {
      {"tgt_embed.weight", "embed_tokens.weight"},
      {"decoder.layers.3.self_attn.q_proj.weight", "layers.3.self_attn.q_proj.weight"},
      {"decoder.layers.3.self_attn.q_proj.bias", "layers.3.self_attn.q_proj.bias"},
      {"decoder.layers.3.self_attn.k_proj.weight", "layers.3.self_attn.k_proj.weight"},
      {"decoder.layers.3.self_attn.k_proj.bias", "layers.3.self_attn.k_proj.bias"},
      {"decoder.layers.3.self_attn.v_proj.weight", "layers.3.self_attn.v_proj.weight"},
      {"decoder.layers.3.self_attn.v_proj.bias", "layers.3.self_attn.v_proj.bias"},
      {"decoder.layers.3.self_attn.out_proj.weight", "layers.3.self_attn.o_proj.weight"},
      {"decoder.layers.21.gate.weight", "layers.21.mlp.gate_proj.weight"},
      {"decoder.layers.21.linear1.weight", "layers.21.mlp.up_proj.weight"},
      {"decoder.layers.21.linear2.weight", "layers.21.mlp.down_proj.weight"},
      {"decoder.layers.0.norm1.weight", "layers.0.input_layernorm.weight"},
      {"decoder.layers.0.norm2.weight", "layers.0.post_attention_layernorm.weight"},
      {"decoder.norm.weight", "norm.weight"},
  };
  for (const Case &c : cases) {
    auto binding = bindWeight("hf-llama", c.ours);
    ASSERT_TRUE(binding) << c.ours;
    EXPECT_EQ(binding->name, std::string("model.") + c.theirs);
    ASSERT_EQ(binding->altNames.size(), 1u);
    EXPECT_EQ(binding->altNames[0], c.theirs);
    EXPECT_FALSE(binding->transposed) << c.ours;
  }
  expectOnlyName("hf-llama", "generator.weight", "lm_head.weight");
  // What HF Llama has no tensor for: packed projections, biases of o_proj,
  // the MLP, the norms and the head, positions, an encoder.
  expectNoName("hf-llama",
               {"decoder.layers.0.self_attn.in_proj_weight",
                "decoder.layers.0.self_attn.out_proj.bias",
                "decoder.layers.0.gate.bias", "decoder.layers.0.linear1.bias",
                "decoder.layers.0.norm1.bias", "decoder.norm.bias",
                "generator.bias", "tgt_pos.weight",
                "encoder.layers.0.linear1.weight",
                "decoder.layers.x.gate.weight"});
}

//===----------------------------------------------------------------------===//
// BERT's and Marian's weight names
//===----------------------------------------------------------------------===//

/// A name pair: the builder's parameter and the checkpoint's tensor.
using Renamed = std::pair<const char *, const char *>;

/// Each pair's binding under `naming`: the tensor bare and under `prefix`,
/// the prefixed one first when `prefixedFirst`, nothing transposed.
void expectBareOrPrefixed(const char *naming, std::initializer_list<Renamed> pairs,
                          const std::string &prefix, bool prefixedFirst) {
  for (const auto &[ours, theirs] : pairs) {
    auto binding = bindWeight(naming, ours);
    ASSERT_TRUE(binding) << ours;
    std::string bare = theirs, prefixed = prefix + theirs;
    EXPECT_EQ(binding->name, prefixedFirst ? prefixed : bare);
    EXPECT_EQ(binding->altNames,
              std::vector<std::string>{prefixedFirst ? bare : prefixed});
    EXPECT_FALSE(binding->transposed) << ours;
  }
}

TEST(WeightNames, Bert) {
  expectBareOrPrefixed(
      "hf-bert",
      {{"src_embed.weight", "embeddings.word_embeddings.weight"},
       {"src_pos.weight", "embeddings.position_embeddings.weight"},
       {"src_type.weight", "embeddings.token_type_embeddings.weight"},
       {"pooler.weight", "pooler.dense.weight"},
       {"encoder.layers.2.self_attn.k_proj.bias", "encoder.layer.2.attention.self.key.bias"},
       {"encoder.layers.2.self_attn.out_proj.weight", "encoder.layer.2.attention.output.dense.weight"},
       {"encoder.layers.0.linear1.weight", "encoder.layer.0.intermediate.dense.weight"},
       {"encoder.layers.0.linear2.bias", "encoder.layer.0.output.dense.bias"}},
      "bert.", /*prefixedFirst=*/false);
  // LayerNorms: also old checkpoints' gamma and beta, bare and under bert.
  for (auto [ours, theirs, old] :
       {std::tuple<const char *, std::string, std::string>{
            "encoder.layers.1.norm2.weight",
            "encoder.layer.1.output.LayerNorm.weight",
            "encoder.layer.1.output.LayerNorm.gamma"},
        {"src_embed_norm.bias", "embeddings.LayerNorm.bias",
         "embeddings.LayerNorm.beta"}}) {
    auto norm = bindWeight("hf-bert", ours);
    ASSERT_TRUE(norm) << ours;
    EXPECT_EQ(norm->name, theirs);
    EXPECT_EQ(norm->altNames,
              (std::vector<std::string>{"bert." + theirs, old, "bert." + old}));
  }
  expectNoName("hf-bert",
               {"src_embed.bias", "src_embed_norm.gamma", "tgt_embed.weight",
                "decoder.layers.0.linear1.weight",
                "encoder.layers.0.gate.weight",
                "encoder.layers.0.self_attn.in_proj_weight",
                "generator.weight"});
}

TEST(WeightNames, Marian) {
  expectBareOrPrefixed(
      "hf-marian",
      {{"encoder.layers.0.self_attn.q_proj.weight", "encoder.layers.0.self_attn.q_proj.weight"},
       {"encoder.layers.1.norm1.bias", "encoder.layers.1.self_attn_layer_norm.bias"},
       {"encoder.layers.1.norm2.weight", "encoder.layers.1.final_layer_norm.weight"},
       {"encoder.layers.1.linear2.bias", "encoder.layers.1.fc2.bias"},
       {"decoder.layers.0.multihead_attn.out_proj.weight", "decoder.layers.0.encoder_attn.out_proj.weight"},
       {"decoder.layers.0.norm2.weight", "decoder.layers.0.encoder_attn_layer_norm.weight"},
       {"decoder.layers.0.norm3.bias", "decoder.layers.0.final_layer_norm.bias"},
       {"decoder.layers.5.linear1.weight", "decoder.layers.5.fc1.weight"}},
      "model.", /*prefixedFirst=*/true);
  for (const char *table : {"src_embed.weight", "tgt_embed.weight"}) {
    auto shared = bindWeight("hf-marian", table);
    ASSERT_TRUE(shared);
    EXPECT_EQ(shared->name, "model.shared.weight");
    EXPECT_EQ(shared->altNames,
              (std::vector<std::string>{
                  "shared.weight", "model.encoder.embed_tokens.weight",
                  "encoder.embed_tokens.weight",
                  "model.decoder.embed_tokens.weight",
                  "decoder.embed_tokens.weight", "lm_head.weight"}));
  }
  expectOnlyName("hf-marian", "generator.bias", "final_logits_bias");
  expectNoName("hf-marian", {"encoder.layers.0.norm3.weight",
                             "encoder.layers.0.multihead_attn.q_proj.weight",
                             "decoder.norm.weight", "generator.weight",
                             "src_pos.weight"});
}

//===----------------------------------------------------------------------===//
// The registry of families
//===----------------------------------------------------------------------===//

TEST(HfFamilies, ModelTypesInAlphabeticalOrder) {
  // Every registered model_type once, sorted: the order of the message that
  // lists them. (A new family adds its own; the ones here stay.)
  std::vector<std::string_view> types = hf::hfModelTypes();
  EXPECT_TRUE(std::is_sorted(types.begin(), types.end()));
  EXPECT_EQ(std::adjacent_find(types.begin(), types.end()), types.end());
  for (std::string_view type :
       {"bert", "gemma2", "gpt2", "llama", "marian", "mistral", "phi3",
        "qwen2"})
    EXPECT_NE(std::find(types.begin(), types.end(), type), types.end())
        << type;
  ParseResult unknown =
      importHfConfigText(R"({"model_type": "gemma"})", "m/config.json");
  ASSERT_FALSE(unknown);
  std::string list;
  for (std::size_t i = 0; i < types.size(); ++i)
    list += std::string(i == 0 ? "" : i + 1 == types.size() ? " and " : ", ") +
            "\"" + std::string(types[i]) + "\"";
  EXPECT_EQ(unknown.error->str(),
            "m/config.json: error: key 'model_type': \"gemma\" is not "
            "supported; tfmc imports Hugging Face " + list + " configs");
  auto [llama, entry] = hf::findHfFamily("qwen2");
  ASSERT_TRUE(llama);
  EXPECT_EQ(entry->familyName, "Qwen2");
  EXPECT_EQ(hf::findHfFamily("mistral").first, llama);
  EXPECT_EQ(llama->weights.name, "hf-llama");
  EXPECT_FALSE(hf::findHfFamily("gemma").first);
}

TEST(HfFamilies, EachFamilyRegistersItsWeightNaming) {
  for (std::string_view type : hf::hfModelTypes()) {
    const hf::HfFamily *family = hf::findHfFamily(type).first;
    ASSERT_TRUE(family) << type;
    const WeightNaming *naming = findWeightNaming(family->weights.name);
    ASSERT_TRUE(naming) << type;
    EXPECT_EQ(naming->bind, family->weights.bind) << type;
  }
  ASSERT_TRUE(findWeightNaming(kNnTransformerNaming));
  EXPECT_TRUE(findWeightNaming(kNnTransformerNaming)->packedProjections);
  EXPECT_TRUE(findWeightNaming("hf-gpt2")->packedProjections);
}

hf::HfFamily familyReading(std::string_view type, std::string naming) {
  return hf::HfFamily(
      {{type, "Test"}}, [](hf::ConfigReader &, Model &) { return true; },
      {std::move(naming), false,
       [](std::string_view) -> std::optional<WeightBinding> {
         return std::nullopt;
       }});
}

TEST(HfFamiliesDeathTest, ASecondRegistrationIsFatal) {
  // A model_type another family registered, and a weight naming another
  // family registered: bugs in the family files, fatal at start-up.
  EXPECT_DEATH(hf::HfFamilyRegistration(familyReading("llama", "hf-test")),
               "model_type \"llama\" is registered by two Hugging Face "
               "families");
  EXPECT_DEATH(hf::HfFamilyRegistration(familyReading("test", "hf-gpt2")),
               "the weight naming 'hf-gpt2' is registered twice");
}

} // namespace
