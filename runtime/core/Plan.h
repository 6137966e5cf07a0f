//===- Plan.h - What a compiled model runs, as data -------------*- C++ -*-===//
//
// tfmc's codegen writes each model's entry point as a plan: which tensors
// exist (inputs, weights, slots of one arena), and the kernel calls that
// compute the output, in order. The runtime (this folder, plain C++, no
// MLIR) parses the plan once at start-up and executes it by building
// halide_buffer_t descriptors over the tensors and calling each kernel
// through Halide's AOT entry point `int NAME_argv(void **args)`.
//
// The plan is JSON, embedded in the binary by codegen (its version and the
// names below, which the writer spells too, are support/PlanFormat.h's):
//
// {
//   "format": 1,
//   "model": "gpt_small",                // the .tfm model name
//   "entry": "forward",
//   "target": "x86-64-avx2",
//   "device": "host",                    // or "cuda": kernels run on the GPU over
//                                        // device memory (optional; default host)
//   "vocab": 50257, "max_len": 1024,     // for input validation
//   "max_batch": 1, "max_seq": 1024,     // what the arena was sized for
//   "arena_bytes": 208998400,
//   "symbols": ["B", "S", "T"],          // dynamic sizes: batch, then one per
//                                        // sequence (S: input_ids, T: decoder_input_ids)
//   "inputs": [                          // in the order the kernels expect
//     {"name": "input_ids", "kind": "ids", "dims": ["B", "S"]},
//     {"name": "attention_mask", "kind": "mask", "dims": ["B", "S"], "optional": true}
//   ],
//   "weights": [{"name": "tgt_embed.weight", "shape": [50257, 768]}, ...,
//               {"name": "h.0.attn.c_attn.weight", "shape": [2304, 768],
//                "alt_names": ["transformer.h.0.attn.c_attn.weight"],
//                "transposed": true,        // the file holds [768, 2304]
//                "dtype": "int8", "group": 64}],  // stored as (below)
//   "values": [                          // every tensor a kernel reads or writes
//     {"kind": "input",  "index": 0},
//     {"kind": "weight", "index": 3, "offset": 589824},  // element offset (a tfm.split view)
//     {"kind": "arena",  "offset": 3145728},              // byte offset in the arena
//     {"kind": "cache",  "index": 0, "row": "P"},         // KV cache slot, from row P
//     {"kind": "cache",  "index": 1},                     // a paged slot's block pool
//     {"kind": "key_rows"}                                // its pool row of each key
//   ],
//   "block_tokens": 16,                  // rows of a paged slot's block (optional)
//   "output": {"name": "logits", "value": 57, "dims": ["B", "S", 50257]},
//   "more_outputs": [...],               // optional: further outputs, as "output"
//   "steps": [
//     {"kernel": "tfmc_k3f9a...", "args": [
//        {"value": 0, "type": "i64", "dims": [["S"], ["B"]]},
//        {"value": 1, "type": "f32", "dims": [[768], [50257]]},
//        {"value": 2, "type": "f32", "dims": [[768], ["S"], ["B"]]}]},
//     {"store": 1, "args": [                // rows into a paged slot's blocks
//        {"value": 5, "type": "f32", "dims": [[768], ["S"], ["B"]]}]}
//   ]
// }
//
// A step's args are the kernel's buffers in its argument order, outputs
// last. Each arg's `dims` lists the Halide dimensions innermost first; each
// dimension's extent is the product of its terms (integers and symbols), so
// [["768"], ["B", "S"]] views a [B, S, 768] tensor as a 2-D matrix of B·S
// rows. Every buffer is dense row-major: stride of dim 0 is 1, of dim i the
// product of the extents below it; min is 0. `type` is the element type
// (f32, i64, bf16, i8, f16). A symbol's value comes from the inputs: B and S
// from the first input whose dims name them.
//
// Low-precision weights (`tfmc --weight-dtype`): a weight's "dtype" is "f32"
// (the default), "bf16", "int8" or "int4"; a low-precision weight has rank 2,
// [rows, cols]. bf16: rows*cols bfloat16 values (f32 rounded to nearest
// even). int8: rows of ceil(cols/group) blocks of 2 + group bytes, each its
// f16 scale d and then its values q (i8), and element (r, c) is
// q[r][c] * d[r][c / group] (support/WeightFormat.h; with group 32, GGUF's
// Q8_0). int4: rows*ceil(cols/32) blocks of 18 bytes, GGUF's Q4_0
// (support/WeightFormat.h), "group" 32. "q4_k", "q5_k", "q6_k": rows of
// cols/256 of llama.cpp's super-blocks of 144, 176 and 210 bytes
// (support/WeightFormat.h; cols a multiple of 256). ("group" is present
// iff the dtype is int8 or int4.) A weight value's offset counts elements
// of the weight's own type (int8, int4, K-quants: bytes, so a view from
// row r starts at r times the row's bytes). Args over a bf16 weight have
// type bf16, over an int8 weight i8, over an int4 or K-quant weight u8.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_PLAN_H
#define TFMC_RUNTIME_PLAN_H

