//===- Plan.cpp - Parse and check a compiled model's plan -----------------===//
//
// The plan is written by codegen, so a malformed one means a bug in tfmc,
// not in the user's input. It is still checked in full before anything runs
// it: every index in range, every symbol known, every type spelled right,
// and the first problem is a one-line message naming where it is
// (`plan: step 3 arg 1: value 99 out of range (57 values)`). Keys the
// runtime does not read are ignored, so codegen may add annotations.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Plan.h"
#include "support/Json.h"
#include "support/PlanFormat.h"
#include "runtime/core/Tensor.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <limits>
#include <set>
#include <utility>

namespace tfmc::runtime {
namespace {

using Json = nlohmann::json;

/// Thrown inside the parser only; parsePlan turns it into `error`.
struct PlanError {
  std::string message;
};

[[noreturn]] void fail(const std::string &where, const std::string &what) {
  throw PlanError{where.empty() ? what : where + ": " + what};
}

/// "a string", "an array", ...: what a JSON value is, for messages.
std::string kindOf(const Json &value) {
  switch (value.type()) {
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::null:
    return "null";
  case Json::value_t::number_float:
    return "a fraction";
  default:
    return "a number";
  }
}

std::string join(const std::string &where, const std::string &key) {
  return where.empty() ? key : where + " " + key;
}

const Json &member(const Json &object, const char *key,
                   const std::string &where) {
  auto it = object.find(key);
  if (it == object.end())
    fail(where, fmt::format("missing \"{}\"", key));
  return *it;
}

const Json &expectObject(const Json &value, const std::string &where) {
  if (!value.is_object())
    fail(where, "expected an object, found " + kindOf(value));
  return value;
}

const Json &expectArray(const Json &value, const std::string &where) {
  if (!value.is_array())
    fail(where, "expected an array, found " + kindOf(value));
  return value;
}

std::string getString(const Json &object, const char *key,
                      const std::string &where, bool nonEmpty = true) {
  const Json &value = member(object, key, where);
  if (!value.is_string())
    fail(join(where, key), "expected a string, found " + kindOf(value));
  std::string text = value.get<std::string>();
  if (nonEmpty && text.empty())
    fail(join(where, key), "is empty");
  return text;
}

int64_t asInteger(const Json &value, const std::string &where,
                  int64_t minimum = 0,
                  int64_t maximum = std::numeric_limits<int64_t>::max()) {
  int64_t number = 0;
  if (value.is_number_unsigned()) {
    uint64_t unsignedNumber = value.get<uint64_t>();
    if (unsignedNumber >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(where, fmt::format("{} is too large", unsignedNumber));
    number = static_cast<int64_t>(unsignedNumber);
  } else if (value.is_number_integer()) {
    number = value.get<int64_t>();
  } else {
    fail(where, "expected an integer, found " + kindOf(value));
  }
  if (number < minimum)
    fail(where, fmt::format("{} is less than {}", number, minimum));
  if (number > maximum)
    fail(where, fmt::format("{} is more than the limit of {}", number,
                            maximum));
  return number;
}

int64_t getInteger(const Json &object, const char *key,
                   const std::string &where, int64_t minimum = 0,
                   int64_t maximum = std::numeric_limits<int64_t>::max()) {
  return asInteger(member(object, key, where), join(where, key), minimum,
                   maximum);
}

std::optional<ElementType> parseElementType(const std::string &name) {
  for (ElementType type : {ElementType::F32, ElementType::I64,
                           ElementType::BF16, ElementType::I8,
                           ElementType::F16, ElementType::U8,
                           ElementType::I32})
    if (name == elementTypeName(type))
      return type;
  return std::nullopt;
}

class Parser {
public:
  Plan parse(const Json &root) {
    expectObject(root, "");
    plan.format = getInteger(root, "format", "");
    if (plan.format != tfmc::plan::kFormat)
      fail("format", fmt::format("{} is not supported (this runtime reads "
                                 "format {})",
                                 plan.format, tfmc::plan::kFormat));
    plan.model = getString(root, "model", "");
    plan.entry = getString(root, "entry", "");
    plan.target = getString(root, "target", "");
    if (root.contains("device")) {
      plan.device = getString(root, "device", "");
      if (plan.device != "host" && plan.device != "cuda")
        fail("device", fmt::format("'{}' is neither 'host' nor 'cuda'",
                                   plan.device));
    }
    plan.vocab = getInteger(root, "vocab", "", 1, kMaxPlanExtent);
    plan.maxLen = getInteger(root, "max_len", "", 1, kMaxPlanExtent);
    plan.maxBatch = getInteger(root, "max_batch", "", 1, kMaxPlanExtent);
    plan.maxSeq = getInteger(root, "max_seq", "", 1, kMaxPlanExtent);
    plan.arenaBytes = getInteger(root, "arena_bytes", "", 0, kMaxPlanBytes);

    parseSymbols(member(root, "symbols", ""));
    parseInputs(member(root, "inputs", ""));
    parseWeights(member(root, "weights", ""));
    if (root.contains("cache"))
      parseCache(member(root, "cache", ""));
    if (root.contains("block_tokens"))
      plan.blockTokens =
          getInteger(root, "block_tokens", "", 1, 1 << 16);
    for (std::size_t s = 0; s < plan.cache.size(); ++s)
      if (plan.cache[s].paged && plan.blockTokens == 0)
        fail(fmt::format("cache {}", s),
             "is paged, but the plan has no block_tokens");
    parseValues(member(root, "values", ""));
    plan.outputs.push_back(parseOutput(member(root, "output", ""), "output"));
    if (root.contains("more_outputs")) {
      const Json &more = member(root, "more_outputs", "");
      expectArray(more, "more_outputs");
      for (std::size_t i = 0; i < more.size(); ++i) {
        std::string where = fmt::format("more_outputs[{}]", i);
        plan.outputs.push_back(parseOutput(more[i], where));
        for (std::size_t j = 0; j + 1 < plan.outputs.size(); ++j)
          if (plan.outputs[j].name == plan.outputs.back().name)
            fail(where, fmt::format("output '{}' is named twice",
                                    plan.outputs.back().name));
      }
    }
    parseSteps(member(root, "steps", ""));
    return std::move(plan);
  }

private:
  void parseSymbols(const Json &symbols) {
    expectArray(symbols, "symbols");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < symbols.size(); ++i) {
      std::string where = fmt::format("symbols {}", i);
      if (!symbols[i].is_string())
        fail(where, "expected a string, found " + kindOf(symbols[i]));
      std::string name = symbols[i].get<std::string>();
      if (name.empty())
        fail(where, "is empty");
      if (!seen.insert(name).second)
        fail(where, fmt::format("symbol '{}' is listed twice", name));
      plan.symbols.push_back(name);
    }
  }

  DimTerm parseTerm(const Json &term, const std::string &where) {
    DimTerm result;
    if (term.is_string()) {
      std::string name = term.get<std::string>();
      // "768" is a constant too (Plan.h's own example spells one so).
      if (!name.empty() && name.size() < 19 &&
          name.find_first_not_of("0123456789") == std::string::npos) {
        result.value = std::stoll(name);
        if (result.value > kMaxPlanExtent)
          fail(where, fmt::format("{} is more than the limit of {}",
                                  result.value, kMaxPlanExtent));
        return result;
      }
      for (std::size_t i = 0; i < plan.symbols.size(); ++i)
        if (plan.symbols[i] == name) {
          result.isSymbol = true;
          result.value = static_cast<int64_t>(i);
          return result;
        }
      fail(where, fmt::format("unknown symbol '{}'", name));
    }
    result.value = asInteger(term, where, 0, kMaxPlanExtent);
    return result;
  }

  /// A dimension is one term ("S", 768) or a product of terms (["B", "S"]).
  DimExpr parseDim(const Json &dim, const std::string &where) {
    DimExpr expr;
    if (dim.is_array()) {
      for (std::size_t i = 0; i < dim.size(); ++i)
        expr.push_back(parseTerm(dim[i], fmt::format("{} term {}", where, i)));
    } else {
      expr.push_back(parseTerm(dim, where));
    }
    return expr;
  }

  std::vector<DimExpr> parseDims(const Json &object, const std::string &where) {
    const Json &dims =
        expectArray(member(object, "dims", where), join(where, "dims"));
    std::vector<DimExpr> result;
    for (std::size_t i = 0; i < dims.size(); ++i)
      result.push_back(parseDim(dims[i], fmt::format("{} dim {}", where, i)));
    return result;
  }

  void parseInputs(const Json &inputs) {
    expectArray(inputs, "inputs");
    if (inputs.empty())
      fail("inputs", "is empty");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      std::string where = fmt::format("input {}", i);
      const Json &json = expectObject(inputs[i], where);
      PlanInput input;
      input.name = getString(json, "name", where);
      if (!seen.insert(input.name).second)
        fail(where, fmt::format("input '{}' is listed twice", input.name));
      std::string kind = getString(json, "kind", where);
      if (kind == "ids")
        input.kind = InputKind::Ids;
      else if (kind == "mask")
        input.kind = InputKind::Mask;
      else if (kind == "positions")
        input.kind = InputKind::Positions;
      else if (kind == "types")
        input.kind = InputKind::Types;
      else
        fail(join(where, "kind"),
             fmt::format("'{}' is not 'ids', 'mask', 'positions' or 'types'",
                         kind));
      if (input.kind == InputKind::Types)
        input.limit = getInteger(json, "limit", where, 1, kMaxPlanExtent);
      input.dims = parseDims(json, where);
      if (auto it = json.find("optional"); it != json.end()) {
        if (!it->is_boolean())
          fail(join(where, "optional"),
               "expected a boolean, found " + kindOf(*it));
        input.optional = it->get<bool>();
      }
      if (input.optional && input.kind == InputKind::Ids)
        fail(where, fmt::format("input '{}' is optional, but only masks and "
                                "positions may be",
                                input.name));
      for (auto [key, flag] : {std::pair{"unused", &input.unused},
                               std::pair{"causal", &input.causal}})
        if (auto it = json.find(key); it != json.end()) {
          if (!it->is_boolean())
            fail(join(where, key), "expected a boolean, found " + kindOf(*it));
          *flag = it->get<bool>();
        }
      if (input.unused && !input.optional)
        fail(where, fmt::format("input '{}' is unused but not optional",
                                input.name));
      plan.inputs.push_back(std::move(input));
    }
  }

