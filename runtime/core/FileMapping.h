//===- FileMapping.h - A whole file mapped read-only -------------*- C++ -*-===//
//
// What safetensors and GGUF weights files are read through
// (Safetensors.h, GgufWeights.h).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_FILEMAPPING_H
#define TFMC_RUNTIME_FILEMAPPING_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tfmc::runtime {

/// A whole file mapped read-only (MAP_PRIVATE | MAP_POPULATE: every page is
/// mapped at once, so that a program's load time includes the page-in
/// instead of the first kernels paying for it in page faults), unmapped
/// when destroyed. Move-only; moving keeps the address. An empty file is an
/// empty mapping (no data), which its reader then finds too short.
class FileMapping {
public:
  FileMapping() = default;
  /// Maps `bytes` of the open file `fd` (which the caller still closes)
  /// from `offset`, a multiple of the page size. On failure returns nothing
  /// with `error` = "PATH: cannot map: REASON".
  static std::optional<FileMapping> map(int fd, std::size_t bytes,
                                        const std::string &path,
                                        std::string &error,
                                        uint64_t offset = 0);
  FileMapping(FileMapping &&other) noexcept;
  FileMapping &operator=(FileMapping &&other) noexcept;
  FileMapping(const FileMapping &) = delete;
  FileMapping &operator=(const FileMapping &) = delete;
  ~FileMapping();

  const void *data() const { return data_; }
  std::size_t size() const { return size_; }

private:
  void *data_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_FILEMAPPING_H
