//===- PlanMemory.cpp - One arena for every intermediate ------------------===//
//
// Kernel results live in one arena the runtime allocates once. Each result
// is sized at the largest batch and sequence the model is compiled for, lives
// from its kernel to its last reader, and is packed with the greedy-by-size
// heuristic (largest buffer first, at the lowest offset that no buffer with
// an overlapping live range occupies), which is close to the largest live
// set in practice. Elementwise kernels may write over an operand whose last
// reader they are: each output element depends only on the same element of
// the input, so the kernel never reads a value it has already overwritten.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/CheckedArithmetic.h"

namespace tfmc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;

namespace {

constexpr int64_t kAlignment = 64; // a cache line; also AVX-512 aligned
// Halide's kernels index a tensor with 32-bit integers, so no result may
// hold more elements; the arena is bounded so that every offset and sum
// below stays far inside int64 (docs/user-guide.md, "Limits").
constexpr int64_t kMaxTensorElements = 2147483647;
constexpr int64_t kMaxArenaBytes = int64_t(1) << 40;

int64_t alignUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// A slot of the arena: one or more values that share it in turn.
struct Buffer {
  int64_t bytes = 0;
  int64_t start = 0; // index of the first writer
  int64_t end = 0;   // index of the last reader, inclusive
  int64_t offset = -1;

  bool overlaps(const Buffer &other) const {
    return start <= other.end && other.start <= end;
  }
};

/// Kernels whose output element i depends only on input element i.
bool mayWriteInPlace(Operation *op) {
  return op->hasTrait<ElementwiseInPlace>();
}

struct PlanMemoryPass : tfmc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  /// Bytes of `op`'s result at the largest batch (a dynamic leading
  /// dimension) and sequence (any other dynamic dimension), aligned. A
  /// causal or window mask is [Sq, Sk]: it has no batch dimension. Emits an
  /// error and returns nullopt when the result would hold more than
  /// kMaxTensorElements.
  std::optional<int64_t> alignedBytesAtMost(Operation *op, int64_t seq) const {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    bool leadingIsBatch = !isa<CausalMaskOp, WindowMaskOp>(op);
    std::optional<int64_t> elements = 1;
    for (auto [index, dim] : llvm::enumerate(type.getShape())) {
      int64_t extent = !ShapedType::isDynamic(dim) ? dim
                       : index == 0 && leadingIsBatch ? int64_t(maxBatch)
                                                      : seq;
      elements = llvm::checkedMul(*elements, extent);
      if (!elements || *elements > kMaxTensorElements) {
        op->emitError() << "tfm-plan-memory: the result " << type
                        << " would hold more than " << kMaxTensorElements
                        << " elements (the most a kernel indexes) at "
                           "max-batch "
                        << int64_t(maxBatch) << " and max-seq " << seq
                        << "; lower max-batch or max-seq";
        return std::nullopt;
      }
    }
    int64_t elementBytes =
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    // At most 2^31 elements of at most 8 bytes: no overflow here.
    return alignUp(*elements * elementBytes);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t seq = maxSeq;
    if (seq == 0)
      if (auto maxLen = func->getAttrOfType<IntegerAttr>("tfm.max_len"))
        seq = maxLen.getInt();
    if (seq <= 0 || maxBatch <= 0) {
      func.emitError("tfm-plan-memory needs positive bounds: set max-batch, "
                     "and max-seq or a tfm.max_len attribute on the function");
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("tfm-plan-memory expects a function of one block");
      return signalPassFailure();
    }

    // Program order, and each value's last reader.
    llvm::DenseMap<Operation *, int64_t> position;
    llvm::DenseMap<Value, int64_t> lastUse;
    int64_t index = 0;
    for (Operation &op : func.getBody().front()) {
      position[&op] = index;
      for (Value operand : op.getOperands())
        lastUse[operand] = index;
      ++index;
    }

    std::vector<Buffer> buffers;
    llvm::DenseMap<Value, size_t> bufferOf;
    SmallVector<std::pair<Operation *, size_t>> planned;
    for (Operation &op : func.getBody().front()) {
      // Keys and values appended to a dense KV cache are written straight
      // into it: they take no arena space. Appended to a paged one, they
      // live until the append's last reader.
      KvAppendOp append = computesTensor(&op) ? cacheWriteOf(&op) : nullptr;
      if (!computesTensor(&op) || (append && !pagedCache))
        continue;
      Value result = op.getResult(0);
      int64_t at = position[&op];
      std::optional<int64_t> bytes = alignedBytesAtMost(&op, seq);
      if (!bytes)
        return signalPassFailure();
      int64_t until = lastUse.count(result) ? lastUse[result] : at;
      if (append && lastUse.count(append.getResult()))
        until = std::max(until, lastUse[append.getResult()]);

      std::optional<size_t> reuse;
      if (inPlace && mayWriteInPlace(&op)) {
        for (Value operand : op.getOperands()) {
          auto it = bufferOf.find(operand);
          if (it != bufferOf.end() && buffers[it->second].end == at &&
              buffers[it->second].bytes == *bytes) {
            reuse = it->second;
            break;
          }
        }
      }
      size_t slot;
      if (reuse) {
        slot = *reuse;
        buffers[slot].end = std::max(buffers[slot].end, until);
      } else {
        slot = buffers.size();
        buffers.push_back({*bytes, at, until});
      }
      bufferOf[result] = slot;
      planned.push_back({&op, slot});
    }

    // Greedy by size: largest first, lowest offset clear of every placed
    // buffer whose live range overlaps.
    std::vector<size_t> order(buffers.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return buffers[a].bytes > buffers[b].bytes;
    });
    int64_t arenaSize = 0;
    std::vector<size_t> placed;
    for (size_t id : order) {
      Buffer &buffer = buffers[id];
      std::vector<std::pair<int64_t, int64_t>> taken; // [offset, end)
      for (size_t other : placed)
        if (buffers[other].overlaps(buffer))
          taken.push_back({buffers[other].offset,
                           buffers[other].offset + buffers[other].bytes});
      std::sort(taken.begin(), taken.end());
      int64_t offset = 0;
      for (auto [begin, end] : taken) {
        if (offset + buffer.bytes <= begin)
          break;
        offset = std::max(offset, end);
      }
      // Each offset is the end of a placed buffer, so at most the arena so
      // far: every sum here stays below 2 * kMaxArenaBytes.
      buffer.offset = offset;
      arenaSize = std::max(arenaSize, offset + buffer.bytes);
      if (arenaSize > kMaxArenaBytes) {
        func.emitError() << "tfm-plan-memory: the arena would need more than "
                         << kMaxArenaBytes << " bytes at max-batch "
                         << int64_t(maxBatch) << " and max-seq " << seq
                         << "; lower max-batch or max-seq";
        return signalPassFailure();
      }
      placed.push_back(id);
    }

    Builder builder(&getContext());
    for (auto [op, slot] : planned)
      op->setAttr("tfm.arena", builder.getDenseI64ArrayAttr(
                                   {buffers[slot].offset, buffers[slot].bytes}));
    func->setAttr("tfm.arena_size", builder.getI64IntegerAttr(arenaSize));
    func->setAttr("tfm.max_batch", builder.getI64IntegerAttr(maxBatch));
    func->setAttr("tfm.max_seq", builder.getI64IntegerAttr(seq));
  }
};

} // namespace