  void parseWeights(const Json &weights) {
    expectArray(weights, "weights");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      std::string where = fmt::format("weight {}", i);
      const Json &json = expectObject(weights[i], where);
      PlanWeight weight;
      weight.name = getString(json, "name", where);
      if (!seen.insert(weight.name).second)
        fail(where, fmt::format("weight '{}' is listed twice", weight.name));
      const Json &shape =
          expectArray(member(json, "shape", where), join(where, "shape"));
      for (std::size_t d = 0; d < shape.size(); ++d)
        weight.shape.push_back(
            asInteger(shape[d], fmt::format("{} shape {}", where, d)));
      std::optional<int64_t> count = elementCount(weight.shape);
      if (!count || *count > kMaxPlanBytes / 4)
        fail(where,
             fmt::format("shape {} is too large", formatShape(weight.shape)));
      if (auto it = json.find("alt_names"); it != json.end()) {
        const Json &alts = expectArray(*it, join(where, "alt_names"));
        for (std::size_t a = 0; a < alts.size(); ++a) {
          std::string altWhere = fmt::format("{} alt_names {}", where, a);
          if (!alts[a].is_string() || alts[a].get<std::string>().empty())
            fail(altWhere, "expected a non-empty string, found " +
                               (alts[a].is_string() ? std::string("\"\"")
                                                    : kindOf(alts[a])));
          weight.altNames.push_back(alts[a].get<std::string>());
        }
      }
      if (auto it = json.find("transposed"); it != json.end()) {
        if (!it->is_boolean())
          fail(join(where, "transposed"),
               "expected a boolean, found " + kindOf(*it));
        weight.transposed = it->get<bool>();
        if (weight.transposed && weight.shape.size() != 2)
          fail(where, fmt::format("weight '{}' is transposed but has rank {}",
                                  weight.name, weight.shape.size()));
      }
      if (auto it = json.find("init"); it != json.end()) {
        std::string init = it->is_string() ? it->get<std::string>() : "";
        if (init == "normal")
          weight.init = PlanWeight::Init::Normal;
        else if (init == "ones")
          weight.init = PlanWeight::Init::Ones;
        else if (init == "zeros")
          weight.init = PlanWeight::Init::Zeros;
        else
          fail(join(where, "init"),
               (it->is_string() ? support::quote(init) : kindOf(*it)) +
                   " is not 'normal', 'ones' or 'zeros'");
      }
      parseWeightDType(json, where, weight);
      plan.weights.push_back(std::move(weight));
    }
  }

