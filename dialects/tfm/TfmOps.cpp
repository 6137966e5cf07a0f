//===- TfmOps.cpp - tfm operation verifiers -------------------------------===//
//
// Static dimensions must agree; a dynamic dimension (`?`) agrees with
// anything, since batch and sequence lengths are only known at run time.
//
//===----------------------------------------------------------------------===//

#include "dialects/tfm/TfmDialect.h"
#include "support/WeightFormat.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace tfmc::tfm;

namespace {

bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

std::string dimStr(int64_t dim) {
  return ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
}

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Emits "<what> must have rank <rank>" unless `value` has that rank.
LogicalResult checkRank(Operation *op, Value value, int64_t rank,
                        StringRef what) {
  int64_t actual = tensorType(value).getRank();
  if (actual == rank)
    return success();
  return op->emitOpError() << what << " must have rank " << rank << ", got "
                           << actual;
}

/// Emits "<what> (A) does not match <other> (B)" unless the dims agree.
LogicalResult checkDim(Operation *op, int64_t a, StringRef what, int64_t b,
                       StringRef other) {
  if (dimsAgree(a, b))
    return success();
  return op->emitOpError() << what << " (" << dimStr(a)
                           << ") does not match " << other << " ("
                           << dimStr(b) << ")";
}

LogicalResult checkFinite(Operation *op, StringRef name, double value,
                          bool mustBePositive) {
  if (!std::isfinite(value))
    return op->emitOpError() << name << " must be finite, got " << value;
  if (mustBePositive && value <= 0)
    return op->emitOpError() << name << " must be positive, got " << value;
  return success();
}

/// Every dimension of `result` but the last agrees with `input`'s.
LogicalResult checkLeadingDims(Operation *op, RankedTensorType input,
                               RankedTensorType result) {
  for (int64_t i = 0, e = input.getRank() - 1; i < e; ++i)
    if (failed(checkDim(op, result.getDimSize(i),
                        "result dimension " + std::to_string(i),
                        input.getDimSize(i),
                        "input dimension " + std::to_string(i))))
      return failure();
  return success();
}

/// x · Wᵀ (+ b) of a linear or a gated linear (operand 0 is x, result 0
/// the output): x of rank >= 2, W [out, in], the result shaped like x with
/// `out` features, and each bias [out].
LogicalResult checkProjection(Operation *op, Value weightValue,
                              StringRef weightName, ArrayRef<Value> biases) {
  Value inputValue = op->getOperand(0), resultValue = op->getResult(0);
  auto input = tensorType(inputValue), result = tensorType(resultValue);
  if (input.getRank() < 2)
    return op->emitOpError() << "input must have rank >= 2, got "
                             << input.getRank();
  if (failed(checkRank(op, weightValue, 2, weightName)) ||
      failed(checkRank(op, resultValue, input.getRank(), "result")))
    return failure();
  auto weight = tensorType(weightValue).getShape();
  // x quantised once (tfm.quantize's bytes, int8 activations): its
  // features are the quantize's input's.
  int64_t features = input.getShape().back();
  if (input.getElementType().isInteger(8)) {
    auto quantize = inputValue.getDefiningOp<QuantizeOp>();
    if (!quantize)
      return op->emitOpError("an i8 input must be a tfm.quantize's result");
    if (activationsOf(op) != "int8")
      return op->emitOpError("an i8 input (a tfm.quantize's) needs "
                             "tfm.activations = \"int8\"");
    features = quantize.getInput().getType().getShape().back();
  }
  if (failed(checkDim(op, features, "input features", weight[1],
                      "weight in-features")) ||
      failed(checkDim(op, result.getShape().back(), "result features",
                      weight[0], "weight out-features")))
    return failure();
  if (failed(checkLeadingDims(op, input, result)))
    return failure();
  for (Value bias : biases) {
    if (!bias)
      continue;
    if (failed(checkRank(op, bias, 1, "bias")) ||
        failed(checkDim(op, tensorType(bias).getDimSize(0), "bias size",
                        weight[0], "weight out-features")))
      return failure();
  }
  return success();
}

/// A norm over the last dimension (operand 0 is x, result 0 the output):
/// the result and an optional residual typed like x, and gamma [width].
/// (LayerNorm's beta and both eps checks are the callers'.)
LogicalResult checkNorm(Operation *op, Value residual, Value gamma) {
  auto input = tensorType(op->getOperand(0));
  // The result's shape is the input's: Tfm_SameShapeAsInput checks it.
  if (input.getRank() < 1)
    return op->emitOpError("input must have rank >= 1");
  if (residual && residual.getType() != input)
    return op->emitOpError() << "residual type " << residual.getType()
                             << " does not match input type " << input;
  if (failed(checkRank(op, gamma, 1, "gamma")) ||
      failed(checkDim(op, tensorType(gamma).getDimSize(0), "gamma size",
                      input.getShape().back(), "normalized width")))
    return failure();
  return success();
}

/// A mask over one sequence's own positions: [B, S, d] -> [S, S].
LogicalResult verifySequenceMask(Operation *op, Value sequence, Value mask) {
  if (failed(checkRank(op, sequence, 3, "sequence")) ||
      failed(checkRank(op, mask, 2, "result")))
    return failure();
  int64_t length = tensorType(sequence).getDimSize(1);
  auto result = tensorType(mask).getShape();
  if (failed(checkDim(op, result[0], "result rows", length,
                      "sequence length")) ||
      failed(checkDim(op, result[1], "result columns", length,
                      "sequence length")))
    return failure();
  return success();
}

} // namespace

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty parameter name");
  if (ArrayAttr altNames = getAltNamesAttr())
    for (Attribute alt : altNames)
      if (cast<StringAttr>(alt).getValue().empty())
        return emitOpError("needs non-empty alternative names");
  if (getTransposed() && getType().getRank() != 2)
    return emitOpError("is 'transposed', which needs a rank-2 result, but "
                       "the result has rank ")
           << getType().getRank();
  std::optional<WeightStorage> storage = getStorage();
  if (storage && getType().getRank() != 2)
    return emitOpError("has a storage, which needs a rank-2 result, but the "
                       "result has rank ")
           << getType().getRank();
  bool grouped = storage == WeightStorage::int8 || storage == WeightStorage::int4;
  if (grouped != bool(getGroup()))
    return emitOpError(grouped ? "has int8 or int4 storage, which needs a 'group'"
                               : "has a 'group', which only int8 and int4 "
                                 "storage take");
  if (storage && isKQuant(*storage)) {
    if (getType().getDimSize(1) % format::kKQuantBlockValues != 0)
      return emitOpError("has ")
             << stringifyWeightStorage(*storage)
             << " storage, whose rows are whole super-blocks of "
             << format::kKQuantBlockValues << " values, but has "
             << getType().getDimSize(1) << " columns";
    if (getPanel())
      return emitOpError("has ") << stringifyWeightStorage(*storage)
                                 << " storage, which has no panels";
  }
  if (storage == WeightStorage::int4 &&
      int64_t(*getGroup()) != format::kInt4BlockValues)
    return emitOpError("has int4 storage, whose group is ")
           << format::kInt4BlockValues << " (Q4_0 blocks), not " << *getGroup();
  if (std::optional<uint64_t> panel = getPanel()) {
    // f32 panels, or int8 / int4 block panels (support/WeightFormat.h).
    const bool blocks =
        storage == WeightStorage::int4 ||
        (storage == WeightStorage::int8 &&
         int64_t(*getGroup()) % format::kBlockPanelLaneBytes == 0);
    if ((storage && !blocks) || getType().getRank() != 2)
      return emitOpError("has a 'panel', which needs an f32, int4 or int8 "
                         "(in groups of a multiple of ")
             << format::kBlockPanelLaneBytes << ") rank-2 weight";
    if (blocks && int64_t(*panel) != format::kBlockPanelRows)
      return emitOpError("has int8 or int4 storage in panels of ")
             << *panel << " rows, not " << format::kBlockPanelRows;
    if (getType().getDimSize(0) % int64_t(*panel) != 0)
      return emitOpError("has panels of ")
             << *panel << " rows, which do not divide its "
             << getType().getDimSize(0) << " rows";
  }
  return success();
}