#include "runtime/core/Tensor.h"
#include "support/WeightFormat.h"

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

/// Token ids, a 0/1 mask, position ids (0 .. max_len-1) or token types
/// (0 .. limit-1, BERT's token_type_ids).
enum class InputKind { Ids, Mask, Positions, Types };

struct PlanInput {
  std::string name;
  InputKind kind = InputKind::Ids;
  std::vector<DimExpr> dims; // row-major, outermost first
  bool optional = false; // absent: a mask all ones, positions P .. P+S-1,
                         // token types 0
  int64_t limit = 0;     // token types: the values are below it
  /// A mask the model's kind takes but no kernel reads (`"unused": true`,
  /// optional): all ones is accepted, and zeros only when `causal` (every
  /// attention over its stack is causal, so right padding cannot change
  /// the unpadded outputs).
  bool unused = false;
  bool causal = false;
};

enum class ElementType { F32, I64, BF16, I8, F16, U8, I32 };

/// "f32", "i64", "bf16", "i8", "f16", "u8", "i32": the plan's spelling.
const char *elementTypeName(ElementType type);

/// Bytes per element of an argument's type.
inline int64_t elementTypeSize(ElementType type) {
  switch (type) {
  case ElementType::I64: return 8;
  case ElementType::F32: case ElementType::I32: return 4;
  case ElementType::BF16: case ElementType::F16: return 2;
  case ElementType::I8: case ElementType::U8: return 1;
  }
  return 0;
}

/// How a weight is stored in memory (Plan.h's file comment).
/// From the widest to the narrowest (programWeightDType): the K-quants
/// (llama.cpp's super-blocks, support/WeightFormat.h; only a GGUF file's
/// own tensors, or a file convert-weights wrote from one) between int8 and
/// int4.
enum class WeightDType { F32, BF16, Int8, Q6K, Q5K, Q4K, Int4 };

/// Whether `dtype` is one of the K-quants.
inline bool isKQuant(WeightDType dtype) {
  return dtype == WeightDType::Q6K || dtype == WeightDType::Q5K ||
         dtype == WeightDType::Q4K;
}

/// "f32", "bf16", "int8", "int4": the plan's (and `tfmc --weight-dtype`'s)
/// spelling.
const char *weightDTypeName(WeightDType dtype);

/// The type a kernel reads a weight of `dtype` as (int4: bytes of blocks).
inline ElementType weightElementType(WeightDType dtype) {
  switch (dtype) {
  case WeightDType::F32: return ElementType::F32;
  case WeightDType::BF16: return ElementType::BF16;
  case WeightDType::Int8: return ElementType::I8;
  case WeightDType::Int4:
  case WeightDType::Q6K:
  case WeightDType::Q5K:
  case WeightDType::Q4K: return ElementType::U8;
  }
  return ElementType::F32;
}

/// Bytes per stored element: 4, 2, 1 (int4: a byte of its blocks).
inline int64_t weightDTypeSize(WeightDType dtype) {
  return elementTypeSize(weightElementType(dtype));
}

struct PlanWeight {
  std::string name;
  std::vector<int64_t> shape;
  /// Other names the file may use, tried in order when `name` is absent
  /// (`"alt_names"`, optional).
  std::vector<std::string> altNames;
  /// The file holds the transpose (shape reversed) of this rank-2 weight
  /// (`"transposed": true`, optional; Hugging Face Conv1D's [in, out]).
  bool transposed = false;
  /// What `NAME init-weights` fills it with (`"init"`, optional: normal):
  /// the compiler decides from the weight's use (a layer norm's gain is
  /// ones, its bias zeros), so the runtime needs no model's weight names.
  enum class Init { Normal, Ones, Zeros } init = Init::Normal;
  /// How the program stores it (`"dtype"`, optional: f32). The file may
  /// hold it as F32 (converted at load) or already converted.
  WeightDType dtype = WeightDType::F32;
  /// int8, int4: consecutive columns of a row that share one scale
  /// (`"group"`; int4: 32).
  int64_t group = 0;
  /// An f32 [rows, cols] weight stored in panels of this many rows
  /// (`"panel"`, optional: 0, row-major; support/WeightFormat.h): the same
  /// elements, laid out [rows / panel, cols, panel] at load. An int8 or
  /// int4 weight's: block panels of 16 rows, the same bytes as its rows of
  /// blocks, laid out for the integer microkernel at load.
  int64_t panel = 0;

