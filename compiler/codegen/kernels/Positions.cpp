//===- Positions.cpp - Adds sinusoidal or learned positions ---------------===//
//
// In a decode step the sequence dimension starts at P, the number of cached
// tokens (the plan gives the buffers that min): positions P .. P+S-1. With
// position_ids (left-padded batches) each token's position is read from it
// instead (arguments x, position_ids, then the learned table).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"

#include <cmath>

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

/// The sinusoid of feature d at `position`, in double (arguments reach
/// max_len radians, where f32 loses digits), rounded to f32: the original
/// Transformer's interleaved layout (PE[p, 2i] = sin(p / 10000^(2i/D)),
/// PE[p, 2i+1] = cos(same)) or Marian's halves (sin of frequency i at
/// feature i < ceil(D/2), cos of frequency i at ceil(D/2) + i).
Expr sinusoid(const KernelSpec &spec, Var d, Expr position) {
  const double rate = -std::log(10000.0) / double(spec.width);
  Expr p = cast<double>(position);
  if (spec.sinusoidHalves) {
    const int sentinel = int((spec.width + 1) / 2);
    Expr first = d < sentinel;
    Expr i = cast<double>(select(first, d, d - sentinel));
    Expr angle = p * exp(i * Expr(2.0 * rate));
    return cast<float>(select(first, sin(angle), cos(angle)));
  }
  Expr even = cast<double>((d / 2) * 2);
  Expr angle = p * exp(even * Expr(rate));
  return cast<float>(select(d % 2 == 0, sin(angle), cos(angle)));
}

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 3, "x");
  Var d("d"), s("s"), b("b");
  Func out("positions");
  std::vector<ImageParam> arguments{x};
  if (spec.positionIds) {
    ImageParam ids(Int(64), 2, "position_ids");
    arguments.push_back(ids);
    // The runtime checked 0 <= id < max_len; clamped for bounds inference.
    Expr position = cast<int>(ids(s, b));
    if (spec.learnedPositions) {
      ImageParam table(Float(32), 2, "table");
      arguments.push_back(table);
      out(d, s, b) =
          x(d, s, b) + table(d, clamp(position, 0, table.dim(1).extent() - 1));
      return {out, arguments};
    }
    out(d, s, b) = x(d, s, b) + sinusoid(spec, d, position);
    return {out, arguments};
  }
  if (spec.learnedPositions) {
    ImageParam table(Float(32), 2, "table");
    out(d, s, b) = x(d, s, b) + table(d, s);
    arguments.push_back(table);
    return {out, arguments};
  }
  Func pe("sinusoid");
  pe(d, s) = sinusoid(spec, d, s);
  out(d, s, b) = x(d, s, b) + pe(d, s);
  return {out, arguments, {{"sinusoid", pe}}};
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  if (kernel.stages.count("sinusoid"))
    kernel.stages["sinusoid"].compute_root().parallel(Var("s"));
  scheduleTokenRows(kernel.output, spec.plan<target::CpuRowsPlan>());
}

BuiltKernel gpu(const KernelSpec &spec) {
  // The sinusoid is computed inline, per element, in double (as on the CPU).
  BuiltKernel kernel = algorithm(spec);
  gridOverTokens(kernel, spec);
  return kernel;
}

const KernelRegistration registration({KernelKind::Positions},
                                      {algorithm, cpuSchedule, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
