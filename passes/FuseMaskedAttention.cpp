//===- FuseMaskedAttention.cpp - One tfm.attention per attention chain ----===//
//
// The frontend (or a user) writes attention as
//   s = matmul(Q, K) {transpose_rhs}; s = scale/apply_mask ...; p = softmax(s);
//   o = matmul(p, V)
// and this pass replaces each such chain with one tfm.attention whose masks
// are attributes: the kernel can then skip fully masked key blocks instead of
// materialising an S x S score matrix. Every condition below is one under
// which that rewrite would change the result or lose a value someone reads.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

#include <string>

namespace tfmc {
#define GEN_PASS_DEF_FUSEMASKEDATTENTION
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

/// What the matched chain computes, and the ops it replaces.
struct AttentionChain {
  Value query, key, value, keyPadding;
  bool causal = false;
  int64_t window = 0; // 0: none
  bool fromCache = false; // queries are the newest of the keys' positions
  double scale = 1.0;
  double softcap = 0.0; // 0: none
  MatmulOp output;                       // softmax(...) · V
  SmallVector<Operation *> intermediates; // softmax back to Q·Kᵀ
};

/// Adds the masks that `mask` applies to `chain`, or says why it cannot.
LogicalResult collectMask(Value mask, AttentionChain &chain, std::string &why) {
  Operation *producer = mask.getDefiningOp();
  if (auto causal = dyn_cast_or_null<CausalMaskOp>(producer)) {
    chain.causal = true;
    chain.fromCache |= causal.getFromCache();
    return success();
  }
  if (auto window = dyn_cast_or_null<WindowMaskOp>(producer)) {
    int64_t size = window.getSize();
    chain.window = chain.window == 0 ? size : std::min(chain.window, size);
    chain.fromCache |= window.getFromCache();
    return success();
  }
  if (auto padding = dyn_cast_or_null<PaddingMaskOp>(producer)) {
    if (chain.keyPadding && chain.keyPadding != padding.getKeyMask()) {
      why = "two different key padding masks apply";
      return failure();
    }
    chain.keyPadding = padding.getKeyMask();
    return success();
  }
  if (auto both = dyn_cast_or_null<MaskAndOp>(producer))
    return success(succeeded(collectMask(both.getLhs(), chain, why)) &&
                   succeeded(collectMask(both.getRhs(), chain, why)));
  if (!cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
    why = "an additive (f32) mask is not one of the known mask kinds";
  else
    why = "the mask is not made by tfm.causal_mask, tfm.window_mask, "
          "tfm.padding_mask or tfm.mask_and (a mask of another shape, e.g. "
          "over queries, has no kernel form)";
  return failure();
}

/// An intermediate of the chain must feed only the next step: otherwise
/// someone reads a value the fused kernel never materialises.
LogicalResult checkSingleUse(Operation *op, std::string &why) {
  if (op->getResult(0).hasOneUse())
    return success();
  why = "the result of '" + op->getName().getStringRef().str() +
        "' has another user";
  return failure();
}

FailureOr<AttentionChain> matchChain(SoftmaxOp softmax, std::string &why) {
  AttentionChain chain;
  auto scoresType = softmax.getInput().getType();
  if (scoresType.getRank() != 4) {
    why = "the scores are not [B, H, Sq, Sk]";
    return failure();
  }
  if (int64_t axis = softmax.getAxis(); axis != 3) {
    why = "softmax is over axis " + std::to_string(axis) +
          ", not the key axis 3";
    return failure();
  }
  if (!softmax.getResult().hasOneUse()) {
    why = "the attention weights (softmax result) have another user";
    return failure();
  }
  auto output = dyn_cast<MatmulOp>(*softmax.getResult().getUsers().begin());
  if (!output || output.getLhs() != softmax.getResult() ||
      output.getTransposeLhs() || output.getTransposeRhs()) {
    why = "the attention weights are not multiplied by the values "
          "(softmax(...) · V) directly";
    return failure();
  }
  chain.output = output;
  chain.value = output.getRhs();
  chain.intermediates.push_back(softmax);

  // Back from softmax to Q·Kᵀ, through scales and masks in any order.
  Value scores = softmax.getInput();
  while (true) {
    Operation *producer = scores.getDefiningOp();
    if (!producer) {
      why = "the scores are a function argument, not Q·Kᵀ";
      return failure();
    }
    if (failed(checkSingleUse(producer, why)))
      return failure();
    chain.intermediates.push_back(producer);
    // Gemma 2's soft-capping of the scores: masks may come after it (they
    // still mask), scales only before it (one after it would scale the
    // capped scores, not the attention's).
    if (auto cap = dyn_cast<SoftcapOp>(producer)) {
      if (chain.softcap != 0) {
        why = "the scores are soft-capped twice";
        return failure();
      }
      if (chain.scale != 1.0) {
        why = "a scale applies after the soft-capping";
        return failure();
      }
      chain.softcap = cap.getCap().convertToDouble();
      scores = cap.getInput();
      continue;
    }
    if (auto scale = dyn_cast<ScaleOp>(producer)) {
      double factor = scale.getFactor().convertToDouble();
      if (factor <= 0) {
        why = "a scale factor of " + std::to_string(factor) +
              " is not positive (it would turn a masked -inf into +inf)";
        return failure();
      }
      chain.scale *= factor;
      scores = scale.getInput();
      continue;
    }
    if (auto apply = dyn_cast<ApplyMaskOp>(producer)) {
      if (chain.softcap != 0) {
        why = "a mask applies before the soft-capping (which would turn "
              "its -inf into -cap)";
        return failure();
      }
      if (failed(collectMask(apply.getMask(), chain, why)))
        return failure();
      scores = apply.getScores();
      continue;
    }
    if (auto qk = dyn_cast<MatmulOp>(producer)) {
      if (qk.getTransposeLhs() || !qk.getTransposeRhs()) {
        why = "the keys are not in [B, H, Sk, D] layout (Q·Kᵀ needs "
              "transpose_rhs and no transpose_lhs)";
        return failure();
      }
      chain.query = qk.getLhs();
      chain.key = qk.getRhs();
      // Grouped-query attention: K and V heads repeated alike become the
      // kernel's kv_heads; the repeats are never materialised.
      auto keyRepeat = chain.key.getDefiningOp<RepeatHeadsOp>();
      auto valueRepeat = chain.value.getDefiningOp<RepeatHeadsOp>();
      if (bool(keyRepeat) != bool(valueRepeat)) {
        why = "only one of the keys and values has its heads repeated";
        return failure();
      }
      if (keyRepeat) {
        if (keyRepeat.getInput().getType().getDimSize(1) !=
            valueRepeat.getInput().getType().getDimSize(1)) {
          why = "the keys and values have different numbers of heads";
          return failure();
        }
        chain.key = keyRepeat.getInput();
        chain.value = valueRepeat.getInput();
      }
      return chain;
    }
    why = "the scores come from '" + producer->getName().getStringRef().str() +
          "', not from Q·Kᵀ, a scale or a mask";
    return failure();
  }
}

/// A positive scale on Q or K scales the scores alike, so it joins the
/// attention's scale: `scale(x)` and `split_heads(scale(x))` are peeled.
Value peelScale(OpBuilder &builder, Value operand, double &scale) {
  if (auto scaleOp = operand.getDefiningOp<ScaleOp>()) {
    double factor = scaleOp.getFactor().convertToDouble();
    if (factor > 0) {
      scale *= factor;
      return scaleOp.getInput();
    }
    return operand;
  }
  if (auto split = operand.getDefiningOp<SplitHeadsOp>()) {
    auto scaleOp = split.getInput().getDefiningOp<ScaleOp>();
    if (!scaleOp || scaleOp.getFactor().convertToDouble() <= 0)
      return operand;
    scale *= scaleOp.getFactor().convertToDouble();
    return builder.create<SplitHeadsOp>(split.getLoc(), split.getType(),
                                        scaleOp.getInput());
  }
  return operand;
}

void rewriteChain(AttentionChain &chain) {
  OpBuilder builder(chain.output);
  double scale = chain.scale;
  Value query = peelScale(builder, chain.query, scale);
  Value key = peelScale(builder, chain.key, scale);
  MLIRContext *context = builder.getContext();
  auto mask = MaskAttr::get(context, chain.causal, bool(chain.keyPadding),
                            chain.window);
  auto attention = builder.create<AttentionOp>(
      chain.output.getLoc(), chain.output.getType(), query, key, chain.value,
      chain.keyPadding, mask, builder.getF64FloatAttr(scale),
      chain.softcap != 0 ? builder.getF64FloatAttr(chain.softcap) : nullptr,
      /*heads=*/nullptr, /*kv_heads=*/nullptr,
      /*from_cache=*/chain.fromCache ? builder.getUnitAttr() : nullptr);
  chain.output.replaceAllUsesWith(attention.getResult());
  chain.output.erase();
  for (Operation *op : chain.intermediates) // softmax first: users go first
    op->erase();
}

struct FuseMaskedAttentionPass
    : tfmc::impl::FuseMaskedAttentionBase<FuseMaskedAttentionPass> {
  using FuseMaskedAttentionBase::FuseMaskedAttentionBase;

  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes) {
      std::string why;
      FailureOr<AttentionChain> chain = matchChain(softmax, why);
      if (succeeded(chain)) {
        rewriteChain(*chain);
        continue;
      }
      if (remarks)
        softmax.emitRemark("not fused into tfm.attention: ") << why;
    }
    // Mask producers and head splits that only fed fused chains are dead.
    IRRewriter rewriter(&getContext());
    (void)runRegionDCE(rewriter, getOperation()->getRegions());
  }
};

} // namespace