  /// Bytes of one of an int8 or int4 weight's blocks (its scale and its
  /// group's values); 0 otherwise.
  int64_t blockBytes() const {
    switch (dtype) {
    case WeightDType::Int4: return format::kInt4BlockBytes;
    case WeightDType::Int8: return format::int8BlockBytes(group);
    case WeightDType::Q4K: return format::kQ4KBlockBytes;
    case WeightDType::Q5K: return format::kQ5KBlockBytes;
    case WeightDType::Q6K: return format::kQ6KBlockBytes;
    default: return 0;
    }
  }
  /// Values of one of its blocks: its group, a K-quant's 256.
  int64_t blockValues() const {
    return isKQuant(dtype) ? format::kKQuantBlockValues : group;
  }
  /// Bytes of a row of an int8, int4 or K-quant weight's blocks; 0
  /// otherwise.
  int64_t blockRowBytes() const {
    return blockBytes()
               ? format::blocksPerRow(shape[1], blockValues()) * blockBytes()
               : 0;
  }
  /// Elements of its storage type (weightDTypeSize bytes each): int8's and
  /// int4's bytes of blocks, otherwise its shape's elements.
  int64_t storedElements() const {
    if (int64_t rowBytes = blockRowBytes())
      return shape[0] * rowBytes;
    return elementCount(shape).value_or(0);
  }
  /// The stored tensor's shape: int8 [rows, ceil(cols/group), 2 + group]
  /// and int4 [rows, ceil(cols/32), 18] (a converted file's I8 and U8
  /// tensors; in block panels [rows / 16, blocks, 16 · block bytes]), f32
  /// in panels [rows / panel, cols, panel], otherwise `shape`.
  std::vector<int64_t> storedShape() const {
    if (blockBytes() && panel > 0)
      return {shape[0] / panel, format::blocksPerRow(shape[1], group),
              panel * blockBytes()};
    return rowsShape();
  }
  /// storedShape() of the rows layout: an int8 or int4 weight's rows of
  /// blocks (what files hold unless written in block panels).
  std::vector<int64_t> rowsShape() const {
    if (blockBytes())
      return {shape[0], format::blocksPerRow(shape[1], blockValues()),
              blockBytes()};
    if (panel > 0)
      return {shape[0] / panel, shape[1], panel};
    return shape;
  }
  /// Bytes of its stored elements.
  int64_t storedBytes() const {
    return storedElements() * weightDTypeSize(dtype);
  }
};

/// KeyRows: the step's key_rows (a paged cache's pool row of each key of
/// each sequence, i32 [B, L]; -1 for none), which the runtime writes.
enum class ValueKind { Input, Weight, Arena, Cache, KeyRows };

struct PlanValue {
  ValueKind kind = ValueKind::Arena;
  int64_t index = 0;  // input, weight or cache slot index
  int64_t offset = 0; // weight: element offset; arena: byte offset
  /// Cache: the first row, the value of this symbol (P: the rows already
  /// cached), or row 0 when -1.
  int64_t rowSymbol = -1;
};

/// A KV cache slot: [max_batch, max_len, width] elements of `type` that the
/// runtime keeps across the prefill and decode steps of one sequence. The
/// plan's optional "dtype" ("bf16" or "f16", `tfmc --kv-cache-dtype`;
/// absent: f32) is the type of every arg over the slot.
///
/// A paged slot (`"paged": true`: a CPU plan's slots that a decode step
/// appends to) is instead a pool of blocks of the plan's block_tokens rows
/// each, which the runtime hands to sequences as they grow (ModelCache.cpp).
/// Its writers write their rows to the arena and a store step copies them
/// into their sequences' blocks; a decode or extend step's attention reads
/// the whole pool (dims (head dim, block_tokens, heads, N): N, the pool's
/// blocks, a symbol the runtime binds) with the step's key_rows value. A
/// block is head-major: the slot's `"heads"` (absent: 1) split a row into
/// runs of width / heads values, and head h's block_tokens runs of a
/// block are one (KvBlocks.h).
struct PlanCacheSlot {
  std::string slot; // e.g. "decoder.layers.0.self_attn.k"
  int64_t width = 0;
  ElementType type = ElementType::F32;
  bool paged = false;
  /// A paged slot's heads (its blocks' layout); width is a multiple.
  int64_t heads = 1;
  /// Bytes of one row.
  int64_t rowBytes() const { return width * elementTypeSize(type); }
};

struct PlanArg {
  int64_t value = 0;
  ElementType type = ElementType::F32;
  std::vector<DimExpr> dims; // Halide order, innermost first
  /// Halide's `min` of each dimension (empty: all 0). A decode step's
  /// positions kernel sees its one token at sequence coordinate P.
  std::vector<DimExpr> mins;
};

