//===- GgufFamily.cpp - The registry of GGUF architectures ----------------===//

#include "compiler/frontend/GgufFamily.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

namespace tfmc::frontend {
namespace {

/// The registered architectures, by name.
std::map<std::string, GgufArchitecture, std::less<>> &registry() {
  static std::map<std::string, GgufArchitecture, std::less<>> architectures;
  return architectures;
}

} // namespace

GgufArchitectureRegistration::GgufArchitectureRegistration(
    GgufArchitecture architecture) {
  if (!registry().emplace(architecture.name, architecture).second) {
    std::fprintf(stderr, "tfmc: GGUF architecture '%s' registered twice\n",
                 architecture.name);
    std::abort();
  }
}

const GgufArchitecture *findGgufArchitecture(std::string_view name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string_view> ggufArchitectureNames() {
  std::vector<std::string_view> names;
  for (const auto &[name, arch] : registry())
    names.push_back(name);
  return names;
}

std::vector<GgufKeyMap> ggufRotaryKeys() {
  return {
      {"context_length", "max_position_embeddings", GgufExpect::Count},
      {"embedding_length", "hidden_size", GgufExpect::Count},
      {"feed_forward_length", "intermediate_size", GgufExpect::Count},
      {"block_count", "num_hidden_layers", GgufExpect::Count},
      {"attention.head_count", "num_attention_heads", GgufExpect::Count},
      {"attention.head_count_kv", "num_key_value_heads", GgufExpect::Count},
      {"attention.key_length", "head_dim", GgufExpect::Count},
      {"rope.freq_base", "rope_theta", GgufExpect::Float},
      {"attention.layer_norm_rms_epsilon", "rms_norm_eps", GgufExpect::Float},
      {"vocab_size", "vocab_size", GgufExpect::Count},
  };
}

std::optional<WeightBinding> ggufBinding(std::optional<std::string> name) {
  if (!name)
    return std::nullopt;
  return WeightBinding{*name, {}, false};
}

std::optional<WeightBinding>
ggufBlockBinding(std::string_view name,
                 std::initializer_list<Renaming> renamings) {
  std::size_t dot = name.find('.');
  if (dot == std::string_view::npos)
    return std::nullopt;
  std::optional<std::string> rest =
      renamed(name.substr(dot + 1), renamings, {"weight", "bias"});
  if (!rest)
    return std::nullopt;
  return ggufBinding("blk." + std::string(name.substr(0, dot)) + "." + *rest);
}

} // namespace tfmc::frontend
