//===- GgufImport.cpp - llama.cpp's GGUF files -> AST ---------------------===//
//
// The format side of GGUF import: each architecture's table of keys comes
// from the family that registered it (GgufFamily.h); its values are checked
// for their GGUF type here and for their meaning by the family's reader.
// Keys under `ARCH.` that the table does not name are refused (tfmc cannot
// tell whether they change the model), except the few every architecture
// shares, below; keys of other namespaces (general.*, tokenizer.*,
// quantize.*) cannot change the forward pass, except split.*, a model split
// across files.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/GgufImport.h"
#include "compiler/frontend/GgufFamily.h"
#include "compiler/frontend/HfFamily.h"
#include "compiler/frontend/WeightNames.h"
#include "support/Gguf.h"
#include "support/Text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

namespace tfmc::frontend {
namespace {

using hf::Json;
using support::GgmlType;
using support::GgufType;
using support::GgufValue;

std::string supportedArchitectures() {
  std::vector<std::string> names;
  for (std::string_view name : ggufArchitectureNames())
    names.push_back(fmt::format("\"{}\"", name));
  return "tfmc compiles GGUF architectures " + hf::listed(names, "and");
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// The ggml types tfmc converts at load (runtime/core/GgufWeights.h).
bool converted(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
  case GgmlType::Q8_0:
  case GgmlType::Q4_0:
  case GgmlType::Q5_0:
  case GgmlType::IQ4_NL:
  case GgmlType::Q4_K:
  case GgmlType::Q5_K:
  case GgmlType::Q6_K:
    return true;
  default:
    return false;
  }
}

/// Replaces every whole-word occurrence of `from` in `text` by `to`.
std::string replaceWord(std::string text, std::string_view from,
                        std::string_view to) {
  auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '.';
  };
  std::size_t at = 0;
  while ((at = text.find(from, at)) != std::string::npos) {
    bool before = at == 0 || !word(text[at - 1]);
    std::size_t end = at + from.size();
    bool after = end == text.size() || !word(text[end]);
    if (before && after) {
      text.replace(at, from.size(), to);
      at += to.size();
    } else {
      at = end;
    }
  }
  return text;
}

class Importer {
public:
  Importer(const support::GgufFile &file, const GgufArchitecture &arch)
      : file(file), arch(arch), prefix(std::string(arch.name) + ".") {}

  std::optional<Model> run(const std::string &path);
  std::string message;

private:
  std::optional<Model> fail(const std::string &key, const std::string &text) {
    message = fmt::format("key '{}': {}", support::escapeText(key), text);
    return std::nullopt;
  }
  std::optional<Model> failTensor(const std::string &tensor,
                                  const std::string &text) {
    message = fmt::format("tensor {}: {}", support::quote(tensor), text);
    return std::nullopt;
  }
  /// `key`'s value as a number (an integer for Count), or nullopt with the
  /// message set; `value` is the key's.
  std::optional<Json> number(const std::string &key, const GgufValue &value,
                             GgufExpect expect);
  bool checkKeys(Json &config);
  /// Phi-3's longrope as llama.cpp stores it (rope_factors_long/short
  /// tensors, rope.scaling.attn_factor) into `config`'s rope_scaling.
  bool longRope(Json &config, std::optional<double> attentionFactor);
  /// rope.scaling.type "linear" (with its factor), or Llama 3.1's scaling as
  /// a llama file stores it (rope_freqs.weight), into `config`'s
  /// rope_scaling; `linearFactor` is set when the type is linear.
  bool scaledRope(Json &config, std::optional<double> linearFactor);
  /// A 1-D F32 tensor's values, read from the file.
  std::optional<std::vector<double>> floats(const support::GgufTensorInfo &tensor);
  bool weightTypes(Model &model);