int64_t WeightOp::getStorageBytes() {
  int64_t elements = getType().getNumElements();
  switch (getStorage().value_or(WeightStorage(-1))) {
  case WeightStorage::bf16:
    return elements * 2;
  case WeightStorage::int8:
    return getType().getDimSize(0) *
           format::int8RowBytes(getType().getDimSize(1), int64_t(*getGroup()));
  case WeightStorage::int4:
    return getType().getDimSize(0) *
           format::int4RowBytes(getType().getDimSize(1));
  case WeightStorage::q4_k:
  case WeightStorage::q5_k:
  case WeightStorage::q6_k:
    return getType().getDimSize(0) * getType().getDimSize(1) /
           format::kKQuantBlockValues * kQuantBlockBytes(*getStorage());
  }
  return elements * 4;
}

LogicalResult EmbeddingOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getTable(), 2, "table")) ||
      failed(checkRank(op, getIds(), 2, "ids")) ||
      failed(checkRank(op, getResult(), 3, "result")))
    return failure();
  auto table = getTable().getType().getShape();
  auto ids = getIds().getType().getShape();
  auto result = getResult().getType().getShape();
  if (failed(checkDim(op, result[0], "result batch", ids[0], "ids batch")) ||
      failed(checkDim(op, result[1], "result sequence", ids[1],
                      "ids sequence")) ||
      failed(checkDim(op, result[2], "result width", table[1],
                      "embedding width")))
    return failure();
  return success();
}

