//===- Passes.td - tfmc's middle end ------------------------*- tablegen -*-===//

#ifndef TFMC_PASSES_TD
#define TFMC_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseMaskedAttention : Pass<"tfm-fuse-masked-attention", "::mlir::func::FuncOp"> {
  let summary = "Fuses Q·Kᵀ -> scale -> mask(s) -> softmax -> ·V into tfm.attention";
  let description = [{
    Anchored at each `tfm.softmax`, walks the chain back to the score matmul
    `Q·Kᵀ` and forward to the `·V` matmul, and replaces it with one
    `tfm.attention` whose `#tfm.mask` records every mask kind (causal,
    window, key padding) and whose scale is the product of the scales,
    including a positive scale applied to Q or K. Masks may be applied in
    any order, combined with `tfm.mask_and`, before or after the scale.

    It does not fuse when that could change the result: softmax over another
    axis, anything between softmax and ·V (e.g. a mask after softmax), a
    non-positive scale among the masks (−inf · −c = +inf), a mask not made
    by a known producer (e.g. a mask over queries rather than keys), keys not
    in [B, H, Sk, D] layout, or an intermediate with another user (attention
    weights returned). A scale on V stays where it is. With `remarks`, each
    unfused chain gets a remark saying why. Afterwards, ops left without a
    user (mask producers, head splits) are erased; every tfm op is pure.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark at each softmax whose chain is not fused, saying why">
  ];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def FuseEpilogues : Pass<"tfm-fuse-epilogues", "::mlir::func::FuncOp"> {
  let summary = "Fuses activations, residual adds and head splits into their kernels";
  let description = [{
    Each fusion folds a cheap step into the kernel next to it, so that the
    intermediate is never written to memory and read back:

    - activation(linear(x)) -> linear {activation}
    - norm(x + y) -> norm x residual y (post-norm sublayers), for every norm
      (`tfm.layer_norm`, `tfm.rms_norm`: the ops with NormOpInterface)
    - x + linear(h) -> linear(h) residual x (pre-norm sublayers), unless the
      sum feeds a norm, which takes it instead
    - merge_heads(attention(split_heads(q), split_heads(k), split_heads(v)))
      -> attention(q, k, v) {heads} in the [B, S, H·D] layout, so no
      transpose is materialised around attention
    - mul(act(linear(x, G)), linear(x, U)) -> gated_linear(x, G, U) {act}:
      a gated FFN's gate and up projections in one GEMM

    Each fusion needs the producer's result to have no other user.
  }];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def CheckKernels : Pass<"tfm-check-kernels", "::mlir::func::FuncOp"> {
  let summary = "Checks that every op left after fusion is a kernel tfmc compiles";
  let description = [{
    After fusion every op of an entry point must be a kernel (an op with
    KernelOpInterface, which names its kernel kind) or a view of memory
    (an op with the `Tfm_MemoryView` trait: `tfm.weight`, `tfm.split`,
    `tfm.kv_append`, `tfm.kv_read`). Any other op, e.g. a softmax whose
    chain the fusion could not match, is an error at that op, before it is
    tiled, given an arena slot or lowered.
  }];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def WeightStorage : Pass<"tfm-weight-storage", "::mlir::ModuleOp"> {
  let summary = "Stores the weights of linears and embeddings in bf16, int8 or int4";
  let description = [{
    The user's `--weight-dtype`: every `tfm.weight` whose every use is a
    weight its kernel widens in registers (KernelOpInterface's
    `widensWeight`: a linear's weight, a gated linear's gate and up, an
    embedding's table), directly or through `tfm.split` views along rows,
    gets `storage = #tfm.storage<bf16>`, or
    `#tfm.storage<int8>` with `group`, or `#tfm.storage<int4>` with group
    32 (GGUF's Q4_0 blocks). Those kernels widen the weight in
    registers, and accumulate in f32. Every other weight (norms, biases,
    learned positions) stays f32, as do activations and the KV cache. Weights
    of the same name in several entry points are one tensor at run time, so
    the decision is made per name over the whole module. With `dtype=f32`
    and no `overrides` the pass changes nothing.

    `overrides` gives single weights their own storage (tfmc does it for a
    GGUF file whose tensors are not all of one type: each weight keeps the
    storage that holds its file type exactly). A gated linear's gate and up
    share one storage: where their overrides differ, both take `dtype`'s.

    With `activations=int8` (the user's `--activations int8`, which needs
    `dtype=int8` or `int4`), every linear and gated linear whose weights
    are int8 or int4 also gets the discardable attribute
    `tfm.activations = "int8"`: its kernel quantises each input row per
    group of the weight's group of features (scale
    max |x| / 127, round to nearest even) and multiplies int8 by int8 with
    int32 sums (integerAlgorithm in compiler/codegen/kernels/Linear.cpp).
    With `activations=bf16` (needs `dtype=bf16`), every linear and gated
    linear whose weights are bf16 gets `tfm.activations = "bf16"`: its
    kernel rounds its input to bf16 (nearest even) and sums products of bf16
    pairs in f32 (vdpbf16ps where the target has it).
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"f32\"",
           "f32, bf16, int8 or int4">,
    Option<"group", "group", "int64_t", /*default=*/"64",
           "int8: consecutive columns of a row that share one scale">,
    Option<"activations", "activations", "std::string", /*default=*/"\"f32\"",
           "f32; int8: linears whose weights are int8 or int4 get "
           "tfm.activations = int8; bf16: linears whose weights are bf16 "
           "get tfm.activations = bf16">,
    ListOption<"overrides", "overrides", "std::string",
           "NAME=DTYPE: the weight NAME's own storage (f32, bf16, int8 or "
           "int4) where it may be narrow, instead of dtype's (a GGUF file's "
           "tensors of another type than most)">
  ];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def WeightLayout : Pass<"tfm-weight-layout", "::mlir::ModuleOp"> {
  let summary = "Stores f32 linear weights in panels for CPU targets";
  let description = [{
    Every f32 rank-2 `tfm.weight` whose every use is a linear's weight or a
    gated linear's gate or up (directly or through `tfm.split` row views at
    whole panels), whose rows are a multiple of the target's panel, and
    which qualifies under every entry point that names it, gets
    `panel = P` (the target's weightPanel: 16 on x86, none on CUDA): the
    program stores it [N / P, K, P], the layout the CPU linear kernels read
    without packing; the runtime lays it out so at load. A gated linear's
    gate and up share one layout. Tied embedding tables and every other
    weight keep the row-major layout. Reasons: passes/WeightLayout.cpp.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "A target name (`tfmc --help` lists them)">
  ];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def QuantiseOnce : Pass<"tfm-quantise-once", "::mlir::func::FuncOp"> {
  let summary = "Quantises an input that several int8-activation linears read once";
  let description = [{
    Where two or more linears or gated linears with `tfm.activations =
    "int8"` (tfm-weight-storage) read one f32 value in the same groups (an
    int8 weight's group; 32 for int4 and the K-quants), inserts one
    `tfm.quantize` of it and makes them read its bytes instead: a layer's
    q, k and v projections quantise their shared x once instead of three
    times, with the same levels and scales. A value with one such reader,
    and every value on a CUDA target, is left as it is. Reasons:
    passes/QuantiseOnce.cpp.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "A target name (`tfmc --help` lists them)">
  ];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def Tile : Pass<"tfm-tile", "::mlir::ModuleOp"> {
  let summary = "Chooses tile sizes, vector widths, unrolling and parallel loops per kernel";
  let description = [{
    Attaches a typed tile plan (passes/target/TilePlan.h) as a `tfm.tile`
    dictionary to every kernel (every op with KernelOpInterface), chosen by
    a small cost model from the target description
    (passes/target/Target.h): a GEMM plan for linears and gated linears
    (the dot form, or for many rows of an f32 weight the packed form), an
    attention plan for attention, and a row plan for every other kernel
    (norms reduce each row). Codegen reads the plans back; the reasoning is
    documented in Tile.cpp.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "A target name (`tfmc --help` lists them)">,
    Option<"maxSeq", "max-seq", "int64_t", /*default=*/"0",
           "Longest sequence to plan scratch for (0: the function's tfm.max_len)">,
    Option<"maxBatch", "max-batch", "int64_t", /*default=*/"1",
           "Most sequences a decode step runs (its GEMMs' rows)">
  ];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

def PlanMemory : Pass<"tfm-plan-memory", "::mlir::func::FuncOp"> {
  let summary = "Assigns every intermediate tensor an offset in one arena";
  let description = [{
    Sizes each kernel's result at the maximum batch and sequence (a dynamic
    leading dimension is the batch, any other dynamic dimension a sequence;
    the [Sq, Sk] causal and window masks have no batch dimension),
    computes live ranges in program order, lets an elementwise kernel (an
    op with the `Tfm_ElementwiseInPlace` trait) write in place over an
    operand of its size that dies there (unless in-place=false: a
    schedule that computes some output elements twice, as Adams2019's
    ShiftInwards tails do, would then read an input it already overwrote),
    and packs the buffers greedily
    by size (largest first, lowest free offset, 64-byte aligned). A kernel
    whose result a `tfm.kv_append` takes writes straight into the runtime's
    cache and takes no space, unless paged-cache is set. Records
    `tfm.arena = [offset, bytes]` on each kernel and `tfm.arena_size`,
    `tfm.max_batch`, `tfm.max_seq` on the function.
  }];
  let options = [
    Option<"maxBatch", "max-batch", "int64_t", /*default=*/"1",
           "Largest batch the arena must hold">,
    Option<"maxSeq", "max-seq", "int64_t", /*default=*/"0",
           "Longest sequence the arena must hold (0: the function's tfm.max_len)">,
    Option<"inPlace", "in-place", "bool", /*default=*/"true",
           "Let an elementwise kernel write over an operand that dies there "
           "(needs schedules that write each output element once)">,
    Option<"pagedCache", "paged-cache", "bool", /*default=*/"false",
           "Rows appended to the KV cache take arena space too, live while "
           "the append's result is (the runtime copies them into a paged "
           "cache's blocks; a prefill's attention reads them there)">
  ];
  let dependentDialects = ["::tfmc::tfm::TfmDialect"];
}

#endif // TFMC_PASSES_TD