  const support::GgufFile &file;
  const GgufArchitecture &arch;
  std::string prefix;
  /// Hugging Face key -> the GGUF key that gave it (messages).
  std::map<std::string, std::string> source;
};

std::optional<Json> Importer::number(const std::string &key,
                                     const GgufValue &value, GgufExpect expect) {
  if (value.type() != GgufType::String && value.type() != GgufType::Array &&
      value.type() != GgufType::Bool) {
    const support::GgufScalar &scalar = value.scalar();
    if (expect == GgufExpect::Count && scalar.isInteger()) {
      if (std::optional<uint64_t> count = scalar.toUnsigned())
        return Json(*count);
      fail(key, fmt::format("{} is negative, expected a positive integer",
                            scalar.format()));
      return std::nullopt;
    }
    if (expect == GgufExpect::Float && !scalar.isInteger())
      return Json(*scalar.toFloat());
  }
  fail(key, fmt::format("{}, expected {}", value.describeType(),
                        expect == GgufExpect::Count ? "an unsigned integer"
                                                : "an f32 or f64"));
  return std::nullopt;
}

/// Every key of the architecture: mapped into `config`, checked, ignored or
/// refused.
bool Importer::checkKeys(Json &config) {
  double headDim = 0;
  std::optional<double> attentionFactor;
  // rope.scaling.type "linear": its factor (0 until the key is read).
  std::optional<double> linearFactor;
  double scalingFactor = 0.0;
  for (const support::GgufKeyValue &entry : file.metadata()) {
    const std::string &key = entry.key;
    const GgufValue &value = entry.value;
    if (startsWith(key, "split.")) {
      fail(key, "the model is split across files; tfmc reads one-file GGUF "
                "models (llama-gguf-split --merge joins them)");
      return false;
    }
    if (!startsWith(key, prefix))
      continue; // general.*, tokenizer.*, quantize.*: not the forward pass
    std::string rest = key.substr(prefix.size());
    auto mapped = std::find_if(arch.keys.begin(), arch.keys.end(),
                               [&](const GgufKeyMap &map) { return rest == map.gguf; });
    if (mapped != arch.keys.end()) {
      std::optional<Json> read = number(key, value, mapped->expect);
      if (!read)
        return false;
      // llama.cpp writes a window of 0 for none (Phi-3's null).
      if (std::string_view(mapped->hf) == "sliding_window" && *read == 0)
        continue;
      config[mapped->hf] = *read;
      source[mapped->hf] = key;
      continue;
    }
    if (std::find_if(arch.ignored.begin(), arch.ignored.end(),
                     [&](const char *name) { return rest == name; }) !=
        arch.ignored.end())
      continue;
    if (arch.rotary &&
        (rest == "rope.dimension_count" || rest == "attention.value_length")) {
      // Checked against head_dim below.
      std::optional<Json> read = number(key, value, GgufExpect::Count);
      if (!read)
        return false;
      continue;
    }
    if (rest == "rope.scaling.type") {
      if (value.type() == GgufType::String && value.string() == "none")
        continue;
      if (value.type() == GgufType::String && value.string() == "linear") {
        linearFactor = 0.0;
        continue;
      }
      fail(key, fmt::format("{} is not supported: tfmc reads \"none\" and "
                            "\"linear\" (and Llama 3.1's rope_freqs "
                            "tensor)",
                            value.type() == GgufType::String
                                ? support::quote(value.string())
                                : value.describeType()));
      return false;
    }
    if (rest == "rope.scaling.factor") {
      std::optional<Json> read = number(key, value, GgufExpect::Float);
      if (!read)
        return false;
      scalingFactor = read->get<double>();
      continue;
    }
    if (rest == "rope.scaling.attn_factor") {
      std::optional<Json> read = number(key, value, GgufExpect::Float);
      if (!read)
        return false;
      attentionFactor = read->get<double>();
      continue;
    }
    if (rest == "expert_count" || rest == "expert_used_count") {
      std::optional<Json> read = number(key, value, GgufExpect::Count);
      if (!read)
        return false;
      if (read->get<uint64_t>() == 0)
        continue;
      fail(key, fmt::format("{}: a mixture of experts, which tfmc does not "
                            "compile",
                            read->get<uint64_t>()));
      return false;
    }
    if (rest == "attention.sliding_window") {
      fail(key, "a sliding window is not supported in a GGUF file (llama.cpp "
                "gives its " + std::string(arch.name) +
                    " architecture none)");
      return false;
    }
    fail(key, fmt::format("unknown {} key; tfmc cannot tell whether it "
                          "changes the model",
                          arch.name));
    return false;
  }

  // The vocabulary: ARCH.vocab_size, else the tokenizer's tokens.
  if (!config.contains("vocab_size")) {
    const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
    if (!tokens) {
      fail(prefix + "vocab_size",
           "missing, and the file has no tokenizer.ggml.tokens to count");
      return false;
    }
    if (tokens->type() != GgufType::Array) {
      fail("tokenizer.ggml.tokens",
           fmt::format("{}, expected an array of strings",
                       tokens->describeType()));
      return false;
    }
    config["vocab_size"] = tokens->size();
    source["vocab_size"] = "tokenizer.ggml.tokens";
  }

  // Required keys are reported by the family's reader, naming the GGUF key.
  if (arch.rotary) {
    // head_dim: attention.key_length, else embedding_length / head_count.
    // Rope turns the whole head, and values are as wide as keys.
    if (config.contains("head_dim"))
      headDim = config["head_dim"].get<double>();
    else if (config.contains("hidden_size") &&
             config.contains("num_attention_heads") &&
             config["num_attention_heads"].get<uint64_t>() != 0)
      headDim = config["hidden_size"].get<double>() /
                config["num_attention_heads"].get<double>();
    for (const char *rest : {"rope.dimension_count", "attention.value_length"}) {
      std::string key = prefix + rest;
      const GgufValue *value = file.find(key);
      if (!value)
        continue;
      uint64_t given = value->scalar().toUnsigned().value_or(0);
      if (headDim != 0 && double(given) != headDim) {
        fail(key,
             fmt::format("{} differs from the head width {}; tfmc {}", given,
                         headDim,
                         std::string_view(rest) == "rope.dimension_count"
                             ? "rotates every feature of a head (partial "
                               "rotary positions are not supported)"
                             : "gives values the width of keys"));
        return false;
      }
    }
    // The output head: its own tensor, else the embedding (tied).
    config["tie_word_embeddings"] = file.findTensor("output.weight") == nullptr;
  }
  // The factor: linear's divisor; without the type, 0 and 1 mean none.
  if (linearFactor)
    linearFactor = scalingFactor;
  else if (scalingFactor != 0.0 && scalingFactor != 1.0) {
    fail(prefix + "rope.scaling.factor",
         fmt::format("{} without rope.scaling.type \"linear\": tfmc scales "
                     "rope by a factor only as linear scaling does",
                     scalingFactor));
    return false;
  }
  if (!scaledRope(config, linearFactor) || !longRope(config, attentionFactor))
    return false;
  if (arch.noBiases)
    for (const support::GgufTensorInfo &tensor : file.tensors()) {
      std::string_view name = tensor.name;
      if (startsWith(name, "blk.") && name.size() > 5 &&
          name.substr(name.size() - 5) == ".bias") {
        failTensor(tensor.name, fmt::format("a bias in a {} file: {}",
                                            arch.name, arch.noBiases));
        return false;
      }
    }
  return true;
}

std::optional<std::vector<double>>
Importer::floats(const support::GgufTensorInfo &tensor) {
  if (tensor.type != GgmlType::F32 || tensor.dims.size() != 1) {
    failTensor(tensor.name, fmt::format("{} of {} dims, expected a list of "
                                        "F32 values",
                                        support::ggmlTypeInfo(tensor.type).name,
                                        tensor.dims.size()));
    return std::nullopt;
  }
  std::vector<float> values(tensor.elements);
  std::ifstream in(file.path(), std::ios::binary);
  in.seekg(std::streamoff(file.dataOffset() + tensor.offset));
  if (!in.read(reinterpret_cast<char *>(values.data()),
               std::streamsize(values.size() * sizeof(float)))) {
    failTensor(tensor.name, "its values could not be read");
    return std::nullopt;
  }
  return std::vector<double>(values.begin(), values.end());
}

bool Importer::scaledRope(Json &config, std::optional<double> linearFactor) {
  const support::GgufTensorInfo *freqs = file.findTensor("rope_freqs.weight");
  if (linearFactor && freqs) {
    failTensor("rope_freqs.weight",
               "found with rope.scaling.type \"linear\": tfmc applies one "
               "scaling");
    return false;
  }
  if (linearFactor) {
    if (!(*linearFactor > 0.0)) {
      fail(prefix + "rope.scaling.factor",
           fmt::format("{}, but rope.scaling.type \"linear\" divides the "
                       "frequencies by it: expected a positive factor",
                       file.find(prefix + "rope.scaling.factor")
                           ? fmt::format("{}", *linearFactor)
                           : std::string("missing")));
      return false;
    }
    config["rope_scaling"] = {{"type", "linear"}, {"factor", *linearFactor}};
    source["rope_scaling"] = prefix + "rope.scaling.factor";
    return true;
  }
  if (!freqs)
    return true;
  // llama.cpp divides each inverse frequency by its factor (ggml_rope_ext's
  // freq_factors), as longrope does with one list and cos and sin unscaled:
  // read as that, whatever context the program has.
  if (std::string_view(arch.name) != "llama") {
    failTensor("rope_freqs.weight",
               fmt::format("in a {} file: llama.cpp reads per-frequency rope "
                           "factors only in llama files",
                           arch.name));
    return false;
  }
  std::optional<std::vector<double>> factors = floats(*freqs);
  if (!factors)
    return false;
  // One factor per pair of a head's features.
  auto count = [&](const char *key) -> uint64_t {
    return config.contains(key) ? config[key].get<uint64_t>() : 0;
  };
  uint64_t headDim = count("head_dim");
  if (headDim == 0 && count("num_attention_heads") != 0)
    headDim = count("hidden_size") / count("num_attention_heads");
  if (headDim != 0 && factors->size() != headDim / 2) {
    failTensor("rope_freqs.weight",
               fmt::format("{} factors, expected one per pair of a head's {} "
                           "features ({})",
                           factors->size(), headDim, headDim / 2));
    return false;
  }
  Json scaling = {{"type", "longrope"},
                  {"long_factor", *factors},
                  {"short_factor", *factors},
                  {"attention_factor", 1.0}};
  if (config.contains("max_position_embeddings"))
    scaling["original_max_position_embeddings"] =
        config["max_position_embeddings"];
  config["rope_scaling"] = scaling;
  source["rope_scaling"] = "rope_freqs.weight";
  return true;
}

bool Importer::longRope(Json &config, std::optional<double> attentionFactor) {
  const support::GgufTensorInfo *longFactors =
      file.findTensor("rope_factors_long.weight");
  const support::GgufTensorInfo *shortFactors =
      file.findTensor("rope_factors_short.weight");
  if (!longFactors && !shortFactors) {
    if (attentionFactor && *attentionFactor != 1.0) {
      fail(prefix + "rope.scaling.attn_factor",
           fmt::format("{} without rope_factors_long and rope_factors_short "
                       "tensors: tfmc scales cos and sin only with Phi-3's "
                       "longrope factors",
                       *attentionFactor));
      return false;
    }
    return true;
  }
  if (config.contains("rope_scaling")) {
    failTensor(longFactors ? "rope_factors_long.weight"
                           : "rope_factors_short.weight",
               "found with another rope scaling: tfmc applies one");
    return false;
  }
  if (!longFactors || !shortFactors) {
    failTensor(longFactors ? "rope_factors_long.weight"
                           : "rope_factors_short.weight",
               fmt::format("found without {}: Phi-3's longrope needs both",
                           longFactors ? "rope_factors_short.weight"
                                       : "rope_factors_long.weight"));
    return false;
  }
  std::optional<std::vector<double>> longValues = floats(*longFactors);
  std::optional<std::vector<double>> shortValues =
      longValues ? floats(*shortFactors) : std::nullopt;
  if (!shortValues)
    return false;
  // The reader checks the lengths and values, naming rope_scaling.
  Json scaling = {{"type", "longrope"},
                  {"long_factor", *longValues},
                  {"short_factor", *shortValues}};
  if (attentionFactor)
    scaling["attention_factor"] = *attentionFactor;
  config["rope_scaling"] = scaling;
  source["rope_scaling"] = "rope_factors_long.weight";
  return true;
}

/// The file's tensor types: each converted at load, and the dominant 2-D
/// type chooses the weight dtype (Model::FileWeights).
/// The dtype that holds `type`'s values exactly (Q8_0, Q4_0 and the
/// K-quants are tfmc formats byte for byte, support/WeightFormat.h; Q5_0's
/// and IQ4_NL's values are d times an integer in -127 .. 127, int8 blocks of
/// 32 once transcoded at load, runtime/core/GgmlBlocks.h).
const char *exactDtype(GgmlType type) {
  switch (type) {
  case GgmlType::BF16:
    return "bf16";
  case GgmlType::Q8_0:
  case GgmlType::Q5_0:
  case GgmlType::IQ4_NL:
    return "int8";
  case GgmlType::Q4_K:
    return "q4_k";
  case GgmlType::Q5_K:
    return "q5_k";
  case GgmlType::Q6_K:
    return "q6_k";
  case GgmlType::Q4_0:
    return "int4";
  default: // F32, F16: f16 -> f32 is exact, f16 -> bf16 is not
    return "f32";
  }
}

bool Importer::weightTypes(Model &model) {
  std::map<GgmlType, std::pair<uint64_t, uint64_t>> byType; // tensors, values
  for (const support::GgufTensorInfo &tensor : file.tensors()) {
    if (tensor.type == GgmlType::Q4_1 || tensor.type == GgmlType::Q5_1) {
      // value j = d · q_j + m: no tfmc format has a per-block minimum.
      failTensor(tensor.name,
                 fmt::format("ggml type {} ({}) is not supported: its blocks "
                             "add a minimum to each value (d * q + m), which "
                             "no tfmc weight format holds exactly; "
                             "re-quantise the model to Q4_0, Q4_K_M or Q8_0",
                             support::ggmlTypeInfo(tensor.type).name,
                             static_cast<uint32_t>(tensor.type)));
      return false;
    }
    if (!converted(tensor.type)) {
      failTensor(tensor.name,
                 fmt::format("ggml type {} ({}) is not supported: tfmc "
                             "converts F32, F16, BF16, Q8_0, Q4_0, Q5_0, "
                             "IQ4_NL, Q4_K, Q5_K and Q6_K",
                             support::ggmlTypeInfo(tensor.type).name,
                             static_cast<uint32_t>(tensor.type)));
      return false;
    }
    // Learned positions stay f32 whatever the file holds.
    if (tensor.dims.size() != 2 || tensor.name == "position_embd.weight")
      continue;
    auto &[tensors, values] = byType[tensor.type];
    ++tensors;
    values += tensor.elements;
    model.fileWeights.tensorDtypes.emplace_back(tensor.name,
                                                exactDtype(tensor.type));
  }
  if (byType.empty())
    return true;
  std::vector<std::pair<GgmlType, std::pair<uint64_t, uint64_t>>> sorted(
      byType.begin(), byType.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.second.second > b.second.second;
  });
  std::string types;
  for (const auto &[type, counts] : sorted)
    types += fmt::format("{}{} ({} tensor{}, {} values)",
                         types.empty() ? "" : ", ",
                         support::ggmlTypeInfo(type).name, counts.first,
                         counts.first == 1 ? "" : "s", counts.second);
  GgmlType dominant = sorted.front().first;
  Model::FileWeights &weights = model.fileWeights;
  weights.types = types;
  weights.dominantType = support::ggmlTypeInfo(dominant).name;
  weights.int8Group = 32; // Q8_0's, Q5_0's, IQ4_NL's, the K-quants' sub-blocks
  weights.dtype = exactDtype(dominant);
  return true;
}

