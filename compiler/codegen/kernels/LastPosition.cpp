//===- LastPosition.cpp - Each sequence's last position -------------------===//
//
// A prefill's final norm and output projection run on the last position of
// each sequence only (tfm.last_position): this kernel copies that row,
// B x D floats, so that they read a dense [B, 1, D] tensor.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

BuiltKernel algorithm(const KernelSpec &) {
  ImageParam x(Float(32), 3, "x");
  Var w("w"), r("r");
  Func out("last_position");
  // The sequence's last position, wherever its coordinates start.
  out(w, r) = x(w, x.dim(1).max(), r);
  return {out, {x}};
}

BuiltKernel gpu(const KernelSpec &spec) {
  BuiltKernel kernel = algorithm(spec);
  gridOverRows(kernel, spec);
  return kernel;
}

const KernelRegistration registration({KernelKind::LastPosition},
                                      {algorithm, scheduleOutputRows, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
