//===- PlanFormat.h - The plan's version and names, written and read -*- C++ -*-===//
//
// A compiled program carries one JSON plan per entry point
// (runtime/core/Plan.h documents the format): compiler/codegen writes it
// (Lowering.cpp, PlanWriter.cpp) and runtime/core/Plan.cpp reads it. The
// format's version and the names both sides spell are defined here once.
// Plain C++, no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_PLANFORMAT_H
#define TFMC_SUPPORT_PLANFORMAT_H

#include <string>

namespace tfmc::plan {

/// The plan's "format": the version this compiler writes and this runtime
/// reads.
constexpr int kFormat = 1;

/// A plan's "entry": the program's entry points. A model with a decoder
/// has prefill and decode_step beside forward; a decoder-only model also
/// has extend (S more tokens of one sequence after the P cached).
namespace entry {
constexpr const char *kForward = "forward";
constexpr const char *kPrefill = "prefill";
constexpr const char *kDecodeStep = "decode_step";
constexpr const char *kExtend = "extend";
} // namespace entry

/// A value's "kind": where a kernel's buffer lives.
namespace kind {
constexpr const char *kInput = "input";
constexpr const char *kWeight = "weight";
constexpr const char *kArena = "arena";
constexpr const char *kCache = "cache";
/// A step's pool row of each key of each sequence in a paged KV cache,
/// which the runtime writes before the step (runtime/core/Plan.h).
constexpr const char *kKeyRows = "key_rows";
} // namespace kind

/// An arg's element "type".
namespace type {
constexpr const char *kF32 = "f32";
constexpr const char *kI64 = "i64";
constexpr const char *kI32 = "i32";
constexpr const char *kBF16 = "bf16";
constexpr const char *kI8 = "i8";
constexpr const char *kF16 = "f16";
constexpr const char *kU8 = "u8";
} // namespace type

/// Positions in a block of a paged KV cache (the plan's "block_tokens"):
/// PrefixCache's block, vLLM's default.
constexpr int kBlockTokens = 16;

/// A KV cache slot's "dtype" (`tfmc --kv-cache-dtype`): absent for f32.
namespace cache_dtype {
/// All of them, from the widest.
constexpr const char *kWidestFirst[] = {type::kF32, type::kBF16, type::kF16};
} // namespace cache_dtype

/// A weight's storage "dtype" (`tfmc --weight-dtype`), from the widest to
/// the narrowest.
namespace dtype {
constexpr const char *kF32 = "f32";
constexpr const char *kBF16 = "bf16";
constexpr const char *kInt8 = "int8";
constexpr const char *kInt4 = "int4";
/// llama.cpp's K-quants as a GGUF file holds them (support/WeightFormat.h):
/// only a file's own tensors of those types have them.
constexpr const char *kQ6K = "q6_k";
constexpr const char *kQ5K = "q5_k";
constexpr const char *kQ4K = "q4_k";
/// All of them, in that order.
constexpr const char *kWidestFirst[] = {kF32, kBF16, kInt8, kQ6K,
                                        kQ5K, kQ4K, kInt4};
/// The ones `tfmc --weight-dtype` takes (a K-quant comes from a file).
constexpr const char *kChosen[] = {kF32, kBF16, kInt8, kInt4};
/// Whether `dtype` is one of the K-quants.
inline bool isKQuant(const std::string &dtype) {
  return dtype == kQ6K || dtype == kQ5K || dtype == kQ4K;
}
} // namespace dtype

} // namespace tfmc::plan

#endif // TFMC_SUPPORT_PLANFORMAT_H
