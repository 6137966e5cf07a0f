//===- WeightFilesTest.cpp - Sharded checkpoints and checkpoint dirs ------===//
//
// WeightFiles over a directory, an index and its shards, built by hand in a
// temporary directory: which file a path stands for, where each tensor is
// found, and the exact one-line message for each way an index and its
// shards can disagree.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Safetensors.h"
#include "runtime/core/WeightFiles.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace tfmc::runtime;

namespace {

class WeightFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tfmc-weight-files-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  std::string pathOf(const std::string &name) const {
    return dir + "/" + name;
  }

  /// A safetensors file `name` holding one F32 [1] tensor per name, each
  /// the given value.
  std::string writeShard(const std::string &name,
                         const std::vector<std::string> &tensors,
                         float value = 1.0f) {
    values.push_back(std::vector<float>(tensors.size(), value));
    std::vector<TensorView> views;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      TensorView view;
      view.name = tensors[i];
      view.dtype = DType::F32;
      view.shape = {1};
      view.data = &values.back()[i];
      view.bytes = 4;
      views.push_back(view);
    }
    std::string path = pathOf(name), error;
    EXPECT_TRUE(writeSafetensors(path, views, error)) << error;
    return path;
  }

  std::string writeText(const std::string &name, const std::string &text) {
    std::string path = pathOf(name);
    std::ofstream(path) << text;
    return path;
  }

  /// The usual two-shard checkpoint: a, b in shard 1; c in shard 2.
  std::string writeCheckpoint() {
    writeShard("model-00001-of-00002.safetensors", {"a", "b"}, 1.0f);
    writeShard("model-00002-of-00002.safetensors", {"c"}, 2.0f);
    return writeText(kCheckpointIndex, R"({
      "metadata": {"total_size": 12},
      "weight_map": {"a": "model-00001-of-00002.safetensors",
                     "b": "model-00001-of-00002.safetensors",
                     "c": "model-00002-of-00002.safetensors"}})");
  }

  /// Opens `path`, expects a failure, returns its one-line message.
  std::string openError(const std::string &path) {
    std::string error;
    std::optional<WeightFiles> files = WeightFiles::open(path, error);
    EXPECT_FALSE(files.has_value()) << path << " opened";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    return error;
  }

  std::string dir;
  std::vector<std::vector<float>> values;
};

float valueOf(const TensorView *tensor) {
  float value = 0;
  if (tensor)
    std::memcpy(&value, tensor->data, sizeof value);
  return value;
}

TEST_F(WeightFilesTest, ASingleFileIsItself) {
  std::string path = writeShard("w.safetensors", {"x"}, 3.0f), error;
  std::optional<WeightFiles> files = WeightFiles::open(path, error);
  ASSERT_TRUE(files) << error;
  EXPECT_FALSE(files->sharded());
  EXPECT_EQ(files->path(), path);
  EXPECT_EQ(valueOf(files->find("x")), 3.0f);
  EXPECT_EQ(files->holder("x"), &files->files()[0]);
  EXPECT_EQ(files->find("y"), nullptr);
  EXPECT_EQ(files->holder("y"), nullptr);
  EXPECT_EQ(WeightFiles::inputPaths(path), std::vector<std::string>{path});
}

TEST_F(WeightFilesTest, AnIndexMapsEachShardOnceAndFindsEveryTensor) {
  std::string index = writeCheckpoint(), error;
  std::optional<WeightFiles> files = WeightFiles::open(index, error);
  ASSERT_TRUE(files) << error;
  EXPECT_TRUE(files->sharded());
  EXPECT_EQ(files->path(), index);
  ASSERT_EQ(files->files().size(), 2u);
  EXPECT_EQ(valueOf(files->find("a")), 1.0f);
  EXPECT_EQ(valueOf(files->find("b")), 1.0f);
  EXPECT_EQ(valueOf(files->find("c")), 2.0f);
  EXPECT_EQ(files->holder("c")->path(),
            pathOf("model-00002-of-00002.safetensors"));
  EXPECT_EQ(files->find("d"), nullptr);
  EXPECT_EQ(WeightFiles::inputPaths(index),
            (std::vector<std::string>{
                index, pathOf("model-00001-of-00002.safetensors"),
                pathOf("model-00002-of-00002.safetensors")}));
}

TEST_F(WeightFilesTest, ADirectoryUsesItsFileElseItsIndex) {
  std::string index = writeCheckpoint(), error;
  for (std::string path : {dir, dir + "/"}) {
    std::optional<WeightFiles> files = WeightFiles::open(path, error);
    ASSERT_TRUE(files) << error;
    EXPECT_EQ(files->path(), index);
    EXPECT_EQ(WeightFiles::inputPaths(path).front(), index);
  }
  // model.safetensors wins over the index, as in transformers.
  std::string single = writeShard(kCheckpointFile, {"z"});
  std::optional<WeightFiles> files = WeightFiles::open(dir, error);
  ASSERT_TRUE(files) << error;
  EXPECT_FALSE(files->sharded());
  EXPECT_EQ(files->path(), single);
}

