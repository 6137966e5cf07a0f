//===- WeightChoice.h - A weight's storage, decided once per name -*- C++ -*-===//
//
// What tfm-weight-storage and tfm-weight-layout share: the runtime loads one
// tensor per weight name for every entry point, so a weight's storage or
// layout is decided once per name, over every op of that name; and a gated
// linear's kernel reads its gate and up alike, so neither may differ from
// its partner.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_PASSES_WEIGHTCHOICE_H
#define TFMC_PASSES_WEIGHTCHOICE_H

#include "dialects/tfm/TfmDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace tfmc {

/// Every tfm.weight of `module`, by name.
using WeightsByName = llvm::StringMap<llvm::SmallVector<tfm::WeightOp>>;
WeightsByName weightsByName(mlir::ModuleOp module);

/// The names all of whose ops satisfy `qualifies`, less those whose gated
/// linear partner (gate or up) does not qualify: repeated until no gated
/// linear has one weight chosen and the other not, since a weight may be
/// the partner of several.
llvm::StringSet<>
chooseWeights(mlir::ModuleOp module, const WeightsByName &byName,
              llvm::function_ref<bool(tfm::WeightOp)> qualifies);

} // namespace tfmc

#endif // TFMC_PASSES_WEIGHTCHOICE_H
