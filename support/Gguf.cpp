//===- Gguf.cpp - GGUF values, types and lookups --------------------------===//
//
// What a parsed GgufFile hands out (GgufParser.cpp reads and checks it):
// values and their typed getters, ggml's type table, lookups by key and
// by name.
//
//===----------------------------------------------------------------------===//

#include "support/Gguf.h"
#include "support/Text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace tfmc::support {
namespace {

constexpr uint64_t kMaxInt64 =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// ggml-common.h's blocks: Q4_0 is a half scale and 16 bytes of nibbles,
// Q4_1/Q5_1 two halves, Q5_0/Q5_1 4 bytes of fifth bits, Q8_1 a half scale
// and a half sum; the K-quants' super-blocks of 256 (Q8_K: an f32 scale, 256
// int8 and 16 int16 sums); IQ4_NL a half scale and 16 bytes of 4-bit indices
// into kvalues_iq4nl.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {GgmlType::F32, "F32", 1, 4},        {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 18},    {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q5_0, "Q5_0", 32, 22},    {GgmlType::Q5_1, "Q5_1", 32, 24},
    {GgmlType::Q8_0, "Q8_0", 32, 34},    {GgmlType::Q8_1, "Q8_1", 32, 36},
    {GgmlType::Q2_K, "Q2_K", 256, 84},   {GgmlType::Q3_K, "Q3_K", 256, 110},
    {GgmlType::Q4_K, "Q4_K", 256, 144},  {GgmlType::Q5_K, "Q5_K", 256, 176},
    {GgmlType::Q6_K, "Q6_K", 256, 210},  {GgmlType::Q8_K, "Q8_K", 256, 292},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 18},
    {GgmlType::I8, "I8", 1, 1},          {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},        {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},        {GgmlType::BF16, "BF16", 1, 2},
};

bool isScalarType(GgufType type) {
  return type != GgufType::String && type != GgufType::Array;
}

/// "a" or "an" before a type name ("an i32", "a u32").
const char *article(GgufType type) {
  char first = ggufTypeName(type)[0];
  return first == 'a' || first == 'i' || first == 'f' ? "an" : "a";
}

} // namespace

//===----------------------------------------------------------------------===//
// Types and values
//===----------------------------------------------------------------------===//

const char *ggufTypeName(GgufType type) {
  switch (type) {
  case GgufType::U8: return "u8";
  case GgufType::I8: return "i8";
  case GgufType::U16: return "u16";
  case GgufType::I16: return "i16";
  case GgufType::U32: return "u32";
  case GgufType::I32: return "i32";
  case GgufType::F32: return "f32";
  case GgufType::Bool: return "bool";
  case GgufType::String: return "string";
  case GgufType::Array: return "array";
  case GgufType::U64: return "u64";
  case GgufType::I64: return "i64";
  case GgufType::F64: return "f64";
  }
  return "?";
}

std::size_t ggufScalarBytes(GgufType type) {
  switch (type) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::Bool:
    return 1;
  case GgufType::U16:
  case GgufType::I16:
    return 2;
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::F32:
    return 4;
  case GgufType::U64:
  case GgufType::I64:
  case GgufType::F64:
    return 8;
  default:
    return 0;
  }
}

std::string ggufPluralName(GgufType type) {
  std::string name = ggufTypeName(type);
  if (type == GgufType::String || type == GgufType::Array ||
      type == GgufType::Bool)
    name += 's';
  return name;
}

const GgmlTypeInfo &ggmlTypeInfo(GgmlType type) {
  for (const GgmlTypeInfo &info : kGgmlTypes)
    if (info.type == type)
      return info;
  return kGgmlTypes[0]; // unreachable: every enumerator is in the table
}

std::optional<GgmlType> ggmlTypeFromNumber(uint32_t number) {
  for (const GgmlTypeInfo &info : kGgmlTypes)
    if (static_cast<uint32_t>(info.type) == number)
      return info.type;
  return std::nullopt;
}

bool GgufScalar::isInteger() const {
  return type != GgufType::F32 && type != GgufType::F64 &&
         type != GgufType::Bool && isScalarType(type);
}

std::optional<int64_t> GgufScalar::toSigned() const {
  switch (type) {
  case GgufType::I8: return static_cast<int8_t>(bits);
  case GgufType::I16: return static_cast<int16_t>(bits);
  case GgufType::I32: return static_cast<int32_t>(bits);
  case GgufType::I64: return static_cast<int64_t>(bits);
  case GgufType::U8:
  case GgufType::U16:
  case GgufType::U32:
    return static_cast<int64_t>(bits);
  case GgufType::U64:
    if (bits > kMaxInt64)
      return std::nullopt;
    return static_cast<int64_t>(bits);
  default:
    return std::nullopt;
  }
}

std::optional<uint64_t> GgufScalar::toUnsigned() const {
  if (type == GgufType::U64)
    return bits;
  std::optional<int64_t> value = toSigned();
  if (!value || *value < 0)
    return std::nullopt;
  return static_cast<uint64_t>(*value);
}

