//===- Lowering.cpp - tfm kernels to kernel specs and plans ---------------===//

#include "compiler/codegen/Lowering.h"

#include "compiler/codegen/KernelKey.h"
#include "dialects/tfm/TfmDialect.h"
#include "support/Microkernels.h"
#include "support/PlanFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
namespace tfm = tfmc::tfm;

namespace tfmc::codegen {
namespace {

using target::TargetDescription;

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
  case tfm::ActivationKind::silu:
    return ActivationFn::Silu;
  case tfm::ActivationKind::tanh:
    return ActivationFn::Tanh;
  }
  return ActivationFn::None;
}

/// Bytes of a row of an int8, int4 or K-quant weight's blocks (the dialect's
/// storage bytes, support/WeightFormat.h, over its rows); none for the
/// other storage types.
std::optional<int64_t> blockRowBytes(tfm::WeightOp weight) {
  std::optional<tfm::WeightStorage> storage = weight.getStorage();
  if (!storage || *storage == tfm::WeightStorage::bf16)
    return std::nullopt;
  return weight.getStorageBytes() / weight.getType().getDimSize(0);
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
  /// The slots' element type (tfm.kv_cache_dtype): "f32", "bf16" or "f16".
  std::string cacheType = tfmc::plan::type::kF32;
  /// The slots a decode step appends to, on a CPU target: paged (blocks of
  /// tfmc::plan::kBlockTokens positions in a pool the runtime hands out).
  /// Their writers write an arena value that a store step copies into the
  /// blocks; a decode or extend step's attention reads the pool through
  /// key_rows. A GPU target's slots, and cross-attention's (written once
  /// by the prefill), stay dense: [max_batch, max_len, width]. A block is
  /// head-major (the plan slot's "heads": the K/V heads of the attention
  /// that reads it), so that a head's keys of a block are one run.
  llvm::StringSet<> pagedSlots;

  ModuleTables(ModuleOp module, const TargetDescription &target) {
    if (auto dtype =
            module->getAttrOfType<StringAttr>(tfm::kKvCacheDtypeAttrName))
      cacheType = dtype.getValue().str();
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
      if (std::optional<uint64_t> panel = weight.getPanel())
        entry["panel"] = *panel;
      if (std::optional<tfm::WeightStorage> storage = weight.getStorage()) {
        entry["dtype"] = tfm::stringifyWeightStorage(*storage).str();
        if (std::optional<uint64_t> group = weight.getGroup())
          entry["group"] = *group;
      }
      weights.push_back(std::move(entry));
    });
    // What `init-weights` fills each weight with: a norm's gain is 1 and its
    // bias 0 (tfm::NormOpInterface), as in a freshly initialised model;
    // everything else is random. Decided here, from how each weight is used,
    // so that the runtime need not know any model family's weight names.
    for (json &entry : weights)
      entry["init"] = "normal";
    auto mark = [&](Value value, const char *init) {
      if (auto weight = value.getDefiningOp<tfm::WeightOp>())
        weights[weightIndex.lookup(weight.getName())]["init"] = init;
    };
    module.walk([&](tfm::NormOpInterface norm) {
      mark(norm.getGamma(), "ones");
      if (Value beta = norm.getBeta())
        mark(beta, "zeros");
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
      // An f32 slot's plan is as before the option existed.
      if (cacheType != tfmc::plan::type::kF32)
        cache.back()["dtype"] = cacheType;
    };
    module.walk([&](Operation *op) {
      if (auto append = dyn_cast<tfm::KvAppendOp>(op))
        addSlot(append.getSlot(), append.getResult());
      else if (auto read = dyn_cast<tfm::KvReadOp>(op))
        addSlot(read.getSlot(), read.getResult());
    });
    if (target.isGpu())
      return;
    module.walk([&](tfm::KvAppendOp append) {
      auto func = append->getParentOfType<func::FuncOp>();
      if (func && func.getSymName() == tfmc::plan::entry::kDecodeStep)
        pagedSlots.insert(append.getSlot());
    });
    // Each paged slot's heads: the K/V heads of an attention reading it.
    llvm::StringMap<int64_t> heads;
    module.walk([&](tfm::AttentionOp attention) {
      for (Value value : {attention.getKey(), attention.getValue()})
        if (auto append = value.getDefiningOp<tfm::KvAppendOp>())
          heads[append.getSlot()] = attention.getNumKvHeads();
    });
    for (json &slot : cache) {
      const std::string name = slot["slot"].get<std::string>();
      if (!pagedSlots.count(name))
        continue;
      slot["paged"] = true;
      slot["heads"] = std::max<int64_t>(heads.lookup(name), 1);
    }
  }
};

/// Builds the plan of one entry function and the specs of its kernels.
class EntryLowering {
public:
  EntryLowering(func::FuncOp func, const TargetDescription &target,
                const ModuleTables &tables, bool autoschedule)
      : func(func), target(target), tables(tables),
        decode(func.getSymName() == tfmc::plan::entry::kDecodeStep ||
               func.getSymName() == tfmc::plan::entry::kExtend),
        autoschedule(autoschedule) {}

