//===- GgufWeights.h - A GGUF file's tensors as weights ---------*- C++ -*-===//
//
// `--weights model.gguf`: the file is checked by support/Gguf.h (header,
// metadata, tensor infos, the layout as a whole), then mapped once,
// read-only, and each tensor is handed out as a TensorView in the plan's
// terms: `shape` numpy's order (the reverse of ggml's dims: a linear's
// [out, in]), F32, F16 and BF16 (and ggml's integer types) as those dtypes,
// and ggml's block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, ...) as U8 bytes
// with `ggmlBlocks` set and `shape` the values' [rows, cols].
//
// A llama file holds the rows of each attention's Q and K (weight and bias)
// in ggml's rope layout: llama.cpp's converter reorders each head's rows
// (i, i + D/2), which Hugging Face's "rotate half" turns together, to
// (2i, 2i + 1), the pairs GGML_ROPE_TYPE_NORM turns (bench/peers/
// gguf_llama.py's rotate_half_to_interleaved). They are used as they are:
// a program compiled from a llama file turns those pairs (its weight
// naming, gguf-llama, has ropeInterleaved: tfm.rope {interleaved}), and
// Q·Kᵀ does not depend on the order of a head's features.
//
// The conversions of the block types at load: GgmlBlocks.h.
//
// No function here throws; errors are one line starting with the path.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GGUFWEIGHTS_H
#define TFMC_RUNTIME_GGUFWEIGHTS_H

#include "runtime/core/FileMapping.h"
#include "runtime/core/Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime {

class GgufWeights {
public:
  /// Reads and checks the header and maps the file. On failure returns
  /// nothing with `error` set.
  /// The same for a file already mapped (a program's embedded weights,
  /// WeightFiles.h), named `path` in messages.
  static std::optional<GgufWeights> fromMapping(FileMapping mapping,
                                                const std::string &path,
                                                std::string &error);
  static std::optional<GgufWeights> open(const std::string &path,
                                         std::string &error);

  const std::string &path() const { return path_; }
  /// general.architecture ("llama").
  const std::string &architecture() const { return architecture_; }

  /// The tensor `name`, or null.
  const TensorView *find(std::string_view name) const;
  /// Every tensor, in the file's order.
  const std::vector<TensorView> &tensors() const { return tensors_; }

private:
  GgufWeights() = default;

  std::string path_;
  std::string architecture_;
  FileMapping mapping_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::size_t, std::less<>> byName_;
};

/// ggml's name of a block type number ("Q6_K"); "?" for another number.
const char *ggmlBlockName(int32_t ggmlType);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GGUFWEIGHTS_H
