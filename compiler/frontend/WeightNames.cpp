//===- WeightNames.cpp - Where a parameter is in a weights file -----------===//

#include "compiler/frontend/WeightNames.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace tfmc::frontend {
namespace {

/// Naming name -> naming, filled by the registrations during static
/// initialisation (the families' library is linked whole).
std::map<std::string, WeightNaming, std::less<>> &registry() {
  static std::map<std::string, WeightNaming, std::less<>> namings;
  return namings;
}

/// PyTorch's nn.Transformer names: what the builder writes, and what .tfm
/// models' weights files hold.
std::optional<WeightBinding> bindNnTransformer(std::string_view canonical) {
  return WeightBinding{std::string(canonical), {}, false};
}

const WeightNamingRegistration nnTransformer(
    {kNnTransformerNaming, /*packedProjections=*/true, bindNnTransformer});

} // namespace

WeightNamingRegistration::WeightNamingRegistration(WeightNaming naming) {
  // A second naming of one name would be silently ignored by emplace; it is
  // a bug in tfmc's families, reported at start-up (the frontend has no
  // LLVM to report it with).
  std::string name = naming.name;
  if (!naming.bind || !registry().emplace(name, std::move(naming)).second) {
    std::fprintf(stderr,
                 "tfmc: the weight naming '%s' is registered twice or "
                 "without a bind function (compiler/frontend/families)\n",
                 name.c_str());
    std::abort();
  }
}

const WeightNaming *findWeightNaming(std::string_view name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::optional<WeightBinding> bindWeight(std::string_view naming,
                                        const std::string &canonical) {
  const WeightNaming *found = findWeightNaming(naming);
  if (!found)
    return std::nullopt;
  return found->bind(canonical);
}

bool consumePrefix(std::string_view &text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

std::optional<std::pair<std::string_view, std::string_view>>
splitLayerName(std::string_view canonical, std::string_view stack) {
  std::string_view rest = canonical;
  if (!consumePrefix(rest, stack) || !consumePrefix(rest, ".layers."))
    return std::nullopt;
  std::size_t digits = 0;
  while (digits < rest.size() &&
         std::isdigit(static_cast<unsigned char>(rest[digits])))
    ++digits;
  if (digits == 0 || digits >= rest.size() || rest[digits] != '.')
    return std::nullopt;
  return std::make_pair(rest.substr(0, digits), rest.substr(digits + 1));
}

std::optional<std::string>
renamed(std::string_view name, std::initializer_list<Renaming> renamings,
        std::initializer_list<std::string_view> rests) {
  for (const Renaming &renaming : renamings) {
    std::string_view rest = name;
    if (!consumePrefix(rest, renaming.ours))
      continue;
    if (rests.size() != 0 &&
        std::find(rests.begin(), rests.end(), rest) == rests.end())
      return std::nullopt;
    return std::string(renaming.theirs) + std::string(rest);
  }
  return std::nullopt;
}

WeightBinding bareOrPrefixed(const std::string &name, std::string_view prefix,
                             bool prefixedFirst) {
  std::string prefixed = std::string(prefix) + name;
  if (prefixedFirst)
    return WeightBinding{prefixed, {name}, false};
  return WeightBinding{name, {prefixed}, false};
}

} // namespace tfmc::frontend
