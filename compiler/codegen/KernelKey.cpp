//===- KernelKey.cpp - Structural identity of kernels ---------------------===//

#include "compiler/codegen/KernelKey.h"

#include "compiler/codegen/kernels/Kernel.h"
#include "passes/target/Target.h"
#include "support/Microkernels.h"
#include "dialects/tfm/TfmDialect.h"

// Written by the build from the generator sources (compiler/CMakeLists.txt).
#include "compiler/codegen/GeneratorHash.h"

#include "mlir/IR/Attributes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/raw_ostream.h"

namespace tfmc::codegen {

std::string kernelKey(mlir::Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << '(';
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ")->(";
  llvm::interleaveComma(op->getResultTypes(), os);
  os << ')';
  for (mlir::NamedAttribute attr : op->getAttrs())
    if (attr.getName() != "tfm.arena")
      os << ' ' << attr.getName().getValue() << '=' << attr.getValue();
  // A weight stored in bf16 or int8 is another kernel argument type.
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (tfm::WeightOp weight = tfm::sourceWeight(operand))
      if (std::optional<tfm::WeightStorage> storage = weight.getStorage()) {
        os << " operand" << index << '='
           << tfm::stringifyWeightStorage(*storage);
        if (std::optional<uint64_t> group = weight.getGroup())
          os << '/' << *group;
        // Block panels are another layout of the same argument.
        if (std::optional<uint64_t> panel = weight.getPanel())
          os << "/panel" << *panel;
      }
  return key;
}

const char *kernelGeneratorHash() { return TFMC_KERNEL_GENERATOR_HASH; }

std::string hexDigest(llvm::StringRef text) {
  llvm::SHA1 hasher;
  hasher.update(text);
  auto digest = hasher.final();
  std::string hex;
  for (uint8_t byte : digest)
    hex += llvm::formatv("{0:x-2}", byte).str();
  return hex.substr(0, 20);
}

std::string kernelSymbol(mlir::Operation *op, const KernelSpec &spec,
                         const target::TargetDescription &target) {
  std::string key =
      kernelKey(op) + "|" + target.halideKernelTarget(spec.bf16Products) + "|" +
      kernelGeneratorHash() +
      (spec.autoschedule ? "|adams2019|cores=" + std::to_string(target.cores)
                         : std::string());
  // The microkernel a kernel calls, with its calling convention's version.
  if (!spec.integerMicrokernel.empty())
    key += "|" + (spec.weightPanel > 0
                      ? format::integerPanelMicrokernelName(spec.integerMicrokernel)
                      : format::integerMicrokernelName(spec.integerMicrokernel));
  if (!spec.kQuantMicrokernel.empty())
    key += "|" + format::kQuantMicrokernelName(spec.kQuantMicrokernel) + "|" +
           format::kQuantFloatMicrokernelName(spec.kQuantMicrokernel) + "|" +
           format::kQuantFloatPanelMicrokernelName(spec.kQuantMicrokernel);
  if (!spec.blockFloatMicrokernel.empty())
    key += "|" + format::blockFloatPanelMicrokernelName(spec.blockFloatMicrokernel);
  if (!spec.floatMicrokernel.empty())
    key += "|" + format::floatPanelMicrokernelName(spec.floatMicrokernel);
  if (!spec.floatRowMicrokernel.empty())
    key += "|" + format::floatRowMicrokernelName(spec.floatRowMicrokernel);
  // A narrowed KV cache changes the types the kernel writes or reads.
  const std::pair<const char *, Halide::Type> types[] = {
      {"out", spec.outputType}, {"k", spec.keyType}, {"v", spec.valueType}};
  for (const auto &[role, type] : types)
    if (type != Halide::Float(32))
      key += std::string("|") + role + "=" +
             Halide::type_to_c_type(type, /*include_space=*/false);
  if (spec.pagedCache)
    key += "|paged";
  // Adams2019 schedules for the target's cores and for its estimates: a
  // kernel scheduled for 1024 rows must not be reused for a 128-row bound
  // (its ShiftInwards splits would write before the start of the output).
  for (const std::vector<int64_t> &extents : spec.estimates) {
    key += "|";
    for (int64_t extent : extents)
      key += std::to_string(extent) + ",";
  }
  return "tfmc_" + hexDigest(key);
}

} // namespace tfmc::codegen
