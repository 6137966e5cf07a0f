//===- Codegen.cpp - From a planned tfm module to native code -------------===//
//
// After the middle end every kernel op carries its tile plan and its arena
// slot. Codegen
//   1. gives every tensor a symbolic shape (B for the batch, S and T for the
//      encoder's and decoder's sequences),
//   2. turns each kernel op into a KernelSpec and dedups them by structural
//      key (every layer of a stack shares its kernels),
//   3. compiles each distinct kernel with Halide, or takes it from the disk
//      cache, keyed by the kernel, the Halide target, tfmc's version and
//      the kernel generators' build,
//   4. writes the entry point as a plan (runtime/Plan.h) in a small C glue
//      file beside the kernel table, and
//   5. links glue, kernels, Halide's runtime and tfmc's runtime library.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/Codegen.h"

#include "compiler/codegen/HalideKernels.h"
#include "compiler/codegen/KernelKey.h"
#include "dialects/tfm/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <unistd.h>

#ifndef TFMC_VERSION
#error "TFMC_VERSION must be defined by the build"
#endif

using namespace mlir;
namespace tfm = tfmc::tfm;
using json = nlohmann::json;

namespace tfmc::codegen {
namespace {

// A dimension's extent: a product of constants and symbols. Symbols are
// indices into kSymbols.
struct Term {
  bool isSymbol = false;
  int64_t value = 0;
};
using Extent = std::vector<Term>;
using Shape = std::vector<Extent>; // row-major, outermost first

// B: batch; S, T: the encoder's and decoder's sequence lengths (of the
// inputs); P: tokens already in the KV cache; L = P + the new tokens.
// P and L are bound by the runtime from its cache, not by an input.
const char *const kSymbols[] = {"B", "S", "T", "P", "L"};
constexpr int64_t kBatch = 0, kSource = 1, kTarget = 2, kPast = 3,
                  kLength = 4;

Extent constant(int64_t value) { return {Term{false, value}}; }
Extent symbol(int64_t index) { return {Term{true, index}}; }

json toJson(const Extent &extent) {
  json terms = json::array();
  for (const Term &term : extent)
    terms.push_back(term.isSymbol ? json(kSymbols[term.value])
                                  : json(term.value));
  return terms;
}

/// Halide order (innermost first) of a row-major shape.
json halideDims(const Shape &shape) {
  json dims = json::array();
  for (auto it = shape.rbegin(); it != shape.rend(); ++it)
    dims.push_back(toJson(*it));
  return dims;
}

/// A (W, R) view: the last dimension, then all the others as rows.
json matrixDims(const Shape &shape) {
  Extent rows;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    rows.insert(rows.end(), shape[i].begin(), shape[i].end());
  if (rows.empty())
    rows = constant(1);
  return json::array({toJson(shape.back()), toJson(rows)});
}

std::string hexDigest(llvm::StringRef text) {
  llvm::SHA1 hasher;
  hasher.update(text);
  auto digest = hasher.final();
  std::string hex;
  for (uint8_t byte : digest)
    hex += llvm::formatv("{0:x-2}", byte).str();
  return hex.substr(0, 20);
}

/// Reports `message` as one line and fails.
LogicalResult fail(const llvm::Twine &message) {
  llvm::errs() << "tfmc: error: " << message << "\n";
  return failure();
}

TilePlan tilePlanOf(Operation *op) {
  TilePlan plan;
  auto dict = op->getAttrOfType<DictionaryAttr>("tfm.tile");
  if (!dict)
    return plan;
  for (NamedAttribute entry : dict) {
    if (auto integer = dyn_cast<IntegerAttr>(entry.getValue()))
      plan.ints[entry.getName().str()] = integer.getInt();
    else if (auto flag = dyn_cast<BoolAttr>(entry.getValue()))
      plan.ints[entry.getName().str()] = flag.getValue();
    else if (auto text = dyn_cast<StringAttr>(entry.getValue()))
      plan.strings[entry.getName().str()] = text.str();
  }
  return plan;
}

ActivationFn activationOf(std::optional<tfm::ActivationKind> kind) {
  if (!kind)
    return ActivationFn::None;
  switch (*kind) {
  case tfm::ActivationKind::relu:
    return ActivationFn::Relu;
  case tfm::ActivationKind::gelu:
    return ActivationFn::Gelu;
  case tfm::ActivationKind::gelu_tanh:
    return ActivationFn::GeluTanh;
  }
  return ActivationFn::None;
}

int64_t lastDim(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape().back();
}

/// Tables every entry point of a module shares: the weights (the runtime
/// loads them once) and the KV cache slots (prefill writes what decode reads).
struct ModuleTables {
  llvm::StringMap<int64_t> weightIndex;
  json weights = json::array();
  llvm::StringMap<int64_t> slotIndex;
  json cache = json::array();