  /// "dtype" and "group" (Plan.h): a low-precision weight is [rows, cols],
  /// and only int8 and int4 have (and need) a group size, int4's 32.
  void parseWeightDType(const Json &json, const std::string &where,
                        PlanWeight &weight) {
    if (auto it = json.find("dtype"); it != json.end()) {
      std::string dtype = it->is_string() ? it->get<std::string>() : "";
      std::optional<WeightDType> parsed;
      for (WeightDType candidate :
           {WeightDType::F32, WeightDType::BF16, WeightDType::Int8,
            WeightDType::Int4, WeightDType::Q4K, WeightDType::Q5K,
            WeightDType::Q6K})
        if (dtype == weightDTypeName(candidate))
          parsed = candidate;
      if (parsed)
        weight.dtype = *parsed;
      else
        fail(join(where, "dtype"),
             (it->is_string() ? support::quote(dtype) : kindOf(*it)) +
                 " is not 'f32', 'bf16', 'int8', 'int4', 'q4_k', 'q5_k' or "
                 "'q6_k'");
    }
    if (weight.dtype != WeightDType::F32 && weight.shape.size() != 2)
      fail(where, fmt::format("weight '{}' is {} but has rank {}, not 2",
                              weight.name, weightDTypeName(weight.dtype),
                              weight.shape.size()));
    bool hasGroup = json.contains("group");
    bool grouped = weight.dtype == WeightDType::Int8 ||
                   weight.dtype == WeightDType::Int4;
    if (grouped && !hasGroup)
      fail(where, fmt::format("weight '{}' is {} but has no \"group\"",
                              weight.name, weightDTypeName(weight.dtype)));
    if (!grouped && hasGroup)
      fail(join(where, "group"),
           fmt::format("weight '{}' is {}: only int8 and int4 weights have a "
                       "group",
                       weight.name, weightDTypeName(weight.dtype)));
    if (hasGroup)
      weight.group = getInteger(json, "group", where, 1, kMaxPlanExtent);
    if (isKQuant(weight.dtype) &&
        weight.shape[1] % format::kKQuantBlockValues != 0)
      fail(where, fmt::format("weight '{}' is {}, whose rows are whole "
                              "super-blocks of {} values, but has {} columns",
                              weight.name, weightDTypeName(weight.dtype),
                              format::kKQuantBlockValues, weight.shape[1]));
    if (weight.dtype == WeightDType::Int4 &&
        weight.group != format::kInt4BlockValues)
      fail(join(where, "group"),
           fmt::format("weight '{}' is int4, whose group is {} (Q4_0 "
                       "blocks), not {}",
                       weight.name, format::kInt4BlockValues, weight.group));
    // "panel": an f32 [rows, cols] weight stored in panels of that many
    // rows, which divides rows (support/WeightFormat.h).
    if (json.contains("panel")) {
      weight.panel = getInteger(json, "panel", where, 1, kMaxPlanExtent);
      // f32, or int8 / int4 block panels (support/WeightFormat.h).
      const bool blocks =
          weight.dtype == WeightDType::Int4 ||
          (weight.dtype == WeightDType::Int8 &&
           weight.group % format::kBlockPanelLaneBytes == 0);
      if ((weight.dtype != WeightDType::F32 && !blocks) ||
          weight.shape.size() != 2)
        fail(join(where, "panel"),
             fmt::format("weight '{}' is {} of rank {}: only f32, int4 and "
                         "int8 (in groups of a multiple of {}) weights of "
                         "rank 2 are stored in panels",
                         weight.name, weightDTypeName(weight.dtype),
                         weight.shape.size(), format::kBlockPanelLaneBytes));
      if (blocks && weight.panel != format::kBlockPanelRows)
        fail(join(where, "panel"),
             fmt::format("weight '{}' is {}, whose panels have {} rows, not "
                         "{}",
                         weight.name, weightDTypeName(weight.dtype),
                         format::kBlockPanelRows, weight.panel));
      if (weight.shape[0] % weight.panel != 0)
        fail(join(where, "panel"),
             fmt::format("weight '{}' has {} rows, which panels of {} do "
                         "not divide",
                         weight.name, weight.shape[0], weight.panel));
    }
  }

