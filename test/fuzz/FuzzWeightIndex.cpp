//===- FuzzWeightIndex.cpp - A sharded checkpoint's index -----------------===//
//
// Bytes as a model.safetensors.index.json in a directory that also holds
// two valid shards (written once: a.safetensors with x and y, b.safetensors
// with z). WeightFiles::open promises that when it accepts the directory,
// the index and the shards agree both ways: every tensor of every shard is
// found, in that shard, and the index names no tensor a shard lacks. Its
// errors are one line starting with a path in the directory.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzCommon.h"

#include "runtime/core/Safetensors.h"
#include "runtime/core/WeightFiles.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace tfmc::runtime;

namespace {

/// The directory, created once with its two shards.
const std::string &checkpointDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/tfmc-fuzz-weight-index-XXXXXX";
    if (!::mkdtemp(pattern))
      std::abort();
    std::string path = pattern;
    static const float values[3] = {1.0f, 2.0f, 3.0f};
    auto shard = [&](const char *name, std::vector<std::string> tensors,
                     int first) {
      std::vector<TensorView> views;
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        TensorView view;
        view.name = tensors[i];
        view.dtype = DType::F32;
        view.shape = {1};
        view.data = &values[first + i];
        view.bytes = 4;
        views.push_back(view);
      }
      std::string error;
      TFMC_FUZZ_CHECK(writeSafetensors(path + "/" + name, views, error));
    };
    shard("a.safetensors", {"x", "y"}, 0);
    shard("b.safetensors", {"z"}, 2);
    return path;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = checkpointDir();
  // Removed at exit, so that replaying leaves nothing in /tmp (registered
  // once `dir` exists, so that it runs before `dir` is destroyed).
  static const bool cleanup = [] {
    return std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(checkpointDir(), ignored);
    }) == 0;
  }();
  (void)cleanup;
  {
    std::ofstream index(dir + "/" + kCheckpointIndex,
                        std::ios::binary | std::ios::trunc);
    index.write(reinterpret_cast<const char *>(data),
                static_cast<std::streamsize>(size));
  }
  std::string error;
  std::optional<WeightFiles> files = WeightFiles::open(dir, error);
  if (!files) {
    TFMC_FUZZ_CHECK(error.rfind(dir + "/", 0) == 0);
    TFMC_FUZZ_CHECK(error.find('\n') == std::string::npos);
    return 0;
  }
  TFMC_FUZZ_CHECK(files->sharded());
  for (const SafetensorsFile &file : files->files())
    for (const TensorView &tensor : file.tensors()) {
      TFMC_FUZZ_CHECK(files->holder(tensor.name) == &file);
      TFMC_FUZZ_CHECK(files->find(tensor.name) == &tensor);
    }
  // Both shards are whole: whatever the index says, it placed x, y and z.
  for (const char *name : {"x", "y", "z"})
    TFMC_FUZZ_CHECK(files->find(name) != nullptr);
  return 0;
}
