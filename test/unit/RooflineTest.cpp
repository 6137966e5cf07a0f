//===- RooflineTest.cpp - A linear kernel's work and its roof -------------===//
//
// runtime/core/Roofline.h against hand-derived figures: the ops and bytes
// of linear and gated linear steps (f32 in panels, int8 blocks, a decode
// step's one row), which ops have none, and where the roof is.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Roofline.h"

#include <gtest/gtest.h>

using namespace tfmc::runtime;

namespace {

TEST(Roofline, LinearWork) {
  // GPT-2's attention projection at 128 rows: x [768, 128], W in panels
  // [16, 768, 48], bias [768], out [768, 128].
  std::optional<KernelWork> work = linearWork(
      "tfm.linear", "",
      {{{768, 128}, ElementType::F32},
       {{16, 768, 48}, ElementType::F32},
       {{768}, ElementType::F32},
       {{768, 128}, ElementType::F32}});
  ASSERT_TRUE(work);
  EXPECT_DOUBLE_EQ(work->ops, 2.0 * 128 * 768 * 768);
  EXPECT_DOUBLE_EQ(work->bytes, 4.0 * (768 * 128 + 768 * 768 + 768 + 768 * 128));
  EXPECT_FALSE(work->integer);

  // A gated decode step of 3 sequences, int8 activations over int8 blocks
  // (66 bytes a block of 64): x [64, 1, 3], two weights [132, 256], out
  // [256, 1, 3].
  work = linearWork("tfm.gated_linear", "int8",
                    {{{64, 1, 3}, ElementType::F32},
                     {{132, 256}, ElementType::I8},
                     {{132, 256}, ElementType::I8},
                     {{256, 1, 3}, ElementType::F32}});
  ASSERT_TRUE(work);
  EXPECT_DOUBLE_EQ(work->ops, 2.0 * 2 * 3 * 256 * 64);
  EXPECT_DOUBLE_EQ(work->bytes, 4.0 * 64 * 3 + 2.0 * 132 * 256 + 4.0 * 256 * 3);
  EXPECT_TRUE(work->integer);
}

TEST(Roofline, NoWork) {
  const std::vector<ArgExtents> args{{{8, 4}, ElementType::F32},
                                     {{8, 8}, ElementType::F32},
                                     {{8, 4}, ElementType::F32}};
  EXPECT_FALSE(linearWork("tfm.attention", "", args));
  EXPECT_FALSE(linearWork("tfm.linear", "bf16", args));
  EXPECT_TRUE(linearWork("tfm.linear", "", args));
  std::vector<ArgExtents> unknown = args;
  unknown[0].extents[1] = -1; // a symbol without a value
  EXPECT_FALSE(linearWork("tfm.linear", "", unknown));
}

TEST(Roofline, Fraction) {
  MachineRoof machine;
  machine.readBytesPerSecond = 20e9;
  machine.f32OpsPerSecond = 400e9;
  machine.int8OpsPerSecond = 1600e9;
  // 1 GOP on 100 MB: intensity 10, so 200 GOP/s from memory (below the
  // f32 peak): at 10 ms (100 GOP/s) half the roof, memory-bound.
  KernelWork work{1e9, 100e6, false};
  RoofFraction roof = roofFraction(work, 0.010, machine);
  EXPECT_TRUE(roof.memoryBound);
  EXPECT_DOUBLE_EQ(roof.fraction, 0.5);
  // Intensity 100: 2000 GOP/s from memory, so the f32 peak bounds it: at
  // 5 ms (200 GOP/s), half of 400.
  work.bytes = 10e6;
  roof = roofFraction(work, 0.005, machine);
  EXPECT_FALSE(roof.memoryBound);
  EXPECT_DOUBLE_EQ(roof.fraction, 0.5);
  // int8: its own peak (1600), still below 2000 from memory.
  work.integer = true;
  roof = roofFraction(work, 0.005, machine);
  EXPECT_FALSE(roof.memoryBound);
  EXPECT_DOUBLE_EQ(roof.fraction, 0.125);
  // No int8 figure measured: no fraction.
  machine.int8OpsPerSecond = 0;
  EXPECT_EQ(roofFraction(work, 0.005, machine).fraction, 0.0);
}

} // namespace
