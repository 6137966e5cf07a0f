//===- WeightStorage.cpp - bf16, int8 and int4 weights, chosen by the user ===//
//
// Decode reads every weight once per token, so its speed is the bytes of
// weights over the memory bandwidth: bf16 halves them, int8 with one f16
// scale per 64 values cuts them to 1.03 bytes a value. Only the kernels
// that widen a weight in registers (linear, gated linear, embedding) can
// read such a weight; a weight with any other use keeps f32, and so does
// the other weight of a gated linear it feeds (one storage for both). The choice is the user's
// (tfmc --weight-dtype): lower precision is never a default.
//
// Why 64 values a scale: llama.cpp's Q8_0 keeps one f16 scale per 32
// (1.0625 bytes a value); 64 gives 1.03, which keeps an int8 GPT-2 small
// file within 0.27 of its f32 size while the norms and positions stay f32,
// and the rounding step of a group is still its largest value / 127.
//
// int4 is GGUF's Q4_0 block as it is (support/WeightFormat.h): 32 values
// and an f16 scale in 18 bytes, 0.5625 bytes a value, so that a Q4_0 file
// needs no conversion. Its group is the format's: the `group` option is
// int8's.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/WeightChoice.h"
#include "support/WeightFormat.h"

namespace tfmc {
#define GEN_PASS_DEF_WEIGHTSTORAGE
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

/// Whether every use of `value` reads it as a weight that a kernel widens
/// in registers (KernelOpInterface::widensWeight: a linear's weight, a gated
/// linear's gate or up, an embedding's table), or a row split of it whose
/// parts are such weights.
bool onlyWidenedUses(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto kernel = dyn_cast<KernelOpInterface>(user)) {
      if (!kernel.widensWeight(use))
        return false;
    } else if (auto split = dyn_cast<SplitOp>(user)) {
      if (split.getAxis() != 0 || !llvm::all_of(split.getParts(), onlyWidenedUses))
        return false;
    } else {
      return false;
    }
  }
  return true;
}

