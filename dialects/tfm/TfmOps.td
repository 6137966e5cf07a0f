//===- TfmOps.td - tfm operations --------------------------*- tablegen -*-===//
//
// Every op has a C++ verifier for rank, static shape agreement, element
// types and attribute ranges (TfmOps.cpp); dynamic dimensions (batch,
// sequence) are checked at run time by the runtime, not here.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_OPS_TD
#define TFM_OPS_TD

include "dialects/tfm/TfmAttrs.td"
include "dialects/tfm/TfmInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Tfm_F32Tensor : RankedTensorOf<[F32]>;
def Tfm_IdTensor : RankedTensorOf<[I32, I64]>;
// Masks as inputs: 1 = token, 0 = padding.
def Tfm_KeyMaskTensor : RankedTensorOf<[I1, I8, I32, I64]>;
def Tfm_BoolTensor : RankedTensorOf<[I1]>;
// A linear's x: f32, or a tfm.quantize's bytes (int8 activations).
def Tfm_LinearInput : RankedTensorOf<[F32, I8]>;
// A mask applied to scores: i1 selects (false -> -inf), f32 is added.
def Tfm_ScoreMaskTensor : RankedTensorOf<[I1, F32]>;

//===----------------------------------------------------------------------===//
// Parameters and inputs
//===----------------------------------------------------------------------===//

def Tfm_WeightOp : Tfm_Op<"weight", [Pure, Tfm_MemoryView]> {
  let summary = "a named model parameter";
  let description = [{
    A tensor read from the weights file under `name` (docs/language.md's and docs/families.md's weight-name tables).
    Several ops may name the same parameter (a tied output projection).
    `alt_names` are other names the file may use for it, tried in order
    when `name` is absent (a Hugging Face checkpoint with or without the
    `transformer.` prefix). `transposed` (rank 2 only): the file stores the
    transpose of the result, shape reversed (Conv1D's [in, out]); the
    runtime transposes it once at load.

    `storage` (rank 2 only, set by tfm-weight-storage from the user's
    --weight-dtype): the weight is stored in fewer bits than its f32 result
    type, which is the value the kernels compute with:
    `#tfm.storage<bf16>` (each value rounded to nearest even) or
    `#tfm.storage<int8>` with `group` (each row in groups of `group`
    consecutive columns, one f16 scale per group: value = q · scale, q in
    [-127, 127]) or `#tfm.storage<int4>` with `group` 32 (GGUF's Q4_0
    blocks, support/WeightFormat.h: value = (q - 8) · scale, q in [0, 15]),
    or `#tfm.storage<q4_k>`, `<q5_k>`, `<q6_k>` without a group (llama.cpp's
    K-quants, super-blocks of 256 values: a GGUF file's own tensors of those
    types, used in place; the columns are a multiple of 256).
    Only kernels that widen the weight in registers read such a weight
    (linear's weight, embedding's table).

    `panel` (rank 2, f32, set by tfm-weight-layout for CPU targets): the
    program stores the weight in panels of `panel` rows, each panel's rows
    innermost ([N / panel, K, panel]; `panel` divides N), the layout the
    CPU linear kernels read without packing (support/WeightFormat.h). The
    runtime lays it out so once at load. Only linear and gated linear
    weights (and row splits of them at whole panels) are stored so. With
    int8 or int4 storage, `panel` (16) is a block panel: 16 rows' blocks
    laid out for the integer microkernel's `vpdpbusd` (x86-64-avx512, only
    where every use multiplies int8 activations; support/WeightFormat.h).
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<StrArrayAttr>:$alt_names,
                       UnitAttr:$transposed,
                       OptionalAttr<Tfm_WeightStorageAttr>:$storage,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$group,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$panel);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let builders = [
    // A parameter under its own name only (every .tfm model's).
    OpBuilder<(ins "::mlir::Type":$result, "::llvm::StringRef":$name), [{
      build($_builder, $_state, result, name, /*alt_names=*/nullptr,
            /*transposed=*/false, /*storage=*/nullptr, /*group=*/nullptr,
            /*panel=*/nullptr);
    }]>
  ];
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes the weight occupies in its storage (with its scales).
    int64_t getStorageBytes();
  }];
}

