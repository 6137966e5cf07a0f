//===- PrefetchHintsTest.cpp - prefetchnta -> prefetcht0 in x86 code -----===//
//
// promotePrefetchHints against hand-assembled x86-64 bytes (encodings from
// the Intel SDM: PREFETCHNTA is 0F 18 /0, PREFETCHT0 0F 18 /1), and the
// object-file rewrite on a Halide pipeline that prefetches.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/PrefetchHints.h"

#include "Halide.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using tfmc::codegen::promotePrefetchHints;
using tfmc::codegen::promotePrefetchHintsInObject;
using tfmc::codegen::PrefetchRewrite;

namespace {

std::vector<uint8_t> rewrite(std::vector<uint8_t> code,
                             PrefetchRewrite &result) {
  result = promotePrefetchHints(code);
  return code;
}

TEST(PrefetchHints, RewritesTheModRmRegFieldOnly) {
  PrefetchRewrite result;
  // prefetchnta (%rax) -> prefetcht0 (%rax)
  EXPECT_EQ(rewrite({0x0F, 0x18, 0x00}, result),
            (std::vector<uint8_t>{0x0F, 0x18, 0x08}));
  EXPECT_EQ(result.rewritten, 1u);
  // prefetchnta (%r12): REX.B and a SIB byte.
  EXPECT_EQ(rewrite({0x41, 0x0F, 0x18, 0x04, 0x24}, result),
            (std::vector<uint8_t>{0x41, 0x0F, 0x18, 0x0C, 0x24}));
  // prefetchnta 0x8(%rsp,%rcx,4): SIB and an 8-bit displacement.
  EXPECT_EQ(rewrite({0x0F, 0x18, 0x44, 0x8C, 0x08}, result),
            (std::vector<uint8_t>{0x0F, 0x18, 0x4C, 0x8C, 0x08}));
  EXPECT_EQ(result.rewritten, 1u);
  EXPECT_EQ(result.undecodable, 0u);
}

TEST(PrefetchHints, LeavesOtherInstructionsAlone) {
  PrefetchRewrite result;
  // mov $0x180f, %eax holds the bytes 0F 18 00 in its immediate;
  // prefetcht0/t1 are not rewritten; ret.
  std::vector<uint8_t> code{0xB8, 0x0F, 0x18, 0x00, 0x00, // mov
                            0x0F, 0x18, 0x08,             // prefetcht0 (%rax)
                            0x0F, 0x18, 0x10,             // prefetcht1 (%rax)
                            0x0F, 0x18, 0x00,             // prefetchnta (%rax)
                            0xC3};                        // ret
  std::vector<uint8_t> expected = code;
  expected[13] = 0x08;
  EXPECT_EQ(rewrite(code, result), expected);
  EXPECT_EQ(result.rewritten, 1u);
  EXPECT_EQ(result.undecodable, 0u);
}

TEST(PrefetchHints, UndecodableCodeIsLeftAsItIs) {
  // 0x06 (push %es) does not exist in 64-bit mode: the instruction
  // boundaries after it are unknown, so the prefetch after it stays.
  PrefetchRewrite result;
  std::vector<uint8_t> code{0x0F, 0x18, 0x00, 0x06, 0x0F, 0x18, 0x00};
  EXPECT_EQ(rewrite(code, result), code);
  EXPECT_EQ(result.rewritten, 0u);
  EXPECT_EQ(result.undecodable, 1u);
}

TEST(PrefetchHints, HalideObject) {
  // A pipeline that prefetches its input 4 tiles ahead, as an object file.
  Halide::ImageParam in(Halide::Int(8), 1, "in");
  Halide::Func f("f");
  Halide::Var x("x"), xo("xo"), xi("xi");
  f(x) = Halide::cast<int32_t>(in(x)) * 3;
  f.split(x, xo, xi, 64).vectorize(xi, 16).prefetch(
      in, xo, xo, 4, Halide::PrefetchBoundStrategy::NonFaulting);
  char dir[] = "/tmp/tfmc-prefetch-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/f.o";
  f.compile_to_object(path, {in}, "f",
                      Halide::Target("x86-64-linux-avx2-no_runtime"));

  PrefetchRewrite first, second;
  std::string error;
  ASSERT_TRUE(promotePrefetchHintsInObject(path, first, error)) << error;
  EXPECT_GT(first.rewritten, 0u);
  EXPECT_EQ(first.undecodable, 0u);
  // Nothing non-temporal is left, and the object still parses.
  ASSERT_TRUE(promotePrefetchHintsInObject(path, second, error)) << error;
  EXPECT_EQ(second.rewritten, 0u);
  EXPECT_EQ(second.undecodable, 0u);

  EXPECT_FALSE(promotePrefetchHintsInObject(std::string(dir) + "/missing.o",
                                            first, error));
  EXPECT_NE(error.find("missing.o"), std::string::npos) << error;
  std::remove(path.c_str());
  rmdir(dir);
}

} // namespace
