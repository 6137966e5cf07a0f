//===- Tensor.h - Element types and a non-owning tensor view ----*- C++ -*-===//
//
// The runtime's vocabulary for tensors that live somewhere else: in a mapped
// safetensors file, in the arena, or in a caller's buffer. A view owns
// nothing; whoever handed it out says how long `data` stays valid.
//
// Plain C++17: the runtime includes nothing from MLIR or Halide's compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_TENSOR_H
#define TFMC_RUNTIME_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime {

/// The element types safetensors files carry that tfmc reads or writes.
/// Spelled as in safetensors headers (see `dtypeName`).
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// Every DType, in the order error messages list them.
inline constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16,
                                       DType::BF16, DType::I64, DType::I32,
                                       DType::I16, DType::I8, DType::U8,
                                       DType::Bool};

/// The safetensors spelling: "F32", "I64", "BOOL", ...
constexpr const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F64: return "F64";
  case DType::F32: return "F32";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I16: return "I16";
  case DType::I8: return "I8";
  case DType::U8: return "U8";
  case DType::Bool: return "BOOL";
  }
  return "?";
}

/// Bytes per element (BOOL is one byte, as in safetensors and PyTorch).
constexpr std::size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64: case DType::I64: return 8;
  case DType::F32: case DType::I32: return 4;
  case DType::F16: case DType::BF16: case DType::I16: return 2;
  case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 0;
}

/// The DType spelled `name` in a safetensors header (case-sensitive), or
/// nothing for a spelling tfmc does not know (F8_E4M3, U16, ...).
inline std::optional<DType> parseDType(std::string_view name) {
  for (DType dtype : kAllDTypes)
    if (name == dtypeName(dtype))
      return dtype;
  return std::nullopt;
}

/// `[3, 4]`, `[]` for a scalar: the spelling every shape in a message uses.
inline std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

/// The product of `shape` (1 for a scalar), or nothing when it does not fit
/// in int64 or a dimension is negative.
inline std::optional<int64_t> elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count))
      return std::nullopt;
  }
  return count;
}

/// A named tensor somewhere in memory: no ownership, no copy.
///
/// `data` points at `bytes` bytes of little-endian elements in row-major
/// order, and is NOT necessarily aligned to the element size (safetensors
/// does not align tensors); check `isAligned` before casting it to `float *`,
/// or copy the bytes (`copyToAligned` in Safetensors.h). When `bytes` is 0
/// (an empty tensor) `data` may point one past the end of its buffer and must
/// not be read.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  std::size_t bytes = 0;
  /// A GGUF tensor of one of ggml's block types (Q8_0, Q4_0, Q6_K, ...;
  /// GgufWeights.h): its ggml type number (support/Gguf.h's GgmlType), with
  /// `dtype` U8, `shape` the values' [rows, cols] and `bytes` the blocks'.
  /// -1 for every other tensor.
  int32_t ggmlBlocks = -1;

  /// The product of `shape` (1 for a scalar; 0 if it overflows, which no
  /// view handed out by the runtime does).
  int64_t numElements() const { return elementCount(shape).value_or(0); }
  /// Whether `data` is a multiple of `alignment` bytes.
  bool isAligned(std::size_t alignment) const {
    return reinterpret_cast<std::uintptr_t>(data) % alignment == 0;
  }
  /// Whether `data` may be read directly as its element type (F32 needs 4
  /// bytes, I64 8, ...).
  bool isNaturallyAligned() const { return isAligned(dtypeSize(dtype)); }
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_TENSOR_H
