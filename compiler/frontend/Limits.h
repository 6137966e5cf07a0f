//===- Limits.h - The largest models and inputs tfmc accepts ----*- C++ -*-===//
//
// Stated maxima (docs/user-guide.md, "Limits"), checked where the value is read so that
// the error names the setting (a .tfm's line and column, a config.json's
// key). They keep every size computation of the compiler inside 64 bits and
// its work proportional to models that exist: the largest published
// Transformers have ~100 layers, d_model 16384 and vocabularies of ~256k.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_LIMITS_H
#define TFMC_FRONTEND_LIMITS_H

#include "compiler/frontend/AST.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tfmc::frontend {

/// A .tfm description or a config.json larger than this is refused before
/// it is read (both are a few kilobytes in practice).
constexpr int64_t kMaxModelFileBytes = 16 << 20;

constexpr int64_t kMaxLayers = 1024;     // per stack
constexpr int64_t kMaxDModel = 65536;
constexpr int64_t kMaxHeads = 65536;
constexpr int64_t kMaxDFF = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxLen = 1 << 20;     // also the largest window(N)
/// Halide's kernels index a tensor with 32-bit integers: no weight (and no
/// intermediate at the compiled batch and sequence) may hold more elements.
constexpr int64_t kMaxTensorElements = 2147483647;

/// The largest value of an integer setting: `vocab`, `d_model`, `heads`,
/// `d_ff`, `max_len`, `layers` or `window`.
int64_t maxOfSetting(std::string_view setting);

/// A limit a well-formed model exceeds: the setting to blame and the reason.
struct LimitProblem {
  std::string setting;
  std::string message;
};

/// Checks that each weight tensor the model implies holds at most
/// kMaxTensorElements; the first one that does not is returned.
std::optional<LimitProblem> checkWeightSizes(const Model &model);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_LIMITS_H
