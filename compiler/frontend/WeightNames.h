//===- WeightNames.h - Where a parameter is in a weights file ---*- C++ -*-===//
//
// The builder names every parameter as PyTorch's nn.Transformer does
// (docs/language.md's weight names: `decoder.layers.3.self_attn.in_proj_weight`).
// A model imported from another framework reads the same parameters under
// that framework's names and layouts; a WeightNaming maps one to the other,
// so the builder, the plan and the runtime agree on what the file holds.
//
// Namings are registered by name (Model::weightNaming): nn.Transformer's
// identity here, each Hugging Face family's in its own file
// (compiler/frontend/families/, HfFamily.h), which documents its names.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_WEIGHTNAMES_H
#define TFMC_FRONTEND_WEIGHTNAMES_H

#include "compiler/frontend/AST.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfmc::frontend {

/// A parameter as a weights file holds it.
struct WeightBinding {
  std::string name;                  ///< the name looked up first
  std::vector<std::string> altNames; ///< tried in order when `name` is absent
  /// The file stores the transpose of the [out, in] matrix the builder uses
  /// (Hugging Face's Conv1D keeps [in, out]).
  bool transposed = false;
};

/// How a kind of weights file names and lays out a model's parameters.
struct WeightNaming {
  /// Model::weightNaming, and `--emit ast`'s `weights = ...` ("hf-gpt2").
  std::string name;
  /// Whether the file holds an attention's Q, K and V as one packed tensor
  /// (nn.Transformer's in_proj, GPT-2's c_attn) or as three (q/k/v_proj):
  /// the builder writes the parameters the file has.
  bool packedProjections = false;
  /// Where the builder's parameter `canonical` is in such a file; nullopt
  /// for a parameter the naming has no name for (a bug in the builder or
  /// the importer, reported as one).
  std::optional<WeightBinding> (*bind)(std::string_view canonical) = nullptr;
  /// The file's Q and K rows are in ggml's rope order (a llama GGUF file:
  /// each head's pairs (i, i + Dh/2) stored as rows (2i, 2i + 1)): the
  /// builder turns those pairs (tfm.rope {interleaved}), so that the rows
  /// are used as they are.
  bool ropeInterleaved = false;
  /// Whether the file holds a gated feed-forward's gate and up projections
  /// as one packed tensor [gate; up] (Phi-3's gate_up_proj), bound as the
  /// builder's `gate_up.weight`, or as two (`gate.weight`, `linear1.weight`).
  bool packedGateUp = false;
};

/// Adds a naming to the registry at static initialisation; a second naming
/// of one name is a bug in tfmc, fatal at start-up. HfFamilyRegistration
/// registers each family's.
struct WeightNamingRegistration {
  explicit WeightNamingRegistration(WeightNaming naming);
};

/// The naming registered as `name`, or null.
const WeightNaming *findWeightNaming(std::string_view name);

/// Where the builder's parameter `canonical` is in a file named by the
/// naming registered as `naming`; nullopt for an unknown naming or a
/// parameter it has no name for.
std::optional<WeightBinding> bindWeight(std::string_view naming,
                                        const std::string &canonical);

// Helpers of the namings' bind functions.

/// Removes `prefix` from the front of `text`; false (and `text` unchanged)
/// when `text` does not start with it.
bool consumePrefix(std::string_view &text, std::string_view prefix);

/// The layer index and parameter of `{stack}.layers.{i}.{parameter}`.
std::optional<std::pair<std::string_view, std::string_view>>
splitLayerName(std::string_view canonical, std::string_view stack = "decoder");

/// A part of a parameter's name and what another naming calls it.
struct Renaming {
  std::string_view ours, theirs;
};

/// `name` renamed by the first of `renamings` whose `ours` it starts with:
/// its `theirs` and the rest of `name`, when that rest is one of `rests`
/// ("weight", "bias"; any rest when `rests` is empty); nullopt otherwise.
std::optional<std::string>
renamed(std::string_view name, std::initializer_list<Renaming> renamings,
        std::initializer_list<std::string_view> rests);

/// A tensor of a Hugging Face base model (GPT2Model, BertModel,
/// LlamaModel), which a checkpoint keeps bare or under the task model's
/// attribute (`transformer.`, `bert.`, `model.`): `name` under both, the
/// prefixed one first when `prefixedFirst` (the form most checkpoints have).
WeightBinding bareOrPrefixed(const std::string &name, std::string_view prefix,
                             bool prefixedFirst);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_WEIGHTNAMES_H
