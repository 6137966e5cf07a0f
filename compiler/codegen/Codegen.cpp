//===- Codegen.cpp - From a planned tfm module to native code -------------===//

#include "compiler/codegen/Codegen.h"

#include "compiler/codegen/Link.h"
#include "compiler/codegen/Lowering.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

using namespace mlir;

namespace tfmc::codegen {

std::string defaultCacheDir() {
  if (const char *dir = std::getenv("TFMC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/tfmc";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/tfmc";
}

LogicalResult emitArtifact(llvm::ArrayRef<TargetModule> variants,
                           const CodegenOptions &options,
                           llvm::raw_ostream &os,
                           std::vector<VariantCost> *costs) {
  if (variants.empty())
    return failure();
  std::vector<LinkVariant> lowered;
  std::vector<VariantCost> spent(variants.size());
  for (const TargetModule &variant : variants) {
    if (variant.target.isGpu() && options.autoschedule)
      return mlir::ModuleOp(variant.module).emitError(
          "--scheduler adams2019 schedules CPU kernels only (Halide 14 has no "
          "GPU autoscheduler); CUDA targets use their tile plans");
    auto start = std::chrono::steady_clock::now();
    FailureOr<LoweredModule> module = lowerModule(
        mlir::ModuleOp(variant.module), variant.target, options.autoschedule);
    if (failed(module))
      return failure();
    spent[lowered.size()].seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    lowered.push_back({variant.module, variant.target, std::move(*module)});
  }
  if (options.artifact != Artifact::Halide) {
    LogicalResult linked = linkArtifact(lowered, options, spent);
    if (costs)
      *costs = spent;
    return linked;
  }
  if (variants.size() > 1)
    return mlir::ModuleOp(variants.front().module).emitError(
        "--emit halide shows one target's kernels; give --target one target");

  const target::TargetDescription &target = variants.front().target;
  for (const auto &[name, kernel] : lowered.front().lowered.kernels) {
    std::string description;
    try {
      description = describeKernel(kernel.spec, target);
    } catch (const std::exception &e) {
      std::string message = e.what();
      std::replace(message.begin(), message.end(), '\n', ' ');
      return kernel.op->emitError("Halide cannot lower kernel ")
             << name << ": " << message;
    }
    os << "// kernel " << name << ": " << kernel.op->getName() << " at "
       << kernel.op->getLoc() << "\n"
       << description << "\n";
  }
  return success();
}

} // namespace tfmc::codegen