  void parseCache(const Json &cache) {
    expectArray(cache, "cache");
    for (std::size_t i = 0; i < cache.size(); ++i) {
      std::string where = fmt::format("cache {}", i);
      const Json &json = expectObject(cache[i], where);
      PlanCacheSlot slot;
      slot.slot = getString(json, "slot", where);
      slot.width = getInteger(json, "width", where, 1, kMaxPlanExtent);
      if (json.contains("dtype")) {
        std::string dtype = getString(json, "dtype", where);
        std::optional<ElementType> type = parseElementType(dtype);
        if (!type || (*type != ElementType::BF16 && *type != ElementType::F16))
          fail(join(where, "dtype"),
               fmt::format("expected \"bf16\" or \"f16\" (absent: f32), "
                           "found \"{}\"",
                           support::escapeText(dtype, 32)));
        slot.type = *type;
      }
      if (json.contains("paged")) {
        if (!json["paged"].is_boolean())
          fail(join(where, "paged"),
               "expected a boolean, found " + kindOf(json["paged"]));
        slot.paged = json["paged"].get<bool>();
      }
      if (json.contains("heads")) {
        slot.heads = getInteger(json, "heads", where, 1, kMaxPlanExtent);
        if (!slot.paged)
          fail(join(where, "heads"), "is only for a paged slot");
        if (slot.width % slot.heads != 0)
          fail(join(where, "heads"),
               fmt::format("{} heads do not divide the width {}", slot.heads,
                           slot.width));
      }
      // max_batch sequences of max_len rows.
      const int64_t size = elementTypeSize(slot.type);
      if (slot.width > kMaxPlanBytes / size / plan.maxLen / plan.maxBatch)
        fail(join(where, "width"),
             fmt::format("{} x {} rows of {} {} are more than the limit "
                         "of {} bytes",
                         plan.maxBatch, plan.maxLen, slot.width,
                         slot.type == ElementType::F32
                             ? std::string("floats")
                             : std::string(elementTypeName(slot.type)) +
                                   " values",
                         kMaxPlanBytes));
      plan.cache.push_back(std::move(slot));
    }
  }

