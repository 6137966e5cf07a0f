//===- AST.h - The parsed form of a .tfm model description ------*- C++ -*-===//
//
// The AST is what the parser produces and what both `--emit ast` and the
// AST -> tfm builder read. It holds settings after defaults and validation,
// so every consumer sees a model that is known to be well formed: sizes are
// positive, d_model % heads == 0, cross-attention has an encoder, and so on.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_AST_H
#define TFMC_FRONTEND_AST_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::frontend {

/// A position in a source file; line and column count from 1.
struct SourceLoc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
};

/// Where each sublayer's norm is: after the residual sum (post: x =
/// norm(x + f(x))), before the sublayer (pre: x = x + f(norm(x))), or both
/// around it (sandwich, Gemma 2's: x = x + post_norm(f(pre_norm(x)))).
enum class NormPlacement { Post, Pre, Sandwich };
/// LayerNorm (weight and bias) or RMSNorm (x · rsqrt(mean(x²) + eps) · w).
enum class NormType { LayerNorm, RmsNorm };
enum class Activation { Relu, Gelu, GeluTanh, Silu };
/// Rope rotates Q and K in each attention ("rotate half" pairs (i, i + Dh/2),
/// Hugging Face Llama's layout) instead of adding to the embedding.
enum class PositionKind { Sinusoidal, SinusoidalHalves, Learned, Rope };

/// How rope's frequencies are scaled (Model::ropeScaling).
enum class RopeScaling { None, Linear, Llama3, LongRope };
enum class EmbedScale { One, SqrtDModel };
enum class OutputKind { Linear, Tied, None };
enum class StackKind { Encoder, Decoder };
enum class SublayerKind { SelfAttention, CrossAttention, FeedForward };
/// The weight naming of .tfm models: PyTorch's nn.Transformer names
/// (Model::weightNaming).
inline constexpr const char kNnTransformerNaming[] = "nn-transformer";

/// Which masks an attention sublayer applies. `window == 0` means no window.
/// With `fullEvery` K (0: none), every K-th layer (layers K - 1, 2K - 1, ...)
/// attends without the window: Gemma 2's alternation is K = 2 (the window
/// on layers 0, 2, 4, ...).
struct MaskSpec {
  bool causal = false;
  bool padding = false;
  int64_t window = 0;
  int64_t fullEvery = 0;

  bool isNone() const { return !causal && !padding && window == 0; }
  /// The window layer `layer` (from 0) applies; 0: none.
  int64_t windowAt(int64_t layer) const {
    return fullEvery > 0 && (layer + 1) % fullEvery == 0 ? 0 : window;
  }
};

struct Sublayer {
  SublayerKind kind = SublayerKind::FeedForward;
  MaskSpec mask; // Only meaningful for the two attention kinds.
  /// feed_forward(gated): down(act(gate(x)) · up(x)).
  bool gated = false;
  SourceLoc loc; // The sublayer's keyword.
};

struct Stack {
  StackKind kind = StackKind::Encoder;
  int64_t layers = 0;
  std::vector<Sublayer> sublayers;
  SourceLoc loc; // The `encoder` / `decoder` keyword.
};

struct Model {
  std::string name;
  SourceLoc loc; // The `model` keyword.

  // Required settings.
  int64_t vocab = 0;
  int64_t dModel = 0;
  int64_t heads = 0;
  int64_t maxLen = 0;
  // Required when a feed_forward sublayer exists; 0 when not given.
  int64_t dFF = 0;