LogicalResult PositionsOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 3, "input")))
    return failure();
  if (Value ids = getPositionIds();
      ids && failed(checkRank(op, ids, 2, "position_ids")))
    return failure();
  bool learned = getKind() == PositionKind::learned;
  if (learned != bool(getTable()))
    return emitOpError() << (learned ? "learned positions need a table"
                                     : "sinusoidal positions take no table");
  if (!learned)
    return success();
  if (failed(checkRank(op, getTable(), 2, "position table")))
    return failure();
  return checkDim(op, getTable().getType().getDimSize(1),
                  "position table width", getInput().getType().getDimSize(2),
                  "input width");
}

LogicalResult LinearOp::verify() {
  if (failed(checkProjection(getOperation(), getWeight(), "weight",
                             getBias())))
    return failure();
  auto result = getResult().getType();
  if (Value residual = getResidual(); residual && residual.getType() != result)
    return emitOpError() << "residual type " << residual.getType()
                         << " does not match result type " << result;
  return success();
}

LogicalResult GatedLinearOp::verify() {
  if (getGate().getType().getShape() != getUp().getType().getShape())
    return emitOpError() << "gate weight " << getGate().getType()
                         << " and up weight " << getUp().getType()
                         << " differ in shape";
  if (bool(getGateBias()) != bool(getUpBias()))
    return emitOpError("the gate and up biases must be both present or both "
                       "absent");
  return checkProjection(getOperation(), getGate(), "gate weight",
                         {getGateBias(), getUpBias()});
}

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  auto lhs = getLhs().getType();
  auto rhs = getRhs().getType();
  auto result = getResult().getType();
  int64_t rank = lhs.getRank();
  if (rank < 2)
    return emitOpError() << "operands must have rank >= 2, got " << rank;
  if (failed(checkRank(op, getRhs(), rank, "rhs")) ||
      failed(checkRank(op, getResult(), rank, "result")))
    return failure();
  for (int64_t i = 0; i < rank - 2; ++i) {
    std::string dim = "batch dimension " + std::to_string(i);
    if (failed(checkDim(op, lhs.getDimSize(i), "lhs " + dim, rhs.getDimSize(i),
                        "rhs " + dim)) ||
        failed(checkDim(op, result.getDimSize(i), "result " + dim,
                        lhs.getDimSize(i), "lhs " + dim)))
      return failure();
  }
  int64_t m = lhs.getDimSize(rank - (getTransposeLhs() ? 1 : 2));
  int64_t kl = lhs.getDimSize(rank - (getTransposeLhs() ? 2 : 1));
  int64_t kr = rhs.getDimSize(rank - (getTransposeRhs() ? 1 : 2));
  int64_t n = rhs.getDimSize(rank - (getTransposeRhs() ? 2 : 1));
  if (failed(checkDim(op, kl, "lhs contraction size", kr,
                      "rhs contraction size")) ||
      failed(checkDim(op, result.getDimSize(rank - 2), "result rows", m,
                      "lhs rows")) ||
      failed(checkDim(op, result.getDimSize(rank - 1), "result columns", n,
                      "rhs columns")))
    return failure();
  return success();
}