  LogicalResult run();

  json plan;
  /// Distinct kernels: name -> spec (and an op, for --emit halide).
  std::map<std::string, LoweredKernel> kernels;

private:
  LogicalResult assignShape(Operation *op);
  FailureOr<int64_t> valueIndex(Value value);
  LogicalResult lowerKernel(Operation *op);
  json arg(Value value, json dims, const char *type = tfmc::plan::type::kF32);
  bool isCacheValue(Value value) const;
  /// Whether `value` holds rows in the cache's element type: a cache
  /// view, a kernel's result appended to a slot, or a tfm.kv_append's
  /// result (in a prefill: the new rows a paged slot's writer wrote).
  bool holdsCacheRows(Value value) const;
  bool paged(StringRef slot) const { return tables.pagedSlots.count(slot); }
  /// The entry's key_rows value (created on first use).
  int64_t keyRowsIndex();
  LogicalResult typeCacheAccess(Operation *op, KernelSpec &spec);
  void addWeightArgs(Value value, KernelSpec &spec, json &args);

  func::FuncOp func;
  const TargetDescription &target;
  const ModuleTables &tables;
  /// A decode or extend step: S new tokens (1 in a decode step) after the
  /// P cached ones.
  const bool decode;
  const bool autoschedule;
  llvm::DenseMap<Value, Shape> shapes;
  llvm::DenseMap<Value, int64_t> values;
  int64_t vocab = 0; // rows of the token tables, for input validation
  int64_t keyRows = -1; // keyRowsIndex's
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
  if (op->hasTrait<tfm::SameShapeAsInput>())
    return same(op->getOperand(0));
  if (auto append = dyn_cast<tfm::KvAppendOp>(op)) {
    // Every valid row of the slot: the new rows themselves in a prefill,
    // L = P + S rows in a decode (S = 1) or extend step.
    if (!decode)
      return same(append.getNewRows());
    Shape rows = shapes.lookup(append.getNewRows());
    shapes[result] = {rows[0], symbol(Symbol::Length), rows[2]};
    return success();
  }
  if (isa<tfm::KvReadOp>(op)) {
    // Cross-attention keys of the source sequence the prefill encoded.
    shapes[result] = {symbol(Symbol::Batch), symbol(Symbol::Source),
                      constant(type.getShape().back())};
    return success();
  }
  if (isa<tfm::LinearOp, tfm::GatedLinearOp, tfm::QuantizeOp>(op)) {
    Shape shape = shapes.lookup(op->getOperand(0));
    shape.back() = constant(type.getShape().back());
    shapes[result] = shape;
    return success();
  }
  if (auto attention = dyn_cast<tfm::AttentionOp>(op)) {
    Shape query = shapes.lookup(attention.getQuery());
    shapes[result] = {query[0], query[1], constant(type.getShape().back())};
    return success();
  }
  if (isa<tfm::LastPositionOp>(op)) {
    Shape input = shapes.lookup(op->getOperand(0));
    shapes[result] = {input[0], constant(1), input[2]};
    return success();
  }
  if (isa<tfm::FirstPositionOp>(op)) {
    Shape input = shapes.lookup(op->getOperand(0));
    shapes[result] = {input[0], input[2]};
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
    entry = {{"kind", tfmc::plan::kind::kInput}, {"index", argument.getArgNumber()}};
  } else if (auto weight = value.getDefiningOp<tfm::WeightOp>()) {
    entry = {{"kind", tfmc::plan::kind::kWeight},
             {"index", tables.weightIndex.lookup(weight.getName())},
             {"offset", 0}};
  } else if (tfm::KvAppendOp append = tfm::cacheWriteOf(value.getDefiningOp());
             append && !paged(append.getSlot())) {
    // New keys or values are written straight into a dense slot, after the
    // P rows it holds (none in a prefill).
    entry = {{"kind", tfmc::plan::kind::kCache},
             {"index", tables.slotIndex.lookup(append.getSlot())},
             {"row", decode ? json(symbolName(Symbol::Past)) : json(0)}};
  } else if (auto append = value.getDefiningOp<tfm::KvAppendOp>();
             append && paged(append.getSlot())) {
    // A prefill's attention reads the new rows where their writer left
    // them; a decode or extend step's reads the slot's whole pool.
    if (!decode) {
      FailureOr<int64_t> rows = valueIndex(append.getNewRows());
      if (succeeded(rows))
        values[value] = *rows;
      return rows;
    }
    entry = {{"kind", tfmc::plan::kind::kCache},
             {"index", tables.slotIndex.lookup(append.getSlot())}};
  } else if (isa<tfm::KvAppendOp, tfm::KvReadOp>(value.getDefiningOp())) {
    StringRef slot = isa<tfm::KvAppendOp>(value.getDefiningOp())
                         ? value.getDefiningOp<tfm::KvAppendOp>().getSlot()
                         : value.getDefiningOp<tfm::KvReadOp>().getSlot();
    entry = {{"kind", tfmc::plan::kind::kCache},
             {"index", tables.slotIndex.lookup(slot)},
             {"row", 0}};
  } else if (auto split = value.getDefiningOp<tfm::SplitOp>()) {
    auto source = split.getInput().getDefiningOp<tfm::WeightOp>();
    if (!source || split.getAxis() != 0)
      return split.emitError("tfmc can only split weights along axis 0");
    unsigned index = cast<OpResult>(value).getResultNumber();
    // The offset counts elements of the weight's storage: an int8 or int4
    // weight's are bytes of whole rows of blocks.
    int64_t offset = split.getPartOffset(index);
    if (std::optional<int64_t> rowBytes = blockRowBytes(source))
      offset = offset / source.getType().getDimSize(1) * *rowBytes;
    entry = {{"kind", tfmc::plan::kind::kWeight},
             {"index", tables.weightIndex.lookup(source.getName())},
             {"offset", offset}};
  } else {
    auto slot = value.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>(
        "tfm.arena");
    if (!slot)
      return value.getDefiningOp()->emitError(
          "kernel has no arena slot: run the memory planner first");
    entry = {{"kind", tfmc::plan::kind::kArena}, {"offset", slot[0]}};
  }
  int64_t index = valuesJson.size();
  valuesJson.push_back(entry);
  values[value] = index;
  return index;
}

