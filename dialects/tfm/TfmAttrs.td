//===- TfmAttrs.td - tfm attributes ------------------------*- tablegen -*-===//

#ifndef TFM_ATTRS_TD
#define TFM_ATTRS_TD

include "dialects/tfm/TfmDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class Tfm_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tfm_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Tfm_ActivationKind : I32EnumAttr<"ActivationKind", "activation function", [
    I32EnumAttrCase<"relu", 0>,
    I32EnumAttrCase<"gelu", 1>,      // exact, with erf
    I32EnumAttrCase<"gelu_tanh", 2>, // GPT-2's tanh approximation
    I32EnumAttrCase<"silu", 3>,      // x · sigmoid(x) (Llama's gated FFN)
    I32EnumAttrCase<"tanh", 4>       // BERT's pooler
  ]> {
  let cppNamespace = "::tfmc::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_ActivationAttr : EnumAttr<Tfm_Dialect, Tfm_ActivationKind, "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_PositionKind : I32EnumAttr<"PositionKind", "position encoding", [
    I32EnumAttrCase<"sinusoidal", 0>,
    I32EnumAttrCase<"learned", 1>,
    I32EnumAttrCase<"sinusoidal_halves", 2>
  ]> {
  let cppNamespace = "::tfmc::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_PositionKindAttr : EnumAttr<Tfm_Dialect, Tfm_PositionKind, "positions"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_WeightStorage : I32EnumAttr<"WeightStorage", "how a weight is stored", [
    I32EnumAttrCase<"bf16", 0>,  // bfloat16, rounded to nearest even
    I32EnumAttrCase<"int8", 1>,  // symmetric int8 with an f16 scale per group
    I32EnumAttrCase<"int4", 2>,  // GGUF Q4_0 blocks: 32 values, an f16 scale
    // llama.cpp's K-quants, super-blocks of 256 values as a GGUF file holds
    // them (support/WeightFormat.h): only a file's own tensors have them.
    I32EnumAttrCase<"q4_k", 3>,
    I32EnumAttrCase<"q5_k", 4>,
    I32EnumAttrCase<"q6_k", 5>
  ]> {
  let cppNamespace = "::tfmc::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_WeightStorageAttr : EnumAttr<Tfm_Dialect, Tfm_WeightStorage, "storage"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_MaskAttr : Tfm_Attr<"Mask", "mask"> {
  let summary = "the masks a fused attention applies";
  let description = [{
    `#tfm.mask<none>`, `#tfm.mask<causal>`, `#tfm.mask<padding>`,
    `#tfm.mask<causal, padding>`, `#tfm.mask<causal, window(64)>`.

    causal: query q attends to keys k <= q. padding: keys whose entry in the
    key padding mask operand is 0 are not attended. window(N): query q
    attends only to keys with q - k < N (with causal) or |q - k| < N.
    These are properties of the kernel, not tensors: a kernel may skip key
    blocks that a mask removes entirely.
  }];
  let parameters = (ins "bool":$causal, "bool":$padding, "int64_t":$window);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isNone() const { return !getCausal() && !getPadding() && getWindow() == 0; }
  }];
}

def Tfm_RopeScalingKind : I32EnumAttr<"RopeScalingKind", "how rope's frequencies are scaled", [
    I32EnumAttrCase<"linear", 0>, // every inv_freq / factor
    I32EnumAttrCase<"llama3", 1>, // Llama 3.1's: low frequencies / factor, a blend between
    I32EnumAttrCase<"longrope", 2> // Phi-3's: each inv_freq / its own factor, cos and sin scaled
  ]> {
  let cppNamespace = "::tfmc::tfm";
  let genSpecializedAttr = 0;
}

def Tfm_RopeScalingAttr : Tfm_Attr<"RopeScaling", "rope_scaling"> {
  let summary = "how a rope's inverse frequencies are scaled";
  let description = [{
    `#tfm.rope_scaling<linear, factor = 4>`: inv_freq[i] / factor
    (transformers' "linear" rope_type: positions divided by the factor).

    `#tfm.rope_scaling<llama3, factor = 8, low_freq_factor = 1,
    high_freq_factor = 4, original_max_len = 8192>` (transformers'
    `_compute_llama3_parameters`): with wavelen = 2π / inv_freq[i], a
    frequency whose wavelen exceeds original_max_len / low_freq_factor is
    divided by factor, one whose wavelen is below original_max_len /
    high_freq_factor is kept, and one between is blended:
    (1 - t) · inv_freq / factor + t · inv_freq with
    t = (original_max_len / wavelen - low_freq_factor) /
        (high_freq_factor - low_freq_factor).

    `#tfm.rope_scaling<longrope, attention_factor = A, factors = [f0, ...]>`
    (transformers' `_compute_longrope_parameters`, Phi-3's "longrope" or
    "su"): inv_freq[i] / f_i, one factor per pair of a head's features, and
    cos and sin multiplied by A. transformers holds a short and a long list
    and takes the long one once a sequence passes the context the model was
    trained at; the builder writes the one the program's sequences need (the
    long list when --max-seq passes that context). A is stored as `factor`.
  }];
  let parameters = (ins "RopeScalingKind":$kind,
                        APFloatParameter<"the factor (longrope: the attention factor)">:$factor,
                        APFloatParameter<"llama3: low_freq_factor">:$lowFreqFactor,
                        APFloatParameter<"llama3: high_freq_factor">:$highFreqFactor,
                        "int64_t":$originalMaxLen,
                        "::mlir::DenseF64ArrayAttr":$frequencyFactors);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // TFM_ATTRS_TD
