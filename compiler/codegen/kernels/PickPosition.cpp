//===- PickPosition.cpp - Each sequence's first or last position ----------===//
//
// A prefill's final norm and output projection run on the last position of
// each sequence only (tfm.last_position), and BERT's pooler on the first
// (tfm.first_position): this kernel copies that row, B x D floats, so that
// they read a dense [B, 1, D] tensor.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 3, "x");
  Var w("w"), r("r");
  const bool last = spec.kind == KernelKind::LastPosition;
  Func out(last ? "last_position" : "first_position");
  // The sequence's first or last position, wherever its coordinates start.
  out(w, r) = x(w, last ? x.dim(1).max() : x.dim(1).min(), r);
  return {out, {x}};
}

BuiltKernel gpu(const KernelSpec &spec) {
  BuiltKernel kernel = algorithm(spec);
  gridOverRows(kernel, spec);
  return kernel;
}

const KernelRegistration
    registration({KernelKind::LastPosition, KernelKind::FirstPosition},
                 {algorithm, scheduleOutputRows, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
