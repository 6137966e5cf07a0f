//===- FuseEpilogues.cpp - Activations, residuals, head splits ------------===//
//
// Each pattern folds a cheap elementwise step into the kernel that produces
// its input, so the intermediate is never written to memory and read back.
// Every pattern needs that intermediate to have exactly one user.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tfmc {
#define GEN_PASS_DEF_FUSEEPILOGUES
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

/// A linear whose result can still take an epilogue.
LinearOp plainLinear(Value value) {
  auto linear = value.getDefiningOp<LinearOp>();
  if (!linear || !linear.getResult().hasOneUse() || linear.getResidual())
    return nullptr;
  return linear;
}

/// activation(linear(x)) -> linear(x) {activation}
struct ActivationIntoLinear : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ActivationOp activation,
                                PatternRewriter &rewriter) const override {
    LinearOp linear = plainLinear(activation.getInput());
    if (!linear || linear.getActivationAttr())
      return rewriter.notifyMatchFailure(activation, "input is not a plain linear");
    rewriter.modifyOpInPlace(
        linear, [&] { linear.setActivationAttr(activation.getKindAttr()); });
    rewriter.replaceOp(activation, linear.getResult());
    return success();
  }
};

/// norm(x + y) -> norm(x) residual y, for every norm (NormOpInterface: its
/// kernel adds the residual before normalising): post-norm's LN(x + f(x)).
struct ResidualIntoNorm : OpInterfaceRewritePattern<NormOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(NormOpInterface norm,
                                PatternRewriter &rewriter) const override {
    auto add = norm.getInput().getDefiningOp<AddOp>();
    if (norm.getResidual() || !add || !add.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(norm, "input is not a single-use add");
    rewriter.modifyOpInPlace(norm, [&] {
      norm.getInputMutable().assign(add.getLhs());
      norm.getResidualMutable().assign(add.getRhs());
    });
    rewriter.eraseOp(add);
    return success();
  }
};

/// x + linear(h) -> linear(h) residual x: pre-norm's x + f(LN(x)).
struct ResidualIntoLinear : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    // A sum that a norm reads is that norm's to take (post-norm).
    if (add.getResult().hasOneUse()) {
      Operation *user = *add.getResult().getUsers().begin();
      auto norm = dyn_cast<NormOpInterface>(user);
      if (norm && norm.getInput() == add.getResult() && !norm.getResidual())
        return rewriter.notifyMatchFailure(add, "a norm takes this sum");
    }
    LinearOp lhs = plainLinear(add.getLhs());
    LinearOp rhs = plainLinear(add.getRhs());
    // With two candidates, the later one is the sublayer; the earlier one
    // is the residual stream.
    LinearOp linear = rhs;
    if (!rhs || (lhs && rhs->isBeforeInBlock(lhs)))
      linear = lhs;
    if (!linear)
      return rewriter.notifyMatchFailure(add, "no single-use linear operand");
    Value residual = linear == lhs ? add.getRhs() : add.getLhs();
    rewriter.replaceOpWithNewOp<LinearOp>(
        add, add.getType(), linear.getInput(), linear.getWeight(),
        linear.getBias(), residual, linear.getActivationAttr());
    rewriter.eraseOp(linear);
    return success();
  }
};

/// merge_heads(attention(split_heads(q), split_heads(k), split_heads(v)))
///   -> attention(q, k, v) {heads}: the kernel indexes heads in place.
struct HeadsIntoAttention : OpRewritePattern<MergeHeadsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MergeHeadsOp merge,
                                PatternRewriter &rewriter) const override {
    auto attention = merge.getInput().getDefiningOp<AttentionOp>();
    if (!attention || attention.isMergedLayout() ||
        !attention.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(merge, "input is not a split attention");
    auto q = attention.getQuery().getDefiningOp<SplitHeadsOp>();
    auto k = attention.getKey().getDefiningOp<SplitHeadsOp>();
    auto v = attention.getValue().getDefiningOp<SplitHeadsOp>();
    if (!q || !k || !v)
      return rewriter.notifyMatchFailure(merge, "operands are not split heads");
    int64_t heads = attention.getNumHeads();
    int64_t kvHeads = attention.getNumKvHeads();
    rewriter.replaceOpWithNewOp<AttentionOp>(
        merge, merge.getType(), q.getInput(), k.getInput(), v.getInput(),
        attention.getKeyPadding(), attention.getMaskAttr(),
        attention.getScaleAttr(), attention.getLogitSoftcapAttr(),
        rewriter.getI64IntegerAttr(heads),
        kvHeads != heads ? rewriter.getI64IntegerAttr(kvHeads) : nullptr,
        attention.getFromCacheAttr());
    rewriter.eraseOp(attention);
    return success();
  }
};

/// mul(act(linear(x, G)), linear(x, U)) -> gated_linear(x, G, U) {act}:
/// a gated FFN's gate and up projections in one GEMM that writes only
/// their product. The activation may already sit in the gate's epilogue.
struct GateIntoLinear : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The gate: an activation of a plain linear, in either form.
  static std::pair<LinearOp, ActivationKindAttr> gateOf(Value value) {
    if (auto activation = value.getDefiningOp<ActivationOp>()) {
      LinearOp linear = plainLinear(activation.getInput());
      if (linear && !linear.getActivationAttr() &&
          activation.getResult().hasOneUse())
        return {linear, activation.getKindAttr()};
      return {};
    }
    LinearOp linear = plainLinear(value);
    if (linear && linear.getActivationAttr())
      return {linear, linear.getActivationAttr()};
    return {};
  }

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (bool gateFirst : {true, false}) {
      Value gateValue = gateFirst ? mul.getLhs() : mul.getRhs();
      Value upValue = gateFirst ? mul.getRhs() : mul.getLhs();
      auto [gate, kind] = gateOf(gateValue);
      LinearOp up = plainLinear(upValue);
      if (!gate || !up || up.getActivationAttr() || gate == up ||
          gate.getInput() != up.getInput() ||
          gate.getWeight().getType() != up.getWeight().getType() ||
          bool(gate.getBias()) != bool(up.getBias()))
        continue;
      Operation *activation = gateValue.getDefiningOp<ActivationOp>();
      rewriter.replaceOpWithNewOp<GatedLinearOp>(
          mul, mul.getType(), gate.getInput(), gate.getWeight(),
          up.getWeight(), gate.getBias(), up.getBias(), kind);
      if (activation)
        rewriter.eraseOp(activation);
      rewriter.eraseOp(gate);
      rewriter.eraseOp(up);
      return success();
    }
    return rewriter.notifyMatchFailure(
        mul, "not act(linear(x, G)) · linear(x, U) of one x");
  }
};

struct FuseEpiloguesPass : tfmc::impl::FuseEpiloguesBase<FuseEpiloguesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ActivationIntoLinear, ResidualIntoNorm, ResidualIntoLinear,
                 HeadsIntoAttention, GateIntoLinear>(
        &getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
