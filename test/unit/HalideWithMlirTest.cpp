//===- HalideWithMlirTest.cpp - Halide 14 and MLIR 19 in one process ------===//
//
// Codegen links Halide (which carries its own LLVM 14) into the same binary
// as MLIR/LLVM 19. This checks that both work side by side: a tfm module is
// built and verified, and a Halide pipeline is JIT-compiled and run.
//
//===----------------------------------------------------------------------===//

#include "Halide.h"

#include "compiler/frontend/AST.h"
#include "compiler/frontend/TfmBuilder.h"
#include "dialects/tfm/TfmDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace {

TEST(HalideWithMlir, BothCompilersRunInOneProcess) {
  mlir::MLIRContext context;
  auto parsed = tfmc::frontend::parseModel(R"(
model tiny {
  vocab = 7, d_model = 4, heads = 2, max_len = 8
  encoder(layers = 1) { self_attention }
  output = none
}
)",
                                           "tiny.tfm");
  ASSERT_TRUE(parsed) << parsed.error->str();
  auto module = tfmc::frontend::buildTfmModule(context, *parsed.model);
  ASSERT_TRUE(module);

  Halide::Var x("x");
  Halide::Func f("f");
  f(x) = x * 3 + 1;
  f.vectorize(x, 8);
  Halide::Buffer<int32_t> out = f.realize({37});
  for (int i = 0; i < 37; ++i)
    EXPECT_EQ(out(i), 3 * i + 1) << "at " << i;
}

} // namespace