  void parseValues(const Json &values) {
    expectArray(values, "values");
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::string where = fmt::format("value {}", i);
      const Json &json = expectObject(values[i], where);
      PlanValue value;
      std::string kind = getString(json, "kind", where);
      if (kind == tfmc::plan::kind::kInput) {
        value.kind = ValueKind::Input;
        value.index = getInteger(json, "index", where);
        if (value.index >= static_cast<int64_t>(plan.inputs.size()))
          fail(join(where, "index"),
               fmt::format("input {} out of range ({} inputs)", value.index,
                           plan.inputs.size()));
      } else if (kind == tfmc::plan::kind::kWeight) {
        value.kind = ValueKind::Weight;
        value.index = getInteger(json, "index", where);
        if (value.index >= static_cast<int64_t>(plan.weights.size()))
          fail(join(where, "index"),
               fmt::format("weight {} out of range ({} weights)", value.index,
                           plan.weights.size()));
        if (json.contains("offset"))
          value.offset = getInteger(json, "offset", where);
        int64_t elements = plan.weights[value.index].storedElements();
        if (value.offset > elements)
          fail(join(where, "offset"),
               fmt::format("{} is past the end of weight '{}' ({} elements)",
                           value.offset, plan.weights[value.index].name,
                           elements));
      } else if (kind == tfmc::plan::kind::kArena) {
        value.kind = ValueKind::Arena;
        value.offset = getInteger(json, "offset", where);
        if (value.offset > plan.arenaBytes)
          fail(join(where, "offset"),
               fmt::format("{} is past the end of the arena ({} bytes)",
                           value.offset, plan.arenaBytes));
      } else if (kind == tfmc::plan::kind::kCache) {
        value.kind = ValueKind::Cache;
        value.index = getInteger(json, "index", where);
        if (value.index >= static_cast<int64_t>(plan.cache.size()))
          fail(join(where, "index"),
               fmt::format("cache slot {} out of range ({} slots)",
                           value.index, plan.cache.size()));
        if (json.contains("row") && json["row"].is_string()) {
          DimTerm row = parseTerm(json["row"], join(where, "row"));
          if (row.isSymbol)
            value.rowSymbol = row.value;
        } else if (json.contains("row") &&
                   getInteger(json, "row", where) != 0) {
          fail(join(where, "row"), "a constant row must be 0");
        }
      } else if (kind == tfmc::plan::kind::kKeyRows) {
        value.kind = ValueKind::KeyRows;
      } else {
        fail(join(where, "kind"),
             fmt::format("'{}' is not 'input', 'weight', 'arena', 'cache' "
                         "or 'key_rows'",
                         kind));
      }
      plan.values.push_back(value);
    }
  }

  int64_t parseValueIndex(const Json &object, const std::string &where) {
    int64_t index = getInteger(object, "value", where);
    if (index >= static_cast<int64_t>(plan.values.size()))
      fail(where, fmt::format("value {} out of range ({} values)", index,
                              plan.values.size()));
    return index;
  }

  PlanOutput parseOutput(const Json &json, const std::string &where) {
    expectObject(json, where);
    PlanOutput output;
    output.name = getString(json, "name", where);
    output.value = parseValueIndex(json, where);
    if (plan.values[output.value].kind != ValueKind::Arena)
      fail(where, fmt::format("value {} is not in the arena", output.value));
    output.dims = parseDims(json, where);
    return output;
  }

  void parseSteps(const Json &steps) {
    expectArray(steps, "steps");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::string where = fmt::format("step {}", i);
      const Json &json = expectObject(steps[i], where);
      PlanStep step;
      if (json.contains("store")) {
        step.storeSlot = getInteger(json, "store", where);
        if (step.storeSlot >= static_cast<int64_t>(plan.cache.size()) ||
            !plan.cache[step.storeSlot].paged)
          fail(join(where, "store"),
               fmt::format("cache slot {} is not a paged slot of the {}",
                           step.storeSlot, plan.cache.size()));
      } else {
        step.kernel = getString(json, "kernel", where);
      }
      if (json.contains("op"))
        step.op = getString(json, "op", where);
      if (json.contains("loc"))
        step.loc = getString(json, "loc", where);
      if (json.contains("activations")) {
        std::string activations = getString(json, "activations", where);
        if (activations != "int8" && activations != "bf16")
          fail(join(where, "activations"),
               fmt::format("must be \"int8\" or \"bf16\", got \"{}\"",
                           activations));
        step.activations = activations;
      }
      if (json.contains("depth"))
        step.depth = getInteger(json, "depth", where, 1, kMaxPlanExtent);
      const Json &args =
          expectArray(member(json, "args", where), join(where, "args"));
      if (args.empty())
        fail(join(where, "args"), "is empty");
      for (std::size_t a = 0; a < args.size(); ++a) {
        std::string argWhere = fmt::format("{} arg {}", where, a);
        const Json &argJson = expectObject(args[a], argWhere);
        PlanArg arg;
        arg.value = parseValueIndex(argJson, argWhere);
        std::string type = getString(argJson, "type", argWhere);
        std::optional<ElementType> parsed = parseElementType(type);
        if (!parsed)
          fail(join(argWhere, "type"),
               fmt::format("{} is not 'f32', 'i64', 'bf16', 'i8', 'f16', "
                           "'u8' or 'i32'",
                           support::quote(type)));
        arg.type = *parsed;
        // Inputs and weights have one type each: the kernel must
        // read them as stored.
        const PlanValue &value = plan.values[arg.value];
        std::optional<std::pair<const char *, ElementType>> stored;
        if (value.kind == ValueKind::Input)
          stored = {"an input", ElementType::I64};
        else if (value.kind == ValueKind::Weight)
          stored = {"a weight",
                    weightElementType(plan.weights[value.index].dtype)};
        else if (value.kind == ValueKind::Cache &&
                 plan.cache[value.index].type != ElementType::F32)
          stored = {"a KV cache slot", plan.cache[value.index].type};
        else if (value.kind == ValueKind::KeyRows)
          stored = {"the key rows", ElementType::I32};
        // The arena holds activations, ids, quantised rows (a
        // tfm.quantize's bytes, i8) and rows for a paged bf16 or f16 KV
        // cache; an f32 KV cache activations and ids.
        const bool arena = value.kind == ValueKind::Arena;
        if (!stored && arg.type != ElementType::F32 &&
            arg.type != ElementType::I64 &&
            !(arena && (arg.type == ElementType::I8 ||
                        arg.type == ElementType::BF16 ||
                        arg.type == ElementType::F16)))
          fail(argWhere, fmt::format("value {} is in the {}, which holds {}, "
                                     "but the arg is {}",
                                     arg.value, arena ? "arena" : "KV cache",
                                     arena ? "f32, i64, i8, bf16 or f16"
                                           : "f32 or i64",
                                     type));
        if (stored && arg.type != stored->second)
          fail(argWhere, fmt::format("value {} is {}, which is {}, but the "
                                     "arg is {}",
                                     arg.value, stored->first,
                                     elementTypeName(stored->second), type));
        arg.dims = parseDims(argJson, argWhere);
        if (argJson.contains("mins")) {
          const Json &mins = expectArray(member(argJson, "mins", argWhere),
                                         join(argWhere, "mins"));
          if (mins.size() != arg.dims.size())
            fail(join(argWhere, "mins"),
                 fmt::format("has {} entries for {} dims", mins.size(),
                             arg.dims.size()));
          for (std::size_t m = 0; m < mins.size(); ++m)
            arg.mins.push_back(
                parseDim(mins[m], fmt::format("{} min {}", argWhere, m)));
        }
        step.args.push_back(std::move(arg));
      }
      if (step.storeSlot >= 0 &&
          (step.args.size() != 1 || step.args[0].dims.size() != 3 ||
           plan.values[step.args[0].value].kind != ValueKind::Arena ||
           step.args[0].type != plan.cache[step.storeSlot].type))
        fail(where, "a store step has one arg: rows (width, S, B) in the "
                    "arena, of its slot's type");
      plan.steps.push_back(std::move(step));
    }
  }

  Plan plan;
};

} // namespace

