//===- FuzzSafetensors.cpp - The safetensors reader -----------------------===//
//
// Bytes as a weights or input file. SafetensorsFile::open promises to
// validate the header in full: when it accepts a file, every view it hands
// out lies inside the mapping (each byte is read here, so ASan sees any that
// does not), has a known dtype and a shape whose size matches its bytes; the
// helpers built on it (copyToAligned, expectTensor, readIntegerTensor) then
// work on every tensor. Errors are one line starting with the path.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "runtime/core/Safetensors.h"

#include <cstring>

using namespace tfmc::runtime;

namespace {

void checkError(const std::string &error, const std::string &path) {
  TFMC_FUZZ_CHECK(error.rfind(path, 0) == 0);
  TFMC_FUZZ_CHECK(error.find('\n') == std::string::npos);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfmc::fuzz::MemoryFile memory("fuzz.safetensors");
  const std::string &path = memory.write(tfmc::fuzz::asText(data, size));
  std::string error;
  std::optional<SafetensorsFile> file = SafetensorsFile::open(path, error);
  if (!file) {
    checkError(error, path);
    return 0;
  }
  for (const TensorView &tensor : file->tensors()) {
    std::optional<int64_t> count = elementCount(tensor.shape);
    TFMC_FUZZ_CHECK(count.has_value());
    TFMC_FUZZ_CHECK(static_cast<uint64_t>(*count) * dtypeSize(tensor.dtype) ==
                    tensor.bytes);
    TFMC_FUZZ_CHECK(file->find(tensor.name) != nullptr);
    // Every byte of every view, so a view past the mapping is a report.
    const unsigned char *bytes = static_cast<const unsigned char *>(tensor.data);
    unsigned sum = 0;
    for (std::size_t i = 0; i < tensor.bytes; ++i)
      sum += bytes[i];
    AlignedBuffer copy = copyToAligned(tensor);
    TFMC_FUZZ_CHECK(copy.data() != nullptr);
    TFMC_FUZZ_CHECK(copy.size() == tensor.bytes);
    TFMC_FUZZ_CHECK(tensor.bytes == 0 ||
                    std::memcmp(copy.data(), tensor.data, tensor.bytes) == 0);
    (void)sum;

    // As a weight the plan expects as F32 of this shape.
    std::string expectError;
    const TensorView *expected =
        expectTensor(*file, tensor.name, DType::F32, tensor.shape, expectError);
    TFMC_FUZZ_CHECK((expected != nullptr) == (tensor.dtype == DType::F32));
    if (!expected)
      checkError(expectError, path);

    // As a model input (ids, then mask).
    for (IntegerInputKind kind : {IntegerInputKind::Ids, IntegerInputKind::Mask}) {
      std::string inputError;
      std::optional<IntegerTensor> values =
          readIntegerTensor(*file, tensor.name, kind, inputError);
      if (values) {
        TFMC_FUZZ_CHECK(values->shape == tensor.shape);
        TFMC_FUZZ_CHECK(static_cast<int64_t>(values->values.size()) == *count);
      } else {
        checkError(inputError, path);
      }
    }
  }
  std::string missingError;
  TFMC_FUZZ_CHECK(expectTensor(*file, "no such tensor \x01", DType::F32, {1},
                               missingError) == nullptr ||
                  file->find("no such tensor \x01") != nullptr);
  return 0;
}
