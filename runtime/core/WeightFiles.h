//===- WeightFiles.h - A model's weights: one file or a sharded set -*- C++ -*-===//
//
// `--weights` (and tfmc_create) names one of:
//  - a safetensors file;
//  - a Hugging Face sharded checkpoint's index, `*.json`: its `weight_map`
//    maps each tensor name to the shard file holding it, relative to the
//    index's directory;
//  - a directory (a checkpoint): its model.safetensors, else its
//    model.safetensors.index.json;
//  - a GGUF file (`.gguf`, or GGUF's magic): llama.cpp's tensors
//    (GgufWeights.h);
//  - nothing (the empty path): the weights the program carries in its own
//    file (`tfmc --embed-weights`, support/EmbeddedWeights.h), mapped in
//    place; messages name them "PROGRAM (embedded weights)".
// Every shard is mapped once. The index and the shards are checked against
// each other before a tensor is handed out, so that a checkpoint whose
// index and shards disagree is a one-line error naming the file and the
// tensor, never a tensor silently taken from the wrong place.
//
// No function here throws; errors are one line starting with a path.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_WEIGHTFILES_H
#define TFMC_RUNTIME_WEIGHTFILES_H

#include "runtime/core/GgufWeights.h"
#include "runtime/core/Safetensors.h"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfmc::runtime {

/// The directory entries a checkpoint directory is read from, in order.
inline constexpr const char *kCheckpointFile = "model.safetensors";
inline constexpr const char *kCheckpointIndex = "model.safetensors.index.json";

class WeightFiles {
public:
  /// Resolves `path` (file, index or directory), maps every file and checks
  /// the index against the shards. On failure returns nothing with `error`.
  static std::optional<WeightFiles> open(const std::string &path,
                                         std::string &error);

  /// The running program's embedded weights (where it carries some): their
  /// size and kind ("safetensors" or "GGUF"); nothing otherwise.
  struct Embedded {
    uint64_t bytes = 0;
    std::string kind;
  };
  static std::optional<Embedded> embedded();

  /// The files `path` stands for (the index first, then its shards), as far
  /// as they can be found without mapping anything; `path` itself when it
  /// cannot be resolved (open() then reports why). For the check that an
  /// output overwrites none of a command's inputs.
  static std::vector<std::string> inputPaths(const std::string &path);

  /// The single file, or the index: messages about a tensor that is in no
  /// file start with it.
  const std::string &path() const { return path_; }
  bool sharded() const { return sharded_; }

  /// The tensor `name`, or null.
  const TensorView *find(std::string_view name) const;
  /// The safetensors file holding the tensor `name`, or null (also for a
  /// GGUF file's).
  const SafetensorsFile *holder(std::string_view name) const;
  /// The path of the file holding the tensor `name` (messages about it
  /// start with it): its shard, else path().
  const std::string &pathOf(std::string_view name) const;
  /// The `__metadata__` of the safetensors file holding `name` (empty for a
  /// GGUF file's tensor).
  const std::map<std::string, std::string> &metadataOf(std::string_view name) const;

  /// Every mapped safetensors file (one, or the shards in name order; none
  /// for a GGUF file). Each tensor is in exactly one of them.
  const std::vector<SafetensorsFile> &files() const { return files_; }
  /// The GGUF file, or null.
  const GgufWeights *gguf() const { return gguf_ ? &*gguf_ : nullptr; }
  /// Every tensor of every file.
  std::vector<const TensorView *> allTensors() const;

private:
  WeightFiles() = default;

  std::string path_;
  bool sharded_ = false;
  std::vector<SafetensorsFile> files_;
  std::optional<GgufWeights> gguf_;
  /// Sharded: tensor name -> index into files_.
  std::map<std::string, std::size_t, std::less<>> shardOf_;
};

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_WEIGHTFILES_H
