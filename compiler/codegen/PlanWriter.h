//===- PlanWriter.h - The runtime plan: the contract with the runtime -*- C++ -*-===//
//
// A compiled program carries, for each entry point (forward, prefill,
// decode_step), a plan in JSON that runtime/core/Plan.h reads: its inputs, its
// weights and KV cache slots, where every value lives (input, weight,
// cache, arena), and the kernel calls in order with each argument's
// dimensions as products of constants and symbols (B for the batch, S and T
// for the encoder's and decoder's sequences, P for the tokens already
// cached, L = P + the new tokens). docs/ARCHITECTURE.md describes the
// format; this file is the one place that writes it.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_PLANWRITER_H
#define TFMC_CODEGEN_PLANWRITER_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tfmc::codegen {

using json = nlohmann::json;

/// The symbols of a plan's dimensions.
/// PoolBlocks: the blocks of a paged KV cache's pool (the runtime's).
enum class Symbol { Batch, Source, Target, Past, Length, PoolBlocks };
/// The symbol's name in the plan ("B", "S", "T", "P", "L", "N").
const char *symbolName(Symbol symbol);

/// A factor of an extent: a constant or a symbol.
struct Term {
  bool isSymbol = false;
  int64_t value = 0; // the constant, or the Symbol
};
/// A dimension's extent: a product of terms.
using Extent = std::vector<Term>;
/// A tensor's shape, row-major (outermost first).
using Shape = std::vector<Extent>;

Extent constant(int64_t value);
Extent symbol(Symbol symbol);

json toJson(const Extent &extent);
/// Halide order (innermost first) of a row-major shape.
json halideDims(const Shape &shape);
/// A (W, R) view: the last dimension, then all the others as rows.
json matrixDims(const Shape &shape);

/// The parts of one entry point's plan that lowering produces.
struct EntryPlanParts {
  std::string model, entry;
  std::string target;
  bool gpu = false;
  int64_t vocab = 0, maxLen = 0, maxBatch = 0, maxSeq = 0, arenaBytes = 0;
  /// Positions a block of a paged KV cache holds (0: no slot is paged).
  int64_t blockTokens = 0;
  json inputs, weights, cache, values, steps;
  /// What the entry point returns, in order: the plan's "output", then
  /// its "more_outputs".
  struct Output {
    std::string name;
    int64_t value = 0;
    json dims;
  };
  std::vector<Output> outputs;
};

/// The plan of one entry point, with the symbols its dimensions use.
json writeEntryPlan(const EntryPlanParts &parts);

/// One target's part of a program: its name and the CPU features it needs
/// (LLVM's names, space-separated; the runtime checks them before any
/// kernel runs), its kernel symbols and its plans (`forward` first).
struct GlueVariant {
  std::string target;
  std::string features;
  std::vector<std::string> kernelNames;
  std::vector<json> plans;
};

/// The C glue of a program (runtime/core/Model.h's tfmc_variants): per variant,
/// widest first, the kernel table (`NAME_argv` functions by name) and the
/// plans as a JSON byte array; and the registry's CPU targets
/// (tfmc_cpu_targets, name and features), for the rebuild hint a program
/// gives on a CPU that runs none of its variants.
std::string glueSource(const std::vector<GlueVariant> &variants,
                       const std::vector<std::pair<std::string, std::string>>
                           &cpuTargets,
                       const char *version);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_PLANWRITER_H