LogicalResult SplitOp::verify() {
  auto input = getInput().getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= input.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << input.getRank();
  if (getParts().empty())
    return emitOpError("needs at least one result");
  int64_t total = 0;
  bool known = true;
  for (Value part : getParts()) {
    auto partType = cast<RankedTensorType>(part.getType());
    if (partType.getElementType() != input.getElementType())
      return emitOpError("parts must have the input's element type");
    if (failed(checkRank(getOperation(), part, input.getRank(), "each part")))
      return failure();
    for (int64_t i = 0; i < input.getRank(); ++i) {
      if (i == axis)
        continue;
      if (failed(checkDim(getOperation(), partType.getDimSize(i),
                          "part dimension " + std::to_string(i),
                          input.getDimSize(i),
                          "input dimension " + std::to_string(i))))
        return failure();
    }
    int64_t size = partType.getDimSize(axis);
    known = known && !ShapedType::isDynamic(size);
    if (known)
      total += size;
  }
  int64_t in = input.getDimSize(axis);
  if (known && !ShapedType::isDynamic(in) && total != in)
    return emitOpError() << "parts of sizes adding up to " << total
                         << " along axis " << axis << " do not make " << in;
  return success();
}

int64_t SplitOp::getPartOffset(unsigned index) {
  int64_t offset = 0;
  for (unsigned i = 0; i < index; ++i)
    offset += cast<RankedTensorType>(getParts()[i].getType()).getNumElements();
  return offset;
}

LogicalResult SplitHeadsOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 3, "input")) ||
      failed(checkRank(op, getResult(), 4, "result")))
    return failure();
  auto in = getInput().getType().getShape();
  auto out = getResult().getType().getShape();
  if (ShapedType::isDynamic(out[1]) || ShapedType::isDynamic(out[3]) ||
      ShapedType::isDynamic(in[2]))
    return emitOpError("needs static heads, head size and model width");
  if (out[1] * out[3] != in[2])
    return emitOpError() << "heads (" << out[1] << ") x head size (" << out[3]
                         << ") does not match input width (" << in[2] << ")";
  if (failed(checkDim(op, out[0], "result batch", in[0], "input batch")) ||
      failed(checkDim(op, out[2], "result sequence", in[1],
                      "input sequence")))
    return failure();
  return success();
}

LogicalResult MergeHeadsOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 4, "input")) ||
      failed(checkRank(op, getResult(), 3, "result")))
    return failure();
  auto in = getInput().getType().getShape();
  auto out = getResult().getType().getShape();
  if (ShapedType::isDynamic(in[1]) || ShapedType::isDynamic(in[3]) ||
      ShapedType::isDynamic(out[2]))
    return emitOpError("needs static heads, head size and model width");
  if (in[1] * in[3] != out[2])
    return emitOpError() << "heads (" << in[1] << ") x head size (" << in[3]
                         << ") does not match result width (" << out[2]
                         << ")";
  if (failed(checkDim(op, out[0], "result batch", in[0], "input batch")) ||
      failed(checkDim(op, out[1], "result sequence", in[2],
                      "input sequence")))
    return failure();
  return success();
}

LogicalResult ScaleOp::verify() {
  return checkFinite(getOperation(), "factor", getFactor().convertToDouble(),
                     /*mustBePositive=*/false);
}

LogicalResult SoftcapOp::verify() {
  return checkFinite(getOperation(), "cap", getCap().convertToDouble(),
                     /*mustBePositive=*/true);
}

LogicalResult LayerNormOp::verify() {
  Operation *op = getOperation();
  if (failed(checkNorm(op, getResidual(), getGamma())) ||
      failed(checkRank(op, getBeta(), 1, "beta")) ||
      failed(checkDim(op, getBeta().getType().getDimSize(0), "beta size",
                      getInput().getType().getShape().back(),
                      "normalized width")))
    return failure();
  return checkFinite(op, "eps", getEps().convertToDouble(),
                     /*mustBePositive=*/true);
}

LogicalResult RmsNormOp::verify() {
  Operation *op = getOperation();
  if (failed(checkNorm(op, getResidual(), getGamma())))
    return failure();
  return checkFinite(op, "eps", getEps().convertToDouble(),
                     /*mustBePositive=*/true);
}