std::optional<Model> Importer::run(const std::string &path) {
  Json config = Json::object();
  config["model_type"] = arch.modelType;
  if (!checkKeys(config))
    return std::nullopt;
  if (arch.impliedKeys)
    arch.impliedKeys(config);
  auto [family, type] = hf::findHfFamily(arch.modelType);
  if (!family)
    return fail("general.architecture",
                fmt::format("\"{}\": its family is not registered (a bug in "
                            "tfmc)",
                            arch.name));
  hf::ImportErrors errors;
  std::optional<Model> model =
      hf::readHfConfig(*family, *type, config, path, errors);
  if (!model) {
    // "key 'hidden_size': ..." -> "key 'llama.embedding_length': ...", and
    // any other Hugging Face key the text names.
    std::string text = errors.message;
    for (const GgufKeyMap &map : arch.keys)
      text = replaceWord(text, map.hf, prefix + map.gguf);
    if (auto it = source.find("vocab_size"); it != source.end())
      text = replaceWord(text, prefix + "vocab_size", it->second);
    message = text;
    return std::nullopt;
  }
  // Named after the file: model.gguf -> model.
  std::string stem = std::filesystem::path(path).stem().string();
  model->name = hf::modelNameFor(
      (std::filesystem::path(stem.empty() ? std::string("x") : stem) / "x")
          .string(),
      arch.name);
  model->weightNaming = arch.naming;
  if (arch.wholeNormGains)
    model->normGainOffset = false;
  if (!weightTypes(*model))
    return std::nullopt;
  return model;
}

} // namespace

