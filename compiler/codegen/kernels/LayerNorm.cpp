//===- LayerNorm.cpp - LayerNorm and RMSNorm over the last dimension -------===//
//
// Post-norm sublayers fuse their residual add: the kernel normalises
// x + residual. RMSNorm (Llama) is LayerNorm without the mean and the bias:
// x · rsqrt(mean(x²) + eps) · gamma, the same schedule with one sum less.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 2, "x");
  ImageParam residual(Float(32), 2, "residual");
  ImageParam gamma(Float(32), 1, "gamma");
  ImageParam beta(Float(32), 1, "beta");
  std::vector<ImageParam> arguments{x};
  Var w("w"), r("r");
  Func sum("sum_in");
  if (spec.hasResidual) {
    arguments.push_back(residual);
    sum(w, r) = x(w, r) + residual(w, r);
  } else {
    sum(w, r) = x(w, r);
  }
  arguments.push_back(gamma);
  float width = float(spec.width);
  RDom rw(0, int(spec.width), "rw");
  if (spec.kind == KernelKind::RmsNorm) {
    Func squares("variance"), out("rms_norm");
    squares(r) = 0.0f;
    squares(r) += sum(rw, r) * sum(rw, r);
    Expr inverse = 1.0f / sqrt(squares(r) / width + float(spec.eps));
    // Gemma's gain, 1 + gamma, in f32 as its RMSNorm computes it.
    Expr gain = spec.normGainOffset ? 1.0f + gamma(w) : Expr(gamma(w));
    out(w, r) = sum(w, r) * inverse * gain;
    return {out, arguments, {{"sum_in", sum}, {"variance", squares}}};
  }
  arguments.push_back(beta);
  Func mean("mean"), variance("variance"), out("layer_norm");
  mean(r) = 0.0f;
  mean(r) += sum(rw, r);
  Expr mu = mean(r) / width;
  variance(r) = 0.0f;
  Expr centred = sum(rw, r) - mean(r) / width;
  variance(r) += centred * centred;
  Expr inverse = 1.0f / sqrt(variance(r) / width + float(spec.eps));
  out(w, r) = (sum(w, r) - mu) * inverse * gamma(w) + beta(w);
  return {out,
          arguments,
          {{"sum_in", sum}, {"mean", mean}, {"variance", variance}}};
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const target::CpuRowsPlan &plan = spec.plan<target::CpuRowsPlan>();
  const int lanes = int(plan.vector);
  // The row's sum x + residual is read three times (mean, variance,
  // output): keep it. Without a residual it is x itself, read in place.
  Var row = scheduleRows(kernel.output, Var("w"), Var("r"), plan);
  if (spec.hasResidual)
    kernel.stages["sum_in"].compute_at(kernel.output, row)
        .vectorize(Var("w"), lanes, TailStrategy::GuardWithIf);
  // The two sums over the row: with a width that is a whole number of
  // vectors, each is a vector of partial sums (rfactor) and then one sum
  // across lanes, instead of a scalar loop over the width.
  for (const char *name : {"mean", "variance"}) {
    if (!kernel.stages.count(name))
      continue; // RMSNorm has no mean
    Func sumOverRow = kernel.stages[name];
    sumOverRow.compute_at(kernel.output, row);
    if (spec.width % lanes != 0)
      continue;
    RVar outer("rw_outer"), inner("rw_inner");
    Var lane("lane");
    Func partial = sumOverRow.update()
                       .split(sumOverRow.rvars(0)[0], outer, inner, lanes)
                       .rfactor(inner, lane);
    partial.compute_at(kernel.output, row).vectorize(lane);
    partial.update().vectorize(lane);
  }
}

/// One thread block per row: the row's input (with the residual) is staged
/// in shared memory; mean and variance are reduced in two steps, `threads`
/// partial sums in parallel (rfactor) and then those partials.
BuiltKernel gpu(const KernelSpec &spec) {
  BuiltKernel kernel = algorithm(spec);
  const int threadCount = int(spec.plan<target::GpuRowsPlan>().threads);
  Func out = kernel.output;
  Func sum = kernel.stages.at("sum_in");
  std::vector<Func> rowSums{kernel.stages.at("variance")};
  if (kernel.stages.count("mean"))
    rowSums.push_back(kernel.stages.at("mean"));
  Var w("w"), r("r"), wo("wo"), wi("wi"), u("u");

  out.bound(w, 0, int(spec.width))
      .split(w, wo, wi, threadCount, TailStrategy::GuardWithIf)
      .reorder(wo, wi, r);
  gpuBlocks(out, r);
  gpuThreads(out, wi);
  sum.compute_at(out, r)
      .split(w, wo, wi, threadCount, TailStrategy::GuardWithIf)
      .reorder(wo, wi);
  gpuThreads(sum, wi);
  for (Func total : rowSums) {
    // The reduction's RDom is the only RVar of the update: split it into
    // `threads` strided lanes and reduce each lane on its own thread.
    RVar rw(total.update().get_schedule().rvars().front().var);
    RVar rwo("rwo"), rwi("rwi");
    Func partial = total.update()
                       .split(rw, rwo, rwi, threadCount,
                              TailStrategy::GuardWithIf)
                       .rfactor(rwi, u);
    partial.compute_at(out, r);
    gpuThreads(partial, u);
    gpuThreads(partial.update(), u);
    // The `threads` partials are summed by one thread.
    total.compute_at(out, r);
  }
  return kernel;
}

const KernelRegistration registration({KernelKind::LayerNorm,
                                       KernelKind::RmsNorm},
                                      {algorithm, cpuSchedule, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
