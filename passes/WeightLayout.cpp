//===- WeightLayout.cpp - f32 linear weights stored in panels --------------===//
//
// The packed GEMM (Linear.cpp) reads W in panels: for a block of columns of
// the output, W's rows of those columns with the rows innermost, so that
// each step of K loads whole vectors of consecutive outputs' weights. It
// used to pack those panels on every call, about a fifth of a large GEMM's
// time (issue 29). This pass gives every f32 weight that only linear
// kernels read the panel layout as its storage, decided once per program:
// `panel` rows per panel (the target's weightPanel, 16 on x86: a cache line
// of f32), stored [N / panel, K, panel]. The runtime lays each such weight
// out once at load (runtime/core/WeightConvert.h). The packed form then
// reads the panels in place, and a decode step's GEMV reads the same panels
// (Linear.cpp's panel form: one broadcast of x per row and step, whole
// vectors of W, no lane sums), so prefill and decode share one copy.
//
// A weight qualifies when, under every entry point that names it:
//  - it is f32 (no tfm-weight-storage storage) and rank 2, with N a
//    multiple of the panel (no padding, no tail panel);
//  - every use is a linear's weight or a gated linear's gate or up, directly
//    or through a row split whose parts start and end on whole panels.
// A tied embedding table (GPT-2's wte is also its output head), a norm's
// gain or any other use keeps the row-major layout. A gated linear's gate
// and up share one layout (its kernel reads both alike), as with storage.
// CUDA targets have no panel (weightPanel 0): the pass changes nothing.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/WeightChoice.h"
#include "passes/target/Target.h"

namespace tfmc {
#define GEN_PASS_DEF_WEIGHTLAYOUT
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

/// Whether every use of `value` (rows of `panel`-row panels) is a linear's
/// weight or a gated linear's gate or up, or a row split of it at whole
/// panels whose parts are.
bool onlyLinearUses(Value value, int64_t panel) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto linear = dyn_cast<LinearOp>(user)) {
      if (&use != &linear.getWeightMutable())
        return false;
    } else if (auto gated = dyn_cast<GatedLinearOp>(user)) {
      if (&use != &gated.getGateMutable() && &use != &gated.getUpMutable())
        return false;
    } else if (auto split = dyn_cast<SplitOp>(user)) {
      if (split.getAxis() != 0)
        return false;
      for (Value part : split.getParts())
        if (cast<RankedTensorType>(part.getType()).getDimSize(0) % panel != 0 ||
            !onlyLinearUses(part, panel))
          return false;
    } else {
      return false;
    }
  }
  return true;
}

struct WeightLayoutPass : tfmc::impl::WeightLayoutBase<WeightLayoutPass> {
  using WeightLayoutBase::WeightLayoutBase;

  void runOnOperation() override {
    std::string error;
    std::optional<tfmc::target::TargetDescription> description =
        tfmc::target::lookupTarget(target, error);
    if (!description) {
      getOperation().emitError(error);
      return signalPassFailure();
    }
    const int64_t panel = description->weightPanel;
    if (panel <= 0)
      return;

    // One decision per name (every entry point's op of it), a gated
    // linear's gate and up alike (WeightChoice.h).
    tfmc::WeightsByName byName = tfmc::weightsByName(getOperation());
    llvm::StringSet<> paneled =
        tfmc::chooseWeights(getOperation(), byName, [&](WeightOp weight) {
          return !weight.getStorage() && weight.getType().getRank() == 2 &&
                 weight.getType().getDimSize(0) % panel == 0 &&
                 onlyLinearUses(weight.getResult(), panel);
        });
    Builder builder(&getContext());
    for (auto &entry : byName)
      if (paneled.contains(entry.getKey()))
        for (WeightOp weight : entry.getValue())
          weight.setPanelAttr(builder.getI64IntegerAttr(panel));
  }
};

} // namespace