/// The plan's JSON through the one reader (support/Json.h: nesting bounded,
/// keys unique).
static bool parseRoot(const std::string &json, Json &root,
                      std::string &error) {
  support::JsonError failure;
  std::optional<Json> parsed = support::parseJson(json, failure);
  if (!parsed) {
    error = support::oneLine("plan: " + failure.describe());
    return false;
  }
  root = std::move(*parsed);
  return true;
}

std::optional<std::vector<Plan>> parsePlans(const std::string &json,
                                           std::string &error) {
  try {
    Json root;
    if (!parseRoot(json, root, error))
      return std::nullopt;
    std::vector<Plan> plans;
    if (!root.is_array()) {
      plans.push_back(Parser().parse(root));
      return plans;
    }
    if (root.empty()) {
      error = "plan: the program has no entry points";
      return std::nullopt;
    }
    for (const Json &entry : root)
      plans.push_back(Parser().parse(entry));
    return plans;
  } catch (const PlanError &e) {
    error = "plan: " + e.message;
  } catch (const std::exception &e) {
    error = support::oneLine(std::string("plan: not valid JSON: ") + e.what());
  }
  return std::nullopt;
}

std::optional<Plan> parsePlan(const std::string &json, std::string &error) {
  try {
    Json root;
    if (!parseRoot(json, root, error))
      return std::nullopt;
    return Parser().parse(root);
  } catch (const PlanError &e) {
    error = "plan: " + e.message;
  } catch (const Json::parse_error &e) {
    error = "plan: not valid JSON: " + support::oneLine(e.what());
  } catch (const std::exception &e) {
    error = "plan: " + support::oneLine(e.what());
  }
  return std::nullopt;
}

