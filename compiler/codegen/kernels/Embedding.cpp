//===- Embedding.cpp - Token embedding: a row of the table per id ---------===//

#include "compiler/codegen/kernels/Common.h"

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam ids(Int(64), 2, "ids");
  WeightInput table(spec, "table");
  Var d("d"), s("s"), b("b");
  Func out("embedding");
  // The runtime rejects ids outside [0, vocab); the clamp keeps bounds
  // inference finite.
  Expr row = clamp(cast<int32_t>(ids(s, b)), 0, int(spec.vocab) - 1);
  // A bf16 or int8 table is widened row by row (one row per token: its
  // cost is nothing next to the layers').
  out(d, s, b) = table.widened(d, row);
  std::vector<ImageParam> arguments{ids};
  for (const ImageParam &argument : table.arguments())
    arguments.push_back(argument);
  return {out, arguments};
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  scheduleTokenRows(kernel.output, spec.plan<target::CpuRowsPlan>());
}

BuiltKernel gpu(const KernelSpec &spec) {
  if (isKQuant(spec.weightType))
    throw CompileError("K-quant tables (q4_k, q5_k, q6_k) have no CUDA "
                       "kernel: a CUDA program converts them to int8");
  BuiltKernel kernel = algorithm(spec);
  gridOverTokens(kernel, spec);
  return kernel;
}

const KernelRegistration registration({KernelKind::Embedding},
                                      {algorithm, cpuSchedule, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