def Tfm_EmbeddingOp : Tfm_Op<"embedding", [Pure, Tfm_Kernel<"Embedding">]> {
  let summary = "token embedding lookup: result[b, s, :] = table[ids[b, s], :]";
  let description = [{
    `table` [vocab, d] (a `tfm.weight`), `ids` [B, S] of i32 or i64 ->
    [B, S, d]. Token ids must be below vocab: the runtime checks each input
    against the rows of the tables it indexes before any kernel runs. The
    kernel reads the table in its storage type (bf16, int8 or int4 after
    tfm-weight-storage) and widens each row it copies.
  }];
  let arguments = (ins Tfm_F32Tensor:$table, Tfm_IdTensor:$ids);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// KernelOpInterface: the table is read in its storage type.
    bool widensWeight(::mlir::OpOperand &operand) {
      return &operand == &getTableMutable();
    }
  }];
}

def Tfm_PositionsOp : Tfm_Op<"positions", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>, Tfm_Kernel<"Positions">,
    Tfm_SameShapeAsInput, Tfm_ElementwiseInPlace]> {
  let summary = "adds position encodings for positions 0..S-1";
  let description = [{
    result[b, s, :] = input[b, s, :] + P[s, :], where P is the sinusoidal
    table (P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(same)), for
    `sinusoidal_halves` Marian's layout of the same values (P[p, i] =
    sin(p / 10000^(2i/d)) for i < d/2, P[p, d/2 + i] = cos(same)) or, for
    `learned`, the `table` operand [max_len, d]. With `from_cache` (a
    decode step) positions continue after the tokens already in the KV
    cache: P .. P+S-1. With `position_ids` [B, S] (left-padded batches:
    each row counts its own positions) token (b, s) is at position
    position_ids[b, s] instead.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, Optional<Tfm_F32Tensor>:$table,
                       Optional<Tfm_IdTensor>:$position_ids,
                       Tfm_PositionKindAttr:$kind, UnitAttr:$from_cache);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $input (`,` $table^)? (`at` $position_ids^)? attr-dict `:` type($input)
    (`,` type($table)^)? (`at` type($position_ids)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dense algebra
//===----------------------------------------------------------------------===//

def Tfm_LinearOp : Tfm_Op<"linear", [Pure, AttrSizedOperandSegments,
    Tfm_Kernel<"Linear">]> {
  let summary = "act(x · Wᵀ + b) + residual over the last dimension (PyTorch [out, in] weights)";
  let description = [{
    The frontend writes the plain form, x · Wᵀ + b. Epilogue fusion adds an
    `activation` (applied to x · Wᵀ + b) and a `residual` (added last, after
    the activation) so that one kernel does the work of three. With int8
    activations (`tfm.activations = "int8"`) the input may be a
    tfm.quantize's bytes instead of x (tfm-quantise-once).
  }];
  let arguments = (ins Tfm_LinearInput:$input, Tfm_F32Tensor:$weight,
                       Optional<Tfm_F32Tensor>:$bias,
                       Optional<Tfm_F32Tensor>:$residual,
                       OptionalAttr<Tfm_ActivationAttr>:$activation);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`residual` $residual^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// KernelOpInterface: the weight is read in its storage type.
    bool widensWeight(::mlir::OpOperand &operand) {
      return &operand == &getWeightMutable();
    }
  }];
}