const char *weightDTypeName(WeightDType dtype) {
  switch (dtype) {
  case WeightDType::F32: return tfmc::plan::dtype::kF32;
  case WeightDType::BF16: return tfmc::plan::dtype::kBF16;
  case WeightDType::Int8: return tfmc::plan::dtype::kInt8;
  case WeightDType::Int4: return tfmc::plan::dtype::kInt4;
  case WeightDType::Q4K: return tfmc::plan::dtype::kQ4K;
  case WeightDType::Q5K: return tfmc::plan::dtype::kQ5K;
  case WeightDType::Q6K: return tfmc::plan::dtype::kQ6K;
  }
  return "?";
}

WeightDType programWeightDType(const Plan &plan) {
  // The enumerators go from the widest to the narrowest.
  WeightDType dtype = WeightDType::F32;
  for (const PlanWeight &weight : plan.weights)
    dtype = std::max(dtype, weight.dtype);
  return dtype;
}

int64_t programWeightGroup(const Plan &plan) {
  for (const PlanWeight &weight : plan.weights)
    if (weight.group > 0)
      return weight.group;
  return 0;
}

int64_t programWeightPanel(const Plan &plan) {
  for (const PlanWeight &weight : plan.weights)
    if (weight.panel > 0)
      return weight.panel;
  return 0;
}