LogicalResult RopeOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 3, "input ([B, S, H*Dh])")))
    return failure();
  if (Value ids = getPositionIds();
      ids && failed(checkRank(op, ids, 2, "position_ids")))
    return failure();
  int64_t heads = getHeads();
  if (heads <= 0)
    return emitOpError() << "heads must be positive, got " << heads;
  int64_t width = getInput().getType().getDimSize(2);
  if (ShapedType::isDynamic(width))
    return emitOpError("the feature width must be static");
  if (width % heads != 0 || (width / heads) % 2 != 0)
    return emitOpError() << "width " << width << " is not " << heads
                         << " heads of an even size (rope rotates pairs)";
  if (std::optional<RopeScalingAttr> scaling = getScaling();
      scaling && scaling->getKind() == RopeScalingKind::longrope &&
      int64_t(scaling->getFrequencyFactors().asArrayRef().size()) * 2 !=
          width / heads)
    return emitOpError() << "longrope scaling has "
                         << scaling->getFrequencyFactors().asArrayRef().size()
                         << " factors; heads of " << width / heads
                         << " features turn " << width / heads / 2
                         << " pairs, one factor each";
  return checkFinite(op, "theta", getTheta().convertToDouble(),
                     /*mustBePositive=*/true);
}

LogicalResult RepeatHeadsOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 4, "input ([B, Hkv, S, D])")) ||
      failed(checkRank(op, getResult(), 4, "result")))
    return failure();
  auto in = getInput().getType().getShape();
  auto out = getResult().getType().getShape();
  if (failed(checkDim(op, out[0], "result batch", in[0], "input batch")) ||
      failed(checkDim(op, out[2], "result length", in[2], "input length")) ||
      failed(checkDim(op, out[3], "result head size", in[3],
                      "input head size")))
    return failure();
  if (ShapedType::isDynamic(in[1]) || ShapedType::isDynamic(out[1]))
    return emitOpError("head counts must be static");
  if (out[1] % in[1] != 0)
    return emitOpError() << "result heads (" << out[1]
                         << ") are not a multiple of input heads (" << in[1]
                         << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  return success();
}

LogicalResult CausalMaskOp::verify() {
  return verifySequenceMask(getOperation(), getSequence(), getResult());
}

LogicalResult WindowMaskOp::verify() {
  if (int64_t size = getSize(); size <= 0)
    return emitOpError() << "window size must be positive, got " << size;
  return verifySequenceMask(getOperation(), getSequence(), getResult());
}

LogicalResult PaddingMaskOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getKeyMask(), 2, "key mask")) ||
      failed(checkRank(op, getResult(), 4, "result")))
    return failure();
  auto in = getKeyMask().getType().getShape();
  auto out = getResult().getType().getShape();
  if (out[1] != 1 || out[2] != 1)
    return emitOpError() << "result must have shape [B, 1, 1, S], got [" 
                         << dimStr(out[0]) << ", " << dimStr(out[1]) << ", "
                         << dimStr(out[2]) << ", " << dimStr(out[3]) << "]";
  if (failed(checkDim(op, out[0], "result batch", in[0], "key mask batch")) ||
      failed(checkDim(op, out[3], "result keys", in[1], "key mask length")))
    return failure();
  return success();
}

LogicalResult MaskAndOp::verify() {
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(getLhs().getType().getShape(),
                                          getRhs().getType().getShape(),
                                          shape))
    return emitOpError("operand shapes do not broadcast");
  auto result = getResult().getType();
  if (failed(checkRank(getOperation(), getResult(), shape.size(), "result")))
    return failure();
  for (size_t i = 0; i < shape.size(); ++i)
    if (failed(checkDim(getOperation(), result.getDimSize(i),
                        "result dimension " + std::to_string(i), shape[i],
                        "broadcast dimension " + std::to_string(i))))
      return failure();
  return success();
}