  explicit ModuleTables(ModuleOp module) {
    // Weights, by name, in program order.
    module.walk([&](tfm::WeightOp weight) {
      if (weightIndex.count(weight.getName()))
        return;
      weightIndex[weight.getName()] = weights.size();
      json entry = {{"name", weight.getName().str()},
                    {"shape", weight.getType().getShape()}};
      if (ArrayAttr altNames = weight.getAltNamesAttr()) {
        json alts = json::array();
        for (Attribute alt : altNames)
          alts.push_back(cast<StringAttr>(alt).getValue().str());
        entry["alt_names"] = std::move(alts);
      }
      if (weight.getTransposed())
        entry["transposed"] = true;
      weights.push_back(std::move(entry));
    });
    // Cache slots: [max_batch, max_len, width] each, owned by the runtime.
    auto addSlot = [&](StringRef slot, Value value) {
      if (slotIndex.count(slot))
        return;
      slotIndex[slot] = cache.size();
      cache.push_back({{"slot", slot.str()},
                       {"width", cast<RankedTensorType>(value.getType())
                                     .getShape()
                                     .back()}});
    };
    module.walk([&](Operation *op) {
      if (auto append = dyn_cast<tfm::KvAppendOp>(op))
        addSlot(append.getSlot(), append.getResult());
      else if (auto read = dyn_cast<tfm::KvReadOp>(op))
        addSlot(read.getSlot(), read.getResult());
    });
  }
};

/// Builds the plan of one entry function and the specs of its kernels.
class EntryLowering {
public:
  EntryLowering(func::FuncOp func, const TargetDescription &target,
                const ModuleTables &tables, bool autoschedule)
      : func(func), target(target), tables(tables),
        decode(func.getSymName() == "decode_step"),
        autoschedule(autoschedule) {}

  LogicalResult run();

  json plan;
  /// Distinct kernels: name -> spec (and an op, for --emit halide).
  std::map<std::string, std::pair<KernelSpec, Operation *>> kernels;
  std::string halideTarget;

private:
  LogicalResult assignShape(Operation *op);
  FailureOr<int64_t> valueIndex(Value value);
  LogicalResult lowerKernel(Operation *op);
  json arg(Value value, json dims, const char *type = "f32");

