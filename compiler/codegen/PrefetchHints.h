//===- PrefetchHints.h - Rewrite Halide's x86 prefetches to prefetcht0 ----===//
//
// Halide 14 emits every scheduled prefetch as `prefetchnta` (its runtime's
// _halide_prefetch passes locality 0 to __builtin_prefetch, with no way to
// choose another). On the CPUs measured here a non-temporal prefetch gives
// the decode GEMV nothing, while `prefetcht0` of the next rows of W makes
// it 1.6-1.7x faster (docs/performance.md, "Performance"). tfmc therefore rewrites the
// hint in each x86 kernel object it compiles: the two instructions differ
// only in the reg field of their ModRM byte (0F 18 /0 vs 0F 18 /1), so the
// code keeps its length and every offset and relocation stays valid.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_PREFETCHHINTS_H
#define TFMC_CODEGEN_PREFETCHHINTS_H

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace tfmc::codegen {

/// What one rewrite did.
struct PrefetchRewrite {
  unsigned rewritten = 0; // prefetchnta instructions made prefetcht0
  /// Code that did not disassemble whole (then nothing in it is changed:
  /// a sweep that lost the instruction boundaries could mistake bytes of
  /// another instruction for a prefetch).
  unsigned undecodable = 0;
};

/// Rewrites the prefetchnta instructions of x86-64 machine code in place,
/// after disassembling all of it with LLVM's X86 disassembler. Code that
/// does not disassemble whole is left as it is (`undecodable` is 1).
PrefetchRewrite promotePrefetchHints(llvm::MutableArrayRef<uint8_t> code);

/// The same for every executable section of the x86-64 object file at
/// `path`, rewritten in place (only when something changed). False, with
/// `error` set, when the file cannot be read, parsed or written.
bool promotePrefetchHintsInObject(const std::string &path,
                                  PrefetchRewrite &result, std::string &error);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_PREFETCHHINTS_H