/// The arg of the weight `value` reads (a tfm.weight or a row split of
/// one) in its storage type, viewed as (K, N); int8's and int4's rows of
/// blocks are one byte buffer ((2 + group)·ceil(K/group), N), i8 and u8.
void EntryLowering::addWeightArgs(Value value, KernelSpec &spec, json &args) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  json dims = json::array({toJson(constant(columns)), toJson(constant(rows))});
  tfm::WeightOp weight = tfm::sourceWeight(value);
  std::optional<tfm::WeightStorage> storage =
      weight ? weight.getStorage() : std::nullopt;
  if (!storage) {
    // In panels (tfm-weight-layout): (row % P, k, row / P), a split's part
    // starting on a whole panel (its element offset is that of its rows).
    if (std::optional<uint64_t> panel = weight ? weight.getPanel() : std::nullopt) {
      int64_t rowsPerPanel = int64_t(*panel);
      spec.weightPanel = rowsPerPanel;
      dims = json::array({toJson(constant(rowsPerPanel)),
                          toJson(constant(columns)),
                          toJson(constant(rows / rowsPerPanel))});
    }
    args.push_back(arg(value, std::move(dims)));
    return;
  }
  if (*storage == tfm::WeightStorage::bf16) {
    spec.weightType = WeightType::BF16;
    args.push_back(arg(value, std::move(dims), tfmc::plan::type::kBF16));
    return;
  }
  // Rows of blocks, each with its scale: one byte buffer; in block panels
  // (tfm-weight-layout) one per 16 rows (support/WeightFormat.h), a split's
  // part starting on a whole panel.
  if (tfm::isKQuant(*storage)) {
    // llama.cpp's super-blocks as they are, one row per output; x's
    // int8 groups are 32 values (support/Microkernels.h).
    spec.weightType = *storage == tfm::WeightStorage::q4_k ? WeightType::Q4K
                      : *storage == tfm::WeightStorage::q5_k
                          ? WeightType::Q5K
                          : WeightType::Q6K;
    spec.group = 32;
    if (!target.isGpu())
      spec.kQuantMicrokernel = target.integerMicrokernels;
    args.push_back(arg(value,
                       json::array({toJson(constant(*blockRowBytes(weight))),
                                    toJson(constant(rows))}),
                       tfmc::plan::type::kU8));
    return;
  }
  const bool int4 = *storage == tfm::WeightStorage::int4;
  spec.weightType = int4 ? WeightType::Int4 : WeightType::Int8;
  spec.group = int64_t(*weight.getGroup());
  if (!target.isGpu())
    spec.blockFloatMicrokernel = target.integerMicrokernels;
  int64_t rowBytes = *blockRowBytes(weight), units = rows;
  if (std::optional<uint64_t> panel = weight.getPanel()) {
    spec.weightPanel = int64_t(*panel);
    rowBytes *= int64_t(*panel);
    units = rows / int64_t(*panel);
  }
  args.push_back(arg(value,
                     json::array({toJson(constant(rowBytes)),
                                  toJson(constant(units))}),
                     int4 ? tfmc::plan::type::kU8 : tfmc::plan::type::kI8));
}

json EntryLowering::arg(Value value, json dims, const char *type) {
  // A view of a narrowed KV cache is read and written in the cache's type.
  int64_t index = values.lookup(value);
  if (holdsCacheRows(value))
    return {{"value", index}, {"type", tables.cacheType},
            {"dims", std::move(dims)}};
  return {{"value", index}, {"type", type}, {"dims", std::move(dims)}};
}

bool EntryLowering::isCacheValue(Value value) const {
  auto it = values.find(value);
  return it != values.end() &&
         valuesJson[it->second]["kind"] == tfmc::plan::kind::kCache;
}

