//===- CheckKernels.cpp - Every op left after fusion is a kernel ----------===//
//
// The frontend writes attention step by step; the fusion passes turn each
// chain into kernels. A chain they could not match leaves ops no kernel
// implements (tfm.softmax, tfm.matmul, the mask producers, ...). This pass
// reports the first such op as an error, so that an unfused model fails at
// the op that was not fused, before it gets a tile plan or an arena slot.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

namespace tfmc {
#define GEN_PASS_DEF_CHECKKERNELS
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;

namespace {

struct CheckKernelsPass : tfmc::impl::CheckKernelsBase<CheckKernelsPass> {
  void runOnOperation() override {
    for (Operation &op : getOperation().getBody().getOps()) {
      if (isa<func::ReturnOp, tfmc::tfm::KernelOpInterface>(op) ||
          tfmc::tfm::isMemoryView(&op))
        continue;
      op.emitError("'")
          << op.getName()
          << "' is not a kernel: the middle end could not fuse it (run "
             "tfm-fuse-masked-attention with remarks=true to see why a chain "
             "was not fused)";
      return signalPassFailure();
    }
  }
};

} // namespace
