//===- Safetensors.h - Read and write safetensors files ---------*- C++ -*-===//
//
// Weights, inputs and outputs of a compiled model are safetensors files
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON describing each tensor, then the data.
//
// Reading maps the file read-only and hands out views into the mapping, so
// a model's weights are never copied. The header is validated in full before
// anything is handed out: a malformed, truncated or hostile file is a
// one-line error naming the file and the tensor, never a crash.
//
// No function here throws; each reports failure through its return value and
// an `error` string (one line, no trailing newline, starting with the path).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_SAFETENSORS_H
#define TFMC_RUNTIME_SAFETENSORS_H

#include "support/FileIO.h"
#include "runtime/core/FileMapping.h"
#include "runtime/core/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime {

/// Headers larger than this are rejected before they are parsed (the
/// reference implementation's limit is the same order of magnitude).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// A validated safetensors file, mapped read-only (FileMapping.h).
///
/// Views returned by `find` and `tensors` point into the mapping and stay
/// valid until the file is destroyed; moving the file keeps them valid.
/// Like any mmap, they assume nobody truncates the file while it is open.
class SafetensorsFile {
public:
  /// Maps and validates `path`. On failure returns nothing and sets `error`.
  /// Validates a file already mapped (a program's embedded weights,
  /// WeightFiles.h), named `path` in messages.
  static std::optional<SafetensorsFile> fromMapping(FileMapping mapping,
                                                    const std::string &path,
                                                    std::string &error);
  static std::optional<SafetensorsFile> open(const std::string &path,
                                             std::string &error);

  /// The path as given to `open`; every error message starts with it.
  const std::string &path() const { return path_; }

  /// The tensor called `name`, or null.
  const TensorView *find(std::string_view name) const;

  /// Every tensor, in name order (byte-wise).
  const std::vector<TensorView> &tensors() const { return tensors_; }

  /// The optional `__metadata__` string map (empty when absent).
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

private:
  SafetensorsFile() = default;

  std::string path_;
  FileMapping mapping_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// Whether AlignedBuffer puts buffers of kHugePageBytes or more in
/// transparent huge pages (not under AddressSanitizer, nor with
/// TFMC_HUGE_PAGES=0).
bool hugePageBuffers();
inline constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;

/// An owned copy of a tensor's bytes at a 64-byte aligned address (enough
/// for any element type and for AVX-512 loads); from 2 MiB on, huge-page
/// aligned and advised to use transparent huge pages. `data()` is non-null
/// even for an empty tensor.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  /// `bytes` uninitialised bytes; a null `data()` means allocation failed.
  explicit AlignedBuffer(std::size_t bytes);

  void *data() { return storage_.get(); }
  const void *data() const { return storage_.get(); }
  std::size_t size() const { return bytes_; }

  template <typename T> const T *as() const {
    return static_cast<const T *>(data());
  }

private:
  struct Free {
    Free() : mappedBytes(0) {}
    explicit Free(std::size_t mapped) : mappedBytes(mapped) {}
    std::size_t mappedBytes; ///< an mmap's length; 0: from malloc
    void operator()(void *pointer) const;
  };
  std::unique_ptr<void, Free> storage_;
  std::size_t bytes_ = 0;
};

/// Copies `tensor`'s bytes to a fresh 64-byte aligned buffer. Callers that
/// read weights in place use this only when `!tensor.isNaturallyAligned()`.
AlignedBuffer copyToAligned(const TensorView &tensor);

/// The tensor `name` of `file` if it has exactly `dtype` and `shape`;
/// otherwise null, with `error` set to one of
///   `W: missing tensor 'NAME'`
///   `W: tensor 'NAME' has dtype F16, expected F32`
///   `W: tensor 'NAME' has shape [3, 4], expected [4, 4]`
/// (dtype is checked before shape).
const TensorView *expectTensor(const SafetensorsFile &file,
                               std::string_view name, DType dtype,
                               const std::vector<int64_t> &shape,
                               std::string &error);

/// Which element types an integer input may have (docs/user-guide.md, Usage: integer
/// inputs are int64, int32 accepted; masks may also be bool/uint8).
enum class IntegerInputKind {
  Ids,  ///< I64 or I32
  Mask, ///< I64, I32, BOOL or U8
};

/// An integer tensor widened to int64.
struct IntegerTensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> values; ///< row-major; BOOL reads as 0 or 1
};

/// Reads the integer tensor `name` of `file` into int64 values. Values are
/// not range-checked here (the model knows its vocabulary). On failure
/// returns nothing with `error` set to
///   `IN: missing tensor 'NAME'`
///   `IN: tensor 'NAME' has dtype F32, expected I64 or I32`
///   `IN: tensor 'NAME' has dtype F32, expected I64, I32, BOOL or U8` (masks)
std::optional<IntegerTensor> readIntegerTensor(const SafetensorsFile &file,
                                               std::string_view name,
                                               IntegerInputKind kind,
                                               std::string &error);

/// Writes `tensors` (and `metadata`, if any) to `path` as a safetensors file.
///
/// Header keys are sorted, the header is padded with spaces to a multiple of
/// 8 bytes, and tensor data is laid out without gaps, largest element size
/// first, so every tensor of the written file is naturally aligned when the
/// file is mapped. Written through an OutputFile (FileIO.h): a unique
/// temporary renamed over `path`, so a reader never sees a partial file and
/// a failure leaves an old file at `path` as it was.
///
/// Each tensor needs a unique non-empty name (not `__metadata__`),
/// non-negative dimensions, and `bytes` equal to its element count times its
/// element size. Returns false with `error` set (`OUT: ...`) otherwise or when
/// the file cannot be written.
bool writeSafetensors(const std::string &path,
                      const std::vector<TensorView> &tensors,
                      std::string &error,
                      const std::map<std::string, std::string> &metadata = {});

/// The same into `file`, which a caller created (and so checked) before
/// the work that computed the tensors; commits it on success.
bool writeSafetensors(support::OutputFile &file, const std::vector<TensorView> &tensors,
                      std::string &error,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_SAFETENSORS_H
