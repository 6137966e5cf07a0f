//===- ModelExecute.cpp - Running a plan's steps --------------------------===//
//
// Each step's kernel gets halide_buffer_t descriptors built on this call's
// reused storage. Every buffer is checked against the memory behind it
// before the first kernel runs (an arena slot inside the arena, a weight
// view inside its tensor, an input view inside the input, a cache view
// inside its slot), so a wrong plan is a `plan: ...` error, not a kernel
// writing past an allocation.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/ModelImpl.h"

#include <chrono>
#include <cstring>
#include <limits>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tfmc::runtime {
namespace {

/// The caller's SSE flags flush-to-zero and denormals-are-zero cleared while
/// kernels run, and restored after: a library caller built with -ffast-math
/// sets both at start-up, and the kernels' contracts assume IEEE subnormals
/// (int4's block scales widen an f16 subnormal through an f32 subnormal;
/// int8 activations quantise in strict f32, alike on every CPU). Halide's
/// worker threads start from the flags of the thread that creates them,
/// inside the first parallel kernel, so with these cleared.
class IeeeSubnormals {
public:
#if defined(__x86_64__)
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x40;
  IeeeSubnormals() : saved_(_mm_getcsr()) {
    if (saved_ & (kFlushToZero | kDenormalsAreZero))
      _mm_setcsr(saved_ & ~(kFlushToZero | kDenormalsAreZero));
  }
  ~IeeeSubnormals() {
    if (_mm_getcsr() != saved_)
      _mm_setcsr(saved_);
  }
  IeeeSubnormals(const IeeeSubnormals &) = delete;
  IeeeSubnormals &operator=(const IeeeSubnormals &) = delete;

private:
  unsigned saved_;
#endif
};

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

halide_type_t halideType(ElementType type) {
  switch (type) {
  case ElementType::F32: return halide_type_t(halide_type_float, 32);
  case ElementType::I64: return halide_type_t(halide_type_int, 64);
  case ElementType::BF16: return halide_type_t(halide_type_bfloat, 16);
  case ElementType::I8: return halide_type_t(halide_type_int, 8);
  case ElementType::U8: return halide_type_t(halide_type_uint, 8);
  case ElementType::F16: return halide_type_t(halide_type_float, 16);
  case ElementType::I32: return halide_type_t(halide_type_int, 32);
  }
  return halide_type_t(halide_type_float, 32);
}

} // namespace

