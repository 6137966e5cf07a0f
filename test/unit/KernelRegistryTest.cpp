//===- KernelRegistryTest.cpp - One kernel file per kernel kind -----------===//
//
// Each kernel file registers the kinds it builds (KernelRegistration); a
// second registration of a kind is a bug in the kernel files, fatal at
// start-up rather than silently ignored (issue 28).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Kernel.h"

#include <gtest/gtest.h>

using namespace tfmc::codegen;

namespace {

TEST(KernelRegistry, EveryKindHasOneDefinition) {
  for (int kind = 0; kind <= int(tfmc::tfm::kLastKernelKind); ++kind)
    EXPECT_NE(kernelDefinition(KernelKind(kind)), nullptr) << "kind " << kind;
}

TEST(KernelRegistryDeathTest, SecondRegistrationOfAKindIsFatal) {
  // The threadsafe style re-runs the binary for the death test: earlier
  // tests may have started Halide's thread pool.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const KernelDefinition *add = kernelDefinition(KernelKind::Add);
  ASSERT_NE(add, nullptr);
  EXPECT_DEATH(KernelRegistration({KernelKind::Add}, *add),
               "kernel kind 4 is registered by two kernel files");
}

} // namespace