LogicalResult ApplyMaskOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getScores(), 4, "scores")))
    return failure();
  auto scores = getScores().getType().getShape();
  auto mask = getMask().getType().getShape();
  if (mask.size() < 2 || mask.size() > 4)
    return emitOpError() << "mask must have rank 2 to 4, got " << mask.size();
  // Right-aligned: each mask dimension is 1 (broadcast) or the score's.
  size_t offset = scores.size() - mask.size();
  for (size_t i = 0; i < mask.size(); ++i) {
    int64_t m = mask[i], s = scores[offset + i];
    if (m == 1 || dimsAgree(m, s))
      continue;
    return emitOpError() << "mask dimension " << i << " (" << dimStr(m)
                         << ") does not broadcast to scores dimension "
                         << offset + i << " (" << dimStr(s) << ")";
  }
  return success();
}

LogicalResult KvAppendOp::verify() {
  Operation *op = getOperation();
  if (getSlot().empty())
    return emitOpError("needs a non-empty cache slot name");
  if (failed(checkRank(op, getNewRows(), 3, "new rows")) ||
      failed(checkRank(op, getResult(), 3, "result")))
    return failure();
  auto rows = getNewRows().getType().getShape();
  auto all = getResult().getType().getShape();
  if (failed(checkDim(op, all[0], "result batch", rows[0], "new rows batch")) ||
      failed(checkDim(op, all[2], "result width", rows[2], "new rows width")))
    return failure();
  return success();
}

LogicalResult KvReadOp::verify() {
  if (getSlot().empty())
    return emitOpError("needs a non-empty cache slot name");
  return checkRank(getOperation(), getResult(), 3, "result");
}

LogicalResult LastPositionOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 3, "input")) ||
      failed(checkRank(op, getResult(), 3, "result")))
    return failure();
  auto input = getInput().getType().getShape();
  auto result = getResult().getType().getShape();
  if (result[1] != 1)
    return emitOpError() << "result sequence must be 1 (one position per "
                            "row), got "
                         << dimStr(result[1]);
  if (input[1] == 0)
    return emitOpError("input sequence is empty: it has no last position");
  if (failed(checkDim(op, result[0], "result batch", input[0],
                      "input batch")) ||
      failed(checkDim(op, result[2], "result width", input[2],
                      "input width")))
    return failure();
  return success();
}

LogicalResult QuantizeOp::verify() {
  Operation *op = getOperation();
  auto input = getInput().getType(), result = getResult().getType();
  if (input.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  if (failed(checkRank(op, getResult(), input.getRank(), "result")))
    return failure();
  if (failed(checkLeadingDims(op, input, result)))
    return failure();
  int64_t features = input.getShape().back();
  if (ShapedType::isDynamic(features))
    return emitOpError("input features must be static");
  return checkDim(op, result.getShape().back(), "result bytes",
                  tfmc::format::quantisedRowBytes(
                      features, int64_t(getGroup())),
                  "a row's quantised bytes");
}

LogicalResult FirstPositionOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), 3, "input")) ||
      failed(checkRank(op, getResult(), 2, "result")))
    return failure();
  auto input = getInput().getType().getShape();
  auto result = getResult().getType().getShape();
  if (input[1] == 0)
    return emitOpError("input sequence is empty: it has no first position");
  if (failed(checkDim(op, result[0], "result batch", input[0],
                      "input batch")) ||
      failed(checkDim(op, result[1], "result width", input[2],
                      "input width")))
    return failure();
  return success();
}

int64_t AttentionOp::getNumHeads() {
  if (std::optional<uint64_t> heads = getHeads())
    return *heads;
  return getQuery().getType().getDimSize(1);
}

int64_t AttentionOp::getNumKvHeads() {
  if (!isMergedLayout())
    return getKey().getType().getDimSize(1);
  if (std::optional<uint64_t> kvHeads = getKvHeads())
    return *kvHeads;
  return getNumHeads();
}

