//===- QuantiseOnce.cpp - int8 activations quantised once per input -------===//
//
// A linear with int8 activations (tfm.activations = "int8") quantises its
// input per row and group before its integer products
// (compiler/codegen/kernels/LinearQuantized.cpp). Where several such
// linears read one x in the same groups, as a layer's q, k and v
// projections do (GPT-2's c_attn as three row views, Llama's three
// weights), each quantised it again: two of a layer's six quantisations
// were repeats. This pass gives such an x one tfm.quantize, whose bytes
// (support/WeightFormat.h, quantisedRowBytes) those linears read instead
// of x: the same levels and scales, so the same numbers.
//
// A linear that is x's only such reader keeps its own quantisation: a
// separate kernel cost more than it saved (GPT-2 small int8a8 prefill 128,
// 2 threads, Sapphire Rapids: 28.8-30.8 ms with a tfm.quantize before
// every linear, 27.9-29.6 with one where two or more share x, 28.2-29.8
// with none). CUDA targets keep every linear's
// own: tfm.quantize has no GPU kernel.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/target/Target.h"
#include "support/WeightFormat.h"

#include "llvm/ADT/MapVector.h"

namespace tfmc {
#define GEN_PASS_DEF_QUANTISEONCE
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

/// The group in which a linear with int8 activations quantises x: an int8
/// weight's own, int4's block and a K-quant's sub-block (32 values,
/// support/Microkernels.h); 0 for any other weight.
int64_t activationGroup(Value weight) {
  WeightOp source = sourceWeight(weight);
  std::optional<WeightStorage> storage = weightStorageOf(weight);
  if (!source || !storage)
    return 0;
  if (*storage == WeightStorage::int8)
    return int64_t(source.getGroup().value_or(0));
  if (*storage == WeightStorage::int4 || isKQuant(*storage))
    return tfmc::format::kInt4BlockValues;
  return 0;
}

struct QuantiseOncePass : tfmc::impl::QuantiseOnceBase<QuantiseOncePass> {
  using QuantiseOnceBase::QuantiseOnceBase;

  void runOnOperation() override {
    std::optional<tfmc::target::TargetDescription> description =
        tfmc::lookupTargetOrEmit(getOperation(), target);
    if (!description)
      return signalPassFailure();
    if (description->isGpu())
      return;
    // The int8-activation linears reading each f32 value, by group, in
    // program order.
    llvm::MapVector<std::pair<Value, int64_t>, SmallVector<Operation *>>
        readers;
    getOperation().walk([&](Operation *op) {
      if (!hasInt8Activations(op))
        return;
      Value weight;
      if (auto linear = dyn_cast<LinearOp>(op))
        weight = linear.getWeight();
      else if (auto gated = dyn_cast<GatedLinearOp>(op))
        weight = gated.getGate();
      else
        return;
      Value input = op->getOperand(0);
      auto type = cast<RankedTensorType>(input.getType());
      int64_t group = activationGroup(weight);
      if (group <= 0 || !type.getElementType().isF32() ||
          ShapedType::isDynamic(type.getShape().back()))
        return;
      readers[{input, group}].push_back(op);
    });
    OpBuilder builder(&getContext());
    for (auto &[key, ops] : readers) {
      if (ops.size() < 2)
        continue;
      auto [input, group] = key;
      auto type = cast<RankedTensorType>(input.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape.back() = tfmc::format::quantisedRowBytes(shape.back(), group);
      builder.setInsertionPointAfterValue(input);
      auto quantize = builder.create<QuantizeOp>(
          input.getLoc(), RankedTensorType::get(shape, builder.getI8Type()),
          input, builder.getI64IntegerAttr(group));
      for (Operation *op : ops)
        op->setOperand(0, quantize.getResult());
    }
  }
};

} // namespace