std::optional<int64_t> storedWeightBytes(const Plan &plan) {
  // Each weight's bytes are below kMaxPlanBytes (parsePlan); their sum is
  // checked.
  int64_t bytes = 0;
  for (const PlanWeight &weight : plan.weights)
    if (__builtin_add_overflow(bytes, weight.storedBytes(), &bytes))
      return std::nullopt;
  return bytes;
}

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32: return tfmc::plan::type::kF32;
  case ElementType::I64: return tfmc::plan::type::kI64;
  case ElementType::BF16: return tfmc::plan::type::kBF16;
  case ElementType::I8: return tfmc::plan::type::kI8;
  case ElementType::F16: return tfmc::plan::type::kF16;
  case ElementType::U8: return tfmc::plan::type::kU8;
  case ElementType::I32: return tfmc::plan::type::kI32;
  }
  return "?";
}

std::string formatDims(const Plan &plan, const std::vector<DimExpr> &dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i)
      text += ", ";
    if (dims[i].empty())
      text += "1";
    for (std::size_t t = 0; t < dims[i].size(); ++t) {
      if (t)
        text += "*";
      const DimTerm &term = dims[i][t];
      text +=
          term.isSymbol ? plan.symbols[term.value] : std::to_string(term.value);
    }
  }
  return text + "]";
}

} // namespace tfmc::runtime