  func::FuncOp func;
  const TargetDescription &target;
  const ModuleTables &tables;
  const bool decode; // a decode step: one new token after P cached ones
  const bool autoschedule;
  llvm::DenseMap<Value, Shape> shapes;
  llvm::DenseMap<Value, int64_t> values;
  int64_t vocab = 0; // rows of the embedding tables, for input validation
  json valuesJson = json::array();
  json stepsJson = json::array();
};

LogicalResult EntryLowering::assignShape(Operation *op) {
  Value result = op->getResult(0);
  auto type = cast<RankedTensorType>(result.getType());
  auto same = [&](Value input) {
    shapes[result] = shapes.lookup(input);
    return success();
  };
  if (auto embedding = dyn_cast<tfm::EmbeddingOp>(op)) {
    Shape ids = shapes.lookup(embedding.getIds());
    shapes[result] = {ids[0], ids[1], constant(type.getShape().back())};
    return success();
  }
  if (isa<tfm::PositionsOp, tfm::ScaleOp, tfm::ActivationOp, tfm::AddOp,
          tfm::LayerNormOp>(op))
    return same(op->getOperand(0));
  if (auto append = dyn_cast<tfm::KvAppendOp>(op)) {
    // Every valid row of the slot: the new rows themselves in a prefill,
    // L = P + 1 rows in a decode step.
    if (!decode)
      return same(append.getNewRows());
    Shape rows = shapes.lookup(append.getNewRows());
    shapes[result] = {rows[0], symbol(kLength), rows[2]};
    return success();
  }
  if (isa<tfm::KvReadOp>(op)) {
    // Cross-attention keys of the source sequence the prefill encoded.
    shapes[result] = {symbol(kBatch), symbol(kSource),
                      constant(type.getShape().back())};
    return success();
  }
  if (auto linear = dyn_cast<tfm::LinearOp>(op)) {
    Shape shape = shapes.lookup(linear.getInput());
    shape.back() = constant(type.getShape().back());
    shapes[result] = shape;
    return success();
  }
  if (auto attention = dyn_cast<tfm::AttentionOp>(op)) {
    Shape query = shapes.lookup(attention.getQuery());
    shapes[result] = {query[0], query[1], constant(type.getShape().back())};
    return success();
  }
  return op->emitError("tfmc has no kernel for '")
         << op->getName()
         << "' (the middle end fuses every op the frontend writes into "
            "attention, linear, norm and elementwise kernels)";
}

FailureOr<int64_t> EntryLowering::valueIndex(Value value) {
  auto it = values.find(value);
  if (it != values.end())
    return it->second;
  json entry;
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    entry = {{"kind", "input"}, {"index", argument.getArgNumber()}};
  } else if (auto weight = value.getDefiningOp<tfm::WeightOp>()) {
    entry = {{"kind", "weight"},
             {"index", tables.weightIndex.lookup(weight.getName())},
             {"offset", 0}};
  } else if (tfm::KvAppendOp append = tfm::cacheWriteOf(value.getDefiningOp())) {
    // New keys or values are written straight into the cache, after the P
    // rows it holds (none in a prefill).
    entry = {{"kind", "cache"},
             {"index", tables.slotIndex.lookup(append.getSlot())},
             {"row", decode ? json(kSymbols[kPast]) : json(0)}};
  } else if (isa<tfm::KvAppendOp, tfm::KvReadOp>(value.getDefiningOp())) {
    StringRef slot = isa<tfm::KvAppendOp>(value.getDefiningOp())
                         ? value.getDefiningOp<tfm::KvAppendOp>().getSlot()
                         : value.getDefiningOp<tfm::KvReadOp>().getSlot();
    entry = {{"kind", "cache"},
             {"index", tables.slotIndex.lookup(slot)},
             {"row", 0}};
  } else if (auto split = value.getDefiningOp<tfm::SplitOp>()) {
    auto source = split.getInput().getDefiningOp<tfm::WeightOp>();
    if (!source || split.getAxis() != 0)
      return split.emitError("tfmc can only split weights along axis 0");
    auto part = cast<RankedTensorType>(value.getType());
    int64_t index = cast<OpResult>(value).getResultNumber();
    entry = {{"kind", "weight"},
             {"index", tables.weightIndex.lookup(source.getName())},
             {"offset", index * part.getNumElements()}};
  } else {
    auto slot = value.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>(
        "tfm.arena");
    if (!slot)
      return value.getDefiningOp()->emitError(
          "kernel has no arena slot: run the memory planner first");
    entry = {{"kind", "arena"}, {"offset", slot[0]}};
  }
  int64_t index = valuesJson.size();
  valuesJson.push_back(entry);
  values[value] = index;
  return index;
}

json EntryLowering::arg(Value value, json dims, const char *type) {
  return {{"value", values.lookup(value)}, {"type", type},
          {"dims", std::move(dims)}};
}

LogicalResult EntryLowering::lowerKernel(Operation *op) {
  if (failed(assignShape(op)))
    return failure();
  for (Value operand : op->getOperands())
    if (failed(valueIndex(operand)))
      return failure();
  if (failed(valueIndex(op->getResult(0))))
    return failure();

  KernelSpec spec;
  spec.tile = tilePlanOf(op);
  spec.gpu = target.isGpu();
  Value result = op->getResult(0);
  const Shape &out = shapes[result];
  spec.width = lastDim(result);
  json args = json::array();
  auto matrix = [&](Value value) { return arg(value, matrixDims(shapes[value])); };
  auto vector = [&](Value value) {
    return arg(value, json::array({toJson(constant(lastDim(value)))}));
  };

  if (auto embedding = dyn_cast<tfm::EmbeddingOp>(op)) {
    spec.kind = KernelKind::Embedding;
    auto table = embedding.getTable().getType();
    spec.rows = table.getDimSize(0);
    vocab = std::max(vocab, spec.rows);
    args.push_back(arg(embedding.getIds(),
                       halideDims(shapes[embedding.getIds()]), "i64"));
    args.push_back(arg(embedding.getTable(),
                       json::array({toJson(constant(table.getDimSize(1))),
                                    toJson(constant(table.getDimSize(0)))})));
    args.push_back(arg(result, halideDims(out)));
  } else if (auto positions = dyn_cast<tfm::PositionsOp>(op)) {
    spec.kind = KernelKind::Positions;
    // In a decode step the sequence dimension starts at P, the number of
    // cached tokens: the kernel computes positions P .. P+S-1.
    auto sequenceView = [&](Value value) {
      json view = arg(value, halideDims(out));
      if (positions.getFromCache())
        view["mins"] = json::array({json::array({0}),
                                    json::array({kSymbols[kPast]}),
                                    json::array({0})});
      return view;
    };
    args.push_back(sequenceView(positions.getInput()));
    if (Value table = positions.getTable()) {
      spec.learned = true;
      auto type = cast<RankedTensorType>(table.getType());
      spec.rows = type.getDimSize(0);
      args.push_back(arg(table, json::array({toJson(constant(type.getDimSize(1))),
                                             toJson(constant(type.getDimSize(0)))})));
    }
    args.push_back(sequenceView(result));
  } else if (auto scale = dyn_cast<tfm::ScaleOp>(op)) {
    spec.kind = KernelKind::Scale;
    spec.factor = scale.getFactor().convertToDouble();
    args.push_back(matrix(scale.getInput()));
    args.push_back(matrix(result));
  } else if (auto activation = dyn_cast<tfm::ActivationOp>(op)) {
    spec.kind = KernelKind::Activation;
    spec.activation = activationOf(activation.getKind());
    args.push_back(matrix(activation.getInput()));
    args.push_back(matrix(result));
  } else if (auto add = dyn_cast<tfm::AddOp>(op)) {
    spec.kind = KernelKind::Add;
    args.push_back(matrix(add.getLhs()));
    args.push_back(matrix(add.getRhs()));
    args.push_back(matrix(result));
  } else if (auto linear = dyn_cast<tfm::LinearOp>(op)) {
    spec.kind = KernelKind::Linear;
    auto weight = linear.getWeight().getType();
    spec.inWidth = weight.getDimSize(1);
    spec.activation = activationOf(linear.getActivation());
    args.push_back(matrix(linear.getInput()));
    args.push_back(arg(linear.getWeight(),
                       json::array({toJson(constant(weight.getDimSize(1))),
                                    toJson(constant(weight.getDimSize(0)))})));
    if (Value bias = linear.getBias()) {
      spec.hasBias = true;
      args.push_back(vector(bias));
    }
    if (Value residual = linear.getResidual()) {
      spec.hasResidual = true;
      args.push_back(matrix(residual));
    }
    args.push_back(matrix(result));
  } else if (auto norm = dyn_cast<tfm::LayerNormOp>(op)) {
    spec.kind = KernelKind::LayerNorm;
    spec.factor = norm.getEps().convertToDouble();
    args.push_back(matrix(norm.getInput()));
    if (Value residual = norm.getResidual()) {
      spec.hasResidual = true;
      args.push_back(matrix(residual));
    }
    args.push_back(vector(norm.getGamma()));
    args.push_back(vector(norm.getBeta()));
    args.push_back(matrix(result));
  } else if (auto attention = dyn_cast<tfm::AttentionOp>(op)) {
    if (!attention.isMergedLayout())
      return op->emitError("tfmc compiles attention in the [B, S, H*D] "
                           "layout only; run tfm-fuse-epilogues first");
    spec.kind = KernelKind::Attention;
    spec.heads = attention.getNumHeads();
    spec.headDim = attention.getHeadSize();
    spec.valueHeadDim = attention.getValueHeadSize();
    spec.factor = attention.getScale().convertToDouble();
    tfm::MaskAttr mask = attention.getMask();
    spec.causal = mask.getCausal();
    spec.padding = mask.getPadding();
    spec.window = mask.getWindow();
    // [B, S, H*D] viewed as (D, H, S, B).
    auto heads = [&](Value value, int64_t headWidth) {
      const Shape &shape = shapes[value];
      return arg(value, json::array({toJson(constant(headWidth)),
                                     toJson(constant(spec.heads)),
                                     toJson(shape[1]), toJson(shape[0])}));
    };
    args.push_back(heads(attention.getQuery(), spec.headDim));
    args.push_back(heads(attention.getKey(), spec.headDim));
    args.push_back(heads(attention.getValue(), spec.valueHeadDim));
    if (Value keyPadding = attention.getKeyPadding())
      args.push_back(arg(keyPadding, halideDims(shapes[keyPadding]), "i64"));
    args.push_back(heads(result, spec.valueHeadDim));
  } else {
    return op->emitError("tfmc has no kernel for '") << op->getName() << "'";
  }

  if (autoschedule) {
    // The autoscheduler plans for one size: the largest batch and sequence.
    auto maxOf = [&](StringRef name) -> int64_t {
      auto attr = func->getAttrOfType<IntegerAttr>(name);
      return attr ? attr.getInt() : 1;
    };
    int64_t batch = maxOf("tfm.max_batch"), seq = maxOf("tfm.max_seq");
    auto extent = [&](const json &terms) {
      int64_t product = 1;
      for (const json &term : terms) {
        if (term.is_number()) {
          product *= term.get<int64_t>();
          continue;
        }
        std::string symbolName = term.get<std::string>();
        product *= symbolName == "B" ? batch : symbolName == "P" ? seq - 1 : seq;
      }
      return product;
    };
    spec.autoschedule = true;
    for (const json &argument : args) {
      std::vector<int64_t> extents;
      for (const json &dim : argument["dims"])
        extents.push_back(extent(dim));
      spec.estimates.push_back(std::move(extents));
    }
  }
  std::string key = kernelKey(op) + "|" + halideTarget + "|" + TFMC_VERSION +
                    "|" + kernelGeneratorStamp() +
                    (spec.gpu ? std::string("|") + gpuKernelGeneratorStamp()
                              : std::string()) +
                    (autoschedule ? "|adams2019" : "");
  // Adams2019 schedules for its estimates: a kernel scheduled for 1024 rows
  // must not be reused for a 128-row bound (its ShiftInwards splits would
  // write before the start of the output).
  for (const std::vector<int64_t> &extents : spec.estimates) {
    key += "|";
    for (int64_t extent : extents)
      key += std::to_string(extent) + ",";
  }
  std::string name = "tfmc_" + hexDigest(key);
  kernels.try_emplace(name, spec, op);
  // The op and its .tfm line, so that `NAME bench` can say which kernel is
  // which.
  std::string location;
  llvm::raw_string_ostream locationStream(location);
  op->getLoc().print(locationStream);
  stepsJson.push_back({{"kernel", name},
                       {"op", op->getName().getStringRef().str()},
                       {"loc", location},
                       {"args", std::move(args)}});
  return success();
}

LogicalResult EntryLowering::run() {
  halideTarget = halideTargetFor(target.name == "host" && target.vectorLanes == 16
                                     ? "x86-64-avx512"
                                     : target.name,
                                 /*withRuntime=*/false);
  auto intAttr = [&](StringRef name) -> int64_t {
    auto attr = func->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };

  // Inputs: each sequence input names its sequence symbol.
  json inputs = json::array();
  bool hasTarget = false;
  for (BlockArgument argument : func.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                                  "tfm.input");
    if (!name)
      return func.emitError("argument without a tfm.input name");
    bool decoder = name.getValue().starts_with("decoder_");
    hasTarget |= decoder;
    Shape shape{symbol(kBatch), symbol(decoder ? kTarget : kSource)};
    shapes[argument] = shape;
    bool mask = name.getValue().ends_with("attention_mask");
    inputs.push_back({{"name", name.str()},
                      {"kind", mask ? "mask" : "ids"},
                      {"dims", json::array({toJson(shape[0]), toJson(shape[1])})},
                      {"optional", mask}});
  }
  // The masks the model's kind takes (attention_mask; an encoder-decoder's
  // decoder_attention_mask too) that no attention reads are listed as
  // "unused", with "causal": whether every attention over that stack's keys
  // is causal, so that right padding cannot change the unpadded outputs and
  // the runtime may accept zeros (the README's input contract). An
  // attention's keys are the decoder's when they derive from a decoder_
  // input.
  auto readsTarget = [&](tfm::AttentionOp attention) {
    SmallVector<Value> work{attention.getKey()};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value value = work.pop_back_val();
      if (!seen.insert(value).second)
        continue;
      if (auto argument = dyn_cast<BlockArgument>(value)) {
        auto input = func.getArgAttrOfType<StringAttr>(
            argument.getArgNumber(), "tfm.input");
        if (input && input.getValue().starts_with("decoder_"))
          return true;
      } else if (Operation *producer = value.getDefiningOp()) {
        work.append(producer->operand_begin(), producer->operand_end());
      }
    }
    return false;
  };
  for (const char *maskName : {"attention_mask", "decoder_attention_mask"}) {
    bool target = StringRef(maskName).starts_with("decoder_");
    bool listed = llvm::any_of(inputs, [&](const json &input) {
      return input["name"] == maskName;
    });
    if (listed || (target && !hasTarget))
      continue;
    bool causal = true;
    func.walk([&](tfm::AttentionOp attention) {
      if ((hasTarget && readsTarget(attention)) == target)
        causal &= attention.getMask().getCausal();
    });
    Shape shape{symbol(kBatch), symbol(target ? kTarget : kSource)};
    inputs.push_back({{"name", maskName},
                      {"kind", "mask"},
                      {"dims", json::array({toJson(shape[0]), toJson(shape[1])})},
                      {"optional", true},
                      {"unused", true},
                      {"causal", causal}});
  }

  for (Operation &op : func.getBody().front()) {
    if (tfm::isKernel(&op)) {
      if (failed(lowerKernel(&op)))
        return failure();
    } else if (isa<tfm::KvAppendOp, tfm::KvReadOp>(op)) {
      if (failed(assignShape(&op)))
        return failure();
    }
  }

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() != 1)
    return func.emitError("tfmc entry points return one tensor");
  Value output = ret.getOperand(0);
  FailureOr<int64_t> outputIndex = valueIndex(output);
  if (failed(outputIndex))
    return failure();
  json outputDims = json::array();
  for (const Extent &extent : shapes[output])
    outputDims.push_back(toJson(extent));
  auto outputName = func.getResultAttrOfType<StringAttr>(0, "tfm.output");

  auto module = func->getParentOfType<ModuleOp>();
  // The symbols the plan's dims name, in kSymbols' order.
  std::set<std::string> named;
  std::function<void(const json &)> collect = [&](const json &node) {
    if (node.is_string())
      named.insert(node.get<std::string>());
    else if (node.is_array())
      for (const json &child : node)
        collect(child);
  };
  for (const json &input : inputs)
    collect(input["dims"]);
  collect(outputDims);
  for (const json &step : stepsJson)
    for (const json &stepArg : step["args"]) {
      collect(stepArg["dims"]);
      if (stepArg.contains("mins"))
        collect(stepArg["mins"]);
    }
  for (const json &value : valuesJson)
    if (value.contains("row"))
      collect(value["row"]);
  json symbols = json::array({"B"});
  for (const char *name : kSymbols)
    if (named.count(name) && std::string(name) != "B")
      symbols.push_back(name);
  (void)hasTarget;
  plan = {{"format", 1},
          {"model", module.getSymName() ? module.getSymName()->str() : "model"},
          {"entry", func.getSymName().str()},
          {"target", target.name},
          // Where the arena, the weights and the KV cache live: "cuda"
          // plans run their kernels on the GPU over device memory.
          {"device", target.isGpu() ? "cuda" : "host"},
          {"vocab", vocab},
          {"max_len", intAttr("tfm.max_len")},
          {"max_batch", intAttr("tfm.max_batch")},
          {"max_seq", intAttr("tfm.max_seq")},
          {"arena_bytes", intAttr("tfm.arena_size")},
          {"symbols", symbols},
          {"inputs", inputs},
          {"weights", tables.weights},
          {"cache", tables.cache},
          {"values", valuesJson},
          {"output", {{"name", outputName ? outputName.str() : "output"},
                      {"value", *outputIndex},
                      {"dims", outputDims}}},
          {"steps", stepsJson}};
  return success();
}