bool Model::Impl::buildStep(Call &call, std::size_t stepIndex,
                            std::string &error) {
  const Plan &plan = call.plan;
  const PlanStep &step = plan.steps[stepIndex];
  auto *arenaBytes = static_cast<uint8_t *>(arena.data());
  std::size_t nextDim = 0;
  for (std::size_t a = 0; a < step.args.size(); ++a) {
    const PlanArg &arg = step.args[a];
    const PlanValue &value = plan.values[arg.value];
    auto where = [&] {
      return fmt::format("plan: step {} arg {}", stepIndex, a);
    };
    const int64_t elementBytes = elementTypeSize(arg.type);

    halide_buffer_t &buffer = buffers[a];
    buffer = halide_buffer_t();
    buffer.dimensions = static_cast<int32_t>(arg.dims.size());
    buffer.dim = dimensions.data() + nextDim;
    buffer.type = halideType(arg.type);
    int64_t stride = 1;
    for (std::size_t d = 0; d < arg.dims.size(); ++d) {
      int64_t extent = 0, min = 0;
      if (!call.evaluate(arg.dims[d], extent) || extent > kMaxInt32 ||
          stride > kMaxInt32 ||
          (!arg.mins.empty() &&
           (!call.evaluate(arg.mins[d], min) || min > kMaxInt32))) {
        error = fmt::format("{}: dims {} exceed Halide's 32-bit extents "
                            "for {}",
                            where(), formatDims(plan, arg.dims),
                            call.symbolText());
        return false;
      }
      dimensions[nextDim + d] = halide_dimension_t(
          static_cast<int32_t>(min), static_cast<int32_t>(extent),
          static_cast<int32_t>(stride));
      stride *= extent; // both below 2^31: no overflow
    }
    nextDim += arg.dims.size();
    const int64_t elements = stride;

    switch (value.kind) {
    case ValueKind::Input: {
      auto [data, count] = call.inputData[value.index];
      if (elements > count) {
        error = fmt::format("{}: dims {} view {} elements of input {}, "
                            "which has {} for {}",
                            where(), formatDims(plan, arg.dims), elements,
                            support::quote(plan.inputs[value.index].name), count,
                            call.symbolText());
        return false;
      }
      buffer.host = reinterpret_cast<uint8_t *>(const_cast<int64_t *>(data));
      if (onDevice)
        argDevice[a] = inputDevice[value.index];
      break;
    }
    case ValueKind::Weight: {
      // A view into a weight's elements (parsePlan checked that the arg's
      // type is the stored one).
      const PlanWeight &weight = plan.weights[value.index];
      const int64_t count = weight.storedElements();
      if (elements > count - value.offset) {
        error = fmt::format("{}: dims {} view {} elements at offset {} of "
                            "weight {}, which has {}",
                            where(), formatDims(plan, arg.dims), elements,
                            value.offset, support::quote(weight.name), count);
        return false;
      }
      const auto offsetBytes =
          static_cast<std::size_t>(value.offset * elementBytes);
      if (onDevice)
        argDevice[a] = weights->weightDevice[value.index] + offsetBytes;
      else
        buffer.host = const_cast<uint8_t *>(weights->weightData[value.index] +
                                            offsetBytes);
      break;
    }
    case ValueKind::Arena: {
      int64_t available = plan.arenaBytes - value.offset;
      if (elements > available / elementBytes) {
        // elements < 2^62 (two extents below 2^31): the product may not fit.
        int64_t bytes = 0;
        std::string size =
            __builtin_mul_overflow(elements, elementBytes, &bytes)
                ? fmt::format("{} elements of {}", elements, elementBytes)
                : std::to_string(bytes);
        error = fmt::format("{}: dims {} ({} bytes) at arena offset {} run "
                            "past the arena ({} bytes) for {}",
                            where(), formatDims(plan, arg.dims), size,
                            value.offset,
                            plan.arenaBytes, call.symbolText());
        return false;
      }
      if (value.offset % elementBytes != 0) {
        error = fmt::format("{}: arena offset {} is not a multiple of {}",
                            where(), value.offset, elementBytes);
        return false;
      }
      buffer.host = arenaBytes + value.offset;
      if (onDevice)
        argDevice[a] = arenaDevice + value.offset;
      break;
    }
    case ValueKind::KeyRows: {
      // preparePaged's, [B, L] for this call.
      if (elements > static_cast<int64_t>(keyRows.size())) {
        error = fmt::format("{}: dims {} view {} key rows, but the call "
                            "has {}",
                            where(), formatDims(plan, arg.dims), elements,
                            keyRows.size());
        return false;
      }
      buffer.host = reinterpret_cast<uint8_t *>(keyRows.data());
      break;
    }
    case ValueKind::Cache: {
      const PlanCacheSlot &slot = plan.cache[value.index];
      if (slot.paged) {
        // The whole pool, whatever the step reads of it.
        if (!pool || elements > pool->rows() * slot.width) {
          error = fmt::format("{}: dims {} view {} elements of the paged KV "
                              "cache slot {}, which has {}",
                              where(), formatDims(plan, arg.dims), elements,
                              support::quote(slot.slot),
                              pool ? pool->rows() * slot.width : 0);
          return false;
        }
        buffer.host = pool->slotData(value.index);
        break;
      }
      int64_t row = value.rowSymbol < 0 ? 0 : call.symbols[value.rowSymbol];
      int64_t sharedBase = 0; // elements: a shared source's block
      // One sequence's rows of the slot.
      const int64_t block = plan.maxLen * slot.width;
      // A prefill writes its B sequences densely from row 0 (updateCache
      // spreads them out); a decode step's views step from one sequence's
      // rows to the next (the outermost dim is the batch); an extend step's
      // are the one sequence's rows, dense.
      bool fits;
      if (call.prefill || call.extend || arg.dims.size() < 2) {
        const int64_t room = call.extend ? block : plan.maxBatch * block;
        fits = row >= 0 && elements <= room - row * slot.width;
        if (call.prefill)
          call.cacheElements[value.index] =
              std::max(call.cacheElements[value.index], elements);
      } else {
        halide_dimension_t &outer = dimensions[nextDim - 1];
        const int64_t inner = elements / std::max<int64_t>(outer.extent, 1);
        fits = row >= 0 && block <= kMaxInt32 && outer.extent <= cachedBatch &&
               row * slot.width + inner <= block;
        // (One sequence: any stride would do; dense, as kernels expect.)
        // Shared cross-attention rows: every sequence reads crossRow's.
        const bool shared = crossShared && !appendedByDecode[value.index];
        if (shared)
          sharedBase = crossRow * block;
        if (outer.extent > 1)
          outer.stride =
              shared ? 0 : static_cast<int32_t>(std::min(block, kMaxInt32));
      }
      if (!fits) {
        error = fmt::format("{}: dims {} from row {} run past the KV "
                            "cache slot {} ({} sequences of {} rows of {})",
                            where(), formatDims(plan, arg.dims), row,
                            support::quote(slot.slot),
                            call.prefill ? plan.maxBatch : cachedBatch,
                            plan.maxLen, slot.width);
        return false;
      }
      buffer.host = static_cast<uint8_t *>(cache[value.index].data()) +
                    (sharedBase + row * slot.width) * elementBytes;
      if (onDevice)
        argDevice[a] =
            cacheDevice[value.index] + row * slot.width * elementBytes;
      break;
    }
    }
    // On the GPU every argument is device memory only.
    if (onDevice)
      buffer.host = nullptr;
    argPointers[a] = &buffer;
  }
  // A store step copies (width, S, B) rows into the blocks of the call's
  // last S positions of B sequences (key_rows).
  if (step.storeSlot >= 0) {
    const halide_buffer_t &rows = buffers[0];
    const int64_t width = plan.cache[step.storeSlot].width,
                  length = call.length();
    if (!pool || !call.usesCache || rows.dim[0].extent != width ||
        rows.dim[1].extent > length ||
        int64_t(rows.dim[2].extent) * length >
            static_cast<int64_t>(keyRows.size())) {
      error = fmt::format("plan: step {} stores rows {} into the paged KV "
                          "cache slot {} (rows of {}), but the call has {} "
                          "positions of {} sequences",
                          stepIndex, formatDims(plan, step.args[0].dims),
                          support::quote(plan.cache[step.storeSlot].slot),
                          width, length,
                          length ? keyRows.size() / length : 0);
      return false;
    }
  }
  return true;
}

