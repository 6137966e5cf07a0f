//===- Plan.h - What a compiled model runs, as data -------------*- C++ -*-===//
//
// tfmc's codegen writes each model's entry point as a plan: which tensors
// exist (inputs, weights, slots of one arena), and the kernel calls that
// compute the output, in order. The runtime (this folder, plain C++, no
// MLIR) parses the plan once at start-up and executes it by building
// halide_buffer_t descriptors over the tensors and calling each kernel
// through Halide's AOT entry point `int NAME_argv(void **args)`.
//
// The plan is JSON, embedded in the binary by codegen:
//
// {
//   "format": 1,
//   "model": "gpt_small",                // the .tfm model name
//   "entry": "forward",
//   "target": "x86-64-avx2",
//   "vocab": 50257, "max_len": 1024,     // for input validation
//   "max_batch": 1, "max_seq": 1024,     // what the arena was sized for
//   "arena_bytes": 208998400,
//   "symbols": ["B", "S", "T"],          // dynamic sizes: batch, then one per
//                                        // sequence (S: input_ids, T: decoder_input_ids)
//   "inputs": [                          // in the order the kernels expect
//     {"name": "input_ids", "kind": "ids", "dims": ["B", "S"]},
//     {"name": "attention_mask", "kind": "mask", "dims": ["B", "S"], "optional": true}
//   ],
//   "weights": [{"name": "tgt_embed.weight", "shape": [50257, 768]}, ...],
//   "values": [                          // every tensor a kernel reads or writes
//     {"kind": "input",  "index": 0},
//     {"kind": "weight", "index": 3, "offset": 589824},  // element offset (a tfm.split view)
//     {"kind": "arena",  "offset": 3145728}               // byte offset in the arena
//   ],
//   "output": {"name": "logits", "value": 57, "dims": ["B", "S", 50257]},
//   "steps": [
//     {"kernel": "tfmc_k3f9a...", "args": [
//        {"value": 0, "type": "i64", "dims": [["S"], ["B"]]},
//        {"value": 1, "type": "f32", "dims": [[768], [50257]]},
//        {"value": 2, "type": "f32", "dims": [[768], ["S"], ["B"]]}]}
//   ]
// }
//
// A step's args are the kernel's buffers in its argument order, outputs
// last. Each arg's `dims` lists the Halide dimensions innermost first; each
// dimension's extent is the product of its terms (integers and symbols), so
// [["768"], ["B", "S"]] views a [B, S, 768] tensor as a 2-D matrix of B·S
// rows. Every buffer is dense row-major: stride of dim 0 is 1, of dim i the
// product of the extents below it; min is 0. `type` is the element type
// (f32, i64). A symbol's value comes from the inputs: B and S from the
// first input whose dims name them.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_PLAN_H
#define TFMC_RUNTIME_PLAN_H

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tfmc::runtime {

/// One factor of an extent: a constant or a symbol (index into Plan::symbols).
struct DimTerm {
  bool isSymbol = false;
  int64_t value = 0; // the constant, or the symbol's index
};

/// An extent: the product of its terms.
using DimExpr = std::vector<DimTerm>;

enum class InputKind { Ids, Mask };

struct PlanInput {
  std::string name;
  InputKind kind = InputKind::Ids;
  std::vector<DimExpr> dims; // row-major, outermost first
  bool optional = false;     // absent: all ones (masks only)
};

struct PlanWeight {
  std::string name;
  std::vector<int64_t> shape;
};

enum class ValueKind { Input, Weight, Arena };

struct PlanValue {
  ValueKind kind = ValueKind::Arena;
  int64_t index = 0;  // input or weight index
  int64_t offset = 0; // weight: element offset; arena: byte offset
};

enum class ElementType { F32, I64 };

struct PlanArg {
  int64_t value = 0;
  ElementType type = ElementType::F32;
  std::vector<DimExpr> dims; // Halide order, innermost first
};

struct PlanStep {
  std::string kernel;
  std::vector<PlanArg> args; // outputs last
};

struct PlanOutput {
  std::string name;
  int64_t value = 0;
  std::vector<DimExpr> dims; // row-major, outermost first
};

struct Plan {
  int64_t format = 1;
  std::string model, entry, target;
  int64_t vocab = 0, maxLen = 0, maxBatch = 0, maxSeq = 0, arenaBytes = 0;
  std::vector<std::string> symbols;
  std::vector<PlanInput> inputs;
  std::vector<PlanWeight> weights;
  std::vector<PlanValue> values;
  PlanOutput output;
  std::vector<PlanStep> steps;
};

/// Parses and checks a plan (indices in range, symbols known, every step's
/// kernel non-empty). Returns nullopt with a one-line `error` otherwise.
std::optional<Plan> parsePlan(const std::string &json, std::string &error);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_PLAN_H
