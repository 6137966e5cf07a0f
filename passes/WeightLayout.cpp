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
// On a target whose integer microkernel has the panel forms
// (TargetDescription::integerPanels: x86-64-avx2 and x86-64-avx512), an int8 or int4
// weight gets block panels of 16 rows (support/WeightFormat.h) under the
// same rules, where moreover every linear that reads it multiplies int8
// activations (tfm.activations = "int8") and an int8 weight's group is a
// multiple of 32 (what the microkernel takes): such a weight is read only
// by the microkernel, which then reads it without repacking at any row
// count (runtime/ukernels/BlockPanels.h).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/WeightChoice.h"
#include "passes/target/Target.h"
#include "support/Microkernels.h"
#include "support/WeightFormat.h"

namespace tfmc {
#define GEN_PASS_DEF_WEIGHTLAYOUT
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

/// Whether every use of `value` (rows of `panel`-row panels) is a linear's
/// weight or a gated linear's gate or up, or a row split of it at whole
/// panels whose parts are; with `integer`, each such linear's products
/// with int8 activations.
bool onlyLinearUses(Value value, int64_t panel, bool integer = false) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (integer && (isa<LinearOp>(user) || isa<GatedLinearOp>(user)) &&
        !hasInt8Activations(user))
      return false;
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
            !onlyLinearUses(part, panel, integer))
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
    std::optional<tfmc::target::TargetDescription> description =
        tfmc::lookupTargetOrEmit(getOperation(), target);
    if (!description)
      return signalPassFailure();
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
    // Block panels: int4, or int8 in groups the microkernel takes.
    const int64_t rows = tfmc::format::kBlockPanelRows;
    llvm::StringSet<> blockPaneled;
    if (description->integerPanels)
      blockPaneled =
          tfmc::chooseWeights(getOperation(), byName, [&](WeightOp weight) {
            std::optional<WeightStorage> storage = weight.getStorage();
            const bool blocks =
                storage == WeightStorage::int4 ||
                (storage == WeightStorage::int8 &&
                 int64_t(weight.getGroup().value_or(0)) %
                         tfmc::format::kMicrokernelGroupMultiple ==
                     0);
            return blocks && weight.getType().getRank() == 2 &&
                   weight.getType().getDimSize(0) % rows == 0 &&
                   onlyLinearUses(weight.getResult(), rows, /*integer=*/true);
          });
    Builder builder(&getContext());
    for (auto &entry : byName) {
      if (paneled.contains(entry.getKey()))
        for (WeightOp weight : entry.getValue())
          weight.setPanelAttr(builder.getI64IntegerAttr(panel));
      if (blockPaneled.contains(entry.getKey()))
        for (WeightOp weight : entry.getValue())
          weight.setPanelAttr(builder.getI64IntegerAttr(rows));
    }
  }
};

} // namespace
