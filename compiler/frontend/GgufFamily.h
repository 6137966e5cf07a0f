//===- GgufFamily.h - A GGUF architecture, registered by its family -*- C++ -*-===//
//
// llama.cpp's GGUF files name their architecture (general.architecture:
// "llama", "qwen2", "gpt2") and keep its settings under `ARCH.` keys. Each
// architecture tfmc reads is declared by the family file that reads its
// Hugging Face configs (compiler/frontend/families/, HfFamily.h), with one
// GgufArchitectureRegistration at namespace scope:
//   - the Hugging Face model_type it reads as, and a table of its GGUF keys
//     (without `ARCH.`) with the Hugging Face key each gives: the importer
//     (GgufImport.cpp) translates the metadata into a config of those keys
//     and calls the family's reader (readHfConfig), whose messages it maps
//     back to the GGUF keys;
//   - the keys under `ARCH.` that cannot change the forward pass;
//   - the WeightNaming (registered beside it) that binds the family's
//     Hugging Face names onto llama.cpp's tensor names (ggufBlockBinding
//     below for the per-layer ones).
// GgufImport.cpp keeps the format: reading the file, the key types, the
// keys every architecture shares (rope scaling, experts, sliding windows,
// split files), the tensor types.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_FRONTEND_GGUFFAMILY_H
#define TFMC_FRONTEND_GGUFFAMILY_H

#include "compiler/frontend/WeightNames.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tfmc::frontend {

/// What a GGUF key's value must be.
enum class GgufExpect { Count, Float };

/// A GGUF key (after `ARCH.`) and the Hugging Face key it gives.
struct GgufKeyMap {
  const char *gguf;
  const char *hf;
  GgufExpect expect;
};

struct GgufArchitecture {
  const char *name;      ///< general.architecture
  const char *modelType; ///< the Hugging Face model_type it reads as
  std::vector<GgufKeyMap> keys;
  /// Keys under `ARCH.` that cannot change the forward pass.
  std::vector<const char *> ignored;
  const char *naming; ///< its WeightNaming
  /// Rotary: rope.dimension_count and attention.value_length must equal the
  /// head width (attention.key_length, else embedding_length /
  /// head_count), and the output head is output.weight, else tied to the
  /// embedding (tie_word_embeddings).
  bool rotary = false;
  /// Why a per-layer bias (blk.*.bias) is refused, or null where biases
  /// are read.
  const char *noBiases = nullptr;
  /// Sets the Hugging Face keys a file implies rather than stores, from the
  /// ones read (Gemma 2's query_pre_attn_scalar, by llama.cpp's rule); null
  /// where there are none.
  void (*impliedKeys)(nlohmann::ordered_json &config) = nullptr;
  /// Each RMSNorm weight holds the whole gain (convert_hf_to_gguf adds
  /// Gemma's 1 to it): the model multiplies by the weight itself
  /// (Model::normGainOffset false) where the family's reader says 1 + w.
  bool wholeNormGains = false;
};

/// Adds a family file's architecture to the registry at static
/// initialisation; a name registered twice is a bug in tfmc, fatal at
/// start-up.
struct GgufArchitectureRegistration {
  explicit GgufArchitectureRegistration(GgufArchitecture architecture);
};

/// The architecture named `name`, or null.
const GgufArchitecture *findGgufArchitecture(std::string_view name);

/// Every registered architecture's name, in alphabetical order.
std::vector<std::string_view> ggufArchitectureNames();

/// `I.REST` (a Hugging Face layer's parameter, its layer prefix removed)
/// as llama.cpp's `blk.I.` + REST renamed by `renamings` (suffixes
/// "weight" and "bias"); nullopt where none applies.
std::optional<WeightBinding>
ggufBlockBinding(std::string_view name,
                 std::initializer_list<Renaming> renamings);

/// The keys of llama.cpp's rotary decoder architectures (llama, qwen2,
/// phi3, gemma2): sizes, heads, head width, rope base, RMSNorm's epsilon.
std::vector<GgufKeyMap> ggufRotaryKeys();

/// A tensor name as a binding (GGUF files transpose nothing the builder
/// reads); nullopt stays nullopt.
std::optional<WeightBinding> ggufBinding(std::optional<std::string> name);

} // namespace tfmc::frontend

#endif // TFMC_FRONTEND_GGUFFAMILY_H
