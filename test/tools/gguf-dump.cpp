//===- gguf-dump.cpp - tfmc-gguf-dump: what the GGUF reader reads ---------===//
//
//   tfmc-gguf-dump [--buffer-bytes N] FILE
//
// Reads FILE with support/Gguf.h's readGgufFile (N bytes at a time,
// default 1 MiB) and prints its header, each key with its type and value,
// and each tensor:
//   version: 3
//   alignment: 32
//   data offset: 448
//   file size: 1472
//   keys: 2
//     general.architecture: string = "llama"
//     tokenizer.ggml.scores: array of 1000 f32 = [0, -1, -2, -3, -4, -5, -6, -7, ...]
//   tensors: 1
//     token_embd.weight: Q8_0 [64, 100] offset 0 bytes 6800
// Dims are ggml's (innermost first). Arrays show their first 8 elements;
// strings are quoted as JSON, cut after 120 characters. Errors are one line
// `tfmc-gguf-dump: error: ...` and exit 1.
//
//===----------------------------------------------------------------------===//

#include "support/Gguf.h"
#include "support/Text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tfmc::support;

namespace {

constexpr uint64_t kShownElements = 8;
constexpr std::size_t kShownChars = 120;

int fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tfmc-gguf-dump: error: %s\n", message.c_str());
  return 1;
}

std::string formatValue(const GgufValue &value);

/// "array of 3 u32 = [1, 2, 3]": the first kShownElements, then "...".
std::string formatArray(const GgufValue &array) {
  std::string text = fmt::format("[");
  for (uint64_t i = 0; i < array.size() && i < kShownElements; ++i) {
    if (i)
      text += ", ";
    if (array.elementType() == GgufType::String)
      text += quoteJson(array.stringAt(i), kShownChars);
    else if (array.elementType() == GgufType::Array)
      text += formatValue(array.arrayAt(i));
    else
      text += array.scalarAt(i).format();
  }
  if (array.size() > kShownElements)
    text += ", ...";
  return text + "]";
}

/// A value as the dump shows it (an array of arrays: each inner array as
/// "array of N T = [...]" in brackets).
std::string formatValue(const GgufValue &value) {
  if (value.type() == GgufType::String)
    return fmt::format("string = {}", quoteJson(value.string(), kShownChars));
  if (value.type() == GgufType::Array)
    return fmt::format("array of {} {} = {}", value.size(),
                       ggufPluralName(value.elementType()), formatArray(value));
  return fmt::format("{} = {}", ggufTypeName(value.type()),
                     value.scalar().format());
}

} // namespace

int main(int argc, char **argv) {
  const char *usage = "usage: tfmc-gguf-dump [--buffer-bytes N] FILE";
  std::size_t bufferBytes = kGgufReadBufferBytes;
  int arg = 1;
  if (arg + 1 < argc && std::string(argv[arg]) == "--buffer-bytes") {
    char *end = nullptr;
    unsigned long long value = std::strtoull(argv[arg + 1], &end, 10);
    if (*argv[arg + 1] == '\0' || *end != '\0' || value == 0)
      return fail(fmt::format("--buffer-bytes: expected a positive integer, "
                              "got {}",
                              quote(argv[arg + 1])));
    bufferBytes = static_cast<std::size_t>(value);
    arg += 2;
  }
  if (arg + 1 != argc)
    return fail(usage);

  std::string error;
  std::optional<GgufFile> file = readGgufFile(argv[arg], error, bufferBytes);
  if (!file)
    return fail(error);
  fmt::print("version: {}\nalignment: {}\ndata offset: {}\nfile size: {}\n",
             file->version(), file->alignment(), file->dataOffset(),
             file->fileSize());
  fmt::print("keys: {}\n", file->metadata().size());
  for (const GgufKeyValue &entry : file->metadata())
    fmt::print("  {}: {}\n", escapeText(entry.key, kShownChars),
               formatValue(entry.value));
  fmt::print("tensors: {}\n", file->tensors().size());
  for (const GgufTensorInfo &tensor : file->tensors())
    fmt::print("  {}: {} [{}] offset {} bytes {}\n",
               escapeText(tensor.name, kShownChars),
               ggmlTypeInfo(tensor.type).name, fmt::join(tensor.dims, ", "),
               tensor.offset, tensor.bytes);
  return 0;
}