int64_t AttentionOp::headSizeOf(Value operand) {
  int64_t width = cast<ShapedType>(operand.getType()).getShape().back();
  if (!isMergedLayout() || ShapedType::isDynamic(width))
    return width;
  bool keysOrValues = operand == getKey() || operand == getValue();
  return width / (keysOrValues ? getNumKvHeads() : getNumHeads());
}

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  if (std::optional<APFloat> cap = getLogitSoftcap();
      cap && failed(checkFinite(op, "logit_softcap", cap->convertToDouble(),
                                /*mustBePositive=*/true)))
    return failure();
  int64_t rank = getQuery().getType().getRank();
  if (rank != 3 && rank != 4)
    return emitOpError() << "query must have rank 4 ([B, H, S, D]) or 3 "
                            "([B, S, H*D] with heads), got "
                         << rank;
  if (failed(checkRank(op, getKey(), rank, "key")) ||
      failed(checkRank(op, getValue(), rank, "value")) ||
      failed(checkRank(op, getResult(), rank, "result")))
    return failure();
  auto q = getQuery().getType().getShape();
  auto k = getKey().getType().getShape();
  auto v = getValue().getType().getShape();
  auto out = getResult().getType().getShape();
  bool merged = rank == 3;
  if (merged != getHeads().has_value())
    return emitOpError() << (merged ? "the [B, S, H*D] layout needs a heads attribute"
                                    : "the [B, H, S, D] layout takes no heads attribute");
  if (!merged && getKvHeads())
    return emitOpError("the [B, H, S, D] layout takes no kv_heads attribute: "
                       "the key's heads dimension gives it");
  // Positions of the sequence and feature dimensions in either layout.
  unsigned seq = merged ? 1 : 2, feat = merged ? 2 : 3;
  if (failed(checkDim(op, k[0], "key batch", q[0], "query batch")) ||
      failed(checkDim(op, v[0], "value batch", q[0], "query batch")) ||
      failed(checkDim(op, v[seq], "value length", k[seq], "key length")) ||
      failed(checkDim(op, out[0], "result batch", q[0], "query batch")) ||
      failed(checkDim(op, out[seq], "result length", q[seq],
                      "query length")))
    return failure();
  if (merged) {
    int64_t heads = *getHeads();
    if (heads <= 0)
      return emitOpError() << "heads must be positive, got " << heads;
    int64_t kvHeads = getNumKvHeads();
    if (kvHeads <= 0 || heads % kvHeads != 0)
      return emitOpError() << "kv_heads " << kvHeads
                           << " does not divide heads " << heads;
    for (auto [what, width, count] :
         {std::tuple{"query", q[2], heads}, std::tuple{"key", k[2], kvHeads},
          std::tuple{"value", v[2], kvHeads},
          std::tuple{"result", out[2], heads}})
      if (!ShapedType::isDynamic(width) && width % count != 0)
        return emitOpError() << what << " width " << width
                             << " is not divisible by " << count << " heads";
    auto perHead = [](int64_t width, int64_t count) {
      return ShapedType::isDynamic(width) ? width : width / count;
    };
    if (failed(checkDim(op, perHead(k[2], kvHeads), "key head size",
                        perHead(q[2], heads), "query head size")) ||
        failed(checkDim(op, perHead(out[2], heads), "result head size",
                        perHead(v[2], kvHeads), "value head size")))
      return failure();
  } else {
    if (failed(checkDim(op, k[feat], "key head size", q[feat],
                        "query head size")) ||
        failed(checkDim(op, out[feat], "result head size", v[feat],
                        "value head size")) ||
        failed(checkDim(op, v[1], "value heads", k[1], "key heads")) ||
        failed(checkDim(op, out[1], "result heads", q[1], "query heads")))
      return failure();
    if (!ShapedType::isDynamic(q[1]) && !ShapedType::isDynamic(k[1]) &&
        (k[1] <= 0 || q[1] % k[1] != 0))
      return emitOpError() << "key heads (" << k[1]
                           << ") do not divide query heads (" << q[1] << ")";
  }
  if (failed(checkFinite(op, "scale", getScale().convertToDouble(),
                         /*mustBePositive=*/true)))
    return failure();
  bool padding = getMask().getPadding();
  if (padding != bool(getKeyPadding()))
    return emitOpError() << (padding ? "a padding mask needs a key_padding operand"
                                     : "a key_padding operand needs a padding mask");
  if (Value keyPadding = getKeyPadding()) {
    if (failed(checkRank(op, keyPadding, 2, "key_padding")))
      return failure();
    auto kp = tensorType(keyPadding).getShape();
    if (failed(checkDim(op, kp[0], "key_padding batch", q[0], "query batch")) ||
        failed(checkDim(op, kp[1], "key_padding length", k[seq],
                        "key length")))
      return failure();
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/tfm/TfmOps.cpp.inc"