bool EntryLowering::holdsCacheRows(Value value) const {
  if (isCacheValue(value))
    return true;
  Operation *producer = value.getDefiningOp();
  return producer && (isa<tfm::KvAppendOp>(producer) ||
                      tfm::cacheWriteOf(producer) != nullptr);
}

int64_t EntryLowering::keyRowsIndex() {
  if (keyRows < 0) {
    keyRows = valuesJson.size();
    valuesJson.push_back({{"kind", tfmc::plan::kind::kKeyRows}});
  }
  return keyRows;
}

/// A narrowed KV cache (tfm.kv_cache_dtype) is written by the linear,
/// gated linear or rope kernel whose result is a slot, which rounds it
/// (KernelSpec::outputType), and read by attention, which widens its keys
/// and values; any other kernel reading or writing a slot is refused.
LogicalResult EntryLowering::typeCacheAccess(Operation *op, KernelSpec &spec) {
  if (tables.cacheType == tfmc::plan::type::kF32)
    return success();
  Halide::Type narrow = tables.cacheType == tfmc::plan::type::kBF16
                            ? Halide::BFloat(16)
                            : Halide::Float(16);
  auto refuse = [&](const char *access) {
    return op->emitError("tfmc cannot ")
           << access << " a " << tables.cacheType << " KV cache in a '"
           << op->getName()
           << "' kernel (--kv-cache-dtype narrows caches that linear, rope "
              "and attention kernels write and read)";
  };
  if (holdsCacheRows(op->getResult(0))) {
    if (!isa<tfm::LinearOp, tfm::GatedLinearOp, tfm::RopeOp>(op))
      return refuse("write");
    spec.outputType = narrow;
  }
  auto attention = dyn_cast<tfm::AttentionOp>(op);
  for (Value operand : op->getOperands()) {
    if (!holdsCacheRows(operand))
      continue;
    if (!attention || operand == attention.getQuery())
      return refuse("read");
    (operand == attention.getKey() ? spec.keyType : spec.valueType) = narrow;
  }
  return success();
}