/// Runs `program args...`; on failure reports `what` with its stderr.
LogicalResult runTool(llvm::StringRef program,
                      llvm::ArrayRef<std::string> arguments,
                      const llvm::Twine &what, llvm::StringRef workDir,
                      std::optional<llvm::StringRef> stdinPath = std::nullopt) {
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(program);
  if (!path)
    return fail(llvm::Twine("cannot find '") + program + "' on PATH, needed for " +
                what);
  std::vector<llvm::StringRef> argv{*path};
  for (const std::string &argument : arguments)
    argv.push_back(argument);
  std::string errorLog = (workDir + "/tool-stderr.txt").str();
  std::optional<llvm::StringRef> redirects[] = {stdinPath, std::nullopt,
                                                llvm::StringRef(errorLog)};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects,
                                         0, 0, &error);
  if (status == 0)
    return success();
  std::ifstream log(errorLog);
  std::string firstLine;
  std::getline(log, firstLine);
  return fail(what + " failed (" + program + " exit " + llvm::Twine(status) +
              "): " + (firstLine.empty() ? error : firstLine));
}

/// Writes `contents` to `path` through a temporary file and a rename, so a
/// concurrent reader never sees half of it.
LogicalResult writeAtomically(const std::string &path,
                              llvm::function_ref<bool(const std::string &)> write) {
  std::string temporary = path + ".tmp" + std::to_string(::getpid());
  if (!write(temporary)) {
    llvm::sys::fs::remove(temporary);
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return fail("cannot write '" + path + "': " + ec.message());
  }
  return success();
}

