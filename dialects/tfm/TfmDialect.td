//===- TfmDialect.td - The tfm dialect ---------------------*- tablegen -*-===//

#ifndef TFM_DIALECT_TD
#define TFM_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let cppNamespace = "::tfmc::tfm";
  let summary = "Transformer models at the granularity of the attention algorithm.";
  let description = [{
    The frontend writes each model step by step (projections, split heads,
    Q·Kᵀ, scale, mask, softmax, ·V, merge heads, output projection) so that
    the middle end has something real to fuse: `tfm.attention` is the fused
    form, with its masks as an attribute the kernel exploits.

    Tensors are builtin ranked tensors of f32 with static model dimensions
    (d_model, heads, vocab) and dynamic batch and sequence dimensions.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, traits>;

#endif // TFM_DIALECT_TD