bool Model::Impl::checkSteps(Call &call, std::string &error) {
  for (std::size_t s = 0; s < call.plan.steps.size(); ++s)
    if (!buildStep(call, s, error))
      return false;
  return true;
}

bool Model::Impl::executeSteps(Call &call, std::string &error) {
  const Plan &plan = call.plan;
  const std::vector<tfmc_kernel_fn> &stepKernels =
      weights->entryKernels[call.entryIndex];
  if (stepSeconds)
    stepSeconds->assign(plan.steps.size(), 0.0);
  IeeeSubnormals subnormals;
  // All ones: NaN as f32, -1 as i64.
  if (poison && !onDevice)
    std::memset(arena.data(), 0xff, arena.size());
  for (std::size_t s = 0; s < plan.steps.size(); ++s) {
    // checkSteps built every step once: this cannot fail.
    buildStep(call, s, error);
    const std::size_t args = plan.steps[s].args.size();
    if (onDevice)
      for (std::size_t a = 0; a < args; ++a) {
        std::string message;
        if (!deviceWrap(buffers[a], argDevice[a], message)) {
          for (std::size_t b = 0; b < a; ++b)
            deviceDetach(buffers[b]);
          error = fmt::format("step {} arg {}: {}", s, a, message);
          return false;
        }
      }
    std::chrono::steady_clock::time_point start;
    if (stepSeconds)
      start = std::chrono::steady_clock::now();
    // (A store step is the runtime's own; there is none on the GPU.)
    int result = plan.steps[s].storeSlot >= 0
                     ? storeRows(call, s)
                     : stepKernels[s](argPointers.data());
    std::string syncError;
    // GPU kernels run asynchronously: a timed step waits for its own.
    if (result == 0 && stepSeconds && onDevice &&
        !deviceSynchronize(buffers[0], syncError))
      result = -1;
    if (stepSeconds)
      (*stepSeconds)[s] = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
    if (onDevice)
      for (std::size_t a = 0; a < args; ++a)
        deviceDetach(buffers[a]);
    if (result != 0) {
      std::string message = !syncError.empty() ? syncError : takeHalideError();
      if (message.empty())
        message = fmt::format("error code {}", result);
      error = fmt::format("kernel {} (step {} of {}) failed: {}",
                          plan.steps[s].kernel, s + 1, plan.steps.size(),
                          message);
      return false;
    }
  }
  // A CUDA plan: the outputs are copied back once per call, into the host
  // arena where the OutputViews point.
  if (onDevice) {
    for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
      std::string message;
      const int64_t offset = plan.values[plan.outputs[i].value].offset;
      if (!deviceDownload(
              static_cast<uint8_t *>(arena.data()) + offset,
              arenaDevice + offset,
              static_cast<std::size_t>(call.outputs[i].numElements()) * 4,
              message)) {
        error = fmt::format("cannot copy the output {} from the GPU: {}",
                            support::quote(plan.outputs[i].name), message);
        return false;
      }
    }
  }
  return true;
}

} // namespace tfmc::runtime
