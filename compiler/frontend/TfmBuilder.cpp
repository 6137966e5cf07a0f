//===- TfmBuilder.cpp - AST -> tfm dialect --------------------------------===//
//
// The module mirrors PyTorch's nn.Transformer so that weights trained there
// load by name, and so that fixtures made with PyTorch check it op for op.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/TfmBuilder.h"
#include "compiler/frontend/WeightNames.h"

#include "dialects/tfm/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace mlir;
namespace tfm = tfmc::tfm;

namespace tfmc::frontend {
namespace {

constexpr int64_t kDynamic = ShapedType::kDynamic;

/// Which function is being written: the whole sequence at once (forward),
/// the prompt filling the KV cache (prefill), one token per sequence
/// reading and appending the cache (decode_step), or S more tokens of a
/// sequence reading and appending the cache (extend: a prompt prefilled in
/// chunks; decoder-only models).
enum class Entry { Forward, Prefill, Decode, Extend };

/// The function arguments a stack reads.
struct StackInputs {
  Value ids;
  Value keyMask;    // Null when no sublayer reads this stack's padding.
  Value tokenTypes; // BERT's token_type_ids, or null.
};

class ModuleBuilder {
public:
  ModuleBuilder(MLIRContext &context, const Model &model, int64_t maxSeq)
      : context(context), builder(&context), model(model),
        naming(namingOf(model)), maxSeq(maxSeq) {}

  OwningOpRef<ModuleOp> build();

private:
  /// Writes one entry function into the module.
  void buildEntry(ModuleOp module, Entry entry);
  /// A cache-backed view of `rows`: appended to the slot in a prefill or
  /// decode step, `rows` itself in a forward.
  Value cached(Value rows, const std::string &slot, Location where);
  /// True while writing the decoder stack: only its keys and values (and
  /// the cross-attention's) are cached; the encoder runs once per prefill.
  bool inDecoder = false;
  /// The entry's position_ids input (a decoder-only prefill or decode step
  /// that reads padding: left-padded rows count their own positions), or
  /// null: positions are then 0 .. S-1 (after the cache's P).
  Value positionIds;
  Location loc(const SourceLoc &where) {
    return FileLineColLoc::get(&context, where.file, where.line, where.col);
  }
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  /// [B, S, d]: batch and sequence are dynamic, the model width static.
  RankedTensorType hidden(int64_t width) {
    return f32({kDynamic, kDynamic, width});
  }

  /// The parameter `name`; a second use of one name reuses the first op.
  Value weight(const std::string &name, ArrayRef<int64_t> shape,
               Location where);
  /// input · Wᵀ (+ b when `bias`), W = `prefix`.weight [out, in].
  Value linear(Value input, const std::string &prefix, int64_t out,
               int64_t in, bool bias, Location where);
  /// The model's norm (LayerNorm or RMSNorm) with the weights at `prefix`.
  Value norm(Value input, const std::string &prefix, Location where);
  /// Rotary positions on [B, S, heads·Dh] queries or keys.
  Value rope(Value input, int64_t heads, Location where);
  /// tfm.rope's scaling attribute, or null for unscaled frequencies.
  tfm::RopeScalingAttr ropeScaling();

  Value embed(const Stack &stack, Value ids, Value tokenTypes);
  /// `x` plus the stack's sinusoidal or learned positions.
  Value addPositions(Value x, bool encoder, Location where);
  /// The attention of `sublayer` in layer `layer` (whose window it has).
  Value attention(const std::string &prefix, const Sublayer &sublayer,
                  int64_t layer, Value queries, Value keysValues,
                  Value keyMask);
  Value feedForward(const std::string &prefix, const Sublayer &sublayer,
                    Value input, Location where);
  Value stack(const Stack &stack, StackInputs inputs, Value memory,
              Value memoryMask);