  // Optional settings, with docs/language.md's defaults.
  NormPlacement norm = NormPlacement::Post;
  NormType normType = NormType::LayerNorm;
  Activation activation = Activation::Relu;
  PositionKind positions = PositionKind::Sinusoidal;
  EmbedScale embedScale = EmbedScale::One;
  double layerNormEps = 1e-5;
  bool finalNorm = false;
  /// BERT's embeddings: token types (0: none; else an input token_type_ids
  /// and a table of that many rows, src_type.weight) and a LayerNorm after
  /// the embeddings (src_embed_norm). Encoder-only models.
  int64_t tokenTypes = 0;
  bool embedNorm = false;
  /// BERT's pooler: pooler_output = tanh(W · h[:, 0] + b) (weights
  /// pooler.weight [d, d], pooler.bias [d]), a second output after
  /// last_hidden_state. Encoder-only models with output = none.
  bool pooler = false;
  OutputKind output = OutputKind::Linear;
  /// `output = tied` with a bias on the logits (generator.bias [vocab]):
  /// Marian's final_logits_bias.
  bool outputBias = false;
  /// How the weights file names (and lays out) the parameters: the name of
  /// a registered WeightNaming (WeightNames.h), nn.Transformer's for .tfm
  /// models, the family's for an imported one ("hf-gpt2").
  std::string weightNaming = kNnTransformerNaming;
  /// Rope's base: inv_freq[i] = 1 / rope_theta^(2i / head_dim).
  double ropeTheta = 10000.0;
  /// How rope's inverse frequencies are scaled (tfm.rope's #tfm.rope_scaling):
  /// not, by 1 / rope_factor (linear), or as Llama 3.1 does (llama3: the
  /// low frequencies by 1 / rope_factor, a blend between
  /// rope_low_freq_factor and rope_high_freq_factor, over the context
  /// rope_original_max_len it was trained at), or as Phi-3 does (longrope:
  /// inv_freq[i] / rope_short_factors[i] for a program whose sequences stay
  /// within rope_original_max_len, / rope_long_factors[i] for one that may
  /// pass it, with cos and sin times rope_attention_factor).
  RopeScaling ropeScaling = RopeScaling::None;
  double ropeFactor = 1.0;
  double ropeLowFreqFactor = 1.0;
  double ropeHighFreqFactor = 4.0;
  int64_t ropeOriginalMaxLen = 0;
  std::vector<double> ropeShortFactors, ropeLongFactors;
  double ropeAttentionFactor = 1.0;
  /// RMSNorm's gain is 1 + its weight (Gemma's, `norm_gain = one_plus_weight`).
  bool normGainOffset = false;
  /// The attention scores' scale; 0: 1 / sqrt(head_dim) (Gemma 2's is
  /// query_pre_attn_scalar^-0.5).
  double attentionScale = 0.0;
  /// Gemma 2's soft-capping, cap · tanh(x / cap), of the scaled attention
  /// scores (before the masks) and of the logits; 0: none.
  double attnLogitSoftcap = 0.0;
  double finalLogitSoftcap = 0.0;
  // Resolved by validation: never 0 in a parsed or imported model.
  int64_t kvHeads = 0; ///< K/V heads (grouped-query attention); = heads by default
  int64_t headDim = 0; ///< per-head width; = d_model / heads by default
  /// Biases on every linear (attention, feed-forward, `output = linear`).
  bool bias = true;
  /// Biases on the Q, K and V projections (Qwen2 has them with bias = false).
  bool attentionBias = true;

  /// How the model's file stores its weights, when the file says (a GGUF
  /// file's tensor types; GgufImport.h). Not part of the architecture:
  /// `--emit ast` does not show it.
  struct FileWeights {
    /// The weight dtype tfmc compiles with when --weight-dtype is not
    /// given: f32, bf16, int8 or int4 (empty: f32, as for any model).
    std::string dtype;
    /// int8's group for weights from this file, given or implied (Q8_0's
    /// 32); 0: tfmc's default.
    int64_t int8Group = 0;
    /// What the file holds, for --stats and notes: "Q8_0 (15 tensors,
    /// 1234567 values), F32 (3 tensors, 7000 values)" (2-D tensors).
    std::string types;
    /// What lies behind `dtype`: "Q8_0" (the dominant 2-D type).
    std::string dominantType;
    /// Each 2-D tensor (its name in the file) and the dtype that holds its
    /// type exactly: where the file's dtype is used, a tensor of another
    /// type keeps its own (a Q4_0 file's Q8_0 or Q6_K output head).
    std::vector<std::pair<std::string, std::string>> tensorDtypes;
  };
  FileWeights fileWeights;

  std::optional<Stack> encoder;
  std::optional<Stack> decoder;

  /// Where each setting written in the file was written, by setting name
  /// (e.g. "d_model"); settings left at their default have no entry.
  std::vector<std::pair<std::string, SourceLoc>> settingLocs;

  /// Whether setting `name` was written in the file.
  bool given(std::string_view settingName) const {
    for (const auto &entry : settingLocs)
      if (entry.first == settingName)
        return true;
    return false;
  }

  /// The location of setting `name` if it was written, else the model's.
  const SourceLoc &locOf(const std::string &settingName) const {
    for (const auto &[key, settingLoc] : settingLocs)
      if (key == settingName)
        return settingLoc;
    return loc;
  }

  int64_t dHead() const { return headDim; }
  /// Q width heads·head_dim, and K/V width kv_heads·head_dim.
  int64_t queryWidth() const { return heads * headDim; }
  int64_t kvWidth() const { return kvHeads * headDim; }
  bool isEncoderDecoder() const { return encoder && decoder; }
  bool isDecoderOnly() const { return decoder && !encoder; }
  bool isEncoderOnly() const { return encoder && !decoder; }
};

/// One error, printed as `file:line:col: error: message`.
struct Diagnostic {
  SourceLoc loc;
  std::string message;

  std::string str() const;
};

/// Either a model or the first error found in the description.
struct ParseResult {
  std::optional<Model> model;
  std::optional<Diagnostic> error;

  explicit operator bool() const { return model.has_value(); }
};

/// Parses and validates `source`, whose diagnostics name `fileName`.
ParseResult parseModel(const std::string &source, const std::string &fileName);

/// A stable, human-readable dump of the AST (`tfmc --emit ast`).
std::string dumpModel(const Model &model);

// Spellings used in the language, in dumps and in diagnostics.
const char *toString(NormPlacement value);
const char *toString(NormType value);
const char *toString(Activation value);
const char *toString(PositionKind value);
const char *toString(RopeScaling value);
const char *toString(EmbedScale value);
const char *toString(OutputKind value);
const char *toString(StackKind value);
const char *toString(SublayerKind value);
/// `none`, `causal`, `causal + padding`, `padding + window(8)`, ...
std::string toString(const MaskSpec &mask);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_AST_H