/// A linear's `tfm.activations` (tfm-weight-storage): "int8" makes its
/// kernel quantise x and multiply integers, which needs int8 or int4
/// weights whose group holds whole pairs of values; "bf16" makes it round x
/// to bf16 and multiply bf16 pairs, which needs bf16 weights on a CPU: in
/// pairs where `target` has the bf16 dot product, else as f32 products.
static LogicalResult readActivations(Operation *op, KernelSpec &spec,
                                     const TargetDescription &target) {
  auto attr = op->getAttrOfType<StringAttr>(tfm::kActivationsAttrName);
  if (!attr || attr.getValue() == "f32")
    return success();
  if (attr.getValue() == "bf16") {
    if (spec.weightType != WeightType::BF16 || spec.gpu())
      return op->emitError("tfm.activations = \"bf16\" needs bf16 weights "
                           "and a CPU target");
    spec.bf16Products = true;
    spec.bf16Pairs = target.hasBf16Dot();
    return success();
  }
  if (attr.getValue() != "int8")
    return op->emitError("tfm.activations must be \"f32\", \"int8\" or "
                         "\"bf16\", got \"")
           << attr.getValue() << "\"";
  bool integerWeights = (spec.weightType == WeightType::Int8 ||
                         spec.weightType == WeightType::Int4 ||
                         isKQuant(spec.weightType)) &&
                        spec.group % 2 == 0;
  if (!integerWeights)
    return op->emitError("tfm.activations = \"int8\" needs int8, int4 or "
                         "K-quant weights in groups of an even size");
  spec.integerProducts = true;
  spec.integerMicrokernel = target.integerMicrokernels;
  return success();
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
  std::optional<target::KernelKind> kind = tfm::kernelKindOf(op);
  std::optional<target::TilePlan> tile = target::readTilePlan(op, target);
  if (!kind || !tile)
    return failure();
  spec.kind = *kind;
  spec.tile = *tile;
  if (const auto *packed = std::get_if<target::CpuPackedGemmPlan>(&spec.tile);
      packed && packed->microkernel) {
    if (target.floatMicrokernels.empty())
      return op->emitError("tile plan asks for the f32 microkernel, which "
                           "target '")
             << target.name << "' has none of";
    // The microkernel is compiled for one register tile and depth block;
    // x is packed in tiles of its rows.
    const format::FloatMicrokernelTile own =
        format::floatMicrokernelTile(target.floatMicrokernels);
    if (packed->microM != own.rows || packed->microN != own.vectors ||
        packed->blockK != own.depthBlock || packed->blockM != own.rows)
      return op->emitError("tile plan's f32 microkernel tile (micro_m ")
             << packed->microM << ", micro_n " << packed->microN << ", block_m "
             << packed->blockM << ", block_k " << packed->blockK
             << ") is not the one of target '" << target.name << "' (" << own.rows
             << ", " << own.vectors << ", " << own.rows << ", " << own.depthBlock
             << ")";
    spec.floatMicrokernel = target.floatMicrokernels;
  }
  Value result = op->getResult(0);
  const Shape &out = shapes[result];
  spec.width = lastDim(result);
  // An f32 W in rows (no panels; so f32 x too) in a dot plan (a row per
  // sequence): the target's f32 microkernel over rows, where it has one.
  // The one place that decides it (LinearMicrokernel.cpp's floatRows).
  auto chooseFloatRowMicrokernel = [&](KernelSpec &spec) {
    if (!target.isGpu() && spec.weightType == WeightType::F32 &&
        spec.weightPanel == 0 &&
        std::holds_alternative<target::CpuGemmPlan>(spec.tile))
      spec.floatRowMicrokernel = target.floatMicrokernels;
  };
  json args = json::array();
  auto matrix = [&](Value value) { return arg(value, matrixDims(shapes[value])); };
  auto vector = [&](Value value) {
    return arg(value, json::array({toJson(constant(lastDim(value)))}));
  };
  // A tfm.quantize's bytes (B, rows) as (G, B / G, rows): chunks of its
  // group (support/WeightFormat.h, Quantize.cpp).
  auto quantisedRows = [&](Value value, int64_t group) {
    json chunks = matrixDims(shapes[value]);
    chunks[0] = toJson(constant(group));
    chunks.insert(chunks.begin() + 1, toJson(constant(lastDim(value) / group)));
    return arg(value, std::move(chunks), tfmc::plan::type::kI8);
  };
  // A linear's x, or a tfm.quantize's bytes of it (tfm-quantise-once).
  auto linearInput = [&](Value value, KernelSpec &spec) {
    auto quantize = value.getDefiningOp<tfm::QuantizeOp>();
    if (!quantize)
      return matrix(value);
    spec.quantisedInput = true;
    return quantisedRows(value, int64_t(quantize.getGroup()));
  };
  // A token-row view (D, S, B). In a decode step (`fromCache`) the sequence
  // dimension starts at P, the number of cached tokens: positions and rope
  // act on positions P .. P+S-1.
  auto tokenRows = [&](Value value, bool fromCache) {
    json view = arg(value, halideDims(out));
    if (fromCache)
      view["mins"] = json::array({json::array({0}),
                                  json::array({symbolName(Symbol::Past)}),
                                  json::array({0})});
    return view;
  };
  // position_ids [B, S] viewed as (S, B), its sequence dim starting where
  // the token rows' does (P in a decode step).
  auto positionIdsArg = [&](Value ids, bool fromCache) {
    json view = arg(ids, halideDims(shapes[ids]), tfmc::plan::type::kI64);
    if (fromCache)
      view["mins"] = json::array({json::array({symbolName(Symbol::Past)}),
                                  json::array({0})});
    return view;
  };

  if (auto embedding = dyn_cast<tfm::EmbeddingOp>(op)) {
    auto table = embedding.getTable().getType();
    spec.vocab = table.getDimSize(0);
    // The program's vocabulary bounds token ids: the token tables' rows.
    // The token-type table bounds token_type_ids on its own (the input's
    // "limit"): a type_vocab_size above vocab_size made every id below it
    // pass, clamped in the lookup (issue 25).
    auto ids = dyn_cast<BlockArgument>(embedding.getIds());
    auto inputName =
        ids ? func.getArgAttrOfType<StringAttr>(ids.getArgNumber(), "tfm.input")
            : StringAttr();
    if (!inputName || inputName.getValue() != "token_type_ids")
      vocab = std::max(vocab, spec.vocab);
    args.push_back(arg(embedding.getIds(),
                       halideDims(shapes[embedding.getIds()]), tfmc::plan::type::kI64));
    addWeightArgs(embedding.getTable(), spec, args);
    args.push_back(arg(result, halideDims(out)));
  } else if (auto positions = dyn_cast<tfm::PositionsOp>(op)) {
    bool fromCache = positions.getFromCache();
    spec.sinusoidHalves =
        positions.getKind() == tfm::PositionKind::sinusoidal_halves;
    args.push_back(tokenRows(positions.getInput(), fromCache));
    if (Value ids = positions.getPositionIds()) {
      spec.positionIds = true;
      args.push_back(positionIdsArg(ids, fromCache));
    }
    if (Value table = positions.getTable()) {
      spec.learnedPositions = true;
      auto type = cast<RankedTensorType>(table.getType());
      args.push_back(arg(table, json::array({toJson(constant(type.getDimSize(1))),
                                             toJson(constant(type.getDimSize(0)))})));
    }
    args.push_back(tokenRows(result, fromCache));
  } else if (auto scale = dyn_cast<tfm::ScaleOp>(op)) {
    spec.scale = scale.getFactor().convertToDouble();
    args.push_back(matrix(scale.getInput()));
    args.push_back(matrix(result));
  } else if (auto cap = dyn_cast<tfm::SoftcapOp>(op)) {
    spec.softcap = cap.getCap().convertToDouble();
    args.push_back(matrix(cap.getInput()));
    args.push_back(matrix(result));
  } else if (auto activation = dyn_cast<tfm::ActivationOp>(op)) {
    spec.activation = activationOf(activation.getKind());
    args.push_back(matrix(activation.getInput()));
    args.push_back(matrix(result));
  } else if (isa<tfm::AddOp, tfm::MulOp>(op)) {
    args.push_back(matrix(op->getOperand(0)));
    args.push_back(matrix(op->getOperand(1)));
    args.push_back(matrix(result));
  } else if (auto rope = dyn_cast<tfm::RopeOp>(op)) {
    spec.heads = rope.getHeads();
    spec.headDim = spec.width / spec.heads;
    spec.ropeTheta = rope.getTheta().convertToDouble();
    spec.ropeInterleaved = rope.getInterleaved();
    if (std::optional<tfm::RopeScalingAttr> scaling = rope.getScaling()) {
      switch (scaling->getKind()) {
      case tfm::RopeScalingKind::linear:
        spec.ropeScaling = KernelSpec::RopeScaling::Linear;
        break;
      case tfm::RopeScalingKind::llama3:
        spec.ropeScaling = KernelSpec::RopeScaling::Llama3;
        break;
      case tfm::RopeScalingKind::longrope:
        spec.ropeScaling = KernelSpec::RopeScaling::LongRope;
        break;
      }
      llvm::ArrayRef<double> factors =
          scaling->getFrequencyFactors().asArrayRef();
      spec.ropeFrequencyFactors.assign(factors.begin(), factors.end());
      spec.ropeFactor = scaling->getFactor().convertToDouble();
      spec.ropeLowFreqFactor = scaling->getLowFreqFactor().convertToDouble();
      spec.ropeHighFreqFactor = scaling->getHighFreqFactor().convertToDouble();
      spec.ropeOriginalMaxLen = scaling->getOriginalMaxLen();
    }
    args.push_back(tokenRows(rope.getInput(), rope.getFromCache()));
    if (Value ids = rope.getPositionIds()) {
      spec.positionIds = true;
      args.push_back(positionIdsArg(ids, rope.getFromCache()));
    }
    args.push_back(tokenRows(result, rope.getFromCache()));
  } else if (auto quantize = dyn_cast<tfm::QuantizeOp>(op)) {
    // x (K, R) -> its rows' bytes (B, R) in chunks of a group, viewed as
    // (G, B / G, R) (support/WeightFormat.h, Quantize.cpp).
    spec.inWidth = lastDim(quantize.getInput());
    spec.group = int64_t(quantize.getGroup());
    args.push_back(matrix(quantize.getInput()));
    args.push_back(quantisedRows(result, spec.group));
  } else if (auto gated = dyn_cast<tfm::GatedLinearOp>(op)) {
    spec.inWidth = gated.getGate().getType().getDimSize(1);
    spec.activation = activationOf(gated.getActivation());
    args.push_back(linearInput(gated.getInput(), spec));
    addWeightArgs(gated.getGate(), spec, args);
    addWeightArgs(gated.getUp(), spec, args);
    if (failed(readActivations(op, spec, target)))
      return failure();
    chooseFloatRowMicrokernel(spec);
    if (gated.getGateBias()) {
      spec.hasBias = true;
      args.push_back(vector(gated.getGateBias()));
      args.push_back(vector(gated.getUpBias()));
    }
    args.push_back(matrix(result));
  } else if (auto linear = dyn_cast<tfm::LinearOp>(op)) {
    auto weight = linear.getWeight().getType();
    spec.inWidth = weight.getDimSize(1);
    spec.activation = activationOf(linear.getActivation());
    args.push_back(linearInput(linear.getInput(), spec));
    addWeightArgs(linear.getWeight(), spec, args);
    if (failed(readActivations(op, spec, target)))
      return failure();
    chooseFloatRowMicrokernel(spec);
    if (Value bias = linear.getBias()) {
      spec.hasBias = true;
      args.push_back(vector(bias));
    }
    if (Value residual = linear.getResidual()) {
      spec.hasResidual = true;
      args.push_back(matrix(residual));
    }
    args.push_back(matrix(result));
  } else if (auto norm = dyn_cast<tfm::NormOpInterface>(op)) {
    // x [, residual], gamma [, beta]: RMSNorm has no beta.
    spec.eps = norm.getEps().convertToDouble();
    if (auto rms = dyn_cast<tfm::RmsNormOp>(op))
      spec.normGainOffset = rms.getUnitOffset();
    args.push_back(matrix(norm.getInput()));
    if (Value residual = norm.getResidual()) {
      spec.hasResidual = true;
      args.push_back(matrix(residual));
    }
    args.push_back(vector(norm.getGamma()));
    if (Value beta = norm.getBeta())
      args.push_back(vector(beta));
    args.push_back(matrix(result));
  } else if (auto attention = dyn_cast<tfm::AttentionOp>(op)) {
    if (!attention.isMergedLayout())
      return op->emitError("tfmc compiles attention in the [B, S, H*D] "
                           "layout only; run tfm-fuse-epilogues first");
    spec.heads = attention.getNumHeads();
    spec.kvHeads = attention.getNumKvHeads();
    spec.headDim = attention.getHeadSize();
    spec.valueHeadDim = attention.getValueHeadSize();
    spec.attentionScale = attention.getScale().convertToDouble();
    if (std::optional<llvm::APFloat> cap = attention.getLogitSoftcap())
      spec.softcap = cap->convertToDouble();
    tfm::MaskAttr mask = attention.getMask();
    spec.mask.causal = mask.getCausal();
    spec.mask.padding = mask.getPadding();
    spec.mask.window = mask.getWindow();
    spec.mask.queriesAtEnd = attention.getFromCache();
    // [B, S, H*D] viewed as (D, H, S, B); K and V have kv_heads heads.
    auto heads = [&](Value value, int64_t headWidth, int64_t count) {
      const Shape &shape = shapes[value];
      return arg(value, json::array({toJson(constant(headWidth)),
                                     toJson(constant(count)),
                                     toJson(shape[1]), toJson(shape[0])}));
    };
    args.push_back(heads(attention.getQuery(), spec.headDim, spec.heads));
    auto pagedRead = [&](Value value) {
      auto append = value.getDefiningOp<tfm::KvAppendOp>();
      return decode && append && paged(append.getSlot());
    };
    if (pagedRead(attention.getKey()) != pagedRead(attention.getValue()))
      return op->emitError("attention reads keys and values from one paged "
                           "KV cache, or neither");
    if (pagedRead(attention.getKey())) {
      // The block pools, (head dim, block position, head, N pool blocks:
      // head-major blocks), and each key's pool row.
      spec.pagedCache = true;
      auto pool = [&](Value value, int64_t headWidth) {
        return arg(value,
                   json::array({toJson(constant(headWidth)),
                                toJson(constant(tfmc::plan::kBlockTokens)),
                                toJson(constant(spec.kvHeads)),
                                toJson(symbol(Symbol::PoolBlocks))}));
      };
      args.push_back(pool(attention.getKey(), spec.headDim));
      args.push_back(pool(attention.getValue(), spec.valueHeadDim));
      const Shape &keys = shapes[attention.getKey()];
      args.push_back({{"value", keyRowsIndex()},
                      {"type", tfmc::plan::type::kI32},
                      {"dims", json::array({toJson(keys[1]), toJson(keys[0])})}});
    } else {
      args.push_back(heads(attention.getKey(), spec.headDim, spec.kvHeads));
      args.push_back(
          heads(attention.getValue(), spec.valueHeadDim, spec.kvHeads));
    }
    if (Value keyPadding = attention.getKeyPadding())
      args.push_back(arg(keyPadding, halideDims(shapes[keyPadding]), tfmc::plan::type::kI64));
    args.push_back(heads(result, spec.valueHeadDim, spec.heads));
  } else if (isa<tfm::LastPositionOp, tfm::FirstPositionOp>(op)) {
    Value input = op->getOperand(0);
    args.push_back(arg(input, halideDims(shapes[input])));
    args.push_back(matrix(result));
  } else {
    return op->emitError("tfmc has no kernel for '") << op->getName() << "'";
  }

  if (failed(typeCacheAccess(op, spec)))
    return failure();

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
  std::string name = kernelSymbol(op, spec, target);
  kernels.try_emplace(name, LoweredKernel{spec, op});
  // The op and its .tfm line, so that `NAME bench` can say which kernel is
  // which.
  std::string location;
  llvm::raw_string_ostream locationStream(location);
  op->getLoc().print(locationStream);
  json step = {{"kernel", name},
               {"op", op->getName().getStringRef().str()},
               {"loc", location},
               {"args", std::move(args)}};
  // Reported by `NAME info`: int8 activations are a precision the user
  // chose.
  if (spec.integerProducts)
    step["activations"] = "int8";
  // Its x is a tfm.quantize's bytes: K for the report (Roofline.h).
  if (spec.quantisedInput)
    step["depth"] = spec.inWidth;
  else if (spec.bf16Products)
    step["activations"] = "bf16";
  stepsJson.push_back(std::move(step));
  // Rows appended to a paged slot: the runtime copies them into their
  // sequences' blocks (the P cached positions on).
  if (tfm::KvAppendOp append = tfm::cacheWriteOf(op);
      append && paged(append.getSlot()))
    stepsJson.push_back(
        {{"store", tables.slotIndex.lookup(append.getSlot())},
         {"args", json::array({arg(result, halideDims(out))})}});
  return success();
}

