//===- FuzzGguf.cpp - The GGUF reader -------------------------------------===//
//
// Bytes as a GGUF file. parseGguf (the bytes in memory) and readGgufFile
// (the same bytes as a file, read 16 bytes at a time) must agree: the same
// error, or files with the same keys, values and tensors. A file they
// accept keeps support/Gguf.h's promises: each tensor's bytes (its type's
// block size times its blocks) inside the file at an aligned offset and
// overlapping no other tensor's, names and keys unique, UTF-8 and found by
// lookup, every value readable element by element (each string's bytes
// are read here, so ASan sees any outside its storage), and every typed
// getter either succeeds on a value of its type or fails with one line
// naming the file. Errors are one line starting with the path.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "support/Gguf.h"
#include "support/Utf8.h"

#include <algorithm>
#include <utility>
#include <vector>

using namespace tfmc::support;

namespace {

void checkError(const std::string &error, const std::string &path) {
  TFMC_FUZZ_CHECK(error.rfind(path + ": ", 0) == 0);
  TFMC_FUZZ_CHECK(error.find('\n') == std::string::npos);
}

/// Reads every element of `value` and returns a digest of what it read,
/// to compare the two readers' results.
std::string walk(const GgufValue &value, int depth) {
  TFMC_FUZZ_CHECK(depth <= kMaxGgufArrayDepth);
  if (value.type() == GgufType::String) {
    unsigned sum = 0;
    for (char c : value.string())
      sum += static_cast<unsigned char>(c);
    return "s" + std::to_string(value.string().size()) + ":" +
           std::to_string(sum);
  }
  if (value.type() != GgufType::Array)
    return value.scalar().format();
  std::string digest = "[" + std::string(ggufTypeName(value.elementType()));
  for (uint64_t i = 0; i < value.size(); ++i) {
    if (value.elementType() == GgufType::String) {
      std::string_view text = value.stringAt(i);
      unsigned sum = 0;
      for (char c : text)
        sum += static_cast<unsigned char>(c);
      digest += " " + std::to_string(text.size()) + ":" + std::to_string(sum);
    } else if (value.elementType() == GgufType::Array) {
      TFMC_FUZZ_CHECK(value.arrayAt(i).type() == GgufType::Array);
      digest += " " + walk(value.arrayAt(i), depth + 1);
    } else {
      GgufScalar scalar = value.scalarAt(i);
      TFMC_FUZZ_CHECK(scalar.type == value.elementType());
      digest += " " + scalar.format();
    }
  }
  return digest + "]";
}

/// Every getter on `key`: each succeeds exactly on the values of its type.
void checkGetters(const GgufFile &file, const std::string &key,
                  const GgufValue &value) {
  std::string error;
  GgufType type = value.type();
  bool scalar = type != GgufType::String && type != GgufType::Array;
  auto expect = [&](bool ok, bool typeMatches) {
    if (!ok) {
      checkError(error, file.path());
      // The key is there: no getter may call it missing.
      TFMC_FUZZ_CHECK(error.rfind(file.path() + ": missing key ", 0) != 0);
    }
    if (!typeMatches)
      TFMC_FUZZ_CHECK(!ok);
    error.clear();
  };
  bool integer = scalar && value.scalar().isInteger();
  expect(file.getUnsigned(key, error).has_value(), integer);
  expect(file.getSigned(key, error).has_value(), integer);
  expect(file.getFloat(key, error).has_value(),
         type == GgufType::F32 || type == GgufType::F64);
  expect(file.getBool(key, error).has_value(), type == GgufType::Bool);
  bool string = file.getString(key, error).has_value();
  TFMC_FUZZ_CHECK(string == (type == GgufType::String));
  expect(string, type == GgufType::String);
  bool array = file.getArray(key, error) != nullptr;
  TFMC_FUZZ_CHECK(array == (type == GgufType::Array));
  expect(array, type == GgufType::Array);
  expect(file.getArray(key, GgufType::String, error) != nullptr,
         type == GgufType::Array && value.elementType() == GgufType::String);
}

/// The layout promises; returns a digest of the file.
std::string checkFile(const GgufFile &file, uint64_t size) {
  uint64_t alignment = file.alignment();
  TFMC_FUZZ_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0);
  TFMC_FUZZ_CHECK(file.dataOffset() % alignment == 0);
  TFMC_FUZZ_CHECK(file.fileSize() == size);
  TFMC_FUZZ_CHECK(file.version() == 2 || file.version() == 3);
  std::string digest = std::to_string(file.dataOffset()) + "\n";

  for (const GgufKeyValue &entry : file.metadata()) {
    TFMC_FUZZ_CHECK(!entry.key.empty() && isValidUtf8(entry.key));
    TFMC_FUZZ_CHECK(file.find(entry.key) == &entry.value);
    checkGetters(file, entry.key, entry.value);
    digest += entry.key + "=" + walk(entry.value, 0) + "\n";
  }

  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const GgufTensorInfo &tensor : file.tensors()) {
    TFMC_FUZZ_CHECK(!tensor.name.empty() && isValidUtf8(tensor.name));
    TFMC_FUZZ_CHECK(file.findTensor(tensor.name) == &tensor);
    TFMC_FUZZ_CHECK(!tensor.dims.empty() && tensor.dims.size() <= 4);
    uint64_t elements = 1;
    for (uint64_t dim : tensor.dims) {
      TFMC_FUZZ_CHECK(dim >= 1);
      TFMC_FUZZ_CHECK(!__builtin_mul_overflow(elements, dim, &elements));
    }
    TFMC_FUZZ_CHECK(elements == tensor.elements);
    const GgmlTypeInfo &type = ggmlTypeInfo(tensor.type);
    TFMC_FUZZ_CHECK(tensor.dims[0] % type.blockValues == 0);
    TFMC_FUZZ_CHECK(tensor.bytes ==
                    elements / type.blockValues * type.blockBytes);
    TFMC_FUZZ_CHECK(tensor.offset % alignment == 0);
    TFMC_FUZZ_CHECK(file.dataOffset() <= size);
    TFMC_FUZZ_CHECK(tensor.offset <= size - file.dataOffset());
    TFMC_FUZZ_CHECK(tensor.bytes <= size - file.dataOffset() - tensor.offset);
    extents.emplace_back(tensor.offset, tensor.offset + tensor.bytes);
    digest += tensor.name + " " + type.name + " " +
              std::to_string(tensor.offset) + "\n";
  }
  std::sort(extents.begin(), extents.end());
  for (std::size_t i = 1; i < extents.size(); ++i)
    TFMC_FUZZ_CHECK(extents[i - 1].second <= extents[i].first);
  return digest;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfmc::fuzz::MemoryFile memory("fuzz.gguf");
  const std::string &path = memory.write(tfmc::fuzz::asText(data, size));
  std::string memoryError, fileError;
  std::optional<GgufFile> parsed =
      parseGguf(path, data, size, size, memoryError);
  std::optional<GgufFile> read = readGgufFile(path, fileError, 16);
  TFMC_FUZZ_CHECK(parsed.has_value() == read.has_value());
  if (!parsed) {
    checkError(memoryError, path);
    TFMC_FUZZ_CHECK(memoryError == fileError);
    return 0;
  }
  TFMC_FUZZ_CHECK(checkFile(*parsed, size) == checkFile(*read, size));
  std::string error;
  TFMC_FUZZ_CHECK(!parsed->getUnsigned("no such key \x01", error) &&
                  parsed->find("no such key \x01") == nullptr);
  checkError(error, path);
  return 0;
}