/// A step is a kernel call, or (`"store": slot`, no kernel) the runtime's
/// copy of the one arg's new rows [B, S, width] into the paged slot's
/// blocks: row (b, s) to key_rows' row of position L - S + s (the P
/// cached positions on; positions 0 .. S - 1 in a prefill).
struct PlanStep {
  std::string kernel;
  /// A store step's slot (-1: a kernel call).
  int64_t storeSlot = -1;
  std::string op;  // e.g. "tfm.attention" (optional: for reports)
  std::string loc; // the .tfm line that produced it (optional)
  /// What a linear multiplies, where not f32 (`"activations"`, optional):
  /// "int8" (its input quantised, tfmc --activations int8) or "bf16" (its
  /// input rounded to bf16, tfmc --activations bf16); empty: f32.
  std::string activations;
  /// A linear's K where its x is not (K, M) f32 but a tfm.quantize's bytes
  /// (`"depth"`, optional; for reports); 0: x's first extent.
  int64_t depth = 0;
  std::vector<PlanArg> args; // outputs last
};

struct PlanOutput {
  std::string name;
  int64_t value = 0;
  std::vector<DimExpr> dims; // row-major, outermost first
};

/// Upper bounds on every size a plan states, checked by parsePlan, so that
/// the runtime's own size arithmetic cannot overflow int64_t (each product
/// it forms stays below 2^63):
///  - a limit or extent (vocab, max_len, max_batch, max_seq, a cache slot's
///    width, a constant dim): at most 2^31 - 1, Halide's extent limit;
///  - a byte count (the arena, a weight, a KV cache slot of max_len rows):
///    at most 2^46 (64 TiB), more memory than any machine it runs on.
inline constexpr int64_t kMaxPlanExtent = (int64_t(1) << 31) - 1;
inline constexpr int64_t kMaxPlanBytes = int64_t(1) << 46;

struct Plan {
  int64_t format = 1;
  std::string model, entry, target;
  /// Where the kernels run and the arena, weights and KV cache live:
  /// "host", or "cuda" (a CUDA build: the runtime keeps them in device
  /// memory and passes device buffers to the kernels).
  std::string device = "host";
  int64_t vocab = 0, maxLen = 0, maxBatch = 0, maxSeq = 0, arenaBytes = 0;
  std::vector<std::string> symbols;
  std::vector<PlanInput> inputs;
  std::vector<PlanWeight> weights;
  std::vector<PlanCacheSlot> cache;
  /// Rows of a block of the paged slots (`"block_tokens"`; 0: none paged).
  int64_t blockTokens = 0;
  std::vector<PlanValue> values;
  /// What the entry point returns, in order (never empty): the plan's
  /// "output", then its "more_outputs" (BERT's pooler_output after
  /// last_hidden_state).
  std::vector<PlanOutput> outputs;
  /// The first output (logits, or the hidden states).
  const PlanOutput &output() const { return outputs.front(); }
  std::vector<PlanStep> steps;

  /// Bytes of a KV cache slot: max_len f32 rows of its width for each of
  /// max_batch sequences (parsePlan bounds it by kMaxPlanBytes).
  int64_t cacheSlotBytes(const PlanCacheSlot &slot) const {
    return maxBatch * maxLen * slot.rowBytes();
  }
};

/// The program's weight dtype, as `tfmc --weight-dtype` chose it: the
/// narrowest of its weights' (int4, int8, bf16, f32; norms, biases and
/// positions stay f32 in every program).
WeightDType programWeightDType(const Plan &plan);

/// An int8 or int4 program's group size (its first grouped weight's), or 0.
int64_t programWeightGroup(const Plan &plan);

/// Rows per panel of a program whose f32 linear weights are in panels (its
/// first such weight's; every one has the target's), or 0.
int64_t programWeightPanel(const Plan &plan);

/// Bytes of every weight as the program stores it (int8 and int4 blocks),
/// or nothing when the sum overflows int64_t.
std::optional<int64_t> storedWeightBytes(const Plan &plan);

/// Parses and checks a plan (indices in range, symbols known, every step's
/// kernel non-empty). Returns nullopt with a one-line `error` otherwise.
std::optional<Plan> parsePlan(const std::string &json, std::string &error);

/// A program's plans: one object (forward only) or an array of them, the
/// forward first, then e.g. prefill and decode_step. Every plan of one
/// program shares its weights and cache tables.
std::optional<std::vector<Plan>> parsePlans(const std::string &json,
                                           std::string &error);

/// `[B, S]`, `[B*S, 768]`: dims as the plan writes them, for messages.
std::string formatDims(const Plan &plan, const std::vector<DimExpr> &dims);

/// The symbols the runtime binds itself instead of reading them off an
/// input: P, the rows already in the KV cache, and L = P + the new rows.
/// N: the blocks of a paged cache's pool (its zero block included).
inline bool isCacheSymbol(const std::string &name) {
  return name == "P" || name == "L" || name == "N";
}

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_PLAN_H