ParseResult importGgufFile(const std::string &path) {
  ParseResult result;
  auto failed = [&](const std::string &text) {
    result.error = Diagnostic{SourceLoc{path, 0, 0}, text};
    return result;
  };
  std::string error;
  std::optional<support::GgufFile> file = support::readGgufFile(path, error);
  if (!file) {
    // The reader's message starts with the path, which the diagnostic adds.
    std::string_view text = error;
    if (startsWith(text, path + ": "))
      text.remove_prefix(path.size() + 2);
    return failed(std::string(text));
  }
  const GgufValue *archValue = file->find("general.architecture");
  if (!archValue)
    return failed("key 'general.architecture': missing; " +
                  supportedArchitectures());
  if (archValue->type() != GgufType::String)
    return failed(fmt::format("key 'general.architecture': {}, expected a "
                              "string",
                              archValue->describeType()));
  const GgufArchitecture *arch = findGgufArchitecture(archValue->string());
  if (!arch)
    return failed(fmt::format("key 'general.architecture': {} is not "
                              "supported; {}",
                              support::quote(archValue->string()),
                              supportedArchitectures()));
  Importer importer(*file, *arch);
  std::optional<Model> model = importer.run(path);
  if (!model)
    return failed(importer.message);
  result.model = std::move(model);
  return result;
}

} // namespace tfmc::frontend
