//===- Elementwise.cpp - scale, softcap, activation, add, mul over (W, R) -===//

#include "compiler/codegen/kernels/Common.h"

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 2, "x");
  Var w("w"), r("r");
  Func out(spec.kind == KernelKind::Scale ? "scale" : "activation");
  std::vector<ImageParam> arguments{x};
  switch (spec.kind) {
  case KernelKind::Scale:
    out(w, r) = x(w, r) * float(spec.scale);
    break;
  case KernelKind::Softcap:
    out(w, r) = softcap(x(w, r), spec.softcap);
    break;
  case KernelKind::Activation:
    out(w, r) = activation(spec.activation, x(w, r));
    break;
  default: {
    ImageParam y(Float(32), 2, "y");
    out(w, r) = spec.kind == KernelKind::Mul ? x(w, r) * y(w, r)
                                             : x(w, r) + y(w, r);
    arguments.push_back(y);
    break;
  }
  }
  return {out, arguments};
}

BuiltKernel gpu(const KernelSpec &spec) {
  BuiltKernel kernel = algorithm(spec);
  gridOverRows(kernel, spec);
  return kernel;
}

const KernelRegistration registration({KernelKind::Scale, KernelKind::Softcap,
                                       KernelKind::Activation, KernelKind::Add,
                                       KernelKind::Mul},
                                      {algorithm, scheduleOutputRows, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
