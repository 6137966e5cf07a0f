//===- GgufBuilder.h - Hand-built GGUF bytes for the reader's tests -*- C++ -*-===//
//
// GGUF files byte by byte (support/Gguf.h's file comment has the layout),
// so that each test says exactly which field it breaks.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_UNIT_GGUFBUILDER_H
#define TFMC_TEST_UNIT_GGUFBUILDER_H

#include "support/Gguf.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::test {

using support::GgufType;

/// ggml type numbers (ggml.h), as the file spells them.
enum Ggml : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
  kQ8_1 = 9, kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
  kQ8_K = 15, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kBF16 = 30,
};

class GgufBytes {
public:
  /// "GGUF", the version, the tensor count, the key count.
  static GgufBytes header(uint64_t tensors, uint64_t keys,
                          uint32_t version = 3) {
    GgufBytes bytes;
    bytes.raw("GGUF").u32(version).u64(tensors).u64(keys);
    return bytes;
  }

  template <typename T> GgufBytes &put(T value) {
    char buffer[sizeof value];
    std::memcpy(buffer, &value, sizeof value);
    data.append(buffer, sizeof value);
    return *this;
  }
  GgufBytes &u8(uint8_t value) { return put(value); }
  GgufBytes &u32(uint32_t value) { return put(value); }
  GgufBytes &u64(uint64_t value) { return put(value); }
  GgufBytes &raw(std::string_view bytes) {
    data.append(bytes);
    return *this;
  }
  /// A string: its u64 length, then its bytes.
  GgufBytes &str(std::string_view text) { return u64(text.size()).raw(text); }
  GgufBytes &type(GgufType type) { return u32(static_cast<uint32_t>(type)); }

  /// A key and a scalar value of `type` (its bytes from `value`).
  template <typename T>
  GgufBytes &key(std::string_view name, GgufType valueType, T value) {
    return str(name).type(valueType).put(value);
  }
  GgufBytes &keyString(std::string_view name, std::string_view value) {
    return str(name).type(GgufType::String).str(value);
  }
  /// A key whose value is an array: the caller appends the elements.
  GgufBytes &keyArray(std::string_view name, GgufType element,
                      uint64_t count) {
    return str(name).type(GgufType::Array).type(element).u64(count);
  }

  /// A tensor info.
  GgufBytes &tensor(std::string_view name, const std::vector<uint64_t> &dims,
                    uint32_t ggmlType, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t dim : dims)
      u64(dim);
    return u32(ggmlType).u64(offset);
  }

  /// Zeros up to a multiple of `alignment`, then `bytes` more zeros (the
  /// data section).
  GgufBytes &dataSection(uint64_t alignment, uint64_t bytes) {
    data.resize((data.size() + alignment - 1) / alignment * alignment +
                bytes, '\0');
    return *this;
  }

  uint64_t size() const { return data.size(); }

  std::string data;
};

} // namespace tfmc::test

#endif // TFMC_TEST_UNIT_GGUFBUILDER_H