/// Every entry point's plan and the union of their kernels.
struct LoweredModule {
  std::vector<std::unique_ptr<EntryLowering>> entries;
  std::map<std::string, std::pair<KernelSpec, Operation *>> kernels;
  std::string halideTarget;

  const json &firstPlan() const { return entries.front()->plan; }
};

/// The glue: the kernel table and the plans (a JSON array, `forward`
/// first), as C.
std::string glueSource(const LoweredModule &lowered) {
  std::string source;
  llvm::raw_string_ostream os(source);
  os << "/* Generated by tfmc " << TFMC_VERSION << ". */\n"
     << "typedef int (*tfmc_kernel_fn)(void **);\n"
     << "struct tfmc_kernel_entry { const char *name; tfmc_kernel_fn fn; };\n";
  for (const auto &kernel : lowered.kernels)
    os << "extern int " << kernel.first << "_argv(void **);\n";
  os << "const struct tfmc_kernel_entry tfmc_kernels[] = {\n";
  for (const auto &kernel : lowered.kernels)
    os << "  {\"" << kernel.first << "\", " << kernel.first << "_argv},\n";
  os << "};\n"
     << "const int tfmc_num_kernels = " << lowered.kernels.size() << ";\n"
     << "const char tfmc_plan_json[] = {";
  json plans = json::array();
  for (const auto &entry : lowered.entries)
    plans.push_back(entry->plan);
  std::string text = plans.dump();
  for (size_t i = 0; i < text.size(); ++i)
    os << (i % 24 == 0 ? "\n  " : "") << int(static_cast<unsigned char>(text[i]))
       << ",";
  os << "0};\n";
  return source;
}

} // namespace