LogicalResult EntryLowering::run() {
  auto intAttr = [&](StringRef name) -> int64_t {
    auto attr = func->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };

  // Inputs: each sequence input names its sequence symbol.
  json inputs = json::array();
  for (BlockArgument argument : func.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                                  "tfm.input");
    if (!name)
      return func.emitError("argument without a tfm.input name");
    bool decoder = name.getValue().starts_with("decoder_");
    Shape shape{symbol(Symbol::Batch),
                symbol(decoder ? Symbol::Target : Symbol::Source)};
    bool mask = name.getValue().ends_with("attention_mask");
    // A decoder-only decode step's mask covers the L cached keys.
    if (decode && name.getValue() == "attention_mask" &&
        llvm::none_of(func.getArguments(), [&](BlockArgument other) {
          auto otherName = func.getArgAttrOfType<StringAttr>(
              other.getArgNumber(), "tfm.input");
          return otherName && otherName.getValue().starts_with("decoder_");
        }))
      shape[1] = symbol(Symbol::Length);
    shapes[argument] = shape;
    bool positions = name.getValue() == "position_ids";
    bool types = name.getValue() == "token_type_ids";
    json input = {{"name", name.str()},
                  {"kind", mask        ? "mask"
                           : positions ? "positions"
                           : types     ? "types"
                                       : "ids"},
                  {"dims", json::array({toJson(shape[0]), toJson(shape[1])})},
                  {"optional", mask || positions || types}};
    // Token types index their table: its rows bound them.
    if (types)
      for (Operation *user : argument.getUsers())
        if (auto lookup = dyn_cast<tfm::EmbeddingOp>(user))
          input["limit"] = lookup.getTable().getType().getDimSize(0);
    inputs.push_back(std::move(input));
  }
  // The masks the model's kind takes (attention_mask; an encoder-decoder's
  // decoder_attention_mask too) that no attention reads are listed as
  // "unused", with "causal": whether every attention over that stack's keys
  // is causal, so that right padding cannot change the unpadded outputs and
  // the runtime may accept zeros (docs/user-guide.md's input contract). An
  // attention's keys are the decoder's when they derive from a decoder_
  // input.
  bool hasTarget = llvm::any_of(inputs, [](const json &input) {
    return input["name"].get<std::string>().rfind("decoder_", 0) == 0;
  });
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
    Shape shape{symbol(Symbol::Batch),
                symbol(target ? Symbol::Target : Symbol::Source)};
    inputs.push_back({{"name", maskName},
                      {"kind", "mask"},
                      {"dims", json::array({toJson(shape[0]), toJson(shape[1])})},
                      {"optional", true},
                      {"unused", true},
                      {"causal", causal}});
  }

  for (Operation &op : func.getBody().front()) {
    if (tfm::computesTensor(&op)) {
      if (failed(lowerKernel(&op)))
        return failure();
    } else if (isa<tfm::KvAppendOp, tfm::KvReadOp>(op)) {
      if (failed(assignShape(&op)))
        return failure();
    }
  }

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() == 0)
    return func.emitError("tfmc entry points return at least one tensor");
  std::vector<EntryPlanParts::Output> outputs;
  for (auto [index, output] : llvm::enumerate(ret.getOperands())) {
    FailureOr<int64_t> outputIndex = valueIndex(output);
    if (failed(outputIndex))
      return failure();
    json outputDims = json::array();
    for (const Extent &extent : shapes[output])
      outputDims.push_back(toJson(extent));
    auto outputName =
        func.getResultAttrOfType<StringAttr>(index, "tfm.output");
    outputs.push_back({outputName ? outputName.str()
                                  : "output" + std::to_string(index),
                       *outputIndex, std::move(outputDims)});
  }

  auto module = func->getParentOfType<ModuleOp>();
  EntryPlanParts parts;
  parts.model = module.getSymName() ? module.getSymName()->str() : "model";
  parts.entry = func.getSymName().str();
  parts.target = target.name;
  parts.gpu = target.isGpu();
  parts.vocab = vocab;
  parts.maxLen = intAttr("tfm.max_len");
  parts.maxBatch = intAttr("tfm.max_batch");
  parts.maxSeq = intAttr("tfm.max_seq");
  parts.arenaBytes = intAttr("tfm.arena_size");
  parts.inputs = std::move(inputs);
  parts.weights = tables.weights;
  parts.cache = tables.cache;
  if (!tables.pagedSlots.empty())
    parts.blockTokens = tfmc::plan::kBlockTokens;
  parts.values = valuesJson;
  parts.steps = stepsJson;
  parts.outputs = std::move(outputs);
  plan = writeEntryPlan(parts);
  return success();
}

} // namespace

FailureOr<LoweredModule> lowerModule(ModuleOp module,
                                     const TargetDescription &target,
                                     bool autoschedule) {
  ModuleTables tables(module, target);
  LoweredModule lowered;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    EntryLowering lowering(func, target, tables, autoschedule);
    if (failed(lowering.run()))
      return failure();
    lowered.kernels.insert(lowering.kernels.begin(), lowering.kernels.end());
    lowered.plans.push_back(std::move(lowering.plan));
  }
  if (lowered.plans.empty() ||
      lowered.plans.front()["entry"].get<std::string>() != "forward")
    return module.emitError("the module has no forward entry point");
  return lowered;
}

} // namespace tfmc::codegen