std::optional<double> GgufScalar::toFloat() const {
  if (type == GgufType::F32) {
    float value;
    uint32_t low = static_cast<uint32_t>(bits);
    std::memcpy(&value, &low, sizeof value);
    return value;
  }
  if (type == GgufType::F64) {
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  return std::nullopt;
}

std::optional<bool> GgufScalar::toBool() const {
  if (type != GgufType::Bool)
    return std::nullopt;
  return bits != 0;
}

std::string GgufScalar::format() const {
  if (type == GgufType::Bool)
    return bits ? "true" : "false";
  if (type == GgufType::F32) // the shortest text that reads back as the f32
    return fmt::format("{}", static_cast<float>(*toFloat()));
  if (type == GgufType::F64)
    return fmt::format("{}", *toFloat());
  if (type == GgufType::U64)
    return fmt::format("{}", bits);
  return fmt::format("{}", *toSigned());
}

GgufScalar GgufValue::scalarAt(uint64_t i) const {
  GgufScalar scalar;
  scalar.type = elementType_;
  uint64_t size = ggufScalarBytes(elementType_);
  std::memcpy(&scalar.bits, bytes_.data() + i * size,
              static_cast<std::size_t>(size));
  return scalar;
}

std::string_view GgufValue::stringAt(uint64_t i) const {
  uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(bytes_).substr(begin, ends_[i] - begin);
}

std::string GgufValue::describeType() const {
  if (type_ != GgufType::Array)
    return fmt::format("{} {}", article(type_), ggufTypeName(type_));
  return "an array of " + ggufPluralName(elementType_);
}

//===----------------------------------------------------------------------===//
// GgufFile
//===----------------------------------------------------------------------===//

const GgufValue *GgufFile::find(std::string_view key) const {
  auto it = std::lower_bound(
      keyOrder_.begin(), keyOrder_.end(), key,
      [&](std::size_t index, std::string_view k) { return metadata_[index].key < k; });
  if (it == keyOrder_.end() || metadata_[*it].key != key)
    return nullptr;
  return &metadata_[*it].value;
}

const GgufTensorInfo *GgufFile::findTensor(std::string_view name) const {
  auto it = std::lower_bound(
      tensorOrder_.begin(), tensorOrder_.end(), name,
      [&](std::size_t index, std::string_view n) { return tensors_[index].name < n; });
  if (it == tensorOrder_.end() || tensors_[*it].name != name)
    return nullptr;
  return &tensors_[*it];
}

const GgufValue *GgufFile::require(std::string_view key,
                                   std::string &error) const {
  const GgufValue *value = find(key);
  if (!value)
    error = oneLine(fmt::format("{}: missing key {}", path_, quote(key)));
  return value;
}

std::string GgufFile::mismatch(std::string_view key, const std::string &what,
                               const char *expected) const {
  return oneLine(fmt::format("{}: key {} is {}, expected {}", path_,
                             quote(key), what, expected));
}

std::optional<uint64_t> GgufFile::getUnsigned(std::string_view key,
                                              std::string &error) const {
  const GgufValue *value = require(key, error);
  if (!value)
    return std::nullopt;
  const char *expected = "an unsigned integer";
  if (!isScalarType(value->type()) || !value->scalar().isInteger()) {
    error = mismatch(key, value->describeType(), expected);
    return std::nullopt;
  }
  std::optional<uint64_t> result = value->scalar().toUnsigned();
  if (!result)
    error = mismatch(key, value->scalar().format(), expected);
  return result;
}

std::optional<int64_t> GgufFile::getSigned(std::string_view key,
                                           std::string &error) const {
  const GgufValue *value = require(key, error);
  if (!value)
    return std::nullopt;
  const char *expected = "an integer of at most 2^63 - 1";
  if (!isScalarType(value->type()) || !value->scalar().isInteger()) {
    error = mismatch(key, value->describeType(), "an integer");
    return std::nullopt;
  }
  std::optional<int64_t> result = value->scalar().toSigned();
  if (!result)
    error = mismatch(key, value->scalar().format(), expected);
  return result;
}

std::optional<double> GgufFile::getFloat(std::string_view key,
                                         std::string &error) const {
  const GgufValue *value = require(key, error);
  if (!value)
    return std::nullopt;
  std::optional<double> result;
  if (isScalarType(value->type()))
    result = value->scalar().toFloat();
  if (!result)
    error = mismatch(key, value->describeType(), "an f32 or f64");
  return result;
}

std::optional<bool> GgufFile::getBool(std::string_view key,
                                      std::string &error) const {
  const GgufValue *value = require(key, error);
  if (!value)
    return std::nullopt;
  std::optional<bool> result;
  if (isScalarType(value->type()))
    result = value->scalar().toBool();
  if (!result)
    error = mismatch(key, value->describeType(), "a bool");
  return result;
}

std::optional<std::string_view>
GgufFile::getString(std::string_view key, std::string &error) const {
  const GgufValue *value = require(key, error);
  if (!value)
    return std::nullopt;
  if (value->type() != GgufType::String) {
    error = mismatch(key, value->describeType(), "a string");
    return std::nullopt;
  }
  return value->string();
}

const GgufValue *GgufFile::getArray(std::string_view key,
                                    std::string &error) const {
  const GgufValue *value = require(key, error);
  if (value && value->type() != GgufType::Array) {
    error = mismatch(key, value->describeType(), "an array");
    return nullptr;
  }
  return value;
}

const GgufValue *GgufFile::getArray(std::string_view key, GgufType elementType,
                                    std::string &error) const {
  const GgufValue *value = getArray(key, error);
  if (value && value->elementType() != elementType) {
    error = mismatch(key, value->describeType(),
                     ("an array of " + ggufPluralName(elementType)).c_str());
    return nullptr;
  }
  return value;
}

} // namespace tfmc::support