def Tfm_GatedLinearOp : Tfm_Op<"gated_linear",
    [Pure, AttrSizedOperandSegments, Tfm_Kernel<"GatedLinear">]> {
  let summary = "act(x · Gᵀ + bg) · (x · Uᵀ + bu): a gated FFN's gate and up in one GEMM";
  let description = [{
    tfm-fuse-epilogues writes it for mul(activation(linear(x, G)),
    linear(x, U)): one pass over x computes both products of each output
    element and the kernel writes only their gated product. Both weights are
    [N, K] (PyTorch layout); the biases are both present or both absent.
  }];
  let arguments = (ins Tfm_LinearInput:$input, Tfm_F32Tensor:$gate,
                       Tfm_F32Tensor:$up,
                       Optional<Tfm_F32Tensor>:$gate_bias,
                       Optional<Tfm_F32Tensor>:$up_bias,
                       Tfm_ActivationAttr:$activation);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gate `,` $up (`bias` $gate_bias^ `,` $up_bias)? $activation
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// KernelOpInterface: gate and up are read in their (one) storage type.
    bool widensWeight(::mlir::OpOperand &operand) {
      return &operand == &getGateMutable() || &operand == &getUpMutable();
    }
  }];
}

def Tfm_MatmulOp : Tfm_Op<"matmul", [Pure]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    Over the last two dimensions, with equal leading (batch) dimensions:
    result = op(lhs) · op(rhs), op(x) = xᵀ when the transpose flag is set.
  }];
  let arguments = (ins Tfm_F32Tensor:$lhs, Tfm_F32Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_SplitOp : Tfm_Op<"split", [Pure, Tfm_MemoryView]> {
  let summary = "splits a tensor into consecutive parts along one axis";
  let description = [{
    Used for the packed `in_proj_weight` [(H + 2·Hkv)·Dh, d] and
    `in_proj_bias` of an attention sublayer: Q, K and V, which differ in
    size with grouped-query attention. The number of parts is the number of
    results; their sizes along `axis` add up to the input's.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Tfm_F32Tensor>:$parts);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($parts)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Elements of the input before part `index` (static shapes).
    int64_t getPartOffset(unsigned index);
  }];
}

def Tfm_SplitHeadsOp : Tfm_Op<"split_heads", [Pure]> {
  let summary = "[B, S, H·Dh] -> [B, H, S, Dh]";
  let description = [{
    The heads of a projection as their own dimension, for the step-by-step
    attention the frontend writes (head h is columns h·Dh .. (h+1)·Dh - 1).
    tfm-fuse-epilogues folds it into `tfm.attention`'s merged layout, so no
    kernel ever materialises the transpose.
  }];
  let arguments = (ins Tfm_F32Tensor:$input);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_MergeHeadsOp : Tfm_Op<"merge_heads", [Pure]> {
  let summary = "[B, H, S, Dh] -> [B, S, H·Dh]";
  let description = [{
    The inverse of `tfm.split_heads`: head h of the result's last dimension
    is columns h·Dh .. (h+1)·Dh - 1. Folded into `tfm.attention` by
    tfm-fuse-epilogues.
  }];
  let arguments = (ins Tfm_F32Tensor:$input);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_ScaleOp : Tfm_Op<"scale", [Pure, SameOperandsAndResultType,
    Tfm_Kernel<"Scale">, Tfm_SameShapeAsInput, Tfm_ElementwiseInPlace]> {
  let summary = "multiplies every element by a constant factor";
  let description = [{
    result = input · factor. The attention fusion folds a scale of the
    scores (or of Q or K) into `tfm.attention`'s `scale`; any other scale
    (e.g. an embedding's √d) is an elementwise kernel, which may write in
    place.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, F64Attr:$factor);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tfm_SoftcapOp : Tfm_Op<"softcap", [Pure, SameOperandsAndResultType,
    Tfm_Kernel<"Softcap">, Tfm_SameShapeAsInput, Tfm_ElementwiseInPlace]> {
  let summary = "soft-capping: cap · tanh(input / cap)";
  let description = [{
    Gemma 2's soft-capping, which bounds a value smoothly to (-cap, cap):
    of the attention logits (before the masks; the attention fusion folds it
    into `tfm.attention`'s `logit_softcap`) and of the final logits (an
    elementwise kernel, which may write in place). `cap` is positive and
    finite.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, F64Attr:$cap);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input `at` $cap attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tfm_AddOp : Tfm_Op<"add", [Pure, Commutative, SameOperandsAndResultType,
    Tfm_Kernel<"Add">, Tfm_SameShapeAsInput, Tfm_ElementwiseInPlace]> {
  let summary = "elementwise sum of two tensors of one type (residuals)";
  let description = [{
    A residual connection. tfm-fuse-epilogues folds it into the norm that
    reads the sum (post-norm: norm(x + f(x)), the norm's `residual`) or into
    the linear that produces one operand (pre-norm: x + f(LN(x)), the
    linear's `residual`); a sum left over is its own elementwise kernel.
  }];
  let arguments = (ins Tfm_F32Tensor:$lhs, Tfm_F32Tensor:$rhs);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tfm_MulOp : Tfm_Op<"mul", [Pure, Commutative, SameOperandsAndResultType,
    Tfm_Kernel<"Mul">, Tfm_SameShapeAsInput]> {
  let summary = "elementwise product of two tensors of one type (a gated FFN's act(gate) · up)";
  let description = [{
    The frontend writes a gated FFN (Llama's SwiGLU) as
    mul(activation(linear(x, G)), linear(x, U)); tfm-fuse-epilogues turns
    that into one `tfm.gated_linear`. Any other product is its own
    elementwise kernel.
  }];
  let arguments = (ins Tfm_F32Tensor:$lhs, Tfm_F32Tensor:$rhs);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tfm_ActivationOp : Tfm_Op<"activation", [Pure, SameOperandsAndResultType,
    Tfm_Kernel<"Activation">, Tfm_SameShapeAsInput, Tfm_ElementwiseInPlace]> {
  let summary = "elementwise relu, gelu (erf), gelu_tanh, silu or tanh";
  let description = [{
    `kind` is `#tfm.activation<relu>`, `gelu` (the exact form, with erf),
    `gelu_tanh` (GPT-2's tanh approximation), `silu` (x · sigmoid(x)) or
    `tanh`. tfm-fuse-epilogues folds an activation of a linear's result into
    the linear's epilogue; any other is its own elementwise kernel.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, Tfm_ActivationAttr:$kind);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input $kind attr-dict `:` type($input)";
}

def Tfm_LayerNormOp : Tfm_Op<"layer_norm", [Pure, Tfm_Kernel<"LayerNorm">,
    Tfm_SameShapeAsInput, Tfm_NormOpInterface]> {
  let summary = "LayerNorm(x + residual) over the last dimension, with weight and bias";
  let description = [{
    The optional `residual` is added before normalising: a post-norm
    sublayer's LN(x + f(x)) in one kernel.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, Optional<Tfm_F32Tensor>:$residual,
                       Tfm_F32Tensor:$gamma, Tfm_F32Tensor:$beta, F64Attr:$eps);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $input (`residual` $residual^)? `,` $gamma `,` $beta attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_RmsNormOp : Tfm_Op<"rms_norm", [Pure, Tfm_Kernel<"RmsNorm">,
    Tfm_SameShapeAsInput, Tfm_NormOpInterface]> {
  let summary = "RMSNorm(x + residual) over the last dimension: x · rsqrt(mean(x²) + eps) · gamma";
  let description = [{
    Llama's norm: no mean is subtracted and there is no bias. The optional
    `residual` is added before normalising, as in tfm.layer_norm. With
    `unit_offset` the gain is 1 + gamma (Gemma's RMSNorm, whose weights are
    stored as the gain's offset from 1).
  }];
  let arguments = (ins Tfm_F32Tensor:$input, Optional<Tfm_F32Tensor>:$residual,
                       Tfm_F32Tensor:$gamma, F64Attr:$eps,
                       UnitAttr:$unit_offset);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $input (`residual` $residual^)? `,` $gamma attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_RopeOp : Tfm_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>,
    Tfm_Kernel<"Rope">, Tfm_SameShapeAsInput]> {
  let summary = "rotary position embedding of [B, S, H·Dh] queries or keys";
  let description = [{
    Hugging Face Llama's "rotate half" layout: within each of the `heads`
    heads, feature i < Dh/2 pairs with i + Dh/2. With
    inv_freq[i] = 1 / theta^(2i/Dh) and a = p · inv_freq[i mod Dh/2] (f32),
      result[i]        = x[i] · cos a - x[i + Dh/2] · sin a
      result[i + Dh/2] = x[i + Dh/2] · cos a + x[i] · sin a
    at position p = s (0 .. S-1, whatever the padding). With `from_cache`
    (a decode step) positions continue after the tokens in the KV cache:
    P .. P+S-1. With `position_ids` [B, S], token (b, s) is at position
    position_ids[b, s] instead. With `interleaved` (ggml's
    GGML_ROPE_TYPE_NORM, the order of a llama GGUF file's Q and K rows),
    feature 2i pairs with 2i + 1 instead, turned by inv_freq[i]:
      result[2i]     = x[2i] · cos a - x[2i + 1] · sin a
      result[2i + 1] = x[2i + 1] · cos a + x[2i] · sin a
    With `scaling` (#tfm.rope_scaling: linear, or Llama 3.1's), inv_freq
    is scaled as the attribute says before use.
  }];
  let arguments = (ins Tfm_F32Tensor:$input,
                       Optional<Tfm_IdTensor>:$position_ids, I64Attr:$heads,
                       F64Attr:$theta, UnitAttr:$from_cache,
                       UnitAttr:$interleaved,
                       OptionalAttr<Tfm_RopeScalingAttr>:$scaling);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $input (`at` $position_ids^)? attr-dict `:` type($input)
    (`at` type($position_ids)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_RepeatHeadsOp : Tfm_Op<"repeat_heads", [Pure]> {
  let summary = "grouped-query attention's K/V heads, each repeated: [B, Hkv, S, D] -> [B, Hkv·n, S, D]";
  let description = [{
    Result head h is input head h / n (Hugging Face's repeat_kv). It is a
    step of the unfused form only: tfm-fuse-masked-attention folds it into
    tfm.attention's kv_heads, so the repeated heads are never materialised.
  }];
  let arguments = (ins Tfm_F32Tensor:$input);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_SoftmaxOp : Tfm_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    A slice that is entirely −inf (every key masked) gives zeros, not NaN,
    as the fused `tfm.attention` does.
  }];
  let arguments = (ins Tfm_F32Tensor:$input, I64Attr:$axis);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

def Tfm_CausalMaskOp : Tfm_Op<"causal_mask", [Pure]> {
  let summary = "the look-ahead mask of a sequence: [S, S], true where key <= query";
  let description = [{
    Reads only the sequence length of `sequence` [B, S, d]. A mask producer
    of the step-by-step attention: tfm-fuse-masked-attention turns it into
    `#tfm.mask<causal>` on `tfm.attention`, whose kernel skips the masked
    key blocks; it is never a kernel itself. With `from_cache` (an extend
    step's self-attention) the queries are the newest positions, after the
    tokens in the KV cache: query i is at position Sk - Sq + i of the Sk
    keys, and sees the keys at or before it.
  }];
  let arguments = (ins Tfm_F32Tensor:$sequence, UnitAttr:$from_cache);
  let results = (outs Tfm_BoolTensor:$result);
  let assemblyFormat = "$sequence attr-dict `:` type($sequence) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_WindowMaskOp : Tfm_Op<"window_mask", [Pure]> {
  let summary = "the local-attention mask of a sequence: [S, S], true where |query - key| < size";
  let description = [{
    With `from_cache` (a decode step's self-attention) the queries are the
    newest positions, after the tokens in the KV cache: query i is at
    position Sk - Sq + i of the Sk keys.
  }];
  let arguments = (ins Tfm_F32Tensor:$sequence, I64Attr:$size,
                       UnitAttr:$from_cache);
  let results = (outs Tfm_BoolTensor:$result);
  let assemblyFormat = "$sequence attr-dict `:` type($sequence) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_PaddingMaskOp : Tfm_Op<"padding_mask", [Pure]> {
  let summary = "key padding mask [B, S] (1 = token) -> [B, 1, 1, S], true for tokens";
  let description = [{
    The model's `attention_mask` input (i1, i8, i32 or i64; nonzero is a
    token) shaped to broadcast over heads and queries. The attention fusion
    turns it into `#tfm.mask<padding>` and the `key_padding` operand of
    `tfm.attention`; it is never a kernel itself.
  }];
  let arguments = (ins Tfm_KeyMaskTensor:$key_mask);
  let results = (outs Tfm_BoolTensor:$result);
  let assemblyFormat = "$key_mask attr-dict `:` type($key_mask) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_MaskAndOp : Tfm_Op<"mask_and", [Pure, Commutative]> {
  let summary = "combines two boolean masks, broadcasting as NumPy does";
  let description = [{
    result = lhs ∧ rhs, e.g. a causal [S, S] and a padding [B, 1, 1, S]
    mask into [B, 1, S, S]. The attention fusion records each operand's
    mask kind in `#tfm.mask`; the op itself is never a kernel.
  }];
  let arguments = (ins Tfm_BoolTensor:$lhs, Tfm_BoolTensor:$rhs);
  let results = (outs Tfm_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tfm_ApplyMaskOp : Tfm_Op<"apply_mask", [Pure,
    AllTypesMatch<["scores", "result"]>, Tfm_ElementwiseInPlace]> {
  let summary = "masks attention scores [B, H, Sq, Sk]";
  let description = [{
    An i1 mask selects: result = mask ? scores : -inf. An f32 mask is
    additive: result = scores + mask (0 or -inf entries). The mask
    broadcasts over the scores as NumPy does ([Sq, Sk], [B, 1, 1, Sk], ...).
  }];
  let arguments = (ins Tfm_F32Tensor:$scores, Tfm_ScoreMaskTensor:$mask);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$scores `,` $mask attr-dict `:` type($scores) `,` type($mask)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isAdditive() { return !getMask().getType().getElementType().isInteger(1); }
  }];
}

//===----------------------------------------------------------------------===//
// The KV cache of generation
//===----------------------------------------------------------------------===//

def Tfm_KvAppendOp : Tfm_Op<"kv_append", [
    MemoryEffects<[MemRead, MemWrite]>, Tfm_MemoryView]> {
  let summary = "appends keys or values to a runtime-owned cache slot";
  let description = [{
    `new` [B, n, D] is written to rows P .. P+n-1 of the cache `slot`, where
    P is the number of rows the slot already holds (0 in a prefill); the
    result [B, P+n, D] is every valid row. The cache lives in the runtime,
    sized by max_len, across the prefill and decode steps of one sequence;
    the producer of `new` writes straight into it.
  }];
  let arguments = (ins Tfm_F32Tensor:$new_rows, StrAttr:$slot);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $new_rows `into` $slot attr-dict `:` type($new_rows) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_KvReadOp : Tfm_Op<"kv_read", [MemoryEffects<[MemRead]>, Tfm_MemoryView]> {
  let summary = "reads every valid row of a runtime-owned cache slot";
  let description = [{
    The cross-attention keys and values a prefill computed from the
    encoder's output, read by each decode step: [B, S, D].
  }];
  let arguments = (ins StrAttr:$slot);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Positions generation reads
//===----------------------------------------------------------------------===//

def Tfm_LastPositionOp : Tfm_Op<"last_position", [Pure,
    Tfm_Kernel<"LastPosition">]> {
  let summary = "the last position of each sequence: [B, S, D] -> [B, 1, D]";
  let description = [{
    result[b, 0, :] = input[b, S - 1, :] for every row b. A prefill needs
    the logits of its last position only (they choose the next token), and
    the final norm and the output projection act on each position alone, so
    the builder applies them after this op: the same numbers for that
    position, for 1/S of the work and memory.

    "Last" is position S - 1 of every row, whatever a padding mask says:
    generation runs unpadded sequences. With right padding, S - 1 of a
    shorter row is a padding position and its result is that position's
    (unspecified but finite); a row's own last token needs its length,
    which this op does not take.
  }];
  let arguments = (ins Tfm_F32Tensor:$input);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_QuantizeOp : Tfm_Op<"quantize", [Pure, Tfm_Kernel<"Quantize">]> {
  let summary = "x's rows quantised once for the int8-activation linears that read them";
  let description = [{
    Each row of the input (K values) quantised per group of `group` values
    as an int8-activation linear quantises its input (scale max |x| / 127,
    levels rounded to nearest even, a row holding a NaN or an infinity
    flagged), stored as the bytes support/WeightFormat.h describes
    (quantisedRowBytes): the result is [..., B] of i8, B that row's bytes.
    tfm-quantise-once writes it where several such linears read one x (a
    layer's q, k and v projections), which then read its result instead of
    quantising x each: the same levels and scales, so the same numbers.
  }];
  let arguments = (ins Tfm_F32Tensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs RankedTensorOf<[I8]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_FirstPositionOp : Tfm_Op<"first_position", [Pure,
    Tfm_Kernel<"FirstPosition">]> {
  let summary = "the first position of each sequence: [B, S, D] -> [B, D]";
  let description = [{
    result[b, :] = input[b, 0, :] for every row b: BERT's pooler reads the
    hidden state of the first token ([CLS]) only, and its output
    (pooler_output) is [B, D].
  }];
  let arguments = (ins Tfm_F32Tensor:$input);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused attention
//===----------------------------------------------------------------------===//

def Tfm_AttentionOp : Tfm_Op<"attention", [Pure, Tfm_Kernel<"Attention">]> {
  let summary = "softmax(scale · Q·Kᵀ, masked) · V in one kernel";
  let description = [{
    Split layout: q [B, H, Sq, Dh], k [B, H, Sk, Dh], v [B, H, Sk, Dv] ->
    [B, H, Sq, Dv]. Merged layout (with `heads` = H): q [B, Sq, H·Dh],
    k [B, Sk, H·Dh], v [B, Sk, H·Dv] -> [B, Sq, H·Dv], head h reading
    columns h·Dh .. (h+1)·Dh - 1: the layout the projections produce, so no
    transpose is materialised around the kernel.

    Grouped-query attention: K and V may have fewer heads (Hkv, dividing
    H); query head h reads K/V head h / (H / Hkv). In the split layout Hkv
    is K's dimension 1; in the merged layout it is `kv_heads` (default
    `heads`) and K, V are [B, Sk, Hkv·Dh].

    With `from_cache` (a decode step's self-attention) the queries are the
    last Sq of the Sk positions (the one new query is at Sk - 1): causal and
    window masks compare query position Sk - Sq + i with key position j.
    Without it query i is at position i.

    `mask` says which masks apply; with `padding`, the `key_padding`
    operand [B, Sk] (1 = token, 0 = padding) is required, and without it
    forbidden. A query row whose keys are all masked yields zeros.

    With `logit_softcap` = c (Gemma 2's attn_logit_softcapping) each score
    is c · tanh(scale · q·k / c), before the masks: softmax(mask(softcap(
    scale · Q·Kᵀ))) · V.
  }];
  let arguments = (ins Tfm_F32Tensor:$query, Tfm_F32Tensor:$key,
                       Tfm_F32Tensor:$value,
                       Optional<Tfm_KeyMaskTensor>:$key_padding,
                       Tfm_MaskAttr:$mask, F64Attr:$scale,
                       OptionalAttr<F64Attr>:$logit_softcap,
                       OptionalAttr<I64Attr>:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       UnitAttr:$from_cache);
  let results = (outs Tfm_F32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` `key_padding` $key_padding^)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) (`,` type($key_padding)^)?
    `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of query heads, and of K/V heads, in either layout.
    int64_t getNumHeads();
    int64_t getNumKvHeads();
    /// True for the merged [B, S, H·D] layout.
    bool isMergedLayout() { return getQuery().getType().getRank() == 3; }
    /// Per-head size of the queries and keys, and of the values, in either
    /// layout (dynamic when the last dimension is).
    int64_t getHeadSize() { return headSizeOf(getQuery()); }
    int64_t getValueHeadSize() { return headSizeOf(getValue()); }
    int64_t headSizeOf(::mlir::Value operand);
  }];
}

#endif // TFM_OPS_TD