  /// The model's weight naming; an unregistered one is a bug in tfmc
  /// (models come from the parser or a registered family).
  static const WeightNaming &namingOf(const Model &model) {
    const WeightNaming *naming = findWeightNaming(model.weightNaming);
    if (!naming)
      llvm::report_fatal_error(llvm::Twine("tfmc: no weight naming '") +
                               model.weightNaming + "' is registered");
    return *naming;
  }

  MLIRContext &context;
  OpBuilder builder;
  const Model &model;
  const WeightNaming &naming;
  /// The program's longest sequence (0: max_len).
  int64_t maxSeq;
  Entry entry = Entry::Forward;
  /// The entry's new tokens come after the P already in the KV cache.
  bool afterCache() const {
    return entry == Entry::Decode || entry == Entry::Extend;
  }
  llvm::StringMap<Value> weights;
};

Value ModuleBuilder::cached(Value rows, const std::string &slot,
                            Location where) {
  if (entry == Entry::Forward || !inDecoder)
    return rows;
  return builder.create<tfm::KvAppendOp>(where, rows.getType(), rows, slot);
}

Value ModuleBuilder::weight(const std::string &name, ArrayRef<int64_t> shape,
                            Location where) {
  auto [it, inserted] = weights.try_emplace(name);
  if (inserted) {
    // `name` is the nn.Transformer name; an imported model's file names
    // (and may transpose) the parameter its own way.
    std::optional<WeightBinding> binding = naming.bind(name);
    if (!binding)
      llvm::report_fatal_error(llvm::Twine("tfmc: the ") + naming.name +
                               " weight names have no name for '" + name +
                               "'");
    ArrayAttr altNames;
    if (!binding->altNames.empty())
      altNames = builder.getStrArrayAttr(SmallVector<StringRef>(
          binding->altNames.begin(), binding->altNames.end()));
    it->second = builder.create<tfm::WeightOp>(
        where, f32(shape), binding->name, altNames, binding->transposed,
        /*storage=*/nullptr, /*group=*/nullptr, /*panel=*/nullptr);
  }
  return it->second;
}

Value ModuleBuilder::linear(Value input, const std::string &prefix,
                            int64_t out, int64_t in, bool bias,
                            Location where) {
  Value w = weight(prefix + ".weight", {out, in}, where);
  Value b = bias ? weight(prefix + ".bias", {out}, where) : Value();
  auto inType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(inType.getShape());
  shape.back() = out;
  return builder.create<tfm::LinearOp>(where, f32(shape), input, w, b,
                                       /*residual=*/Value(),
                                       /*activation=*/nullptr);
}

Value ModuleBuilder::norm(Value input, const std::string &prefix,
                          Location where) {
  Value gamma = weight(prefix + ".weight", {model.dModel}, where);
  if (model.normType == NormType::RmsNorm)
    return builder.create<tfm::RmsNormOp>(
        where, input.getType(), input, /*residual=*/Value(), gamma,
        builder.getF64FloatAttr(model.layerNormEps),
        model.normGainOffset ? builder.getUnitAttr() : nullptr);
  Value beta = weight(prefix + ".bias", {model.dModel}, where);
  return builder.create<tfm::LayerNormOp>(
      where, input.getType(), input, /*residual=*/Value(), gamma, beta,
      builder.getF64FloatAttr(model.layerNormEps));
}

Value ModuleBuilder::rope(Value input, int64_t heads, Location where) {
  return builder.create<tfm::RopeOp>(
      where, input.getType(), input, positionIds,
      builder.getI64IntegerAttr(heads),
      builder.getF64FloatAttr(model.ropeTheta),
      /*from_cache=*/afterCache() ? builder.getUnitAttr() : nullptr,
      /*interleaved=*/naming.ropeInterleaved ? builder.getUnitAttr()
                                             : nullptr,
      ropeScaling());
}

tfm::RopeScalingAttr ModuleBuilder::ropeScaling() {
  MLIRContext *context = builder.getContext();
  switch (model.ropeScaling) {
  case RopeScaling::None:
    return nullptr;
  case RopeScaling::LongRope: {
    // The long factors for a program whose sequences may pass the context
    // the model was trained at, the short ones for one whose cannot.
    const int64_t longest = maxSeq > 0 ? maxSeq : model.maxLen;
    const std::vector<double> &factors = longest > model.ropeOriginalMaxLen
                                             ? model.ropeLongFactors
                                             : model.ropeShortFactors;
    return tfm::RopeScalingAttr::get(
        context, tfm::RopeScalingKind::longrope,
        llvm::APFloat(model.ropeAttentionFactor), llvm::APFloat(1.0),
        llvm::APFloat(4.0), model.ropeOriginalMaxLen,
        DenseF64ArrayAttr::get(context, factors));
  }
  case RopeScaling::Linear:
  case RopeScaling::Llama3:
    break;
  }
  return tfm::RopeScalingAttr::get(
      context,
      model.ropeScaling == RopeScaling::Llama3 ? tfm::RopeScalingKind::llama3
                                               : tfm::RopeScalingKind::linear,
      llvm::APFloat(model.ropeFactor), llvm::APFloat(model.ropeLowFreqFactor),
      llvm::APFloat(model.ropeHighFreqFactor), model.ropeOriginalMaxLen,
      DenseF64ArrayAttr::get(context, {}));
}

Value ModuleBuilder::embed(const Stack &stack, Value ids, Value tokenTypes) {
  Location where = loc(stack.loc);
  bool encoder = stack.kind == StackKind::Encoder;
  int64_t d = model.dModel;
  Value table =
      weight(encoder ? "src_embed.weight" : "tgt_embed.weight",
             {model.vocab, d}, where);
  Value x = builder.create<tfm::EmbeddingOp>(where, hidden(d), table, ids);
  if (model.embedScale == EmbedScale::SqrtDModel)
    x = builder.create<tfm::ScaleOp>(
        where, x, builder.getF64FloatAttr(std::sqrt(double(d))));
  // Rotary positions act in each attention instead (see attention()).
  if (model.positions != PositionKind::Rope)
    x = addPositions(x, encoder, where);
  // BERT: each token's type's embedding is added, and the sum normalised.
  if (tokenTypes) {
    Value types = weight("src_type.weight", {model.tokenTypes, d}, where);
    Value typed =
        builder.create<tfm::EmbeddingOp>(where, hidden(d), types, tokenTypes);
    x = builder.create<tfm::AddOp>(where, x, typed);
  }
  if (model.embedNorm && encoder) {
    Value gamma = weight("src_embed_norm.weight", {d}, where);
    Value beta = weight("src_embed_norm.bias", {d}, where);
    x = builder.create<tfm::LayerNormOp>(
        where, x.getType(), x, /*residual=*/Value(), gamma, beta,
        builder.getF64FloatAttr(model.layerNormEps));
  }
  return x;
}

Value ModuleBuilder::addPositions(Value x, bool encoder, Location where) {
  int64_t d = model.dModel;
  Value positionTable;
  tfm::PositionKind kind = model.positions == PositionKind::SinusoidalHalves
                               ? tfm::PositionKind::sinusoidal_halves
                               : tfm::PositionKind::sinusoidal;
  if (model.positions == PositionKind::Learned) {
    kind = tfm::PositionKind::learned;
    positionTable = weight(encoder ? "src_pos.weight" : "tgt_pos.weight",
                           {model.maxLen, d}, where);
  }
  return builder.create<tfm::PositionsOp>(
      where, x, positionTable, inDecoder ? positionIds : Value(),
      tfm::PositionKindAttr::get(&context, kind),
      /*from_cache=*/afterCache() ? builder.getUnitAttr() : nullptr);
}

// The classic algorithm, one op a step; tfm-fuse-masked-attention later
// turns matmul -> scale -> mask(s) -> softmax -> matmul into tfm.attention.
Value ModuleBuilder::attention(const std::string &prefix,
                               const Sublayer &sublayer, int64_t layer, Value queries,
                               Value keysValues, Value keyMask) {
  Location where = loc(sublayer.loc);
  int64_t d = model.dModel, heads = model.heads, kvHeads = model.kvHeads,
          dHead = model.dHead();
  int64_t qWidth = model.queryWidth(), kvWidth = model.kvWidth();
  bool qkvBias = model.attentionBias;

  // Q, K and V weights (and biases): row views of one packed tensor
  // (nn.Transformer's in_proj, GPT-2's c_attn), or three (q/k/v_proj), as
  // the weights file holds them.
  Value weights[3], biases[3];
  const int64_t widths[3] = {qWidth, kvWidth, kvWidth};
  if (naming.packedProjections) {
    int64_t packed = qWidth + 2 * kvWidth;
    Value packedWeight =
        weight(prefix + ".in_proj_weight", {packed, d}, where);
    Value packedBias =
        qkvBias ? weight(prefix + ".in_proj_bias", {packed}, where) : Value();
    auto w = builder.create<tfm::SplitOp>(
        where,
        SmallVector<Type>{f32({qWidth, d}), f32({kvWidth, d}),
                          f32({kvWidth, d})},
        packedWeight, 0);
    for (unsigned part = 0; part < 3; ++part)
      weights[part] = w.getResult(part);
    if (qkvBias) {
      auto b = builder.create<tfm::SplitOp>(
          where,
          SmallVector<Type>{f32({qWidth}), f32({kvWidth}), f32({kvWidth})},
          packedBias, 0);
      for (unsigned part = 0; part < 3; ++part)
        biases[part] = b.getResult(part);
    }
  } else {
    const char *names[3] = {".q_proj", ".k_proj", ".v_proj"};
    for (unsigned part = 0; part < 3; ++part) {
      std::string name = prefix + names[part];
      weights[part] = weight(name + ".weight", {widths[part], d}, where);
      if (qkvBias)
        biases[part] = weight(name + ".bias", {widths[part]}, where);
    }
  }
  bool cross = keysValues != queries;
  // Rotary positions turn the self-attention's queries and keys, before
  // the keys are cached.
  bool rotate = model.positions == PositionKind::Rope && !cross;
  auto projectPart = [&](Value input, unsigned part) -> Value {
    return builder.create<tfm::LinearOp>(
        where, hidden(widths[part]), input, weights[part], biases[part],
        /*residual=*/Value(), /*activation=*/nullptr);
  };
  // [B, S, n·Dh] -> [B, n, S, Dh], then each K/V head repeated for the
  // heads / kv_heads query heads that share it (grouped-query attention).
  auto splitHeads = [&](Value merged, int64_t count) -> Value {
    Value split = builder.create<tfm::SplitHeadsOp>(
        where, f32({kDynamic, count, kDynamic, dHead}), merged);
    if (count == heads)
      return split;
    return builder.create<tfm::RepeatHeadsOp>(
        where, f32({kDynamic, heads, kDynamic, dHead}), split);
  };
  Value qProjected = projectPart(queries, 0);
  if (rotate)
    qProjected = rope(qProjected, heads, where);
  Value q = splitHeads(qProjected, heads);
  auto keysOrValues = [&](unsigned part, const char *slot) -> Value {
    std::string name = prefix + "." + slot;
    // A decode step reads the cross-attention keys and values the prefill
    // computed from the encoder's output: the encoder does not run again.
    if (cross && entry == Entry::Decode) {
      Value all = builder.create<tfm::KvReadOp>(where, hidden(kvWidth), name);
      return splitHeads(all, kvHeads);
    }
    Value projected = projectPart(keysValues, part);
    if (rotate && part == 1)
      projected = rope(projected, kvHeads, where);
    return splitHeads(cached(projected, name, where), kvHeads);
  };
  Value k = keysOrValues(1, "k");
  Value v = keysOrValues(2, "v");

  auto scoresType = f32({kDynamic, heads, kDynamic, kDynamic});
  auto scoresOp =
      builder.create<tfm::MatmulOp>(where, scoresType, q, k);
  scoresOp.setTransposeRhs(true);
  Value scores = builder.create<tfm::ScaleOp>(
      where, scoresOp.getResult(),
      builder.getF64FloatAttr(model.attentionScale > 0
                                  ? model.attentionScale
                                  : 1.0 / std::sqrt(double(dHead))));
  // Gemma 2's soft-capping of the scaled scores, before the masks
  // (tfm-fuse-masked-attention folds it into tfm.attention).
  if (model.attnLogitSoftcap > 0)
    scores = builder.create<tfm::SoftcapOp>(
        where, scores, builder.getF64FloatAttr(model.attnLogitSoftcap));

  auto square = RankedTensorType::get({kDynamic, kDynamic},
                                      builder.getI1Type());
  // A decode step's one query is the newest position of its sequence: every
  // cached key is at or before it, so the causal mask removes nothing and
  // the key range is the cache's valid length. Its padding mask, when it
  // takes one (a decoder-only model's left-padded batch), covers the L
  // cached keys; an encoder-decoder's decoder starts every row at bos and
  // has no padding.
  // An extend step's S queries are the newest S positions: the causal
  // mask lets each see the cached keys and the new ones up to itself.
  bool decodeSelf = entry == Entry::Decode && !cross;
  bool selfAfterCache = afterCache() && !cross;
  if (sublayer.mask.causal && !decodeSelf) {
    Value causal = builder.create<tfm::CausalMaskOp>(
        where, square, queries,
        /*from_cache=*/selfAfterCache ? builder.getUnitAttr() : nullptr);
    scores = builder.create<tfm::ApplyMaskOp>(where, scores, causal);
  }
  if (int64_t size = sublayer.mask.windowAt(layer)) {
    // A decode (extend) step's queries are the newest positions: the
    // window counts back from each over the cached keys.
    Value window = builder.create<tfm::WindowMaskOp>(
        where, square, queries, builder.getI64IntegerAttr(size),
        /*from_cache=*/selfAfterCache ? builder.getUnitAttr() : nullptr);
    scores = builder.create<tfm::ApplyMaskOp>(where, scores, window);
  }
  if (sublayer.mask.padding && (!decodeSelf || keyMask)) {
    Value padding = builder.create<tfm::PaddingMaskOp>(
        where,
        RankedTensorType::get({kDynamic, 1, 1, kDynamic},
                              builder.getI1Type()),
        keyMask);
    scores = builder.create<tfm::ApplyMaskOp>(where, scores, padding);
  }

  Value probs = builder.create<tfm::SoftmaxOp>(where, scores, 3);
  Value context = builder.create<tfm::MatmulOp>(
      where, f32({kDynamic, heads, kDynamic, dHead}), probs, v);
  Value merged =
      builder.create<tfm::MergeHeadsOp>(where, hidden(qWidth), context);
  return linear(merged, prefix + ".out_proj", d, qWidth, model.bias, where);
}

Value ModuleBuilder::feedForward(const std::string &prefix,
                                 const Sublayer &sublayer, Value input,
                                 Location where) {
  // A gated feed-forward's gate and up projections: row views of one packed
  // [gate; up] tensor (Phi-3's gate_up_proj), or two, as the weights file
  // holds them.
  Value packedGate;
  Value h;
  if (sublayer.gated && naming.packedGateUp) {
    int64_t ff = model.dFF, d = model.dModel;
    auto rows = [&](const std::string &name, SmallVector<Type> types,
                    ArrayRef<int64_t> shape) {
      return builder.create<tfm::SplitOp>(where, types,
                                          weight(name, shape, where), 0);
    };
    auto w = rows(prefix + "gate_up.weight",
                  {f32({ff, d}), f32({ff, d})}, {2 * ff, d});
    tfm::SplitOp b;
    if (model.bias)
      b = rows(prefix + "gate_up.bias", {f32({ff}), f32({ff})}, {2 * ff});
    auto project = [&](unsigned part) -> Value {
      auto inType = cast<RankedTensorType>(input.getType());
      SmallVector<int64_t> shape(inType.getShape());
      shape.back() = ff;
      return builder.create<tfm::LinearOp>(
          where, f32(shape), input, w.getResult(part),
          b ? b.getResult(part) : Value(), /*residual=*/Value(),
          /*activation=*/nullptr);
    };
    packedGate = project(0);
    h = project(1);
  } else {
    h = linear(input, prefix + "linear1", model.dFF, model.dModel, model.bias,
               where);
  }
  tfm::ActivationKind kind = tfm::ActivationKind::relu;
  switch (model.activation) {
  case Activation::Relu:
    kind = tfm::ActivationKind::relu;
    break;
  case Activation::Gelu:
    kind = tfm::ActivationKind::gelu;
    break;
  case Activation::GeluTanh:
    kind = tfm::ActivationKind::gelu_tanh;
    break;
  case Activation::Silu:
    kind = tfm::ActivationKind::silu;
    break;
  }
  if (sublayer.gated) {
    // down(act(gate(x)) · up(x)); linear1 is the up projection.
    Value gate = packedGate ? packedGate
                            : linear(input, prefix + "gate", model.dFF,
                                     model.dModel, model.bias, where);
    gate = builder.create<tfm::ActivationOp>(
        where, gate, tfm::ActivationKindAttr::get(&context, kind));
    h = builder.create<tfm::MulOp>(where, gate, h);
  } else {
    h = builder.create<tfm::ActivationOp>(
        where, h, tfm::ActivationKindAttr::get(&context, kind));
  }
  return linear(h, prefix + "linear2", model.dModel, model.dFF, model.bias,
                where);
}

Value ModuleBuilder::stack(const Stack &stack, StackInputs inputs,
                           Value memory, Value memoryMask) {
  std::string stackName =
      stack.kind == StackKind::Encoder ? "encoder" : "decoder";
  inDecoder = stack.kind == StackKind::Decoder;
  Value x = embed(stack, inputs.ids, inputs.tokenTypes);
  for (int64_t layer = 0; layer < stack.layers; ++layer) {
    std::string prefix = stackName + ".layers." + std::to_string(layer) + ".";
    unsigned normIndex = 0;
    for (const Sublayer &sublayer : stack.sublayers) {
      Location where = loc(sublayer.loc);
      std::string normName = prefix + "norm" + std::to_string(++normIndex);
      auto apply = [&](Value input) -> Value {
        switch (sublayer.kind) {
        case SublayerKind::SelfAttention:
          return attention(prefix + "self_attn", sublayer, layer, input,
                           input, inputs.keyMask);
        case SublayerKind::CrossAttention:
          return attention(prefix + "multihead_attn", sublayer, layer,
                           input, memory, memoryMask);
        case SublayerKind::FeedForward:
          return feedForward(prefix, sublayer, input, where);
        }
        llvm_unreachable("unknown sublayer kind");
      };
      switch (model.norm) {
      case NormPlacement::Post:
        x = norm(builder.create<tfm::AddOp>(where, x, apply(x)), normName,
                 where);
        break;
      case NormPlacement::Pre:
        x = builder.create<tfm::AddOp>(where, x,
                                       apply(norm(x, normName, where)));
        break;
      case NormPlacement::Sandwich: {
        // normN before the sublayer, post_normN on its output.
        Value y = apply(norm(x, normName, where));
        y = norm(y, prefix + "post_norm" + std::to_string(normIndex), where);
        x = builder.create<tfm::AddOp>(where, x, y);
        break;
      }
      }
    }
  }
  // A prefill returns what generation reads: the logits of the prompt's
  // last position, which choose the first new token. The final norm and the
  // output projection act on each position alone, so running them on that
  // position only gives the same numbers for 1/S of their work (the output
  // projection is a third of GPT-2 small's prefill) and of the logits'
  // memory. Every position's keys and values are cached above.
  if ((entry == Entry::Prefill || entry == Entry::Extend) && inDecoder)
    x = builder.create<tfm::LastPositionOp>(loc(model.locOf("output")),
                                            f32({kDynamic, 1, model.dModel}),
                                            x);
  if (model.finalNorm)
    x = norm(x, stackName + ".norm", loc(model.locOf("final_norm")));
  return x;
}

bool readsPadding(const std::optional<Stack> &stack, SublayerKind kind) {
  if (!stack)
    return false;
  for (const Sublayer &sublayer : stack->sublayers)
    if (sublayer.kind == kind && sublayer.mask.padding)
      return true;
  return false;
}

void ModuleBuilder::buildEntry(ModuleOp module, Entry kind) {
  entry = kind;
  weights.clear(); // a weight op belongs to one function
  Location modelLoc = loc(model.loc);
  builder.setInsertionPointToEnd(module.getBody());

  // Inputs in the order of docs/language.md's input table, each only when the
  // entry reads it. A decode step takes one new token per sequence and, for
  // cross-attention with padding, the encoder's mask; the encoder itself
  // does not run.
  const bool decode = kind == Entry::Decode;
  auto idsType = RankedTensorType::get({kDynamic, kDynamic},
                                       builder.getI64Type());
  auto tokenType = RankedTensorType::get({kDynamic, 1}, builder.getI64Type());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  auto addInput = [&](const char *name, Type type) {
    argTypes.push_back(type);
    argNames.push_back(name);
    return argTypes.size() - 1;
  };
  const bool encoderDecoder = model.isEncoderDecoder();
  std::optional<size_t> srcIds, srcMask, srcTypes, tgtIds, tgtMask;
  if (model.encoder) {
    if (!decode)
      srcIds = addInput("input_ids", idsType);
    if ((!decode && readsPadding(model.encoder, SublayerKind::SelfAttention)) ||
        readsPadding(model.decoder, SublayerKind::CrossAttention))
      srcMask = addInput("attention_mask", idsType);
    if (model.tokenTypes > 0 && !decode)
      srcTypes = addInput("token_type_ids", idsType);
  }
  std::optional<size_t> positionInput;
  if (model.decoder) {
    tgtIds = addInput(encoderDecoder ? "decoder_input_ids" : "input_ids",
                      decode ? Type(tokenType) : Type(idsType));
    // A decoder-only model that reads padding generates left-padded
    // batches: its decode (extend) step's mask covers the cached keys and
    // the new ones ([B, L]), and position_ids give each row's positions
    // (prefill, decode and extend steps).
    const bool selfPadding =
        readsPadding(model.decoder, SublayerKind::SelfAttention);
    if (selfPadding && (!decode || !encoderDecoder))
      tgtMask = addInput(encoderDecoder ? "decoder_attention_mask"
                                        : "attention_mask",
                         idsType);
    if (selfPadding && !encoderDecoder && kind != Entry::Forward)
      positionInput = addInput("position_ids",
                               decode ? Type(tokenType) : Type(idsType));
  }

  bool hasOutput = model.output != OutputKind::None;
  int64_t outWidth = hasOutput ? model.vocab : model.dModel;
  // A prefill's (and an extend's) output is its last position's (see
  // stack()).
  Type resultType = kind == Entry::Prefill || kind == Entry::Extend
                        ? f32({kDynamic, 1, outWidth})
                        : hidden(outWidth);
  const char *name = kind == Entry::Forward   ? "forward"
                     : kind == Entry::Prefill ? "prefill"
                     : kind == Entry::Extend  ? "extend"
                                              : "decode_step";
  // BERT's pooler: a second output, [B, d], after last_hidden_state.
  const bool pooled = model.pooler && !model.decoder;
  SmallVector<Type> resultTypes = {resultType};
  if (pooled)
    resultTypes.push_back(
        RankedTensorType::get({kDynamic, model.dModel}, builder.getF32Type()));
  auto func = builder.create<func::FuncOp>(
      modelLoc, name, builder.getFunctionType(argTypes, resultTypes));
  // The sequence bound that memory planning and tiling size buffers for.
  func->setAttr("tfm.max_len", builder.getI64IntegerAttr(model.maxLen));
  // A decode step's activations have one row per sequence (its newest
  // token): the tiling pass plans its GEMMs as matrix-vector products.
  if (decode)
    func->setAttr("tfm.decode_step", builder.getUnitAttr());
  for (auto [index, argName] : llvm::enumerate(argNames))
    func.setArgAttr(index, "tfm.input", builder.getStringAttr(argName));
  func.setResultAttr(0, "tfm.output",
                     builder.getStringAttr(hasOutput ? "logits"
                                                     : "last_hidden_state"));
  if (pooled)
    func.setResultAttr(1, "tfm.output", builder.getStringAttr("pooler_output"));
  builder.setInsertionPointToStart(func.addEntryBlock());
  auto arg = [&](std::optional<size_t> index) -> Value {
    return index ? func.getArgument(*index) : Value();
  };
  positionIds = arg(positionInput);

  Value memory, x;
  if (model.encoder && !decode)
    x = memory = stack(*model.encoder, {arg(srcIds), arg(srcMask), arg(srcTypes)},
                       {}, {});
  if (model.decoder)
    x = stack(*model.decoder, {arg(tgtIds), arg(tgtMask)}, memory,
              arg(srcMask));

  Location outputLoc = loc(model.locOf("output"));
  if (model.output == OutputKind::Linear) {
    x = linear(x, "generator", model.vocab, model.dModel, model.bias,
               outputLoc);
  } else if (model.output == OutputKind::Tied) {
    Value table = weight(model.decoder ? "tgt_embed.weight"
                                       : "src_embed.weight",
                         {model.vocab, model.dModel}, outputLoc);
    Value bias = model.outputBias ? weight("generator.bias", {model.vocab},
                                           loc(model.locOf("output_bias")))
                                  : Value();
    x = builder.create<tfm::LinearOp>(outputLoc, resultType, x, table, bias,
                                      /*residual=*/Value(),
                                      /*activation=*/nullptr);
  }
  // Gemma 2's soft-capping of the logits.
  if (model.finalLogitSoftcap > 0 && model.output != OutputKind::None)
    x = builder.create<tfm::SoftcapOp>(
        loc(model.locOf("final_logit_softcap")), x,
        builder.getF64FloatAttr(model.finalLogitSoftcap));
  SmallVector<Value> results = {x};
  if (pooled) {
    // tanh(W · h[:, 0] + b): the first token's hidden state ([CLS]).
    Location poolerLoc = loc(model.locOf("pooler"));
    Value first = builder.create<tfm::FirstPositionOp>(
        poolerLoc, resultTypes[1], x);
    Value dense = linear(first, "pooler", model.dModel, model.dModel,
                         model.bias, poolerLoc);
    results.push_back(builder.create<tfm::ActivationOp>(
        poolerLoc, dense,
        tfm::ActivationKindAttr::get(&context, tfm::ActivationKind::tanh)));
  }
  builder.create<func::ReturnOp>(outputLoc, results);
}

OwningOpRef<ModuleOp> ModuleBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc(model.loc), model.name);
  buildEntry(*module, Entry::Forward);
  // Models with a decoder generate: a prefill fills the KV cache and each
  // decode step appends one token. A decoder-only model's extend appends
  // S tokens to one sequence: serve prefills a newcomer in chunks with it.
  if (model.decoder) {
    buildEntry(*module, Entry::Prefill);
    buildEntry(*module, Entry::Decode);
    if (!model.encoder)
      buildEntry(*module, Entry::Extend);
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> buildTfmModule(MLIRContext &context, const Model &model,
                                     int64_t maxSeq) {
  context.loadDialect<tfm::TfmDialect, func::FuncDialect>();
  return ModuleBuilder(context, model, maxSeq).build();
}

} // namespace tfmc::frontend
