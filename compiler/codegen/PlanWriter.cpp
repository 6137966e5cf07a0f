//===- PlanWriter.cpp - The runtime plan: the contract with the runtime ---===//

#include "compiler/codegen/PlanWriter.h"
#include "support/PlanFormat.h"

#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

namespace tfmc::codegen {

namespace {
constexpr Symbol kAllSymbols[] = {Symbol::Batch, Symbol::Source, Symbol::Target,
                                  Symbol::Past, Symbol::Length,
                                  Symbol::PoolBlocks};
} // namespace

const char *symbolName(Symbol symbol) {
  switch (symbol) {
  case Symbol::Batch:
    return "B";
  case Symbol::Source:
    return "S";
  case Symbol::Target:
    return "T";
  case Symbol::Past:
    return "P";
  case Symbol::Length:
    return "L";
  case Symbol::PoolBlocks:
    return "N";
  }
  return "?";
}

Extent constant(int64_t value) { return {Term{false, value}}; }
Extent symbol(Symbol s) { return {Term{true, int64_t(s)}}; }

json toJson(const Extent &extent) {
  json terms = json::array();
  for (const Term &term : extent)
    terms.push_back(term.isSymbol ? json(symbolName(Symbol(term.value)))
                                  : json(term.value));
  return terms;
}

json halideDims(const Shape &shape) {
  json dims = json::array();
  for (auto it = shape.rbegin(); it != shape.rend(); ++it)
    dims.push_back(toJson(*it));
  return dims;
}

json matrixDims(const Shape &shape) {
  Extent rows;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    rows.insert(rows.end(), shape[i].begin(), shape[i].end());
  if (rows.empty())
    rows = constant(1);
  return json::array({toJson(shape.back()), toJson(rows)});
}

json writeEntryPlan(const EntryPlanParts &parts) {
  // The symbols the plan's dims name, B first, then in Symbol's order.
  std::set<std::string> named;
  std::function<void(const json &)> collect = [&](const json &node) {
    if (node.is_string())
      named.insert(node.get<std::string>());
    else if (node.is_array())
      for (const json &child : node)
        collect(child);
  };
  for (const json &input : parts.inputs)
    collect(input["dims"]);
  for (const EntryPlanParts::Output &output : parts.outputs)
    collect(output.dims);
  for (const json &step : parts.steps)
    for (const json &stepArg : step["args"]) {
      collect(stepArg["dims"]);
      if (stepArg.contains("mins"))
        collect(stepArg["mins"]);
    }
  for (const json &value : parts.values)
    if (value.contains("row"))
      collect(value["row"]);
  json symbols = json::array({symbolName(Symbol::Batch)});
  for (Symbol s : kAllSymbols)
    if (s != Symbol::Batch && named.count(symbolName(s)))
      symbols.push_back(symbolName(s));
  auto outputJson = [](const EntryPlanParts::Output &output) {
    return json{{"name", output.name},
                {"value", output.value},
                {"dims", output.dims}};
  };
  json plan = {{"format", tfmc::plan::kFormat},
          {"model", parts.model},
          {"entry", parts.entry},
          {"target", parts.target},
          // Where the arena, the weights and the KV cache live: "cuda"
          // plans run their kernels on the GPU over device memory.
          {"device", parts.gpu ? "cuda" : "host"},
          {"vocab", parts.vocab},
          {"max_len", parts.maxLen},
          {"max_batch", parts.maxBatch},
          {"max_seq", parts.maxSeq},
          {"arena_bytes", parts.arenaBytes},
          {"symbols", symbols},
          {"inputs", parts.inputs},
          {"weights", parts.weights},
          {"cache", parts.cache},
          {"values", parts.values},
          {"output", outputJson(parts.outputs.front())}};
  if (parts.blockTokens > 0)
    plan["block_tokens"] = parts.blockTokens;
  if (parts.outputs.size() > 1) {
    json more = json::array();
    for (std::size_t i = 1; i < parts.outputs.size(); ++i)
      more.push_back(outputJson(parts.outputs[i]));
    plan["more_outputs"] = std::move(more);
  }
  plan["steps"] = parts.steps;
  return plan;
}

namespace {
/// `text` as a C string literal (the plans are JSON: quotes, backslashes,
/// and any byte escaped in octal).
std::string cString(const std::string &text) {
  std::string literal = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      literal += '\\';
      literal += char(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char octal[5];
      std::snprintf(octal, sizeof octal, "\\%03o", c);
      literal += octal;
    } else {
      literal += char(c);
    }
  }
  return literal + "\"";
}

/// The plans as a byte array (a long JSON text is beyond C's portable
/// string-literal length).
void writeByteArray(std::ostringstream &os, const std::string &name,
                    const std::string &text) {
  os << "static const char " << name << "[] = {";
  for (size_t i = 0; i < text.size(); ++i)
    os << (i % 24 == 0 ? "\n  " : "") << int(static_cast<unsigned char>(text[i]))
       << ",";
  os << "0};\n";
}
} // namespace

std::string glueSource(const std::vector<GlueVariant> &variants,
                       const std::vector<std::pair<std::string, std::string>>
                           &cpuTargets,
                       const char *version) {
  std::ostringstream os;
  os << "/* Generated by tfmc " << version << ". */\n"
     << "typedef int (*tfmc_kernel_fn)(void **);\n"
     << "struct tfmc_kernel_entry { const char *name; tfmc_kernel_fn fn; };\n"
     << "struct tfmc_variant { const char *target; const char *features;\n"
     << "  const struct tfmc_kernel_entry *kernels; int num_kernels;\n"
     << "  const char *plan_json; };\n"
     << "struct tfmc_cpu_target { const char *name; const char *features; };\n";
  std::set<std::string> declared;
  for (const GlueVariant &variant : variants)
    for (const std::string &name : variant.kernelNames)
      if (declared.insert(name).second)
        os << "extern int " << name << "_argv(void **);\n";
  for (size_t v = 0; v < variants.size(); ++v) {
    os << "static const struct tfmc_kernel_entry tfmc_kernels_" << v
       << "[] = {\n";
    for (const std::string &name : variants[v].kernelNames)
      os << "  {\"" << name << "\", " << name << "_argv},\n";
    os << "};\n";
    writeByteArray(os, "tfmc_plan_json_" + std::to_string(v),
                   json(variants[v].plans).dump());
  }
  os << "const struct tfmc_variant tfmc_variants[] = {\n";
  for (size_t v = 0; v < variants.size(); ++v)
    os << "  {" << cString(variants[v].target) << ", "
       << cString(variants[v].features) << ", tfmc_kernels_" << v << ", "
       << variants[v].kernelNames.size() << ", tfmc_plan_json_" << v << "},\n";
  os << "};\n"
     << "const int tfmc_num_variants = " << variants.size() << ";\n"
     << "const struct tfmc_cpu_target tfmc_cpu_targets[] = {\n";
  for (const auto &[name, features] : cpuTargets)
    os << "  {" << cString(name) << ", " << cString(features) << "},\n";
  if (cpuTargets.empty())
    os << "  {0, 0},\n";
  os << "};\n"
     << "const int tfmc_num_cpu_targets = " << cpuTargets.size() << ";\n";
  return os.str();
}

} // namespace tfmc::codegen