TEST_F(WeightFilesTest, ADirectoryWithNeither) {
  EXPECT_EQ(openError(dir), dir + ": the directory has no model.safetensors "
                                  "or model.safetensors.index.json");
  EXPECT_EQ(WeightFiles::inputPaths(dir), std::vector<std::string>{dir});
}

TEST_F(WeightFilesTest, AMissingShard) {
  std::string index = writeCheckpoint();
  std::filesystem::remove(pathOf("model-00001-of-00002.safetensors"));
  EXPECT_EQ(openError(index),
            pathOf("model-00001-of-00002.safetensors") +
                ": cannot open: No such file or directory (the index " +
                index + " puts 'a' and 1 more in this shard)");
}

TEST_F(WeightFilesTest, ATensorTheShardLacks) {
  std::string index = writeCheckpoint();
  writeShard("model-00002-of-00002.safetensors", {"other"});
  // "other" is checked after: the index's tensors come first.
  EXPECT_EQ(openError(index), pathOf("model-00002-of-00002.safetensors") +
                                  ": missing tensor 'c' (the index " + index +
                                  " puts it in this shard)");
}

TEST_F(WeightFilesTest, ATensorInTwoShards) {
  std::string index = writeCheckpoint();
  writeShard("model-00002-of-00002.safetensors", {"b", "c"});
  EXPECT_EQ(openError(index),
            pathOf("model-00002-of-00002.safetensors") +
                ": tensor 'b' is in two places: this shard and " +
                pathOf("model-00001-of-00002.safetensors") +
                ", where the index " + index + " puts it");
}

TEST_F(WeightFilesTest, ATensorNotInTheIndex) {
  std::string index = writeCheckpoint();
  writeShard("model-00002-of-00002.safetensors", {"c", "d"});
  EXPECT_EQ(openError(index), pathOf("model-00002-of-00002.safetensors") +
                                  ": tensor 'd' is not in the index " + index);
}

TEST_F(WeightFilesTest, BadIndexes) {
  writeCheckpoint();
  const std::string shard = "model-00001-of-00002.safetensors";
  auto indexError = [&](const std::string &text) {
    std::string path = writeText("bad.index.json", text);
    std::string error = openError(path);
    EXPECT_EQ(error.rfind(path + ":", 0), 0u) << error;
    return error.substr(path.size() + (error[path.size() + 1] == ' ' ? 2 : 1));
  };
  EXPECT_EQ(indexError(R"({"weight_map": {"a": )"),
            "1:22: invalid JSON: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(indexError(R"([1, 2])"),
            "the index has no weight_map (expected a Hugging Face "
            "model.safetensors.index.json)");
  EXPECT_EQ(indexError(R"({"metadata": {}})"),
            "the index has no weight_map (expected a Hugging Face "
            "model.safetensors.index.json)");
  EXPECT_EQ(indexError(R"({"weight_map": {}})"),
            "weight_map is empty, expected an object mapping each tensor to "
            "its shard file");
  EXPECT_EQ(indexError(R"({"weight_map": ["a"]})"),
            "weight_map is a JSON array, expected an object mapping each tensor to "
            "its shard file");
  EXPECT_EQ(indexError(R"({"weight_map": {"a": 3}})"),
            "weight_map's tensor 'a' maps to a JSON number, expected a shard "
            "file name");
  EXPECT_EQ(indexError(R"({"weight_map": {"a": ""}})"),
            "weight_map's tensor 'a' maps to an empty string, expected a "
            "shard file name");
  // A NUL inside the name: the system would open the name cut there.
  EXPECT_EQ(indexError(R"({"weight_map": {"a": ")" + shard +
                       R"(\u0000x"}})"),
            "weight_map's tensor 'a' maps to '" + shard +
                "\\x00x', which holds a NUL character (no file name does)");
  EXPECT_EQ(indexError(R"({"weight_map": {"a": "../x.safetensors"}})"),
            "weight_map's tensor 'a' maps to '../x.safetensors', outside the "
            "index's directory");
  EXPECT_EQ(indexError(R"({"weight_map": {"a": "/etc/passwd"}})"),
            "weight_map's tensor 'a' maps to '/etc/passwd', outside the "
            "index's directory");
  EXPECT_EQ(indexError(R"({"weight_map": {"a": ")" + shard +
                       R"(", "a": ")" + shard + R"("}})"),
            "the index has weight_map's tensor 'a' twice");
  EXPECT_EQ(indexError(R"({"weight_map": {"a": ")" + shard +
                       R"("}, "weight_map": {}})"),
            "the index has the key 'weight_map' twice");
  // Every object's keys are unique (support/Json.h), the metadata's too:
  // a file with two values for one key is ambiguous.
  EXPECT_EQ(indexError(R"({"metadata": {"k": 1, "k": 2}, "weight_map": {"a": ")" +
                       shard + R"("}})"),
            "the index has the key 'k' in 'metadata' twice");
}

TEST_F(WeightFilesTest, AMissingPathIsTheFilesOwnError) {
  EXPECT_EQ(openError(pathOf("nope.safetensors")),
            pathOf("nope.safetensors") +
                ": cannot open: No such file or directory");
  EXPECT_EQ(openError(pathOf("nope.index.json")),
            pathOf("nope.index.json") +
                ": cannot read: No such file or directory");
}

} // namespace