std::string defaultCacheDir() {
  if (const char *dir = std::getenv("TFMC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/tfmc";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/tfmc";
}

LogicalResult emitArtifact(ModuleOp module, const CodegenOptions &options,
                           llvm::raw_ostream &os) {
  if (options.target.isGpu() && options.autoschedule)
    return fail("--scheduler adams2019 schedules CPU kernels only (Halide 14 "
                "has no GPU autoscheduler); CUDA targets use their tile plans");
  ModuleTables tables(module);
  LoweredModule entry;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    auto lowering = std::make_unique<EntryLowering>(
        func, options.target, tables, options.autoschedule);
    if (failed(lowering->run()))
      return failure();
    for (auto &kernel : lowering->kernels)
      entry.kernels.insert(kernel);
    entry.halideTarget = lowering->halideTarget;
    entry.entries.push_back(std::move(lowering));
  }
  if (entry.entries.empty() ||
      entry.firstPlan()["entry"].get<std::string>() != "forward")
    return fail("the module has no forward entry point");

  if (options.artifact == Artifact::Halide) {
    for (const auto &[name, kernel] : entry.kernels) {
      std::string description;
      try {
        description = describeKernel(kernel.first, name, entry.halideTarget);
      } catch (const std::exception &e) {
        std::string message = e.what();
        std::replace(message.begin(), message.end(), '\n', ' ');
        return fail("Halide cannot lower kernel " + name + ": " + message);
      }
      os << "// kernel " << name << ": " << kernel.second->getName() << " at "
         << kernel.second->getLoc() << "\n"
         << description << "\n";
    }
    return success();
  }

  // Kernels: from the cache, or compiled into it.
  if (std::error_code ec = llvm::sys::fs::create_directories(options.cacheDir))
    return fail("cannot create the kernel cache '" + options.cacheDir +
                "': " + ec.message());
  std::vector<std::string> objects;
  for (const auto &[name, kernel] : entry.kernels) {
    std::string object = options.cacheDir + "/" + name + ".o";
    objects.push_back(object);
    if (llvm::sys::fs::exists(object)) {
      if (options.verbose)
        llvm::errs() << "tfmc: cached " << name << "\n";
      continue;
    }
    if (options.verbose)
      llvm::errs() << "tfmc: compiling " << name << " ("
                   << kernel.second->getName() << ")\n";
    std::string error;
    if (failed(writeAtomically(object, [&](const std::string &path) {
          if (compileKernel(kernel.first, name, entry.halideTarget, path, error))
            return true;
          llvm::errs() << "tfmc: error: " << error << "\n";
          return false;
        })))
      return failure();
  }
  // One Halide runtime per binary; a CUDA target's includes Halide's CUDA
  // runtime, which loads the driver (libcuda) when the program runs.
  std::string runtimeTarget =
      options.target.isGpu()
          ? halideTargetFor(options.target.name, /*withRuntime=*/true)
          : halideTargetFor(entry.firstPlan()["target"] == "x86-64-avx512" ||
                                    options.target.vectorLanes == 16
                                ? "x86-64-avx512"
                                : "x86-64-avx2",
                            /*withRuntime=*/true);
  std::string runtimeObject =
      options.cacheDir + "/halide_runtime_" +
      hexDigest(runtimeTarget + "|" + TFMC_VERSION) + ".o";
  if (!llvm::sys::fs::exists(runtimeObject)) {
    std::string error;
    if (failed(writeAtomically(runtimeObject, [&](const std::string &path) {
          if (compileRuntime(runtimeTarget, path, error))
            return true;
          llvm::errs() << "tfmc: error: " << error << "\n";
          return false;
        })))
      return failure();
  }
  objects.push_back(runtimeObject);

  // Glue, in a scratch directory removed on the way out.
  llvm::SmallString<128> work;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tfmc-link", work))
    return fail("cannot create a temporary directory: " + ec.message());
  auto cleanup = llvm::make_scope_exit(
      [&] { llvm::sys::fs::remove_directories(work); });
  std::string glueC = (work + "/glue.c").str();
  std::string glueO = (work + "/glue.o").str();
  {
    std::ofstream glue(glueC);
    glue << glueSource(entry);
    if (!glue)
      return fail("cannot write " + glueC);
  }
  if (failed(runTool("cc", {"-c", "-O1", "-o", glueO, glueC},
                     "compiling the entry point", work)))
    return failure();
  objects.insert(objects.begin(), glueO);

  const std::string &rt = options.runtimeDir;
  std::vector<std::string> runtimeLibraries{
      rt + "/libtfmc_runtime.a", rt + "/libtfmc_runtime_safetensors.a"};
  if (options.artifact != Artifact::Object)
    for (const std::string &library : runtimeLibraries)
      if (!llvm::sys::fs::exists(library))
        return fail("tfmc's runtime library '" + library +
                    "' is missing (set TFMC_RUNTIME_DIR)");
  const std::vector<std::string> systemLibraries{"-lfmt", "-lpthread", "-ldl",
                                                 "-lm"};
  const std::string &output = options.outputPath;

  switch (options.artifact) {
  case Artifact::Executable: {
    std::vector<std::string> argv{"-o", output};
    argv.insert(argv.end(), objects.begin(), objects.end());
    argv.push_back("-Wl,--start-group");
    argv.push_back(rt + "/libtfmc_runtime_main.a");
    argv.insert(argv.end(), runtimeLibraries.begin(), runtimeLibraries.end());
    argv.push_back("-Wl,--end-group");
    argv.insert(argv.end(), systemLibraries.begin(), systemLibraries.end());
    return runTool("c++", argv, "linking " + output, work);
  }
  case Artifact::Object: {
    std::vector<std::string> argv{"-r", "-o", output + ".o"};
    argv.insert(argv.end(), objects.begin(), objects.end());
    return runTool("ld", argv, "linking " + output + ".o", work);
  }
  case Artifact::Library: {
    llvm::StringRef directory = llvm::sys::path::parent_path(output);
    std::string stem = llvm::sys::path::filename(output).str();
    std::string library =
        (directory.empty() ? "" : directory.str() + "/") + "lib" + stem + ".a";
    std::string header = output + ".h";
    std::string script = (work + "/archive.mri").str();
    {
      std::ofstream mri(script);
      mri << "CREATE " << library << ".tmp\n";
      for (const std::string &object : objects)
        mri << "ADDMOD " << object << "\n";
      for (const std::string &runtimeLibrary : runtimeLibraries)
        mri << "ADDLIB " << runtimeLibrary << "\n";
      mri << "SAVE\nEND\n";
    }
    llvm::sys::fs::remove(library + ".tmp");
    if (failed(runTool("ar", {"-M"}, "archiving " + library, work,
                       llvm::StringRef(script))))
      return failure();
    if (std::error_code ec = llvm::sys::fs::rename(library + ".tmp", library))
      return fail("cannot write '" + library + "': " + ec.message());
    std::ifstream api(options.runtimeHeader);
    std::ofstream out(header);
    out << "/* " << stem << ".h: the C API of the tfmc-compiled model '"
        << entry.firstPlan()["model"].get<std::string>() << "'.\n"
        << " * Link: cc app.c lib" << stem
        << ".a -lstdc++ -lfmt -lpthread -ldl -lm\n * Inputs:";
    for (const json &input : entry.firstPlan()["inputs"])
      out << " " << input["name"].get<std::string>() << " [B, "
          << input["dims"][1][0].get<std::string>() << "]";
    out << "; output: " << entry.firstPlan()["output"]["name"].get<std::string>()
        << ". */\n"
        << api.rdbuf();
    if (!out)
      return fail("cannot write '" + header + "'");
    return success();
  }
  case Artifact::Halide:
    break;
  }
  return success();
}

} // namespace tfmc::codegen
