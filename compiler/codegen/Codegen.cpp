//===- Codegen.cpp - From a planned tfm module to native code -------------===//

#include "compiler/codegen/Codegen.h"

#include "compiler/codegen/Link.h"
#include "compiler/codegen/Lowering.h"

#include <algorithm>
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

LogicalResult emitArtifact(ModuleOp module, const CodegenOptions &options,
                           llvm::raw_ostream &os) {
  if (options.target.isGpu() && options.autoschedule)
    return module.emitError(
        "--scheduler adams2019 schedules CPU kernels only (Halide 14 has no "
        "GPU autoscheduler); CUDA targets use their tile plans");
  FailureOr<LoweredModule> lowered =
      lowerModule(module, options.target, options.autoschedule);
  if (failed(lowered))
    return failure();
  if (options.artifact != Artifact::Halide)
    return linkArtifact(module, *lowered, options);

  for (const auto &[name, kernel] : lowered->kernels) {
    std::string description;
    try {
      description = describeKernel(kernel.spec, options.target);
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