struct WeightStoragePass
    : tfmc::impl::WeightStorageBase<WeightStoragePass> {
  using WeightStorageBase::WeightStorageBase;

  void runOnOperation() override {
    std::optional<WeightStorage> storage;
    if (dtype != "f32") {
      storage = symbolizeWeightStorage(dtype);
      if (!storage) {
        getOperation().emitError("tfm-weight-storage: dtype must be f32, "
                                 "bf16, int8, int4, q4_k, q5_k or q6_k, got '")
            << dtype << "'";
        return signalPassFailure();
      }
    }
    if (activations != "f32" && activations != "int8" &&
        activations != "bf16") {
      getOperation().emitError("tfm-weight-storage: activations must be f32, "
                               "int8 or bf16, got '")
          << activations << "'";
      return signalPassFailure();
    }
    const bool integerWeights = storage && isIntegerStorage(*storage);
    if (activations == "int8" && !integerWeights) {
      getOperation().emitError("tfm-weight-storage: activations=int8 needs "
                               "dtype=int8, int4 or a K-quant");
      return signalPassFailure();
    }
    if (activations == "bf16" && storage != WeightStorage::bf16) {
      getOperation().emitError("tfm-weight-storage: activations=bf16 needs "
                               "dtype=bf16");
      return signalPassFailure();
    }
    // Each override: a name and its storage (nullopt: f32).
    llvm::StringMap<std::optional<WeightStorage>> own;
    for (const std::string &entry : overrides) {
      std::size_t equals = entry.find('=');
      std::string value =
          equals == std::string::npos ? "" : entry.substr(equals + 1);
      std::optional<WeightStorage> parsed;
      if (value != "f32")
        parsed = symbolizeWeightStorage(value);
      if (value != "f32" && !parsed) {
        getOperation().emitError("tfm-weight-storage: overrides: expected "
                                 "NAME=f32|bf16|int8|int4|q4_k|q5_k|q6_k, "
                                 "got '")
            << entry << "'";
        return signalPassFailure();
      }
      own[entry.substr(0, equals)] = parsed;
    }
    if (storage == WeightStorage::int8 && group < 1) {
      getOperation().emitError("tfm-weight-storage: group must be positive, "
                               "got ")
          << group;
      return signalPassFailure();
    }
    if (!storage && own.empty())
      return;

    // One decision per name (every entry point's op of it), a gated
    // linear's gate and up in one storage (WeightChoice.h).
    tfmc::WeightsByName byName = tfmc::weightsByName(getOperation());
    llvm::StringSet<> narrow =
        tfmc::chooseWeights(getOperation(), byName, [](WeightOp weight) {
          return weight.getType().getRank() == 2 &&
                 onlyWidenedUses(weight.getResult());
        });
    // Each narrow name's storage: its override, else dtype's; a gated
    // linear's partners with different overrides both take dtype's.
    llvm::StringMap<std::optional<WeightStorage>> chosen;
    for (auto &entry : byName)
      if (narrow.contains(entry.getKey())) {
        auto it = own.find(entry.getKey());
        chosen[entry.getKey()] = it == own.end() ? storage : it->second;
      }
    getOperation().walk([&](GatedLinearOp gated) {
      WeightOp gate = sourceWeight(gated.getGate());
      WeightOp up = sourceWeight(gated.getUp());
      if (gate && up && chosen.count(gate.getName()) &&
          chosen.count(up.getName()) &&
          chosen[gate.getName()] != chosen[up.getName()])
        chosen[gate.getName()] = chosen[up.getName()] = storage;
    });
    auto storageOf = [&](Value value) -> std::optional<WeightStorage> {
      WeightOp weight = sourceWeight(value);
      if (!weight)
        return std::nullopt;
      auto it = chosen.find(weight.getName());
      return it == chosen.end() ? std::nullopt : it->second;
    };
    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    for (auto &entry : byName) {
      auto it = chosen.find(entry.getKey());
      if (it == chosen.end() || !it->second)
        continue;
      WeightStorage kind = *it->second;
      for (WeightOp weight : entry.getValue()) {
        // A K-quant row is whole super-blocks: said here, naming the
        // weight, rather than by the verifier after the pass.
        int64_t cols = weight.getType().getDimSize(1);
        if (isKQuant(kind) && cols % tfmc::format::kKQuantBlockValues != 0) {
          weight.emitError("weight '")
              << weight.getName() << "' has rows of " << cols
              << " values, but " << stringifyWeightStorage(kind)
              << " stores whole super-blocks of "
              << tfmc::format::kKQuantBlockValues
              << " (int8 and int4 take any row length)";
          return signalPassFailure();
        }
        weight.setStorageAttr(WeightStorageAttr::get(context, kind));
        if (kind == WeightStorage::int8)
          weight.setGroupAttr(builder.getI64IntegerAttr(group));
        else if (kind == WeightStorage::int4)
          weight.setGroupAttr(
              builder.getI64IntegerAttr(tfmc::format::kInt4BlockValues));
      }
    }
    // Integer products need integer weights, bf16 products bf16 ones.
    auto isNarrow = [&](Value value) {
      std::optional<WeightStorage> kind = storageOf(value);
      if (!kind)
        return false;
      if (activations == "int8")
        return isIntegerStorage(*kind);
      return *kind == WeightStorage::bf16;
    };
    if (activations == "f32")
      return;
    // Integer products: a linear whose weights are int8 or int4 quantises
    // its input; bf16 products: one whose weights are bf16 rounds it to bf16
    // (a gated linear's gate and up share one storage, so checking the gate
    // is enough).
    StringAttr narrowed = builder.getStringAttr(activations);
    getOperation().walk([&](Operation *op) {
      Value weight;
      if (auto linear = dyn_cast<LinearOp>(op))
        weight = linear.getWeight();
      else if (auto gated = dyn_cast<GatedLinearOp>(op))
        weight = gated.getGate();
      if (weight && isNarrow(weight))
        op->setAttr(kActivationsAttrName, narrowed);
    });
  }
};

} // namespace
