//===- WeightChoice.cpp - A weight's storage, decided once per name -------===//

#include "passes/WeightChoice.h"

using namespace mlir;
using namespace tfmc::tfm;

tfmc::WeightsByName tfmc::weightsByName(ModuleOp module) {
  WeightsByName byName;
  module.walk(
      [&](WeightOp weight) { byName[weight.getName()].push_back(weight); });
  return byName;
}

llvm::StringSet<>
tfmc::chooseWeights(ModuleOp module, const WeightsByName &byName,
                    llvm::function_ref<bool(WeightOp)> qualifies) {
  llvm::StringSet<> chosen;
  for (const auto &entry : byName)
    if (llvm::all_of(entry.getValue(), qualifies))
      chosen.insert(entry.getKey());
  SmallVector<GatedLinearOp> gatedLinears;
  module.walk([&](GatedLinearOp gated) { gatedLinears.push_back(gated); });
  auto isChosen = [&](Value value) {
    WeightOp weight = sourceWeight(value);
    return weight && chosen.contains(weight.getName());
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (GatedLinearOp gated : gatedLinears) {
      bool gateChosen = isChosen(gated.getGate());
      if (gateChosen == isChosen(gated.getUp()))
        continue;
      chosen.erase(
          sourceWeight(gateChosen ? gated.getGate() : gated.getUp()).getName());
      changed = true;
    }
  }
  return chosen;
}
