//===- TilePlan.cpp - Tile plans to and from `tfm.tile` -------------------===//

#include "passes/target/TilePlan.h"

#include "dialects/tfm/TfmDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSet.h"

namespace tfmc::target {

using namespace mlir;

namespace {

/// The plan struct that a kernel of `kind` has on `target`; a CPU GEMM has
/// two forms, told apart by the dictionary's `family` ("kind" key).
TilePlan emptyPlanFor(KernelKind kind, const TargetDescription &target,
                      StringRef family) {
  bool gpu = target.isGpu();
  switch (kind) {
  case KernelKind::Linear:
  case KernelKind::GatedLinear:
    if (gpu)
      return GpuGemmPlan{};
    if (family == CpuPackedGemmPlan::kFamily)
      return CpuPackedGemmPlan{};
    return CpuGemmPlan{};
  case KernelKind::Attention:
    return gpu ? TilePlan(GpuAttentionPlan{}) : TilePlan(CpuAttentionPlan{});
  default: // every other kind is a row kernel (Tile.cpp's planKernel)
    return gpu ? TilePlan(GpuRowsPlan{}) : TilePlan(CpuRowsPlan{});
  }
}

} // namespace

DictionaryAttr toDictionary(Builder &builder, const TargetDescription &target,
                            const TilePlan &plan) {
  SmallVector<NamedAttribute> entries;
  std::visit(
      [&](auto copy) {
        entries.push_back(builder.getNamedAttr(
            "kind", builder.getStringAttr(decltype(copy)::kFamily)));
        entries.push_back(builder.getNamedAttr(
            "target", builder.getStringAttr(target.name)));
        copy.fields([&](const char *key, auto &value, FieldRange = {}) {
          if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>)
            entries.push_back(
                builder.getNamedAttr(key, builder.getBoolAttr(value)));
          else
            entries.push_back(builder.getNamedAttr(
                key, builder.getI64IntegerAttr(value)));
        });
      },
      plan);
  return builder.getDictionaryAttr(entries);
}

std::optional<TilePlan> readTilePlan(Operation *op,
                                     const TargetDescription &target) {
  std::optional<KernelKind> kind = tfm::kernelKindOf(op);
  if (!kind) {
    op->emitError("not a kernel: tfmc has no tile plan for '")
        << op->getName() << "'";
    return std::nullopt;
  }
  auto dict = op->getAttrOfType<DictionaryAttr>("tfm.tile");
  if (!dict) {
    op->emitError("kernel has no tile plan: run tfm-tile first");
    return std::nullopt;
  }
  auto text = [&](StringRef key) -> StringRef {
    auto value = dict.getAs<StringAttr>(key);
    return value ? value.getValue() : StringRef();
  };
  if (text("target") != target.name) {
    op->emitError("tile plan is for target '")
        << text("target") << "', not '" << target.name << "'";
    return std::nullopt;
  }
  TilePlan plan = emptyPlanFor(*kind, target, text("kind"));
  bool ok = true;
  llvm::StringSet<> known{"kind", "target"};
  std::visit(
      [&](auto &typed) {
        if (text("kind") != std::decay_t<decltype(typed)>::kFamily) {
          bool twoForms = std::is_same_v<std::decay_t<decltype(typed)>,
                                         CpuGemmPlan>;
          op->emitError("tile plan of kind '")
              << text("kind") << "' for a kernel that needs a '"
              << std::decay_t<decltype(typed)>::kFamily << "' plan"
              << (twoForms ? " (or a 'packed_gemm' one)" : "");
          ok = false;
          return;
        }
        typed.fields([&](const char *key, auto &value, FieldRange range = {}) {
          known.insert(key);
          if (!ok)
            return;
          Attribute attr = dict.get(key);
          if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) {
            if (auto flag = dyn_cast_or_null<BoolAttr>(attr)) {
              value = flag.getValue();
              return;
            }
          } else if (auto integer = dyn_cast_or_null<IntegerAttr>(attr)) {
            value = integer.getInt();
            if (value >= range.minimum && value <= range.maximum)
              return;
            op->emitError("tile plan's '")
                << key << "' is " << value << ", outside " << range.minimum
                << ".." << range.maximum;
            ok = false;
            return;
          }
          op->emitError("tile plan has no valid '") << key << "'";
          ok = false;
        });
      },
      plan);
  if (!ok)
    return std::nullopt;
  for (NamedAttribute entry : dict)
    if (!known.contains(entry.getName().getValue())) {
      op->emitError("tile plan has an unknown key '")
          << entry.getName().getValue() << "'";
      return std::nullopt;
    }
  return plan;
}

} // namespace tfmc::target
